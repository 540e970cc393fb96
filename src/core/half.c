/*
 * half.c - float <-> IEEE half and bfloat16, bit by bit (the host side of
 * the fp16 and bf16 math modes: uploads, downloads, random fills).
 */
#include <string.h>

#include "core/half.h"

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

uint16_t os_f32_to_f16(float f)
{
    uint32_t x = bits_of(f);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t raw_exp = (int32_t)((x >> 23) & 0xffu);
    if (raw_exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t exp = raw_exp - 127 + 15;
    if (exp <= 0) {
        /* A subnormal half (or zero): shift the full significand down. */
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    /* A carry out of the mantissa bumps the exponent, up to infinity: right. */
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)h;
}

float os_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return float_of(sign);
        /* Subnormal half: normalise into a float. */
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while (!(mant & 0x400u));
        mant &= 0x3ffu;
        return float_of(sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13));
    }
    return float_of(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t os_f32_to_bf16(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float os_bf16_to_f32(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

/*
 * half.h - float <-> IEEE half and bfloat16, on the host.
 *
 * Narrowing rounds to nearest, ties to even; values beyond half's range
 * become infinities and NaN stays NaN.  Widening is exact.
 */
#ifndef OS_CORE_HALF_H
#define OS_CORE_HALF_H

#include <stdint.h>

uint16_t os_f32_to_f16(float f);
float os_f16_to_f32(uint16_t h);
uint16_t os_f32_to_bf16(float f);
float os_bf16_to_f32(uint16_t h);

#endif /* OS_CORE_HALF_H */

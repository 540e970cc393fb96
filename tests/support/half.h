/*
 * half.h - float <-> IEEE half and bfloat16 conversions for tests (round to
 * nearest even; NaN stays NaN, overflow becomes infinity).
 */
#ifndef OS_TEST_HALF_H
#define OS_TEST_HALF_H

#include <stdint.h>

uint16_t test_f32_to_f16(float f);
float test_f16_to_f32(uint16_t h);
uint16_t test_f32_to_bf16(float f);
float test_bf16_to_f32(uint16_t h);

#endif /* OS_TEST_HALF_H */

/*
 * rng.h - a tiny reproducible random generator for tests (splitmix64).
 */
#ifndef OS_TEST_RNG_H
#define OS_TEST_RNG_H

#include <stdint.h>

typedef struct test_rng {
    uint64_t state;
} test_rng;

void test_rng_seed(test_rng *r, uint64_t seed);
uint64_t test_rng_next(test_rng *r);
/* Uniform in [lo, hi). */
double test_rng_uniform(test_rng *r, double lo, double hi);
/* Uniform integer in [lo, hi); lo when hi <= lo. */
int64_t test_rng_int(test_rng *r, int64_t lo, int64_t hi);

#endif /* OS_TEST_RNG_H */

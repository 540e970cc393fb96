/*
 * rng.c - splitmix64 (Steele, Lea, Flood 2014): small, fast, and good
 * enough to fill test tensors reproducibly on every platform.
 */
#include "support/rng.h"

void test_rng_seed(test_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t test_rng_next(test_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double test_rng_uniform(test_rng *r, double lo, double hi)
{
    double u = (double)(test_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int64_t test_rng_int(test_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo) return lo;
    return lo + (int64_t)(test_rng_next(r) % (uint64_t)(hi - lo));
}

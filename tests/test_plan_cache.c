/*
 * test_plan_cache.c - the backends' per-device plan cache (plan_cache.c,
 * plain C): lookups, replacement, least-recently-used eviction at the
 * bound, the counters, and values that count their own references (as
 * the CUDA backend's convolution choices do) outliving their eviction
 * while a plan still holds them.  The public counters of a device without
 * a cache are zeros (the CPU backend).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/plan_cache.h"
#include "opsched/opsched.h"

/* A value that counts its references and records its release. */
typedef struct value {
    int refs;
    int id;
    int *released; /* incremented when the last reference goes */
} value;

static value *value_new(int id, int *released)
{
    value *v = calloc(1, sizeof(*v));
    assert_non_null(v);
    v->refs = 1;
    v->id = id;
    v->released = released;
    return v;
}

static void value_unref(void *p)
{
    value *v = p;
    if (--v->refs > 0) return;
    (*v->released)++;
    free(v);
}

/* The cache takes the caller's reference (the test keeps none). */
static void put_new(os_plan_cache *c, const char *key, int id, int *released)
{
    value *v = value_new(id, released);
    assert_int_equal(os_plan_cache_put(c, key, v), 0);
}

static int id_of(os_plan_cache *c, const char *key)
{
    value *v = os_plan_cache_get(c, key);
    return v ? v->id : -1;
}

static void test_get_put_replace(void **state)
{
    (void)state;
    int released = 0;
    os_plan_cache *c = os_plan_cache_create(0, value_unref);
    assert_non_null(c);
    assert_null(os_plan_cache_get(c, "conv a"));
    put_new(c, "conv a", 1, &released);
    put_new(c, "conv b", 2, &released);
    assert_int_equal(id_of(c, "conv a"), 1);
    assert_int_equal(id_of(c, "conv b"), 2);
    assert_int_equal(id_of(c, "conv c"), -1);
    /* A key is compared whole, not by prefix or hash. */
    assert_int_equal(id_of(c, "conv"), -1);
    assert_int_equal(id_of(c, "conv a "), -1);

    /* Replacing releases the old value, keeps one entry. */
    put_new(c, "conv a", 3, &released);
    assert_int_equal(released, 1);
    assert_int_equal(id_of(c, "conv a"), 3);
    /* Putting the same value again releases nothing. */
    assert_int_equal(os_plan_cache_put(c, "conv a", os_plan_cache_get(c, "conv a")), 0);
    assert_int_equal(released, 1);

    opsched_plan_cache_stats s;
    os_plan_cache_count(c, 1);
    os_plan_cache_count(c, 0);
    os_plan_cache_count(c, 0);
    os_plan_cache_stats(c, &s);
    assert_int_equal(s.entries, 2);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 2);
    assert_int_equal(s.evictions, 0);

    os_plan_cache_free(c);
    assert_int_equal(released, 3);
    os_plan_cache_stats(NULL, &s);
    assert_int_equal(s.entries + s.hits + s.misses + s.evictions, 0);
    os_plan_cache_free(NULL);
}

static void test_lru_eviction(void **state)
{
    (void)state;
    int released = 0;
    os_plan_cache *c = os_plan_cache_create(3, value_unref);
    assert_non_null(c);
    put_new(c, "a", 1, &released);
    put_new(c, "b", 2, &released);
    put_new(c, "c", 3, &released);
    /* a is used again: b is now the least recently used */
    assert_int_equal(id_of(c, "a"), 1);
    put_new(c, "d", 4, &released);
    assert_int_equal(released, 1);
    assert_int_equal(id_of(c, "b"), -1);
    assert_int_equal(id_of(c, "a"), 1);
    assert_int_equal(id_of(c, "c"), 3);
    assert_int_equal(id_of(c, "d"), 4);
    /* order now (most recent first): d c a; replacing a makes it recent */
    put_new(c, "a", 5, &released);
    assert_int_equal(released, 2);
    put_new(c, "e", 6, &released); /* evicts c */
    assert_int_equal(released, 3);
    assert_int_equal(id_of(c, "c"), -1);
    assert_int_equal(id_of(c, "d"), 4);
    assert_int_equal(id_of(c, "a"), 5);
    assert_int_equal(id_of(c, "e"), 6);
    opsched_plan_cache_stats s;
    os_plan_cache_stats(c, &s);
    assert_int_equal(s.entries, 3);
    assert_int_equal(s.evictions, 2);
    os_plan_cache_free(c);
    assert_int_equal(released, 6);
}

/* A value a plan still holds survives its eviction and goes with the
 * plan; one the cache alone holds goes with the cache. */
static void test_shared_references(void **state)
{
    (void)state;
    int released = 0;
    os_plan_cache *c = os_plan_cache_create(1, value_unref);
    assert_non_null(c);
    value *v = value_new(1, &released); /* the plan's reference */
    v->refs++;                          /* the cache's */
    assert_int_equal(os_plan_cache_put(c, "x", v), 0);
    value *hit = os_plan_cache_get(c, "x"); /* a second plan */
    assert_ptr_equal(hit, v);
    hit->refs++;
    put_new(c, "y", 2, &released); /* evicts x: the plans still hold it */
    assert_int_equal(released, 0);
    assert_int_equal(v->refs, 2);
    value_unref(v);
    assert_int_equal(released, 0);
    value_unref(hit);
    assert_int_equal(released, 1);
    os_plan_cache_free(c);
    assert_int_equal(released, 2);
}

/* Many keys through a cache at the default bound: it never holds more,
 * everything leaves exactly once, and the most recent keys are kept. */
static void test_bound(void **state)
{
    (void)state;
    int released = 0, n = OS_PLAN_CACHE_DEFAULT_MAX * 3 + 17;
    os_plan_cache *c = os_plan_cache_create(0, value_unref);
    assert_non_null(c);
    char key[64];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "conv2d heuristic x 1x%dx56x56", i);
        put_new(c, key, i, &released);
        if (i % 97 == 0) { /* keep key 0 in use */
            assert_int_equal(id_of(c, "conv2d heuristic x 1x0x56x56"), 0);
        }
    }
    opsched_plan_cache_stats s;
    os_plan_cache_stats(c, &s);
    assert_int_equal(s.entries, OS_PLAN_CACHE_DEFAULT_MAX);
    assert_int_equal(s.evictions, n - OS_PLAN_CACHE_DEFAULT_MAX);
    assert_int_equal(released, n - OS_PLAN_CACHE_DEFAULT_MAX);
    assert_int_equal(id_of(c, "conv2d heuristic x 1x0x56x56"), 0);
    snprintf(key, sizeof(key), "conv2d heuristic x 1x%dx56x56", n - 1);
    assert_int_equal(id_of(c, key), n - 1);
    snprintf(key, sizeof(key), "conv2d heuristic x 1x%dx56x56", 1);
    assert_int_equal(id_of(c, key), -1);
    os_plan_cache_free(c);
    assert_int_equal(released, n);
}

/* The CPU backend keeps no plan cache: its counters are zeros. */
static void test_device_without_cache(void **state)
{
    (void)state;
    opsched_plan_cache_stats s;
    memset(&s, 0xff, sizeof(s));
    opsched_device_plan_cache_stats(NULL, &s);
    assert_int_equal(s.entries + s.hits + s.misses + s.evictions, 0);
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_device *dev = NULL;
    if (opsched_device_open(ctx, "cpu", 0, &dev) == OPSCHED_OK) {
        memset(&s, 0xff, sizeof(s));
        opsched_device_plan_cache_stats(dev, &s);
        assert_int_equal(s.entries + s.hits + s.misses + s.evictions, 0);
        opsched_device_close(dev);
    }
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_put_replace),
        cmocka_unit_test(test_lru_eviction),
        cmocka_unit_test(test_shared_references),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_device_without_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * cache_fixture.h - what the colo segment's suites share (check_cache.c,
 * check_cache_shared.c): a segment made and attached, a counter read, the
 * monotonic clock in ns, and put/get of a string key with its own hash.
 */
#ifndef HKV_TESTS_CACHE_FIXTURE_H
#define HKV_TESTS_CACHE_FIXTURE_H

#include <check.h>
#include <string.h>
#include <time.h>

#include "server/colo/cache.h"
#include "server/core/router.h"

static inline struct cache *mk(size_t bytes, size_t max_value, uint32_t hot_sample)
{
    struct cache_opts o = {.bytes = bytes, .max_value = max_value, .hot_sample = hot_sample};
    struct cache *c = NULL;
    ck_assert_int_eq(cache_create(&o, &c), HKV_OK);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(cache_attach(c), HKV_OK);
    return c;
}

static inline uint64_t ctr(struct cache *c, enum cache_counter which)
{
    struct cache_stats st;
    cache_stats(c, &st);
    return st.counters[which];
}

static inline double mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define PUT(c, k, v, st, fu, ku, now)                                                              \
    cache_put((c),                                                                                 \
              &(struct cache_entry){.key = (k), .klen = strlen(k),                                 \
                                    .khash = router_hash((k), strlen(k)), .val = (v),              \
                                    .vlen = strlen(v), .stamp = (st), .fresh_until = (fu),         \
                                    .keep_until = (ku)},                                           \
              (now))
#define GET(c, k, now, buf, hit) \
    cache_get((c), (k), strlen(k), router_hash((k), strlen(k)), (now), (buf), (hit))

static inline void assert_value(struct hkv_buf *b, const char *want)
{
    ck_assert_uint_eq(b->len, strlen(want));
    ck_assert(memcmp(b->data, want, b->len) == 0);
}

#endif

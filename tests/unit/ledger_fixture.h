/*
 * ledger_fixture.h - what the ledger's suites share (check_ledger.c,
 * check_ledger_state.c): one ledger per test (L) with a settable clock
 * (NOW), writes and reads of string keys, value and tombstone asserts with
 * their versions, TTLs, stats, a flush of every dirty row, and persisted
 * rows as recovery would load them.
 */
#ifndef HKV_TESTS_LEDGER_FIXTURE_H
#define HKV_TESTS_LEDGER_FIXTURE_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/stamp.h"
#include "storage/ledger.h"

#define WALL0 1750000000000LL /* 2025: after STAMP_EPOCH_MS, so versions carry the time */
#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL
#define TOMB_TTL 1000
#define WRITER 0xabcu /* options.writer: the low bits of every version */

static struct ledger *L;
static struct ledger_clock NOW;

static const struct ledger_expiry NOEXP = {LEDGER_EXP_NONE, 0};
static const struct ledger_expiry KEEP = {LEDGER_EXP_KEEP, 0};

static inline struct ledger *make_writer(size_t maxmemory, int complete, uint32_t writer)
{
    struct ledger_options o = {.maxmemory = maxmemory, .tombstone_ttl_ms = TOMB_TTL,
                               .writer = writer, .has_hash_key = 1};
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        o.hash_key[i] = (uint8_t)(0x40 + i);
    struct ledger *l = NULL;
    ck_assert_int_eq(ledger_create(&o, &l), HKV_OK);
    if (complete)
        ck_assert_int_eq(ledger_mark_complete(l), HKV_OK);
    return l;
}

static inline struct ledger *make(size_t maxmemory, int complete)
{
    return make_writer(maxmemory, complete, WRITER);
}

static inline void setup(void)
{
    L = make(0, 1);
    NOW.mono_ms = 1000;
    NOW.wall_ms = WALL0;
}

static inline void teardown(void) { ledger_destroy(&L); }

static inline struct ledger_expiry rel(int64_t ms) { return (struct ledger_expiry){LEDGER_EXP_REL, ms}; }
static inline struct ledger_expiry at(int64_t ms) { return (struct ledger_expiry){LEDGER_EXP_ABS, ms}; }

/* A version no write can hold: shows whether a call wrote *version. */
#define UNSET ((hkv_stamp)0x5555)

static inline int setx(const char *k, const char *v, unsigned flags, struct ledger_expiry e,
                struct ledger_view *old, hkv_stamp *version)
{
    return ledger_set(L, k, strlen(k), v, strlen(v), 0, flags, e, NOW, old, version);
}

/* A plain SET that must apply; returns its version. */
static inline hkv_stamp put(const char *k, const char *v)
{
    hkv_stamp ver = UNSET;
    ck_assert_int_eq(setx(k, v, 0, NOEXP, NULL, &ver), HKV_OK);
    ck_assert_uint_ne(ver, UNSET);
    ck_assert_uint_ne(ver, 0);
    return ver;
}

/* A DEL that must apply; returns the tombstone's version. */
static inline hkv_stamp del(const char *k, int *existed)
{
    hkv_stamp ver = UNSET;
    ck_assert_int_eq(ledger_del(L, k, strlen(k), 0, NOW, existed, NULL, &ver), HKV_OK);
    ck_assert_uint_ne(ver, UNSET);
    ck_assert_uint_ne(ver, 0);
    return ver;
}

static inline int get(const char *k, struct ledger_view *v) { return ledger_get(L, k, strlen(k), NOW, v); }

static inline void assert_value(const char *k, const char *want, hkv_stamp stamp)
{
    struct ledger_view v;
    ck_assert_int_eq(get(k, &v), HKV_OK);
    ck_assert_int_eq(v.found, 1);
    ck_assert_uint_eq(v.vlen, strlen(want));
    ck_assert_mem_eq(v.val, want, strlen(want));
    ck_assert_uint_eq(v.stamp, stamp);
}

/* The key is missing for sure, and the absence carries this version. */
static inline void assert_missing(const char *k, hkv_stamp stamp)
{
    struct ledger_view v;
    ck_assert_int_eq(get(k, &v), HKV_ENOENT);
    ck_assert_int_eq(v.found, 0);
    ck_assert_uint_eq(v.stamp, stamp);
}

/* v is newer than *last; *last becomes v. */
static inline void newer(hkv_stamp *last, hkv_stamp v)
{
    ck_assert_msg(v > *last, "version %#llx not newer than %#llx", (unsigned long long)v,
                  (unsigned long long)*last);
    *last = v;
}

static inline int64_t ttl(const char *k)
{
    int64_t t = 0;
    ck_assert_int_eq(ledger_ttl(L, k, strlen(k), NOW, &t), HKV_OK);
    return t;
}

static inline struct ledger_stats stats(void)
{
    struct ledger_stats s;
    ledger_stats(L, &s);
    return s;
}

/* Collects everything dirty and reports it persisted. */
static inline size_t flush_all(void)
{
    struct persist_batch *b = persist_batch_new(0);
    int n = ledger_collect_dirty(L, b, SIZE_MAX, NULL, NULL);
    ck_assert_int_ge(n, 0);
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    return (size_t)n;
}

/* A stamp from another writer at unix time wall_ms. */
static inline hkv_stamp stamp_at(int64_t wall_ms, uint32_t counter, uint32_t writer)
{
    return stamp_make((uint64_t)(wall_ms - (int64_t)STAMP_EPOCH_MS), counter, writer);
}

static inline struct persist_row row(const char *k, const char *v, hkv_stamp s, int64_t exp_wall)
{
    struct persist_row r = {.key = (char *)k, .klen = strlen(k), .val = (char *)v,
                            .vlen = v ? strlen(v) : 0, .stamp = s, .expire_at_ms = exp_wall,
                            .class_id = 2, .tombstone = v == NULL};
    return r;
}

#endif

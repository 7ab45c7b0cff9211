/* check_ledger.c - the owner's in-memory map: stamps, expiry, dirty
 * tracking, eviction, loading and scanning. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/ledger.h"

#define WALL0 1700000000000LL
#define DAY_MS 86400000LL
#define TOMB_TTL 1000

static struct ledger *L;
static struct ledger_clock NOW;

static const struct ledger_expiry NOEXP = {LEDGER_EXP_NONE, 0};
static const struct ledger_expiry KEEP = {LEDGER_EXP_KEEP, 0};

static struct ledger *make(size_t maxmemory, int complete)
{
    struct ledger_options o = {.maxmemory = maxmemory, .tombstone_ttl_ms = TOMB_TTL,
                               .has_hash_key = 1};
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        o.hash_key[i] = (uint8_t)(0x40 + i);
    struct ledger *l = NULL;
    ck_assert_int_eq(ledger_create(&o, &l), HKV_OK);
    if (complete)
        ck_assert_int_eq(ledger_mark_complete(l), HKV_OK);
    return l;
}

static void setup(void)
{
    L = make(0, 1);
    NOW.mono_ms = 1000;
    NOW.wall_ms = WALL0;
}

static void teardown(void) { ledger_destroy(&L); }

static struct ledger_expiry rel(int64_t ms) { return (struct ledger_expiry){LEDGER_EXP_REL, ms}; }
static struct ledger_expiry at(int64_t ms) { return (struct ledger_expiry){LEDGER_EXP_ABS, ms}; }

static int set(const char *k, const char *v, hkv_stamp s)
{
    return ledger_set(L, k, strlen(k), v, strlen(v), s, 0, 0, NOEXP, NOW, NULL);
}

static int setx(const char *k, const char *v, hkv_stamp s, unsigned flags,
                struct ledger_expiry e, struct ledger_view *old)
{
    return ledger_set(L, k, strlen(k), v, strlen(v), s, 0, flags, e, NOW, old);
}

static int get(const char *k, struct ledger_view *v) { return ledger_get(L, k, strlen(k), NOW, v); }

static void assert_value(const char *k, const char *want, hkv_stamp stamp)
{
    struct ledger_view v;
    ck_assert_int_eq(get(k, &v), HKV_OK);
    ck_assert_int_eq(v.found, 1);
    ck_assert_uint_eq(v.vlen, strlen(want));
    ck_assert_mem_eq(v.val, want, strlen(want));
    ck_assert_uint_eq(v.stamp, stamp);
}

static int64_t ttl(const char *k)
{
    int64_t t = 0;
    ck_assert_int_eq(ledger_ttl(L, k, strlen(k), NOW, &t), HKV_OK);
    return t;
}

static struct ledger_stats stats(void)
{
    struct ledger_stats s;
    ledger_stats(L, &s);
    return s;
}

/* Collects everything dirty and reports it persisted. */
static size_t flush_all(void)
{
    struct persist_batch *b = persist_batch_new(0);
    int n = ledger_collect_dirty(L, b, SIZE_MAX, NULL, NULL);
    ck_assert_int_ge(n, 0);
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    return (size_t)n;
}

START_TEST(newer_stamp_wins)
{
    ck_assert_int_eq(set("k", "v1", 10), HKV_OK);
    ck_assert_int_eq(set("k", "v2", 20), HKV_OK);
    assert_value("k", "v2", 20);
    ck_assert_uint_eq(stats().writes, 2);
    ck_assert_uint_eq(ledger_count(L), 1);
}
END_TEST

START_TEST(equal_stamp_is_idempotent)
{
    int64_t r = 0;
    ck_assert_int_eq(set("k", "first", 10), HKV_OK);
    ck_assert_int_eq(set("k", "second", 10), LEDGER_RETRY);
    assert_value("k", "first", 10);

    ck_assert_int_eq(ledger_incrby(L, "n", 1, 5, 30, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, 5);
    r = 0;
    ck_assert_int_eq(ledger_incrby(L, "n", 1, 5, 30, 0, NOW, &r), LEDGER_RETRY);
    ck_assert_int_eq(r, 5); /* the retried increment is not applied twice */
    assert_value("n", "5", 30);

    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.idempotent_retries, 2);
    ck_assert_uint_eq(s.writes, 2);
    ck_assert_uint_eq(s.stale_stamp_rejects, 0);
}
END_TEST

START_TEST(older_stamp_refused_and_counted)
{
    int existed = -1;
    ck_assert_int_eq(set("k", "new", 20), HKV_OK);
    ck_assert_int_eq(set("k", "old", 10), HKV_ESTALE);
    ck_assert_int_eq(ledger_del(L, "k", 1, 5, NOW, &existed), HKV_ESTALE);
    ck_assert_int_eq(existed, 0);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(100), 15, NOW, NULL), HKV_ESTALE);
    assert_value("k", "new", 20);
    ck_assert_int_eq(ttl("k"), -1);
    ck_assert_uint_eq(stats().stale_stamp_rejects, 3);
    ck_assert_int_eq(set("k", "x", 0), HKV_EINVAL); /* stamp 0 is never a write */
}
END_TEST

START_TEST(tombstone_blocks_late_write)
{
    struct ledger_view v;
    int existed = 0;
    ck_assert_int_eq(set("k", "v", 10), HKV_OK);
    ck_assert_int_eq(ledger_del(L, "k", 1, 20, NOW, &existed), HKV_OK);
    ck_assert_int_eq(existed, 1);
    ck_assert_int_eq(get("k", &v), HKV_ENOENT);
    ck_assert_int_eq(v.found, 0);
    ck_assert_uint_eq(ledger_count(L), 0);
    ck_assert_uint_eq(stats().tombstones, 1);

    /* a write stamped before the delete arrives late, even after a persist */
    flush_all();
    NOW.mono_ms += TOMB_TTL - 1;
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 0);
    ck_assert_int_eq(set("k", "late", 15), HKV_ESTALE);
    ck_assert_int_eq(get("k", &v), HKV_ENOENT);
    /* a delete of a missing key also leaves its stamp behind */
    ck_assert_int_eq(ledger_del(L, "other", 5, 50, NOW, &existed), HKV_OK);
    ck_assert_int_eq(existed, 0);
    ck_assert_int_eq(set("other", "late", 40), HKV_ESTALE);
    /* a newer write brings the key back */
    ck_assert_int_eq(set("k", "again", 30), HKV_OK);
    assert_value("k", "again", 30);
}
END_TEST

START_TEST(tombstone_collected_after_horizon)
{
    ck_assert_int_eq(set("k", "v", 10), HKV_OK);
    ck_assert_int_eq(ledger_del(L, "k", 1, 20, NOW, NULL), HKV_OK);
    NOW.mono_ms += TOMB_TTL * 5;
    /* a dirty tombstone is kept however old: the disk has not seen it */
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 0);
    ck_assert_uint_eq(stats().tombstones, 1);
    ck_assert_uint_eq(flush_all(), 1);
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 1);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.tombstones, 0);
    ck_assert_uint_eq(s.tombstones_collected, 1);
    ck_assert_uint_eq(s.memory_bytes, s.buckets * sizeof(void *));
    /* past the horizon the stamp is forgotten */
    ck_assert_int_eq(set("k", "late", 15), HKV_OK);
}
END_TEST

START_TEST(expiry_uses_monotonic_clock)
{
    struct ledger_view v;
    ck_assert_int_eq(setx("k", "v", 10, 0, rel(5000), NULL), HKV_OK);
    ck_assert_int_eq(setx("a", "v", 11, 0, at(WALL0 + 2000), NULL), HKV_OK);
    ck_assert_int_eq(get("k", &v), HKV_OK);
    ck_assert_int_eq(v.expire_at_ms, WALL0 + 5000);

    NOW.wall_ms += DAY_MS; /* wall clock jumps a day, monotonic does not move */
    ck_assert_int_eq(get("k", &v), HKV_OK);
    ck_assert_int_eq(v.ttl_ms, 5000);
    ck_assert_int_eq(ttl("a"), 2000);
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 0);

    NOW.mono_ms += 1999;
    ck_assert_int_eq(ttl("a"), 1);
    NOW.mono_ms += 1;
    ck_assert_int_eq(ttl("a"), -2);
    NOW.mono_ms += 2999;
    ck_assert_int_eq(get("k", &v), HKV_OK);
    ck_assert_int_eq(v.ttl_ms, 1);
    NOW.mono_ms += 1;
    ck_assert_int_eq(get("k", &v), HKV_ENOENT);

    /* the sweep turns expired keys into tombstones that keep their stamps */
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 2);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.expired, 2);
    ck_assert_uint_eq(s.keys, 0);
    ck_assert_uint_eq(s.tombstones, 2);
    ck_assert_int_eq(set("k", "retry", 10), LEDGER_RETRY);
    ck_assert_int_eq(set("k", "new", 12), HKV_OK);
}
END_TEST

START_TEST(expired_key_accepts_any_newer_write)
{
    ck_assert_int_eq(setx("k", "v", 10, 0, rel(100), NULL), HKV_OK);
    NOW.mono_ms += 100;
    ck_assert_int_eq(setx("k", "w", 5, 0, NOEXP, NULL), HKV_ESTALE);
    ck_assert_int_eq(setx("k", "w", 11, LEDGER_NX, NOEXP, NULL), HKV_OK);
    assert_value("k", "w", 11);
}
END_TEST

START_TEST(nx_xx_get_keepttl_semantics)
{
    struct ledger_view old;
    ck_assert_int_eq(setx("k", "v1", 10, LEDGER_XX, NOEXP, NULL), HKV_ENOENT);
    ck_assert_int_eq(setx("k", "v1", 11, LEDGER_NX, NOEXP, NULL), HKV_OK);
    ck_assert_int_eq(setx("k", "v2", 12, LEDGER_NX, NOEXP, NULL), HKV_EEXIST);
    assert_value("k", "v1", 11);
    ck_assert_int_eq(setx("k", "v3", 13, LEDGER_XX, rel(9000), NULL), HKV_OK);
    assert_value("k", "v3", 13);
    ck_assert_int_eq(ttl("k"), 9000);

    /* GET returns the old value; the pointer outlives the write itself */
    ck_assert_int_eq(setx("k", "v4", 14, LEDGER_GET, KEEP, &old),
                     HKV_OK);
    ck_assert_int_eq(old.found, 1);
    ck_assert_uint_eq(old.vlen, 2);
    ck_assert_mem_eq(old.val, "v3", 2);
    ck_assert_uint_eq(old.stamp, 13);
    ck_assert_int_eq(ttl("k"), 9000); /* KEEPTTL */

    ck_assert_int_eq(setx("k", "v5", 15, LEDGER_GET, NOEXP, &old), HKV_OK);
    ck_assert_mem_eq(old.val, "v4", 2);
    ck_assert_int_eq(ttl("k"), -1); /* a plain SET clears the expiry */

    ck_assert_int_eq(setx("m", "x", 16, LEDGER_GET, NOEXP, &old), HKV_OK);
    ck_assert_int_eq(old.found, 0);
    ck_assert_int_eq(setx("m", "y", 17, LEDGER_GET | LEDGER_NX, NOEXP, &old), HKV_EEXIST);
    ck_assert_int_eq(old.found, 1);
    ck_assert_mem_eq(old.val, "x", 1);

    ck_assert_int_eq(setx("k", "z", 18, LEDGER_NX | LEDGER_XX, NOEXP, NULL), HKV_EINVAL);
    ck_assert_int_eq(setx("k", "z", 18, 0, rel(0), NULL), HKV_EINVAL);
    /* an absolute deadline already past deletes the key */
    ck_assert_int_eq(setx("k", "z", 19, 0, at(WALL0 - 1), NULL), HKV_OK);
    ck_assert_int_eq(ttl("k"), -2);
}
END_TEST

START_TEST(incrby)
{
    int64_t r = 0;
    ck_assert_int_eq(ledger_incrby(L, "n", 1, 7, 10, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, 7);
    ck_assert_int_eq(ledger_incrby(L, "n", 1, -10, 11, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, -3);
    assert_value("n", "-3", 11);

    const char *bad[] = {"abc", "12 ", " 12", "+5", "007", "-0", "", "1.5",
                         "9223372036854775808", "-9223372036854775809"};
    hkv_stamp s = 100;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(set("b", bad[i], s++), HKV_OK);
        ck_assert_int_eq(ledger_incrby(L, "b", 1, 1, s++, 0, NOW, &r), HKV_EINVAL);
    }
    ck_assert_int_eq(set("big", "9223372036854775807", s++), HKV_OK);
    ck_assert_int_eq(ledger_incrby(L, "big", 3, 1, s++, 0, NOW, &r), HKV_EINVAL);
    ck_assert_int_eq(ledger_incrby(L, "big", 3, -1, s++, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, INT64_MAX - 1);
    ck_assert_int_eq(set("small", "-9223372036854775808", s++), HKV_OK);
    ck_assert_int_eq(ledger_incrby(L, "small", 5, -1, s++, 0, NOW, &r), HKV_EINVAL);
    ck_assert_int_eq(ledger_incrby(L, "small", 5, 0, s++, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, INT64_MIN);

    /* the expiry is kept */
    ck_assert_int_eq(setx("t", "10", s++, 0, rel(10000), NULL), HKV_OK);
    NOW.mono_ms += 400;
    ck_assert_int_eq(ledger_incrby(L, "t", 1, 5, s++, 0, NOW, &r), HKV_OK);
    ck_assert_int_eq(r, 15);
    ck_assert_int_eq(ttl("t"), 9600);
}
END_TEST

START_TEST(expire_negative_deletes)
{
    int deleted = 0;
    ck_assert_int_eq(set("k", "v", 10), HKV_OK);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(-5), 20, NOW, &deleted), HKV_OK);
    ck_assert_int_eq(deleted, 1);
    ck_assert_int_eq(ttl("k"), -2);
    ck_assert_uint_eq(stats().tombstones, 1);
    ck_assert_int_eq(set("k", "late", 15), HKV_ESTALE); /* tombstone holds stamp 20 */

    ck_assert_int_eq(set("a", "v", 30), HKV_OK);
    ck_assert_int_eq(ledger_expire(L, "a", 1, at(WALL0 - DAY_MS), 31, NOW, &deleted), HKV_OK);
    ck_assert_int_eq(deleted, 1);
    ck_assert_int_eq(ttl("a"), -2);

    ck_assert_int_eq(set("b", "v", 40), HKV_OK);
    ck_assert_int_eq(ledger_expire(L, "b", 1, rel(2500), 41, NOW, &deleted), HKV_OK);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(ttl("b"), 2500);
    assert_value("b", "v", 41);

    ck_assert_int_eq(ledger_expire(L, "zz", 2, rel(100), 50, NOW, &deleted), HKV_ENOENT);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(100), 51, NOW, &deleted), HKV_ENOENT);
}
END_TEST

START_TEST(ttl_values)
{
    int changed = -1;
    ck_assert_int_eq(ttl("missing"), -2);
    ck_assert_int_eq(set("k", "v", 10), HKV_OK);
    ck_assert_int_eq(ttl("k"), -1);
    ck_assert_int_eq(setx("k", "v", 11, 0, rel(1500), NULL), HKV_OK);
    ck_assert_int_eq(ttl("k"), 1500);
    NOW.mono_ms += 500;
    ck_assert_int_eq(ttl("k"), 1000);
    ck_assert_int_eq(ledger_persist(L, "k", 1, 12, NOW, &changed), HKV_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(ttl("k"), -1);
    ck_assert_int_eq(ledger_persist(L, "k", 1, 13, NOW, &changed), HKV_OK);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_eq(ledger_persist(L, "nope", 4, 14, NOW, &changed), HKV_ENOENT);
}
END_TEST

START_TEST(dirty_collection_returns_one_row_per_key)
{
    char v[32];
    hkv_stamp s = 1;
    for (int i = 0; i < 100; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        ck_assert_int_eq(set("a", v, s++), HKV_OK);
        ck_assert_int_eq(set("b", v, s++), HKV_OK);
        ck_assert_int_eq(set("c", v, s++), HKV_OK);
    }
    ck_assert_int_eq(ledger_del(L, "c", 1, s++, NOW, NULL), HKV_OK);
    size_t dk = 0, db = 0;
    ledger_dirty(L, &dk, &db);
    ck_assert_uint_eq(dk, 3);
    ck_assert_uint_gt(db, 0);

    struct persist_batch *b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 100, NULL, NULL), 3);
    ck_assert_uint_eq(b->n, 3);
    for (size_t i = 0; i < b->n; i++) {
        struct persist_row *r = &b->rows[i];
        ck_assert_uint_eq(r->klen, 1);
        if (r->key[0] == 'c') {
            ck_assert_int_eq(r->tombstone, 1);
            ck_assert_ptr_null(r->val);
            ck_assert_uint_eq(r->stamp, 301);
        } else {
            ck_assert_int_eq(r->tombstone, 0);
            ck_assert_uint_eq(r->vlen, 3);
            ck_assert_mem_eq(r->val, "v99", 3);
            ck_assert_uint_eq(r->stamp, r->key[0] == 'a' ? 298 : 299);
        }
    }
    /* in flight: not collected twice, still dirty */
    ck_assert_int_eq(ledger_collect_dirty(L, b, 100, NULL, NULL), 0);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 3);
    persist_batch_free(&b);
}
END_TEST

static int only_class_7(uint16_t class_id, void *arg)
{
    (void)arg;
    return class_id == 7;
}

START_TEST(collect_filter_takes_only_chosen_classes)
{
    ck_assert_int_eq(ledger_set(L, "d", 1, "x", 1, 10, 7, 0, NOEXP, NOW, NULL), HKV_OK);
    ck_assert_int_eq(ledger_set(L, "e", 1, "x", 1, 11, 3, 0, NOEXP, NOW, NULL), HKV_OK);
    struct persist_batch *b = persist_batch_new(1);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, only_class_7, NULL), 1);
    ck_assert_mem_eq(b->rows[0].key, "d", 1);
    ck_assert_uint_eq(b->rows[0].class_id, 7);
    persist_batch_free(&b);
    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_mem_eq(b->rows[0].key, "e", 1);
    persist_batch_free(&b);
}
END_TEST

START_TEST(persisted_clears_only_matching_stamp)
{
    size_t dk = 0, db = 0;
    ck_assert_int_eq(set("k", "one", 10), HKV_OK);
    struct persist_batch *b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_int_eq(set("k", "two", 20), HKV_OK); /* written while on disk's way */
    ck_assert_int_eq(ledger_persisted(L, "k", 1, 10), HKV_ESTALE);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 1);
    persist_batch_free(&b);

    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].stamp, 20);
    ck_assert_mem_eq(b->rows[0].val, "two", 3);
    ck_assert_int_eq(ledger_persisted(L, "k", 1, 20), HKV_OK);
    ledger_dirty(L, &dk, &db);
    ck_assert_uint_eq(dk, 0);
    ck_assert_uint_eq(db, 0);
    persist_batch_free(&b);
    ck_assert_int_eq(ledger_persisted(L, "zz", 2, 20), HKV_ENOENT);

    /* a failed batch makes its keys collectable again */
    ck_assert_int_eq(set("k", "three", 30), HKV_OK);
    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    b->status = HKV_EIO;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].stamp, 30);
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 0);
}
END_TEST

static void put_value(const char *prefix, int i, hkv_stamp s, size_t vlen)
{
    char k[32], v[2048];
    memset(v, 'x', vlen);
    snprintf(k, sizeof(k), "%s%d", prefix, i);
    int rc = ledger_set(L, k, strlen(k), v, vlen, s, 0, 0, NOEXP, NOW, NULL);
    if (rc == HKV_EAGAIN) { /* incomplete: the owner asks SQLite first */
        ck_assert_int_eq(ledger_load_absent(L, k, strlen(k), NOW), HKV_OK);
        rc = ledger_set(L, k, strlen(k), v, vlen, s, 0, 0, NOEXP, NOW, NULL);
    }
    ck_assert_int_eq(rc, HKV_OK);
}

START_TEST(eviction_keeps_dirty_entries_and_marks_incomplete)
{
    const size_t bound = 64 * 1024;
    struct ledger_view v;
    char k[32];
    ledger_destroy(&L);
    L = make(bound, 1);
    for (int i = 0; i < 200; i++) /* ~200 KB, all dirty */
        put_value("d", i, (hkv_stamp)(i + 1), 1000);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_gt(s.memory_bytes, bound);
    ck_assert_int_eq(s.complete, 1);
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "d%d", i);
        ck_assert_int_eq(get(k, &v), HKV_OK);
    }

    ck_assert_uint_eq(flush_all(), 200); /* now clean: evictable */
    for (int i = 0; i < 20; i++)
        put_value("n", i, (hkv_stamp)(1000 + i), 1000);
    s = stats();
    ck_assert_uint_gt(s.evictions, 0);
    ck_assert_uint_le(s.memory_bytes, bound);
    ck_assert_int_eq(s.complete, 0);
    ck_assert_int_eq(ledger_is_complete(L), 0);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_EFULL);
    for (int i = 0; i < 20; i++) { /* every dirty entry is still here */
        snprintf(k, sizeof(k), "n%d", i);
        ck_assert_int_eq(get(k, &v), HKV_OK);
        ck_assert_uint_eq(v.vlen, 1000);
    }
    int agains = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "d%d", i);
        int rc = get(k, &v);
        ck_assert(rc == HKV_OK || rc == HKV_EAGAIN);
        agains += rc == HKV_EAGAIN;
    }
    ck_assert_int_eq(agains, (int)s.evictions);
    /* a write to an evicted key must first learn its stamp */
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "d%d", i);
        if (get(k, &v) == HKV_EAGAIN) {
            ck_assert_int_eq(set(k, "w", 5000), HKV_EAGAIN);
            int64_t t;
            ck_assert_int_eq(ledger_ttl(L, k, strlen(k), NOW, &t), HKV_EAGAIN);
            break;
        }
    }
}
END_TEST

static struct persist_row row(const char *k, const char *v, hkv_stamp s, int64_t exp_wall)
{
    struct persist_row r = {.key = (char *)k, .klen = strlen(k), .val = (char *)v,
                            .vlen = v ? strlen(v) : 0, .stamp = s, .expire_at_ms = exp_wall,
                            .class_id = 2, .tombstone = v == NULL};
    return r;
}

START_TEST(load_does_not_overwrite_newer)
{
    struct ledger_view v;
    struct persist_row r;
    size_t dk = 0;
    ck_assert_int_eq(set("k", "new", 20), HKV_OK);
    r = row("k", "old", 10, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    r = row("k", "same", 20, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    assert_value("k", "new", 20);
    ck_assert_int_eq(ledger_del(L, "t", 1, 40, NOW, NULL), HKV_OK);
    r = row("t", "resurrect", 30, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    ck_assert_int_eq(get("t", &v), HKV_ENOENT);

    flush_all();
    r = row("fresh", "disk", 5, WALL0 + 3000);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_value("fresh", "disk", 5);
    ck_assert_int_eq(ttl("fresh"), 3000);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 0); /* loaded entries are clean */
    r = row("gone", "disk", 5, WALL0 - 1);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    ck_assert_int_eq(get("gone", &v), HKV_ENOENT);
    r = row("k", "newer-on-disk", 25, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_value("k", "newer-on-disk", 25);
}
END_TEST

START_TEST(incomplete_ledger_answers_not_resident)
{
    struct ledger_view v;
    int64_t t;
    ledger_destroy(&L);
    L = make(0, 0);
    ck_assert_int_eq(get("k", &v), HKV_EAGAIN);
    ck_assert_int_eq(ledger_ttl(L, "k", 1, NOW, &t), HKV_EAGAIN);
    ck_assert_int_eq(set("k", "v", 10), HKV_EAGAIN);
    ck_assert_int_eq(ledger_del(L, "k", 1, 10, NOW, NULL), HKV_EAGAIN);
    /* the reader thread found nothing: the miss becomes authoritative */
    ck_assert_int_eq(ledger_load_absent(L, "k", 1, NOW), HKV_OK);
    ck_assert_int_eq(get("k", &v), HKV_ENOENT);
    ck_assert_int_eq(set("k", "v", 10), HKV_OK);
    ck_assert_int_eq(ledger_load_absent(L, "k", 1, NOW), HKV_EEXIST);
    /* a tombstone row from disk is a miss too, and guards its stamp */
    struct persist_row r = row("d", NULL, 50, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    ck_assert_int_eq(get("d", &v), HKV_ENOENT);
    ck_assert_int_eq(set("d", "late", 40), HKV_ESTALE);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
    ck_assert_int_eq(get("never", &v), HKV_ENOENT);
}
END_TEST

struct seen {
    unsigned char *bits;
    size_t n, total;
};

static void mark_seen(const char *key, size_t klen, void *arg)
{
    struct seen *s = arg;
    s->total++;
    if (klen > 4 && klen < 32 && memcmp(key, "orig", 4) == 0) {
        char buf[32]; /* keys are binary: not NUL-terminated */
        memcpy(buf, key + 4, klen - 4);
        buf[klen - 4] = '\0';
        int i = atoi(buf);
        ck_assert_int_lt(i, (int)s->n);
        s->bits[i] = 1;
    }
}

START_TEST(scan_returns_every_key_across_a_resize)
{
    enum { ORIG = 10000 };
    char k[32];
    hkv_stamp s = 1;
    for (int i = 0; i < ORIG; i++) {
        int n = snprintf(k, sizeof(k), "orig%d", i);
        ck_assert_int_eq(ledger_set(L, k, (size_t)n, "v", 1, s++, 0, 0, NOEXP, NOW, NULL),
                         HKV_OK);
    }
    struct seen seen = {calloc(ORIG, 1), ORIG, 0};
    uint64_t cursor = 0;
    int extra = 0, calls = 0, saw_rehash = 0;
    struct ledger_stats st0 = stats();
    do {
        cursor = ledger_scan(L, cursor, 100, NULL, 0, NOW, mark_seen, &seen);
        calls++;
        for (int j = 0; j < 300; j++) { /* grow the table under the cursor */
            int n = snprintf(k, sizeof(k), "more%d", extra++);
            ck_assert_int_eq(ledger_set(L, k, (size_t)n, "v", 1, s++, 0, 0, NOEXP, NOW, NULL),
                             HKV_OK);
        }
        saw_rehash |= stats().rehashing;
    } while (cursor != 0);
    for (int i = 0; i < ORIG; i++)
        ck_assert_msg(seen.bits[i], "orig%d not seen", i);
    ck_assert_int_eq(saw_rehash, 1);
    ck_assert_uint_gt(stats().buckets, st0.buckets);
    ck_assert_uint_eq(ledger_count(L), (size_t)(ORIG + extra));
    for (int i = 0; i < extra; i++) { /* the incremental resize lost nothing */
        int n = snprintf(k, sizeof(k), "more%d", i);
        ck_assert_int_eq(ledger_get(L, k, (size_t)n, NOW, &(struct ledger_view){0}), HKV_OK);
    }
    free(seen.bits);
}
END_TEST

static void count_key(const char *key, size_t klen, void *arg)
{
    (void)key;
    (void)klen;
    (*(int *)arg)++;
}

START_TEST(scan_pattern_filters_and_skips_dead_keys)
{
    int n = 0;
    ck_assert_int_eq(set("user:1", "a", 1), HKV_OK);
    ck_assert_int_eq(set("user:12", "a", 2), HKV_OK);
    ck_assert_int_eq(set("user:2", "a", 3), HKV_OK);
    ck_assert_int_eq(set("item:1", "a", 4), HKV_OK);
    ck_assert_int_eq(ledger_del(L, "user:2", 6, 5, NOW, NULL), HKV_OK);
    uint64_t c = 0;
    do
        c = ledger_scan(L, c, 10, "user:*", 6, NOW, count_key, &n);
    while (c != 0);
    ck_assert_int_eq(n, 2);
    n = 0;
    do
        c = ledger_scan(L, c, 10, "[iu]*:?", 7, NOW, count_key, &n);
    while (c != 0);
    ck_assert_int_eq(n, 2);
    n = 0;
    do
        c = ledger_scan(L, c, 10, "*[^1]", 5, NOW, count_key, &n);
    while (c != 0);
    ck_assert_int_eq(n, 1); /* user:12 */
}
END_TEST

START_TEST(counters_and_memory_track_changes)
{
    struct ledger_stats s0 = stats(), s;
    struct ledger_view v;
    ck_assert_int_eq(set("k", "12345", 1), HKV_OK);
    s = stats();
    ck_assert_uint_gt(s.memory_bytes, s0.memory_bytes);
    ck_assert_uint_eq(s.keys, 1);
    ck_assert_uint_eq(s.dirty_keys, 1);
    ck_assert_uint_eq(s.dirty_bytes, s.memory_bytes - s.buckets * sizeof(void *));
    uint64_t m1 = s.memory_bytes;
    ck_assert_int_eq(set("k", "1234567890", 2), HKV_OK);
    ck_assert_uint_eq(stats().memory_bytes, m1 + 5);
    ck_assert_int_eq(get("k", &v), HKV_OK);
    ck_assert_int_eq(get("x", &v), HKV_ENOENT);
    s = stats();
    ck_assert_uint_eq(s.reads, 2);
    ck_assert_uint_eq(s.writes, 2);
}
END_TEST

Suite *ledger_suite(void)
{
    Suite *s = suite_create("ledger");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"newer_stamp_wins", newer_stamp_wins},
        {"equal_stamp_is_idempotent", equal_stamp_is_idempotent},
        {"older_stamp_refused_and_counted", older_stamp_refused_and_counted},
        {"tombstone_blocks_late_write", tombstone_blocks_late_write},
        {"tombstone_collected_after_horizon", tombstone_collected_after_horizon},
        {"expiry_uses_monotonic_clock", expiry_uses_monotonic_clock},
        {"expired_key_accepts_any_newer_write", expired_key_accepts_any_newer_write},
        {"nx_xx_get_keepttl_semantics", nx_xx_get_keepttl_semantics},
        {"incrby", incrby},
        {"expire_negative_deletes", expire_negative_deletes},
        {"ttl_values", ttl_values},
        {"dirty_collection_returns_one_row_per_key", dirty_collection_returns_one_row_per_key},
        {"collect_filter_takes_only_chosen_classes", collect_filter_takes_only_chosen_classes},
        {"persisted_clears_only_matching_stamp", persisted_clears_only_matching_stamp},
        {"eviction_keeps_dirty_entries_and_marks_incomplete",
         eviction_keeps_dirty_entries_and_marks_incomplete},
        {"load_does_not_overwrite_newer", load_does_not_overwrite_newer},
        {"incomplete_ledger_answers_not_resident", incomplete_ledger_answers_not_resident},
        {"scan_returns_every_key_across_a_resize", scan_returns_every_key_across_a_resize},
        {"scan_pattern_filters_and_skips_dead_keys", scan_pattern_filters_and_skips_dead_keys},
        {"counters_and_memory_track_changes", counters_and_memory_track_changes},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

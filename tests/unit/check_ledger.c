/* check_ledger.c - the owner's in-memory map: the versions it issues, expiry,
 * dirty tracking, eviction, loading and scanning. */
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

static struct ledger *make_writer(size_t maxmemory, int complete, uint32_t writer)
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

static struct ledger *make(size_t maxmemory, int complete)
{
    return make_writer(maxmemory, complete, WRITER);
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

/* A version no write can hold: shows whether a call wrote *version. */
#define UNSET ((hkv_stamp)0x5555)

static int setx(const char *k, const char *v, unsigned flags, struct ledger_expiry e,
                struct ledger_view *old, hkv_stamp *version)
{
    return ledger_set(L, k, strlen(k), v, strlen(v), 0, flags, e, NOW, old, version);
}

/* A plain SET that must apply; returns its version. */
static hkv_stamp put(const char *k, const char *v)
{
    hkv_stamp ver = UNSET;
    ck_assert_int_eq(setx(k, v, 0, NOEXP, NULL, &ver), HKV_OK);
    ck_assert_uint_ne(ver, UNSET);
    ck_assert_uint_ne(ver, 0);
    return ver;
}

/* A DEL that must apply; returns the tombstone's version. */
static hkv_stamp del(const char *k, int *existed)
{
    hkv_stamp ver = UNSET;
    ck_assert_int_eq(ledger_del(L, k, strlen(k), 0, NOW, existed, NULL, &ver), HKV_OK);
    ck_assert_uint_ne(ver, UNSET);
    ck_assert_uint_ne(ver, 0);
    return ver;
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

/* The key is missing for sure, and the absence carries this version. */
static void assert_missing(const char *k, hkv_stamp stamp)
{
    struct ledger_view v;
    ck_assert_int_eq(get(k, &v), HKV_ENOENT);
    ck_assert_int_eq(v.found, 0);
    ck_assert_uint_eq(v.stamp, stamp);
}

/* v is newer than *last; *last becomes v. */
static void newer(hkv_stamp *last, hkv_stamp v)
{
    ck_assert_msg(v > *last, "version %#llx not newer than %#llx", (unsigned long long)v,
                  (unsigned long long)*last);
    *last = v;
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

/* A stamp from another writer at unix time wall_ms. */
static hkv_stamp stamp_at(int64_t wall_ms, uint32_t counter, uint32_t writer)
{
    return stamp_make((uint64_t)(wall_ms - (int64_t)STAMP_EPOCH_MS), counter, writer);
}

static struct persist_row row(const char *k, const char *v, hkv_stamp s, int64_t exp_wall)
{
    struct persist_row r = {.key = (char *)k, .klen = strlen(k), .val = (char *)v,
                            .vlen = v ? strlen(v) : 0, .stamp = s, .expire_at_ms = exp_wall,
                            .class_id = 2, .tombstone = v == NULL};
    return r;
}

/* ---- versions ---------------------------------------------------------- */

START_TEST(each_write_gets_a_newer_version)
{
    hkv_stamp v1 = put("k", "v1");
    hkv_stamp v2 = put("k", "v2");
    ck_assert_uint_gt(v2, v1);
    assert_value("k", "v2", v2);
    ck_assert_uint_eq(stats().writes, 2);
    ck_assert_uint_eq(ledger_count(L), 1);
    /* a hybrid logical clock: the first version's time part is the wall clock */
    ck_assert_uint_eq(stamp_ms(v1), (uint64_t)(WALL0 - (int64_t)STAMP_EPOCH_MS));
}
END_TEST

START_TEST(versions_increase_across_every_kind_of_write)
{
    hkv_stamp last = 0, ver;
    int64_t r = 0;
    int flag = -1, existed = -1;
    struct ledger_view old;

    newer(&last, put("k", "1")); /* SET */
    ver = UNSET;
    ck_assert_int_eq(setx("k", "2", LEDGER_NX, NOEXP, NULL, &ver), HKV_EEXIST);
    ck_assert_uint_eq(ver, last); /* NX refused: the key keeps its version */
    assert_value("k", "1", last);
    ver = UNSET;
    ck_assert_int_eq(setx("k", "3", LEDGER_XX, NOEXP, NULL, &ver), HKV_OK);
    newer(&last, ver); /* SET XX */
    ver = UNSET;
    ck_assert_int_eq(ledger_incrby(L, "k", 1, 4, 0, NOW, &r, &ver), HKV_OK);
    ck_assert_int_eq(r, 7);
    newer(&last, ver); /* INCRBY */
    assert_value("k", "7", last);
    ver = UNSET;
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(5000), NOW, &flag, &ver), HKV_OK);
    ck_assert_int_eq(flag, 0);
    newer(&last, ver); /* EXPIRE to the future */
    ver = UNSET;
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &flag, &ver), HKV_OK);
    ck_assert_int_eq(flag, 1);
    newer(&last, ver); /* PERSIST of a key with a TTL */
    ver = UNSET;
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &flag, &ver), HKV_OK);
    ck_assert_int_eq(flag, 0);
    ck_assert_uint_eq(ver, last); /* PERSIST without a TTL writes nothing */
    ver = UNSET;
    ck_assert_int_eq(ledger_expire(L, "k", 1, at(WALL0 - 1), NOW, &flag, &ver), HKV_OK);
    ck_assert_int_eq(flag, 1);
    newer(&last, ver); /* EXPIRE to the past: a tombstone */
    assert_missing("k", last);

    /* writes refused on the tombstone report its version */
    ver = UNSET;
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(10), NOW, &flag, &ver), HKV_ENOENT);
    ck_assert_uint_eq(ver, last);
    ver = UNSET;
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &flag, &ver), HKV_ENOENT);
    ck_assert_uint_eq(ver, last);
    ver = UNSET;
    ck_assert_int_eq(setx("k", "x", LEDGER_XX, NOEXP, NULL, &ver), HKV_ENOENT);
    ck_assert_uint_eq(ver, last);

    newer(&last, del("k", &existed)); /* DEL of a missing key still writes */
    ck_assert_int_eq(existed, 0);
    assert_missing("k", last);
    ver = UNSET;
    ck_assert_int_eq(setx("k", "abc", LEDGER_NX, NOEXP, NULL, &ver), HKV_OK);
    newer(&last, ver); /* SET NX over a tombstone */
    ver = UNSET;
    ck_assert_int_eq(ledger_incrby(L, "k", 1, 1, 0, NOW, &r, &ver), HKV_EINVAL);
    ck_assert_uint_eq(ver, last); /* INCRBY of a non-integer: nothing applied */
    assert_value("k", "abc", last);
    ver = UNSET;
    ck_assert_int_eq(ledger_del(L, "k", 1, 0, NOW, &existed, &old, &ver), HKV_OK);
    ck_assert_int_eq(existed, 1);
    newer(&last, ver); /* GETDEL */
    ver = UNSET;
    ck_assert_int_eq(ledger_incrby(L, "k", 1, 1, 0, NOW, &r, &ver), HKV_OK);
    ck_assert_int_eq(r, 1);
    newer(&last, ver); /* INCRBY of a missing key */
    assert_value("k", "1", last);

    /* a key's first version is newer than every version issued before */
    ver = UNSET;
    ck_assert_int_eq(ledger_persist(L, "fresh", 5, NOW, &flag, &ver), HKV_ENOENT);
    ck_assert_uint_eq(ver, 0); /* no key, no version */
    newer(&last, put("fresh", "x"));
    /* only applied writes count */
    ck_assert_uint_eq(stats().writes, 11);
}
END_TEST

START_TEST(write_after_loading_a_future_row_gets_a_newer_version)
{
    /* a row stamped an hour ahead of this host's clock (another writer's skew) */
    hkv_stamp future = stamp_at(WALL0 + HOUR_MS, 5, 7);
    struct persist_row r = row("f", "from-the-future", future, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_value("f", "from-the-future", future);
    /* the ledger's clock moved past the row: even a key that never had a
     * version gets a newer one */
    hkv_stamp w = put("other", "x");
    ck_assert_uint_gt(w, future);
    hkv_stamp v = put("f", "now");
    ck_assert_uint_gt(v, w);
    assert_value("f", "now", v);
    ck_assert_uint_eq(stamp_writer(v), WRITER);

    /* a tombstone row from further ahead */
    hkv_stamp later = stamp_at(WALL0 + 2 * HOUR_MS, 0, 9);
    r = row("t", NULL, later, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_missing("t", later);
    int64_t n = 0;
    hkv_stamp v2 = UNSET;
    ck_assert_int_eq(ledger_incrby(L, "n", 1, 1, 0, NOW, &n, &v2), HKV_OK);
    ck_assert_uint_gt(v2, later);
    hkv_stamp v3 = put("t", "back");
    ck_assert_uint_gt(v3, v2);
    assert_value("t", "back", v3);
}
END_TEST

START_TEST(same_millisecond_writes_are_ordered_by_call_order)
{
    /* NOW does not move in this test */
    hkv_stamp v1 = put("k", "first");
    hkv_stamp v2 = put("k", "second");
    ck_assert_uint_gt(v2, v1);
    assert_value("k", "second", v2);
    hkv_stamp v3 = put("j", "third"); /* another key: newer still */
    ck_assert_uint_gt(v3, v2);

    /* more writes in one ms than the counter holds: still in call order */
    hkv_stamp last = v3;
    char v[16];
    int i;
    for (i = 0; i < 3 * (int)(STAMP_COUNTER_MAX + 1); i++) {
        snprintf(v, sizeof(v), "%d", i);
        newer(&last, put(i % 2 ? "k" : "j", v));
        ck_assert_uint_eq(stamp_writer(last), WRITER);
    }
    snprintf(v, sizeof(v), "%d", i - 1); /* odd: the last write went to k */
    assert_value("k", v, last);
}
END_TEST

START_TEST(wall_clock_going_back_does_not_make_versions_go_back)
{
    hkv_stamp last = 0, ver;
    int64_t r = 0;
    int flag = 0;
    newer(&last, put("k", "a"));
    uint64_t t0 = stamp_ms(last);

    NOW.wall_ms -= DAY_MS; /* an NTP step back; monotonic time goes on */
    NOW.mono_ms += 10;
    newer(&last, put("k", "b"));
    newer(&last, put("new", "c")); /* a key with no version yet */
    ck_assert_int_eq(ledger_incrby(L, "n", 1, 1, 0, NOW, &r, &ver), HKV_OK);
    newer(&last, ver);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(1000), NOW, &flag, &ver), HKV_OK);
    newer(&last, ver);
    newer(&last, del("new", NULL));
    ck_assert_uint_ge(stamp_ms(last), t0);
    NOW.wall_ms = 0; /* a clock that reads the 1970 epoch */
    newer(&last, put("k", "d"));
    assert_value("k", "d", last);

    /* once the clock passes the last version's time, versions follow it again */
    NOW.wall_ms = WALL0 + 5000;
    newer(&last, put("k", "e"));
    ck_assert_uint_eq(stamp_ms(last), (uint64_t)(WALL0 + 5000 - (int64_t)STAMP_EPOCH_MS));
    assert_value("k", "e", last);
}
END_TEST

START_TEST(getdel_returns_the_old_value_and_leaves_a_tombstone)
{
    struct ledger_view old;
    int existed = -1;
    hkv_stamp v1 = UNSET, ver = UNSET;
    ck_assert_int_eq(setx("k", "hello", 0, rel(5000), NULL, &v1), HKV_OK);
    ck_assert_int_eq(ledger_del(L, "k", 1, 0, NOW, &existed, &old, &ver), HKV_OK);
    ck_assert_int_eq(existed, 1);
    ck_assert_int_eq(old.found, 1);
    ck_assert_uint_eq(old.vlen, 5);
    ck_assert_mem_eq(old.val, "hello", 6); /* NUL-terminated */
    ck_assert_uint_eq(old.stamp, v1);
    ck_assert_int_eq(old.ttl_ms, 5000);
    ck_assert_uint_gt(ver, v1);
    assert_missing("k", ver);
    ck_assert_mem_eq(old.val, "hello", 6); /* a read leaves the old value valid */
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.tombstones, 1);
    ck_assert_uint_eq(s.keys, 0);

    /* a missing key: no old value, and still a tombstone with a new version */
    hkv_stamp v2 = UNSET;
    ck_assert_int_eq(ledger_del(L, "k", 1, 0, NOW, &existed, &old, &v2), HKV_OK);
    ck_assert_int_eq(existed, 0);
    ck_assert_int_eq(old.found, 0);
    ck_assert_ptr_null(old.val);
    ck_assert_uint_gt(v2, ver);
    assert_missing("k", v2);

    /* an expired key is missing: no old value */
    ck_assert_int_eq(setx("e", "soon", 0, rel(100), NULL, NULL), HKV_OK);
    NOW.mono_ms += 100;
    hkv_stamp v3 = UNSET;
    ck_assert_int_eq(ledger_del(L, "e", 1, 0, NOW, &existed, &old, &v3), HKV_OK);
    ck_assert_int_eq(existed, 0);
    ck_assert_int_eq(old.found, 0);
    ck_assert_uint_gt(v3, v2);

    /* a value replaced many times: GETDEL sees the latest one */
    for (int i = 0; i < 10; i++)
        put("m", i % 2 ? "odd" : "even");
    ck_assert_int_eq(ledger_del(L, "m", 1, 0, NOW, &existed, &old, NULL), HKV_OK);
    ck_assert_int_eq(old.found, 1);
    ck_assert_uint_eq(old.vlen, 3);
    ck_assert_mem_eq(old.val, "odd", 4);
}
END_TEST

START_TEST(versions_carry_the_writer_bits)
{
    hkv_stamp vs[7];
    int n = 0, flag = 0;
    int64_t r = 0;
    vs[n++] = put("k", "1");
    ck_assert_int_eq(ledger_incrby(L, "k", 1, 1, 0, NOW, &r, &vs[n++]), HKV_OK);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(100), NOW, &flag, &vs[n++]), HKV_OK);
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &flag, &vs[n++]), HKV_OK);
    ck_assert_int_eq(ledger_del(L, "k", 1, 0, NOW, NULL, NULL, &vs[n++]), HKV_OK);
    /* after a row from a writer with greater writer bits, same ms and counter */
    hkv_stamp theirs = stamp_at(WALL0 + 1, 3, STAMP_WRITER_MAX);
    struct persist_row rw = row("o", "x", theirs, 0);
    ck_assert_int_eq(ledger_load(L, &rw, NOW), HKV_OK);
    vs[n++] = put("o", "y");
    ck_assert_uint_gt(vs[n - 1], theirs);
    vs[n++] = put("p", "z");
    for (int i = 0; i < n; i++)
        ck_assert_msg(stamp_writer(vs[i]) == WRITER, "version %d: writer %#x", i,
                      stamp_writer(vs[i]));

    /* each ledger issues its own writer's versions */
    struct ledger *l2 = make_writer(0, 1, 1);
    hkv_stamp v = UNSET;
    ck_assert_int_eq(ledger_set(l2, "k", 1, "v", 1, 0, 0, NOEXP, NOW, NULL, &v), HKV_OK);
    ck_assert_uint_eq(stamp_writer(v), 1);
    ledger_destroy(&l2);
}
END_TEST

/* ---- tombstones and expiry --------------------------------------------- */

START_TEST(delete_leaves_a_tombstone_with_its_version)
{
    int existed = 0;
    hkv_stamp v1 = put("k", "v");
    hkv_stamp d = del("k", &existed);
    ck_assert_int_eq(existed, 1);
    ck_assert_uint_gt(d, v1);
    assert_missing("k", d);
    ck_assert_uint_eq(ledger_count(L), 0);
    ck_assert_uint_eq(stats().tombstones, 1);

    /* persisted, inside the horizon: the tombstone and its version stay */
    ck_assert_uint_eq(flush_all(), 1);
    NOW.mono_ms += TOMB_TTL - 1;
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 0);
    assert_missing("k", d);

    /* a delete of a key never seen leaves a dirty tombstone with a new version */
    hkv_stamp d2 = del("other", &existed);
    ck_assert_int_eq(existed, 0);
    ck_assert_uint_gt(d2, d);
    assert_missing("other", d2);
    struct persist_batch *b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].klen, 5);
    ck_assert_mem_eq(b->rows[0].key, "other", 5);
    ck_assert_int_eq(b->rows[0].tombstone, 1);
    ck_assert_uint_eq(b->rows[0].stamp, d2);
    persist_batch_free(&b);

    /* a write brings the key back under a newer version */
    hkv_stamp v2 = put("k", "again");
    ck_assert_uint_gt(v2, d2);
    assert_value("k", "again", v2);
}
END_TEST

START_TEST(tombstone_collected_after_horizon)
{
    put("k", "v");
    hkv_stamp d = del("k", NULL);
    NOW.mono_ms += TOMB_TTL * 5;
    /* a dirty tombstone is kept however old: the disk has not seen it */
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 0);
    ck_assert_uint_eq(stats().tombstones, 1);
    ck_assert_uint_eq(flush_all(), 1);
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 1);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.tombstones, 0);
    ck_assert_uint_eq(s.tombstones_collected, 1);
    ck_assert_uint_eq(s.memory_bytes, s.buckets * sizeof(void *) + s.order_bytes);
    assert_missing("k", 0); /* nothing resident any more */
    /* the entry is gone, not the clock: the next write is still newer */
    ck_assert_uint_gt(put("k", "later"), d);
}
END_TEST

/* Active expiry: keys whose deadline passed leave within one sweep call even
 * when the bucket walk is far from them (a big table, budget 1), the gauges
 * follow, and rewriting a deadline many times expires the key once, at its
 * last deadline. */
START_TEST(due_keys_expire_at_once_in_a_big_table)
{
    char k[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(k, sizeof(k), "plain:%d", i);
        put(k, "v");
    }
    for (int i = 0; i < 3; i++) {
        snprintf(k, sizeof(k), "short:%d", i);
        ck_assert_int_eq(setx(k, "v", 0, rel(50), NULL, NULL), HKV_OK);
    }
    ck_assert_int_eq(setx("long", "v", 0, rel(DAY_MS), NULL, NULL), HKV_OK);
    /* one key's deadline rewritten 10,000 times: only the last one counts */
    for (int i = 0; i < 10000; i++)
        ck_assert_int_eq(setx("churn", "v", 0, rel(30 + i % 7), NULL, NULL), HKV_OK);
    ck_assert_int_eq(setx("churn", "v", 0, rel(5000), NULL, NULL), HKV_OK);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.keys, 20005);
    ck_assert_uint_eq(s.expires, 5);
    uint64_t avg = s.expire_mono_sum / s.expires - (uint64_t)NOW.mono_ms;
    ck_assert_uint_eq(avg, (uint64_t)(3 * 50 + DAY_MS + 5000) / 5);

    NOW.mono_ms += 49;
    ck_assert_uint_eq(ledger_sweep(L, NOW, 1), 0);      /* nothing due yet */
    NOW.mono_ms += 1;
    ledger_sweep(L, NOW, 1);                            /* budget 1: one bucket walked */
    s = stats();
    ck_assert_uint_eq(s.keys, 20002);
    ck_assert_uint_eq(s.expired, 3);
    ck_assert_uint_eq(s.expires, 2);
    ck_assert_int_eq(ttl("churn"), 4950);              /* its old deadlines did nothing */
    NOW.mono_ms += 4950;
    ck_assert_uint_eq(ledger_expire_due(L, NOW, 64), 1);
    struct ledger_view v;
    ck_assert_int_eq(get("churn", &v), HKV_ENOENT);     /* gone, as a tombstone */
    s = stats();
    ck_assert_uint_eq(s.expires, 1);
    ck_assert_uint_eq(s.keys, 20001);
    /* PERSIST and overwrite without a deadline take a key off the gauges */
    ck_assert_int_eq(ledger_persist(L, "long", 4, NOW, NULL, NULL), HKV_OK);
    ck_assert_uint_eq(stats().expires, 0);
    ck_assert_uint_eq(stats().expire_mono_sum, 0);
}
END_TEST

/* ledger_rmw: APPEND-like computing over the live value, TTL kept, errors
 * and "no change" pass through without a new version. */
struct app { const char *add; char buf[64]; };
static int do_append(void *arg, const char *cur, size_t curlen, int found, const char **val,
                     size_t *vlen)
{
    struct app *a = arg;
    if (strcmp(a->add, "!") == 0)
        return HKV_EINVAL;
    if (a->add[0] == '\0')
        return 0;
    int n = snprintf(a->buf, sizeof(a->buf), "%.*s%s", (int)curlen, found ? cur : "", a->add);
    *val = a->buf;
    *vlen = (size_t)n;
    return 1;
}

START_TEST(rmw_computes_over_the_live_value_and_keeps_the_ttl)
{
    struct app a = {.add = "ab"};
    int changed;
    hkv_stamp v1, v2, v3;
    ck_assert_int_eq(ledger_rmw(L, "k", 1, 0, do_append, &a, NOW, &changed, &v1), HKV_OK);
    ck_assert_int_eq(changed, 1);
    assert_value("k", "ab", v1);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(5000), NOW, NULL, NULL), HKV_OK);
    a.add = "cd";
    ck_assert_int_eq(ledger_rmw(L, "k", 1, 0, do_append, &a, NOW, &changed, &v2), HKV_OK);
    ck_assert_uint_gt(v2, v1);
    ck_assert_int_eq(ttl("k"), 5000);
    a.add = "";
    ck_assert_int_eq(ledger_rmw(L, "k", 1, 0, do_append, &a, NOW, &changed, &v3), HKV_OK);
    ck_assert_int_eq(changed, 0);
    ck_assert_uint_eq(v3, v2); /* unchanged: the current version */
    a.add = "!";
    ck_assert_int_eq(ledger_rmw(L, "k", 1, 0, do_append, &a, NOW, &changed, &v3), HKV_EINVAL);
    ck_assert_int_eq(changed, 0);
    struct ledger_view v;
    ck_assert_int_eq(get("k", &v), HKV_OK);
    ck_assert_str_eq(v.val, "abcd");
    ck_assert_uint_eq(v.stamp, v2);
}
END_TEST

START_TEST(move_renames_copies_and_refuses_as_redis)
{
    int applied;
    hkv_stamp sv, dv;
    ck_assert_int_eq(ledger_move(L, "a", 1, "b", 1, 0, 0, NOW, &applied, &sv, &dv), HKV_ENOENT);
    hkv_stamp va = put("a", "va");
    ck_assert_int_eq(ledger_expire(L, "a", 1, rel(9000), NOW, NULL, NULL), HKV_OK);
    /* RENAME a b: b gets the value and the deadline, a is a tombstone */
    ck_assert_int_eq(ledger_move(L, "a", 1, "b", 1, 0, 0, NOW, &applied, &sv, &dv), HKV_OK);
    ck_assert_int_eq(applied, 1);
    ck_assert_uint_gt(sv, va);
    assert_missing("a", sv);
    assert_value("b", "va", dv);
    ck_assert_int_eq(ttl("b"), 9000);
    /* RENAMENX onto a live key does nothing */
    put("c", "vc");
    ck_assert_int_eq(ledger_move(L, "c", 1, "b", 1, 0, LEDGER_MOVE_NX, NOW, &applied, &sv, &dv),
                     HKV_OK);
    ck_assert_int_eq(applied, 0);
    assert_value("b", "va", dv);
    /* COPY c b REPLACE: both live afterwards */
    ck_assert_int_eq(ledger_move(L, "c", 1, "b", 1, 0, LEDGER_MOVE_COPY, NOW, &applied, &sv, &dv),
                     HKV_OK);
    ck_assert_int_eq(applied, 1);
    assert_value("b", "vc", dv);
    assert_value("c", "vc", sv);
    ck_assert_int_eq(ttl("b"), -1);
    /* RENAME k k is OK, COPY k k is an error, RENAMENX k k is 0 */
    ck_assert_int_eq(ledger_move(L, "c", 1, "c", 1, 0, 0, NOW, &applied, &sv, &dv), HKV_OK);
    ck_assert_int_eq(applied, 1);
    ck_assert_int_eq(ledger_move(L, "c", 1, "c", 1, 0, LEDGER_MOVE_NX, NOW, &applied, &sv, &dv),
                     HKV_OK);
    ck_assert_int_eq(applied, 0);
    ck_assert_int_eq(ledger_move(L, "c", 1, "c", 1, 0, LEDGER_MOVE_COPY, NOW, &applied, &sv, &dv),
                     HKV_EINVAL);
    /* an incomplete ledger: a non-resident key changes nothing */
    ledger_destroy(&L);
    L = make(0, 0);
    struct persist_row r = row("x", "vx", stamp_at(WALL0, 1, WRITER), 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    ck_assert_int_eq(ledger_move(L, "x", 1, "y", 1, 0, 0, NOW, &applied, &sv, &dv), HKV_EAGAIN);
    struct ledger_view v;
    ck_assert_int_eq(get("x", &v), HKV_OK);
    ck_assert_int_eq(stats().writes, 0);
}
END_TEST

static void count_live(const char *k, size_t klen, void *arg)
{
    (void)k;
    (void)klen;
    (*(size_t *)arg)++;
}

/* After 10,000 SET+DEL, SCAN of the 100 live keys takes about as many calls
 * as Redis's (10 with COUNT 10), not one per 100 buckets of tombstones, and
 * once the tombstones are collected the table shrinks. */
START_TEST(scan_after_mass_deletes_is_not_mostly_empty_pages)
{
    char k[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(k, sizeof(k), "gone:%d", i);
        put(k, "v");
        del(k, NULL);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "live:%d", i);
        put(k, "v");
    }
    size_t seen = 0, calls = 0;
    uint64_t cur = 0;
    do {
        cur = ledger_scan(L, cur, 10, NULL, 0, NOW, count_live, &seen);
        calls++;
    } while (cur != 0 && calls < 10000);
    ck_assert_uint_eq(seen, 100);
    ck_assert_msg(calls <= 20, "%zu SCAN calls for 100 live keys", calls);
    size_t before = stats().buckets;
    ck_assert_uint_eq(flush_all(), 10100);
    NOW.mono_ms += TOMB_TTL + 1;
    for (int i = 0; i < 2000 && (stats().tombstones > 0 || stats().rehashing ||
                                 stats().buckets >= before / 10); i++)
        ledger_sweep(L, NOW, 1024);
    ck_assert_uint_eq(stats().tombstones, 0);
    ck_assert_uint_lt(stats().buckets, before / 10);
    seen = 0;
    cur = 0;
    calls = 0;
    do {
        cur = ledger_scan(L, cur, 10, NULL, 0, NOW, count_live, &seen);
        calls++;
    } while (cur != 0 && calls < 10000);
    ck_assert_uint_eq(seen, 100);
}
END_TEST

/* FLUSHALL in memory: every key goes, a missing key reports the flush's
 * version, a row older than the flush loaded later is a deleted key, and
 * the next write is newer than the flush. */
START_TEST(flush_drops_everything_and_orders_after_it)
{
    hkv_stamp va = put("a", "1");
    put("b", "2");
    ck_assert_int_eq(setx("t", "v", 0, rel(5000), NULL, NULL), HKV_OK);
    hkv_stamp v = 0;
    ck_assert_int_eq(ledger_flush(L, NOW, &v), HKV_OK);
    ck_assert_uint_gt(v, va);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.keys, 0);
    ck_assert_uint_eq(s.expires, 0);
    ck_assert_uint_eq(s.dirty_keys, 0);
    assert_missing("a", v);
    /* a row written before the flush, read from a file the flush has not reached */
    struct persist_row r = row("a", "1", va, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    struct ledger_view view;
    ck_assert_int_eq(get("a", &view), HKV_ENOENT);
    ck_assert_uint_ge(view.stamp, v);
    hkv_stamp vn = put("a", "new");
    ck_assert_uint_gt(vn, v);
    assert_value("a", "new", vn);
}
END_TEST

/* Recovery of a file a FLUSHALL emptied: the recorded floor is the read
 * floor, and the versions issued next are newer than it even when no row
 * tells the clock (the wall clock behind the flush's version). */
START_TEST(recovered_flush_floor_orders_new_writes_after_it)
{
    hkv_stamp floor = stamp_make((uint64_t)(NOW.wall_ms - (int64_t)STAMP_EPOCH_MS) + 3600000, 5, 9);
    ledger_set_flush_floor(L, floor);
    assert_missing("a", floor);
    ledger_set_floor(L, NOW, 10000); /* the end of recovery */
    ck_assert_uint_gt(put("b", "1"), floor);
    struct persist_row r = row("a", "old", floor - 1, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    struct ledger_view view;
    ck_assert_int_eq(get("a", &view), HKV_ENOENT); /* a row older than the flush: deleted */
}
END_TEST

/* A ledger with keys on disk only is complete after a FLUSHALL: every row
 * on disk is older than the flush, so a missing key needs no disk read. */
START_TEST(flush_makes_an_incomplete_ledger_complete)
{
    struct ledger_view v;
    ledger_destroy(&L);
    L = make(0, 0);
    ck_assert_int_eq(get("k", &v), HKV_EAGAIN);
    hkv_stamp f;
    ck_assert_int_eq(ledger_flush(L, NOW, &f), HKV_OK);
    ck_assert(ledger_is_complete(L));
    assert_missing("k", f);
    ck_assert_uint_gt(put("k", "v"), f);
}
END_TEST

START_TEST(expiry_uses_monotonic_clock)
{
    struct ledger_view v;
    hkv_stamp vk = UNSET, va = UNSET;
    ck_assert_int_eq(setx("k", "v", 0, rel(5000), NULL, &vk), HKV_OK);
    ck_assert_int_eq(setx("a", "v", 0, at(WALL0 + 2000), NULL, &va), HKV_OK);
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

    /* the sweep turns expired keys into tombstones that keep their versions */
    ck_assert_uint_eq(ledger_sweep(L, NOW, 64), 2);
    struct ledger_stats s = stats();
    ck_assert_uint_eq(s.expired, 2);
    ck_assert_uint_eq(s.keys, 0);
    ck_assert_uint_eq(s.tombstones, 2);
    assert_missing("k", vk);
    assert_missing("a", va);
    ck_assert_uint_gt(put("k", "new"), va);
}
END_TEST

START_TEST(expired_key_is_missing_and_a_write_gets_a_newer_version)
{
    hkv_stamp v1 = UNSET, v2 = UNSET;
    ck_assert_int_eq(setx("k", "v", 0, rel(100), NULL, &v1), HKV_OK);
    NOW.mono_ms += 100;
    assert_missing("k", v1); /* the expired write is behind the absence */
    ck_assert_int_eq(setx("k", "w", LEDGER_NX, NOEXP, NULL, &v2), HKV_OK);
    ck_assert_uint_gt(v2, v1);
    assert_value("k", "w", v2);
    ck_assert_int_eq(ttl("k"), -1);
}
END_TEST

/* ---- commands ---------------------------------------------------------- */

START_TEST(nx_xx_get_keepttl_semantics)
{
    struct ledger_view old;
    hkv_stamp v1 = UNSET, v3 = UNSET, v5 = UNSET, ver = UNSET;
    ck_assert_int_eq(setx("k", "v1", LEDGER_XX, NOEXP, NULL, &ver), HKV_ENOENT);
    ck_assert_uint_eq(ver, 0); /* no key, no version */
    ck_assert_int_eq(setx("k", "v1", LEDGER_NX, NOEXP, NULL, &v1), HKV_OK);
    ck_assert_int_eq(setx("k", "v2", LEDGER_NX, NOEXP, NULL, NULL), HKV_EEXIST);
    assert_value("k", "v1", v1);
    ck_assert_int_eq(setx("k", "v3", LEDGER_XX, rel(9000), NULL, &v3), HKV_OK);
    assert_value("k", "v3", v3);
    ck_assert_int_eq(ttl("k"), 9000);

    /* GET returns the old value; the pointer outlives the write itself */
    ck_assert_int_eq(setx("k", "v4", LEDGER_GET, KEEP, &old, NULL), HKV_OK);
    ck_assert_int_eq(old.found, 1);
    ck_assert_uint_eq(old.vlen, 2);
    ck_assert_mem_eq(old.val, "v3", 2);
    ck_assert_uint_eq(old.stamp, v3);
    ck_assert_int_eq(ttl("k"), 9000); /* KEEPTTL */

    ck_assert_int_eq(setx("k", "v5", LEDGER_GET, NOEXP, &old, &v5), HKV_OK);
    ck_assert_mem_eq(old.val, "v4", 2);
    ck_assert_int_eq(ttl("k"), -1); /* a plain SET clears the expiry */

    ck_assert_int_eq(setx("m", "x", LEDGER_GET, NOEXP, &old, NULL), HKV_OK);
    ck_assert_int_eq(old.found, 0);
    ck_assert_int_eq(setx("m", "y", LEDGER_GET | LEDGER_NX, NOEXP, &old, NULL), HKV_EEXIST);
    ck_assert_int_eq(old.found, 1);
    ck_assert_mem_eq(old.val, "x", 1);

    ck_assert_int_eq(setx("k", "z", LEDGER_NX | LEDGER_XX, NOEXP, NULL, NULL), HKV_EINVAL);
    ck_assert_int_eq(setx("k", "z", 0, rel(0), NULL, NULL), HKV_EINVAL);
    ck_assert_int_eq(setx("k", "z", 0, at(0), NULL, NULL), HKV_EINVAL);
    assert_value("k", "v5", v5); /* refused arguments change nothing */
    /* an absolute deadline already past deletes the key, under a new version */
    ck_assert_int_eq(setx("k", "z", 0, at(WALL0 - 1), NULL, &ver), HKV_OK);
    ck_assert_uint_gt(ver, v5);
    ck_assert_int_eq(ttl("k"), -2);
    assert_missing("k", ver);
}
END_TEST

START_TEST(incrby)
{
    int64_t r = 0;
    hkv_stamp ver = UNSET;
    ck_assert_int_eq(ledger_incrby(L, "n", 1, 7, 0, NOW, &r, NULL), HKV_OK);
    ck_assert_int_eq(r, 7);
    ck_assert_int_eq(ledger_incrby(L, "n", 1, -10, 0, NOW, &r, &ver), HKV_OK);
    ck_assert_int_eq(r, -3);
    assert_value("n", "-3", ver);

    const char *bad[] = {"abc", "12 ", " 12", "+5", "007", "-0", "", "1.5",
                         "9223372036854775808", "-9223372036854775809"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hkv_stamp v = put("b", bad[i]);
        uint64_t w = stats().writes;
        r = 12345;
        ver = UNSET;
        ck_assert_int_eq(ledger_incrby(L, "b", 1, 1, 0, NOW, &r, &ver), HKV_EINVAL);
        ck_assert_uint_eq(ver, v); /* nothing applied: the version stays */
        ck_assert_int_eq(r, 12345);
        ck_assert_uint_eq(stats().writes, w);
        assert_value("b", bad[i], v);
    }
    hkv_stamp vbig = put("big", "9223372036854775807");
    ck_assert_int_eq(ledger_incrby(L, "big", 3, 1, 0, NOW, &r, &ver), HKV_EINVAL);
    ck_assert_uint_eq(ver, vbig);
    ck_assert_int_eq(ledger_incrby(L, "big", 3, -1, 0, NOW, &r, &ver), HKV_OK);
    ck_assert_uint_gt(ver, vbig);
    ck_assert_int_eq(r, INT64_MAX - 1);
    hkv_stamp vsmall = put("small", "-9223372036854775808");
    ck_assert_int_eq(ledger_incrby(L, "small", 5, -1, 0, NOW, &r, &ver), HKV_EINVAL);
    ck_assert_uint_eq(ver, vsmall);
    ck_assert_int_eq(ledger_incrby(L, "small", 5, 0, 0, NOW, &r, &ver), HKV_OK);
    ck_assert_int_eq(r, INT64_MIN);
    ck_assert_uint_gt(ver, vsmall); /* +0 is still a write */

    /* the expiry is kept */
    ck_assert_int_eq(setx("t", "10", 0, rel(10000), NULL, NULL), HKV_OK);
    NOW.mono_ms += 400;
    ck_assert_int_eq(ledger_incrby(L, "t", 1, 5, 0, NOW, &r, NULL), HKV_OK);
    ck_assert_int_eq(r, 15);
    ck_assert_int_eq(ttl("t"), 9600);
}
END_TEST

START_TEST(expire_negative_deletes)
{
    int deleted = 0;
    hkv_stamp v = put("k", "v"), ver = UNSET;
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(-5), NOW, &deleted, &ver), HKV_OK);
    ck_assert_int_eq(deleted, 1);
    ck_assert_uint_gt(ver, v);
    ck_assert_int_eq(ttl("k"), -2);
    ck_assert_uint_eq(stats().tombstones, 1);
    assert_missing("k", ver); /* the tombstone holds the EXPIRE's version */

    put("a", "v");
    ck_assert_int_eq(ledger_expire(L, "a", 1, at(WALL0 - DAY_MS), NOW, &deleted, NULL), HKV_OK);
    ck_assert_int_eq(deleted, 1);
    ck_assert_int_eq(ttl("a"), -2);

    v = put("b", "v");
    ck_assert_int_eq(ledger_expire(L, "b", 1, rel(2500), NOW, &deleted, &ver), HKV_OK);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(ttl("b"), 2500);
    ck_assert_uint_gt(ver, v);
    assert_value("b", "v", ver);

    ck_assert_int_eq(ledger_expire(L, "zz", 2, rel(100), NOW, &deleted, NULL), HKV_ENOENT);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(100), NOW, &deleted, NULL), HKV_ENOENT);
    ck_assert_int_eq(ledger_expire(L, "b", 1, KEEP, NOW, &deleted, NULL), HKV_EINVAL);
}
END_TEST

START_TEST(ttl_values)
{
    int changed = -1;
    ck_assert_int_eq(ttl("missing"), -2);
    put("k", "v");
    ck_assert_int_eq(ttl("k"), -1);
    ck_assert_int_eq(setx("k", "v", 0, rel(1500), NULL, NULL), HKV_OK);
    ck_assert_int_eq(ttl("k"), 1500);
    NOW.mono_ms += 500;
    ck_assert_int_eq(ttl("k"), 1000);
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &changed, NULL), HKV_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(ttl("k"), -1);
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, &changed, NULL), HKV_OK);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_eq(ledger_persist(L, "nope", 4, NOW, &changed, NULL), HKV_ENOENT);
}
END_TEST

/* ---- dirty tracking ---------------------------------------------------- */

START_TEST(dirty_collection_returns_one_row_per_key)
{
    char v[32];
    hkv_stamp va = 0, vb = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        va = put("a", v);
        vb = put("b", v);
        put("c", v);
    }
    hkv_stamp dc = del("c", NULL);
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
            ck_assert_uint_eq(r->stamp, dc);
        } else {
            ck_assert_int_eq(r->tombstone, 0);
            ck_assert_uint_eq(r->vlen, 3);
            ck_assert_mem_eq(r->val, "v99", 3);
            ck_assert_uint_eq(r->stamp, r->key[0] == 'a' ? va : vb);
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
    ck_assert_int_eq(ledger_set(L, "d", 1, "x", 1, 7, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    ck_assert_int_eq(ledger_set(L, "e", 1, "x", 1, 3, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
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
    hkv_stamp v1 = put("k", "one");
    struct persist_batch *b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].stamp, v1);
    hkv_stamp v2 = put("k", "two"); /* written while on disk's way */
    ck_assert_int_eq(ledger_persisted(L, "k", 1, v1), HKV_ESTALE);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 1);
    persist_batch_free(&b);

    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].stamp, v2);
    ck_assert_mem_eq(b->rows[0].val, "two", 3);
    ck_assert_int_eq(ledger_persisted(L, "k", 1, v2), HKV_OK);
    ledger_dirty(L, &dk, &db);
    ck_assert_uint_eq(dk, 0);
    ck_assert_uint_eq(db, 0);
    persist_batch_free(&b);
    ck_assert_int_eq(ledger_persisted(L, "zz", 2, v2), HKV_ENOENT);

    /* a failed batch makes its keys collectable again */
    hkv_stamp v3 = put("k", "three");
    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    b->status = HKV_EIO;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 10, NULL, NULL), 1);
    ck_assert_uint_eq(b->rows[0].stamp, v3);
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 0);
}
END_TEST

/* ---- memory, loading, residency ---------------------------------------- */

static void put_value(const char *prefix, int i, size_t vlen)
{
    char k[32], v[2048];
    memset(v, 'x', vlen);
    snprintf(k, sizeof(k), "%s%d", prefix, i);
    int rc = ledger_set(L, k, strlen(k), v, vlen, 0, 0, NOEXP, NOW, NULL, NULL);
    if (rc == HKV_EAGAIN) { /* incomplete: the owner asks SQLite first */
        ck_assert_int_eq(ledger_load_absent(L, k, strlen(k), NOW), HKV_OK);
        rc = ledger_set(L, k, strlen(k), v, vlen, 0, 0, NOEXP, NOW, NULL, NULL);
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
        put_value("d", i, 1000);
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
        put_value("n", i, 1000);
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
    /* a write to an evicted key must first learn its stored version */
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "d%d", i);
        if (get(k, &v) == HKV_EAGAIN) {
            ck_assert_int_eq(setx(k, "w", 0, NOEXP, NULL, NULL), HKV_EAGAIN);
            ck_assert_int_eq(ledger_del(L, k, strlen(k), 0, NOW, NULL, NULL, NULL), HKV_EAGAIN);
            int64_t t;
            ck_assert_int_eq(ledger_ttl(L, k, strlen(k), NOW, &t), HKV_EAGAIN);
            break;
        }
    }
}
END_TEST

START_TEST(load_does_not_overwrite_newer)
{
    struct ledger_view v;
    struct persist_row r;
    size_t dk = 0;
    hkv_stamp vk = put("k", "new");
    r = row("k", "old", stamp_at(WALL0 - HOUR_MS, 0, 1), 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    r = row("k", "same", vk, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    assert_value("k", "new", vk);
    hkv_stamp dt = del("t", NULL);
    r = row("t", "resurrect", stamp_at(WALL0 - 1, 0, 1), 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_EEXIST);
    assert_missing("t", dt);

    flush_all();
    hkv_stamp old = stamp_at(WALL0 - DAY_MS, 0, 1);
    r = row("fresh", "disk", old, WALL0 + 3000);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_value("fresh", "disk", old); /* a loaded row keeps its stamp */
    ck_assert_int_eq(ttl("fresh"), 3000);
    ledger_dirty(L, &dk, NULL);
    ck_assert_uint_eq(dk, 0); /* loaded entries are clean */
    r = row("gone", "disk", old, WALL0 - 1);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    ck_assert_int_eq(get("gone", &v), HKV_ENOENT);
    hkv_stamp disk = vk + (1u << STAMP_WRITER_BITS); /* a newer version on disk */
    r = row("k", "newer-on-disk", disk, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_value("k", "newer-on-disk", disk);
    ck_assert_uint_gt(put("k", "next"), disk);
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
    ck_assert_int_eq(setx("k", "v", 0, NOEXP, NULL, NULL), HKV_EAGAIN);
    ck_assert_int_eq(ledger_del(L, "k", 1, 0, NOW, NULL, NULL, NULL), HKV_EAGAIN);
    ck_assert_int_eq(ledger_incrby(L, "k", 1, 1, 0, NOW, NULL, NULL), HKV_EAGAIN);
    ck_assert_int_eq(ledger_expire(L, "k", 1, rel(10), NOW, NULL, NULL), HKV_EAGAIN);
    ck_assert_int_eq(ledger_persist(L, "k", 1, NOW, NULL, NULL), HKV_EAGAIN);
    ck_assert_uint_eq(stats().writes, 0);
    /* the reader thread found nothing: the miss becomes authoritative */
    ck_assert_int_eq(ledger_load_absent(L, "k", 1, NOW), HKV_OK);
    assert_missing("k", 0);
    hkv_stamp vk = put("k", "v");
    ck_assert_int_eq(ledger_load_absent(L, "k", 1, NOW), HKV_EEXIST);
    assert_value("k", "v", vk);
    /* a tombstone row from disk is a miss too, and the next write is newer */
    hkv_stamp dd = stamp_at(WALL0 + HOUR_MS, 0, 3);
    struct persist_row r = row("d", NULL, dd, 0);
    ck_assert_int_eq(ledger_load(L, &r, NOW), HKV_OK);
    assert_missing("d", dd);
    ck_assert_uint_gt(put("d", "late"), dd);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
    ck_assert_int_eq(get("never", &v), HKV_ENOENT);
}
END_TEST

/* ---- scanning and counters --------------------------------------------- */

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
    for (int i = 0; i < ORIG; i++) {
        int n = snprintf(k, sizeof(k), "orig%d", i);
        ck_assert_int_eq(ledger_set(L, k, (size_t)n, "v", 1, 0, 0, NOEXP, NOW, NULL, NULL),
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
            ck_assert_int_eq(ledger_set(L, k, (size_t)n, "v", 1, 0, 0, NOEXP, NOW, NULL, NULL),
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
    put("user:1", "a");
    put("user:12", "a");
    put("user:2", "a");
    put("item:1", "a");
    del("user:2", NULL);
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
    put("k", "12345");
    s = stats();
    ck_assert_uint_gt(s.memory_bytes, s0.memory_bytes);
    ck_assert_uint_eq(s.keys, 1);
    ck_assert_uint_eq(s.dirty_keys, 1);
    ck_assert_uint_gt(s.dirty_order_bytes, 0);
    ck_assert_uint_eq(s.dirty_bytes, s.memory_bytes - s.buckets * sizeof(void *) - s.order_bytes -
                                         s.dirty_order_bytes);
    uint64_t m1 = s.memory_bytes;
    put("k", "1234567890");
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
        {"each_write_gets_a_newer_version", each_write_gets_a_newer_version},
        {"versions_increase_across_every_kind_of_write",
         versions_increase_across_every_kind_of_write},
        {"write_after_loading_a_future_row_gets_a_newer_version",
         write_after_loading_a_future_row_gets_a_newer_version},
        {"same_millisecond_writes_are_ordered_by_call_order",
         same_millisecond_writes_are_ordered_by_call_order},
        {"wall_clock_going_back_does_not_make_versions_go_back",
         wall_clock_going_back_does_not_make_versions_go_back},
        {"getdel_returns_the_old_value_and_leaves_a_tombstone",
         getdel_returns_the_old_value_and_leaves_a_tombstone},
        {"versions_carry_the_writer_bits", versions_carry_the_writer_bits},
        {"delete_leaves_a_tombstone_with_its_version", delete_leaves_a_tombstone_with_its_version},
        {"tombstone_collected_after_horizon", tombstone_collected_after_horizon},
        {"expiry_uses_monotonic_clock", expiry_uses_monotonic_clock},
        {"flush_drops_everything_and_orders_after_it", flush_drops_everything_and_orders_after_it},
        {"recovered_flush_floor_orders_new_writes_after_it",
         recovered_flush_floor_orders_new_writes_after_it},
        {"flush_makes_an_incomplete_ledger_complete", flush_makes_an_incomplete_ledger_complete},
        {"scan_after_mass_deletes_is_not_mostly_empty_pages",
         scan_after_mass_deletes_is_not_mostly_empty_pages},
        {"rmw_computes_over_the_live_value_and_keeps_the_ttl",
         rmw_computes_over_the_live_value_and_keeps_the_ttl},
        {"move_renames_copies_and_refuses_as_redis", move_renames_copies_and_refuses_as_redis},
        {"due_keys_expire_at_once_in_a_big_table", due_keys_expire_at_once_in_a_big_table},
        {"expired_key_is_missing_and_a_write_gets_a_newer_version",
         expired_key_is_missing_and_a_write_gets_a_newer_version},
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

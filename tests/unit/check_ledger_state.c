/*
 * check_ledger_state.c - the owner's in-memory map as the commands and the
 * persister use it: SET's NX XX GET KEEPTTL, INCRBY, EXPIRE, TTL; dirty
 * tracking (one row per key, class filters, persisted clears only its own
 * stamp); eviction that keeps dirty entries, loading that never overwrites
 * newer, answers while not resident; scanning across a resize and the
 * counters (versions, tombstones and expiry: check_ledger.c).
 */
#include "tests/unit/ledger_fixture.h"

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

Suite *ledger_state_suite(void)
{
    Suite *s = suite_create("ledger_state");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"nx_xx_get_keepttl_semantics", nx_xx_get_keepttl_semantics},
        {"incrby", incrby},
        {"expire_negative_deletes", expire_negative_deletes},
        {"ttl_values", ttl_values},
        {"dirty_collection_returns_one_row_per_key", dirty_collection_returns_one_row_per_key},
        {"collect_filter_takes_only_chosen_classes", collect_filter_takes_only_chosen_classes},
        {"persisted_clears_only_matching_stamp", persisted_clears_only_matching_stamp},
        {"eviction_keeps_dirty_entries_and_marks_incomplete", eviction_keeps_dirty_entries_and_marks_incomplete},
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

/* check_ledger.c - the owner's in-memory map: the versions it issues, tombstones,
 * expiry, read-modify-writes, moves and FLUSHALL (commands, dirty tracking, eviction,
 * loading and scanning: check_ledger_state.c). */
#include "tests/unit/ledger_fixture.h"

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

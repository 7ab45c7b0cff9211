/*
 * check_etcd.c - the agent's etcd client (server/agent/etcd.h) against a real
 * etcd 3.4 started by the test on free loopback ports in a temp dir: unary
 * calls, txn compare-and-swap, leases that live and expire, watches (order,
 * progress, compaction), endpoint failover, timeouts against a listener that
 * never answers, etcd's user/password auth, and TLS to etcd.
 *
 * Each test drives the client on its own event loop and waits for each
 * callback with a bounded loop; etcd is stopped by PID in the fixture.
 */
#include <check.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/etcd.h"
#include "tests/integration/etcd_loop.h"

/* ---- kv ---- */

START_TEST(put_range_delete_round_trip)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct got p = put(e, "/t/kv/a", "v1", 0);
    ck_assert_msg(p.status == HKV_OK, "%d %s", p.status, p.message);
    ck_assert_int_gt(p.revision, 0);
    ck_assert_int_eq(put(e, "/t/kv/b", "", 0).status, HKV_OK);
    ck_assert_int_eq(put(e, "/t/kv/c", "v3", 0).status, HKV_OK);
    char end[16];
    size_t elen = etcd_prefix_end("/t/kv/", 6, end);
    end[elen] = '\0';
    struct got r = get(e, "/t/kv/", end);
    ck_assert_int_eq(r.status, HKV_OK);
    ck_assert_uint_eq(r.nkvs, 3);
    ck_assert_int_eq(r.count, 3);
    ck_assert_str_eq(r.keys[0], "/t/kv/a");
    ck_assert_str_eq(r.vals[0], "v1");
    ck_assert_str_eq(r.vals[1], ""); /* an empty value, omitted by the gateway */
    ck_assert_int_eq(r.mod[0], p.revision);
    struct got l = {0};
    ck_assert_int_eq(etcd_range(e, "/t/kv/", 6, end, elen, 0, 1, on_result, &l), HKV_OK);
    wait_got(&l, 8000);
    ck_assert_uint_eq(l.nkvs, 1);
    ck_assert_int_eq(l.more, 1);
    ck_assert_int_eq(l.count, 3);
    struct got none = get(e, "/t/kv/zz", NULL);
    ck_assert_int_eq(none.status, HKV_OK);
    ck_assert_uint_eq(none.nkvs, 0);
    struct got d = {0};
    ck_assert_int_eq(etcd_delete(e, "/t/kv/", 6, end, elen, on_result, &d), HKV_OK);
    wait_got(&d, 8000);
    ck_assert_int_eq(d.deleted, 3);
    ck_assert_uint_eq(get(e, "/t/kv/", end).nkvs, 0);
    /* bad arguments are refused at once and never called back */
    struct got bad = {0};
    ck_assert_int_eq(etcd_put(e, "", 0, "v", 1, 0, on_result, &bad), HKV_EINVAL);
    ck_assert_int_eq(etcd_txn(e, NULL, 0, NULL, 129, NULL, 0, on_result, &bad), HKV_EINVAL);
    run_until(&bad.done, 200);
    ck_assert_int_eq(bad.done, 0);
    etcd_destroy(&e);
    ck_assert_ptr_null(e);
}
END_TEST

START_TEST(txn_cas_wins_once_and_the_loser_reads_the_truth)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    const char *k = "/t/cas/owner";
    struct etcd_cmp absent = {ETCD_CREATE, ETCD_EQUAL, k, strlen(k), 0, NULL, 0};
    struct etcd_op mine = {ETCD_OP_PUT, k, strlen(k), NULL, 0, "host-a", 6, 0};
    struct etcd_op read = {ETCD_OP_RANGE, k, strlen(k), NULL, 0, NULL, 0, 0};
    struct got w = {0};
    ck_assert_int_eq(etcd_txn(e, &absent, 1, &mine, 1, &read, 1, on_result, &w), HKV_OK);
    wait_got(&w, 8000);
    ck_assert_int_eq(w.status, HKV_OK);
    ck_assert_int_eq(w.succeeded, 1);
    ck_assert_uint_eq(w.nkvs, 0);
    /* the same txn again loses, and its failure branch reads the winner */
    struct etcd_op theirs = {ETCD_OP_PUT, k, strlen(k), NULL, 0, "host-b", 6, 0};
    struct got l = {0};
    ck_assert_int_eq(etcd_txn(e, &absent, 1, &theirs, 1, &read, 1, on_result, &l), HKV_OK);
    wait_got(&l, 8000);
    ck_assert_int_eq(l.status, HKV_OK);
    ck_assert_int_eq(l.succeeded, 0);
    ck_assert_uint_eq(l.nkvs, 1);
    ck_assert_str_eq(l.vals[0], "host-a");
    ck_assert_int_eq(l.mod[0], w.revision);
    /* MOD compare: only the holder of the current mod_revision may write */
    struct etcd_cmp stale = {ETCD_MOD, ETCD_EQUAL, k, strlen(k), w.revision - 1, NULL, 0};
    struct etcd_cmp fresh = {ETCD_MOD, ETCD_EQUAL, k, strlen(k), w.revision, NULL, 0};
    struct got s = {0}, f = {0};
    etcd_txn(e, &stale, 1, &theirs, 1, NULL, 0, on_result, &s);
    etcd_txn(e, &fresh, 1, &theirs, 1, NULL, 0, on_result, &f); /* queued behind */
    wait_got(&s, 8000);
    wait_got(&f, 8000);
    ck_assert_int_eq(s.succeeded, 0);
    ck_assert_int_eq(f.succeeded, 1);
    ck_assert_int_gt(f.revision, s.revision);
    /* VALUE and VERSION compares */
    struct etcd_cmp val = {ETCD_VALUE, ETCD_EQUAL, k, strlen(k), 0, "host-b", 6};
    struct etcd_cmp ver = {ETCD_VERSION, ETCD_GREATER, k, strlen(k), 1, NULL, 0};
    struct etcd_cmp both[2] = {val, ver};
    struct got v = {0};
    etcd_txn(e, both, 2, NULL, 0, NULL, 0, on_result, &v);
    ck_assert_int_eq(wait_got(&v, 8000).succeeded, 1);
    /* etcd refuses the same key twice in one txn: its code 3, cleanly */
    struct etcd_op twice[2] = {mine, theirs};
    struct got dup = {0};
    etcd_txn(e, NULL, 0, twice, 2, NULL, 0, on_result, &dup);
    wait_got(&dup, 8000);
    ck_assert_int_eq(dup.status, HKV_EINVAL);
    ck_assert_int_eq(dup.code, 3);
    ck_assert_ptr_nonnull(strstr(dup.message, "duplicate key"));
    etcd_destroy(&e);
}
END_TEST

/* ---- leases ---- */

START_TEST(lease_keepalive_keeps_the_key_and_expiry_removes_it)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct got g = {0};
    ck_assert_int_eq(etcd_lease_grant(e, 2, on_result, &g), HKV_OK);
    wait_got(&g, 8000);
    ck_assert_int_eq(g.status, HKV_OK);
    ck_assert_int_eq(g.ttl_s, 2);
    int64_t id = g.lease_id;
    ck_assert(id > (INT64_C(1) << 53)); /* etcd's ids are past a double's exact range */
    ck_assert_int_eq(put(e, "/t/lease/k", "alive", id).status, HKV_OK);
    /* keepalives every 600 ms for 3.5 s: the key outlives its TTL */
    int64_t until = h_now_ms() + 3500;
    while (h_now_ms() < until) {
        struct got k = {0};
        ck_assert_int_eq(etcd_lease_keepalive(e, id, on_result, &k), HKV_OK);
        wait_got(&k, 8000);
        ck_assert_int_eq(k.status, HKV_OK);
        ck_assert(k.lease_id == id);
        ck_assert_int_eq(k.ttl_s, 2);
        h_sleep_ms(600);
    }
    ck_assert_uint_eq(get(e, "/t/lease/k", NULL).nkvs, 1);
    /* no more keepalives: the key goes (bounded wait), then the lease is gone */
    int64_t stop = h_now_ms();
    int gone = 0;
    while (!gone && h_now_ms() < stop + 10000) {
        h_sleep_ms(200);
        gone = get(e, "/t/lease/k", NULL).nkvs == 0;
    }
    ck_assert_msg(gone, "key under an expired lease still there after 10 s");
    ck_assert_int_ge(h_now_ms() - stop, 1000);
    struct got k = {0};
    etcd_lease_keepalive(e, id, on_result, &k);
    wait_got(&k, 8000);
    ck_assert_int_eq(k.status, HKV_OK); /* HTTP 200 ... */
    ck_assert_int_eq(k.ttl_s, 0);       /* ... without TTL: gone */
    /* revoke takes the keys at once; revoking again is etcd's "not found" */
    struct got g2 = {0};
    etcd_lease_grant(e, 60, on_result, &g2);
    wait_got(&g2, 8000);
    ck_assert_int_eq(put(e, "/t/lease/r", "x", g2.lease_id).status, HKV_OK);
    struct got rv = {0}, rv2 = {0};
    etcd_lease_revoke(e, g2.lease_id, on_result, &rv);
    etcd_lease_revoke(e, g2.lease_id, on_result, &rv2);
    wait_got(&rv, 8000);
    wait_got(&rv2, 8000);
    ck_assert_int_eq(rv.status, HKV_OK);
    ck_assert_uint_eq(get(e, "/t/lease/r", NULL).nkvs, 0);
    ck_assert_int_eq(rv2.status, HKV_EINVAL);
    ck_assert_int_eq(rv2.code, 5);
    /* a put under a lease that does not exist */
    ck_assert_int_eq(put(e, "/t/lease/x", "x", 12345).code, 5);
    etcd_destroy(&e);
}
END_TEST

/* ---- watches ---- */

START_TEST(watch_sees_events_in_order_one_revision_per_message)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/w/", 0, 5000, &w);
    ck_assert(run_until(&w.created, 8000));
    int64_t r1 = put(e, "/t/w/a", "1", 0).revision;
    const char *b = "/t/w/b", *a = "/t/w/a";
    struct etcd_op ops[2] = {{ETCD_OP_PUT, b, strlen(b), NULL, 0, "2", 1, 0},
                             {ETCD_OP_DELETE, a, strlen(a), NULL, 0, NULL, 0, 0}};
    struct got t = {0};
    etcd_txn(e, NULL, 0, ops, 2, NULL, 0, on_result, &t);
    int64_t r2 = wait_got(&t, 8000).revision;
    int64_t r3 = put(e, "/t/w/c", "3", 0).revision;
    int64_t r4 = put(e, "/t/other", "x", 0).revision; /* outside the prefix */
    int64_t end = h_now_ms() + 8000;
    while (w.events < 3 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(w.events, 3);
    int seen = 0;
    for (int i = 0; i < w.n; i++) {
        if (w.kind[i] != ETCD_W_EVENTS)
            continue;
        const int64_t want_rev[3] = {r1, r2, r3};
        const char *want_ev[3] = {"P:/t/w/a=1 ", "P:/t/w/b=2 D:/t/w/a ", "P:/t/w/c=3 "};
        ck_assert_int_eq(w.rev[i], want_rev[seen]);
        ck_assert_str_eq(w.ev[i], want_ev[seen]);
        seen++;
    }
    /* then silence: progress notifications (1 s) carry the store's revision */
    int p0 = w.progress;
    end = h_now_ms() + 6000;
    while (w.progress < p0 + 2 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_ge(w.progress, p0 + 2);
    ck_assert_int_ge(w.rev[w.n - 1], r4);
    ck_assert_int_eq(w.over, 0);
    etcd_watch_cancel(&h);
    ck_assert_ptr_null(h);
    etcd_destroy(&e);
}
END_TEST

START_TEST(watch_resumed_after_compaction_is_canceled_with_compact_revision)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct wrec w1 = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/c/", 0, 5000, &w1);
    ck_assert(run_until(&w1.created, 8000));
    put(e, "/t/c/x", "1", 0);
    int64_t last = put(e, "/t/c/x", "2", 0).revision;
    int64_t end = h_now_ms() + 8000;
    while (w1.events < 2 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(w1.rev[w1.n - 1], last);
    etcd_watch_cancel(&h); /* the stream broke here */
    /* while it was away: more writes, and compaction past where it stopped */
    put(e, "/t/c/x", "3", 0);
    int64_t now = put(e, "/t/c/y", "4", 0).revision;
    char out[512], rev[24];
    snprintf(rev, sizeof(rev), "%" PRId64, now);
    ck_assert_msg(harness_etcdctl(&etcd, out, sizeof(out), "compact", rev, NULL) == 0, "%s", out);
    struct wrec w2 = {0};
    h = watch_prefix(e, "/t/c/", last + 1, 5000, &w2);
    ck_assert(run_until(&w2.over, 8000));
    ck_assert_int_eq(w2.kind[w2.n - 1], ETCD_W_CANCELED);
    ck_assert_int_eq(w2.compact[w2.n - 1], now);
    ck_assert_int_eq(w2.events, 0);
    etcd_watch_cancel(&h);
    /* recovery: read everything at the current revision, watch from it */
    struct got r = get(e, "/t/c/", "/t/c0");
    ck_assert_uint_eq(r.nkvs, 2);
    ck_assert_str_eq(r.vals[0], "3");
    struct wrec w3 = {0};
    h = watch_prefix(e, "/t/c/", r.revision + 1, 5000, &w3);
    ck_assert(run_until(&w3.created, 8000));
    int64_t r5 = put(e, "/t/c/z", "5", 0).revision;
    end = h_now_ms() + 8000;
    while (w3.events < 1 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(w3.events, 1);
    ck_assert_int_eq(w3.rev[w3.n - 1], r5);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
}
END_TEST

START_TEST(silent_watch_is_broken_after_its_idle_timeout)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct wrec w = {0};
    /* progress comes every 1 s: a 300 ms idle timeout must fire first */
    struct etcd_watch *h = watch_prefix(e, "/t/idle/", 0, 300, &w);
    ck_assert(run_until(&w.created, 8000));
    int64_t t0 = h_now_ms();
    ck_assert(run_until(&w.over, 5000));
    int64_t took = h_now_ms() - t0;
    ck_assert_int_eq(w.kind[w.n - 1], ETCD_W_BROKEN);
    ck_assert_int_eq(w.status[w.n - 1], HKV_ETIMEDOUT);
    ck_assert_int_ge(took, 250);
    ck_assert_int_lt(took, 1000 + 1500);
    /* nothing follows the end */
    struct got p = put(e, "/t/idle/x", "1", 0);
    ck_assert_int_eq(p.status, HKV_OK);
    int n = w.n;
    int never = 0;
    run_until(&never, 300);
    ck_assert_int_eq(w.n, n);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
}
END_TEST

START_TEST(cancel_from_the_callback_and_destroy_with_watches_open)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/cb/", 0, 5000, &w);
    w.cancel_on_created = &h;
    ck_assert(run_until(&w.created, 8000));
    ck_assert_ptr_null(h); /* freed from inside its callback */
    put(e, "/t/cb/a", "1", 0);
    int never = 0;
    run_until(&never, 300);
    ck_assert_int_eq(w.n, 1);
    /* a client destroyed under a live watch and a queued call: no callback */
    struct wrec w2 = {0};
    struct etcd_watch *h2 = watch_prefix(e, "/t/cb/", 0, 5000, &w2);
    ck_assert(run_until(&w2.created, 8000));
    struct got g = {0};
    etcd_range(e, "/t/cb/a", 7, NULL, 0, 0, 0, on_result, &g);
    etcd_destroy(&e);
    run_until(&never, 300);
    ck_assert_int_eq(g.done, 0);
    ck_assert_int_eq(w2.n, 1);
    etcd_watch_cancel(&h2);
}
END_TEST

Suite *etcd_suite(void)
{
    Suite *s = suite_create("etcd");
    TCase *tc = tcase_create("kv");
    tcase_add_unchecked_fixture(tc, etcd_setup, etcd_teardown);
    tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, put_range_delete_round_trip);
    tcase_add_test(tc, txn_cas_wins_once_and_the_loser_reads_the_truth);
    tcase_add_test(tc, lease_keepalive_keeps_the_key_and_expiry_removes_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("watch");
    tcase_add_unchecked_fixture(tc, etcd_setup, etcd_teardown);
    tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, watch_sees_events_in_order_one_revision_per_message);
    tcase_add_test(tc, watch_resumed_after_compaction_is_canceled_with_compact_revision);
    tcase_add_test(tc, silent_watch_is_broken_after_its_idle_timeout);
    tcase_add_test(tc, cancel_from_the_callback_and_destroy_with_watches_open);
    suite_add_tcase(s, tc);
    return s;
}

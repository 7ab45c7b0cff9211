/*
 * check_colo_bound.c - the colo read path where colos, deletes and refresh
 * locks meet, against the real daemon (issue 11): an authoritative
 * not-found is cached for negative-ttl and a push replaces it; a write
 * reaches the other colo by push, then by fresh with pushes off; pipelined
 * writes reach it latest last; a deleted hot key's reads stay off the
 * owner; a dead or stuck edge's refresh lock does not blank a key; a delete
 * is not refilled by an older fetch; and stale reads are bounded by fresh
 * plus the refresh allowance (the storm, a stopped owner, pushes, CLIENT
 * META and HOTKEYS: check_colo.c).  Every wait and loop is bounded.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/colo_fixture.h"

/* ---- 5. negative entries ---------------------------------------------------------- */

#define NEG_CONF                                                        \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\nnegative-ttl 500ms\n" \
    "class neg pattern \"nokey*\" pool hot fresh 1s keep 30s\n"

START_TEST(negative_entries_cached_for_negative_ttl)
{
    struct daemon d;
    start(&d, NEG_CONF);
    int fd = conn(&d);
    h_sleep_ms(1500);
    int64_t reads0 = info(&d, "owner_reads");
    int64_t neg0 = info(&d, "cache_negative_hits");
    struct h_reply *r = h_call(fd, "GET", "nokey", NULL);
    EXPECT(is_nil(r), "GET nokey: %s", raw(r));
    h_free(r);
    r = h_call(fd, "GET", "nokey", NULL);
    EXPECT(is_nil(r), "GET nokey: %s", raw(r));
    h_free(r);
    int64_t neg1 = info(&d, "cache_negative_hits");
    EXPECT(neg1 > neg0, "cache_negative_hits did not grow after a second GET nokey (%lld)",
           (long long)neg1);
    /* Reads of the missing key for 2 s: the owner sees about one per
     * negative-ttl. */
    int n = 0, wrong = 0;
    int64_t t0 = h_now_ms(), end = t0 + 2000;
    while (h_now_ms() < end && n < 1000) {
        r = h_call(fd, "GET", "nokey", NULL);
        wrong += !is_nil(r);
        h_free(r);
        n++;
        h_sleep_ms(5);
    }
    int64_t dur = h_now_ms() - t0;
    h_sleep_ms(1500);
    int64_t reads1 = info(&d, "owner_reads");
    int64_t neg2 = info(&d, "cache_negative_hits");
    int64_t bound = (dur + 499) / 500 + 3;
    note("negative: %d GETs of nokey in %lld ms, %d not nil; cache_negative_hits +%lld; "
         "owner_reads +%lld (bound %lld)",
         n, (long long)dur, wrong, (long long)(neg2 - neg0), (long long)(reads1 - reads0),
         (long long)bound);
    EXPECT(wrong == 0, "%d GETs of a missing key were not nil", wrong);
    EXPECT(neg2 - neg1 >= n / 2, "only %lld negative hits for %d reads",
           (long long)(neg2 - neg1), n);
    EXPECT(reads1 - reads0 <= bound, "the owner saw %lld reads of a missing key (bound %lld)",
           (long long)(reads1 - reads0), (long long)bound);
    /* A fresh negative entry, then a write at the owner: its push replaces
     * the negative entry. */
    r = h_call(fd, "GET", "nokey", NULL);
    h_free(r);
    int64_t neg3 = info(&d, "cache_negative_hits");
    r = h_call(fd, "GET", "nokey", NULL);
    EXPECT(is_nil(r), "GET nokey: %s", raw(r));
    h_free(r);
    EXPECT(info(&d, "cache_negative_hits") > neg3, "nokey is not a negative entry now");
    int64_t push0 = info(&d, "pushes_received");
    owner_set(&d, "hot", "nokey", "here");
    int64_t t1 = h_now_ms();
    int got = 0, polls = 0;
    char last[160] = "";
    while (!got && h_now_ms() < t1 + 100 && polls++ < 100) {
        r = h_call(fd, "GET", "nokey", NULL);
        got = is_bulk(r, "here");
        snprintf(last, sizeof(last), "%s", raw(r));
        h_free(r);
    }
    note("negative: after the owner's write, GET nokey %s after %lld ms (%d polls, last %s); "
         "pushes_received +%lld",
         got ? "-> \"here\"" : "never \"here\"", (long long)(h_now_ms() - t1), polls, last,
         (long long)(info(&d, "pushes_received") - push0));
    EXPECT(got, "the push did not replace the negative entry within 100 ms; last GET: %s", last);
    close(fd);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

START_TEST(write_reaches_the_other_colo_by_push_then_by_fresh)
{
    struct daemon d;
    start(&d, "colos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\n"
              "class live pattern \"live:*\" pool hot fresh 2s keep 60s\n");
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb); /* one edge per colo: different colos */
    set(a, "live:x", "old");
    struct h_reply *r = h_call(b, "GET", "live:x", NULL);
    EXPECT(is_bulk(r, "old"), "colo B first read: %s", raw(r));
    h_free(r);
    /* Cached in colo B for 2 s; a write through colo A reaches it by push. */
    set(a, "live:x", "new");
    int64_t t0 = h_now_ms(), seen = -1;
    for (int i = 0; i < 200 && seen < 0; i++) {
        r = h_call(b, "GET", "live:x", NULL);
        if (is_bulk(r, "new"))
            seen = h_now_ms() - t0;
        h_free(r);
        if (seen < 0)
            h_sleep_ms(5);
    }
    note("two colos: a write through colo A was read through colo B after %lld ms (push)",
         (long long)seen);
    EXPECT(seen >= 0 && seen <= 100, "colo B saw the write after %lld ms", (long long)seen);
    /* Pushes off: colo B serves its cached value until fresh runs out. */
    expect_ok(a, "config set owner-push no", h_call(a, "CONFIG", "SET", "owner-push", "no", NULL));
    h_sleep_ms(200); /* the master's broadcast reaches the owner */
    r = h_call(b, "GET", "live:x", NULL); /* colo B caches "new" afresh if it had to */
    h_free(r);
    set(a, "live:x", "newer");
    t0 = h_now_ms();
    seen = -1;
    int stale_reads = 0;
    for (int i = 0; i < 1000 && seen < 0 && h_now_ms() - t0 < 5000; i++) {
        r = h_call(b, "GET", "live:x", NULL);
        if (is_bulk(r, "newer"))
            seen = h_now_ms() - t0;
        else
            stale_reads++;
        h_free(r);
        if (seen < 0)
            h_sleep_ms(20);
    }
    note("two colos, pushes off: colo B saw the write after %lld ms (%d stale reads; fresh 2000 ms)",
         (long long)seen, stale_reads);
    EXPECT(seen >= 0 && seen <= 2000 + 500, "with pushes off colo B saw it after %lld ms",
           (long long)seen);
    EXPECT(stale_reads > 0, "pushes were off, yet colo B saw the write at once");
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* Pushes are coalesced per owner loop turn (owner_pushq.c): a pipeline of
 * writes of one key through colo A reaches colo B as its latest value, never
 * going back to an older one on the way, and with fewer pushes than writes
 * (before, every write pushed to every colo: 2 x N). */
START_TEST(pipelined_writes_reach_the_other_colo_latest_last)
{
    enum { N = 200 };
    struct daemon d;
    start(&d, "colos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\n"
              "class live pattern \"live:*\" pool hot fresh 60s keep 60s\n");
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb); /* one edge per colo: different colos */
    set(a, "live:p", "v-1");
    struct h_reply *r = h_call(b, "GET", "live:p", NULL); /* colo B caches it for 60 s */
    EXPECT(is_bulk(r, "v-1"), "colo B first read: %s", raw(r));
    h_free(r);
    int64_t pushes0 = info(&d, "owner_pushes");
    /* N SETs in one write: the edge sends them in one batch on its link. */
    static char req[N * 64];
    size_t n = 0;
    for (int i = 0; i < N; i++) {
        char v[16];
        int vl = snprintf(v, sizeof(v), "v%d", i);
        n += (size_t)snprintf(req + n, sizeof(req) - n,
                              "*3\r\n$3\r\nSET\r\n$6\r\nlive:p\r\n$%d\r\n%s\r\n", vl, v);
    }
    EXPECT(h_send(a, req, n) == 0, "pipeline not sent");
    for (int i = 0; i < N; i++) {
        r = h_read(a);
        EXPECT(r != NULL && r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK"),
               "SET %d of the pipeline: %s", i, raw(r));
        h_free(r);
    }
    /* Colo B: the values it serves only move forward, and end at the last. */
    int last = -1, back = 0, reads = 0;
    int64_t t0 = h_now_ms();
    while (last != N - 1 && h_now_ms() - t0 < 2000 && reads < 2000) {
        r = h_call(b, "GET", "live:p", NULL);
        reads++;
        int i = -2;
        if (r != NULL && r->v->type == RESP_BULK && r->v->len > 1 && r->v->str[0] == 'v')
            i = atoi(r->v->str + 1);
        if (i < last)
            back++;
        else
            last = i;
        h_free(r);
        if (last != N - 1)
            h_sleep_ms(2);
    }
    int64_t pushes = info(&d, "owner_pushes") - pushes0;
    note("pipeline of %d SETs through colo A: colo B served v%d after %lld ms (%d reads, "
         "%d went back); %lld pushes", N, last, (long long)(h_now_ms() - t0), reads, back,
         (long long)pushes);
    EXPECT(back == 0, "colo B went back to an older value %d times", back);
    EXPECT(last == N - 1, "colo B serves v%d, not the last write v%d", last, N - 1);
    EXPECT(pushes > 0 && pushes < 2 * N, "%lld pushes for %d writes to 2 colos",
           (long long)pushes, N);
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* A deleted hot key is cached as "not found" like any other absent key: the
 * owner's answer carries its tombstone's stamp, which orders it after the
 * delete's invalidation, so readers of a deleted key do not reach the owner
 * on every read. */
START_TEST(deleted_hot_key_reads_stay_off_the_owner)
{
    struct daemon d;
    start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\nnegative-ttl 1s\n"
              "class live pattern \"live:*\" pool hot fresh 1s keep 30s\n");
    int fd = conn(&d);
    set(fd, "live:gone", "x");
    struct h_reply *r = h_call(fd, "GET", "live:gone", NULL);
    EXPECT(is_bulk(r, "x"), "first read: %s", raw(r));
    h_free(r);
    r = h_call(fd, "DEL", "live:gone", NULL);
    EXPECT(r->v->type == RESP_INT && r->v->integer == 1, "DEL: %s", raw(r));
    h_free(r);
    h_sleep_ms(1200); /* the owners' STATS poll */
    int64_t reads0 = info(&d, "owner_reads");
    int nils = 0, n = 0;
    int64_t t0 = h_now_ms();
    while (h_now_ms() - t0 < 1500 && n < 3000) {
        r = h_call(fd, "GET", "live:gone", NULL);
        nils += is_nil(r);
        h_free(r);
        n++;
    }
    h_sleep_ms(1200);
    int64_t reads1 = info(&d, "owner_reads");
    note("deleted hot key: %d reads in 1.5 s, %d nil; owner_reads %lld -> %lld", n, nils,
         (long long)reads0, (long long)reads1);
    EXPECT(nils == n, "%d of %d reads of a deleted key were not nil", n - nils, n);
    EXPECT(reads1 - reads0 <= 4, "the owner saw %lld reads of a deleted key (bound 4)",
           (long long)(reads1 - reads0));
    close(fd);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- issue 11: refresh locks of dead and stuck edges ------------------------ */

#define LOCK_CONF                                                                   \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\nmiss-wait 1s\nwrite-timeout 8s\n" \
    "class c pattern \"c:*\" pool cold fresh 30s keep 60s\n"

/* Sends GET key without waiting for the reply. */
static void send_get(int fd, const char *key)
{
    char req[256];
    size_t n = encode_get(req, sizeof(req), key);
    EXPECT(h_send(fd, req, n) == 0, "cannot send GET %s", key);
}

/* Makes edge pb (serving connection b) take key's refresh lock and leaves
 * it holding it with its fetch unanswered: the owner is stopped while pb
 * sends the fetch, then pb is killed (dead) or stopped (stuck), then the
 * owner resumes.  Returns the owner's pid. */
static pid_t leave_lock_with(struct daemon *d, int b, pid_t pb, const char *key, int dead)
{
    pid_t owner = child_with_title(d, "hotkvd: owner cold/0");
    EXPECT(owner > 0, "no process titled 'hotkvd: owner cold/0'");
    guard_start(owner);
    EXPECT(kill(owner, SIGSTOP) == 0, "SIGSTOP owner %d", (int)owner);
    g_stopped = owner;
    send_get(b, key); /* a miss: pb takes the key's lock and sends the fetch */
    h_sleep_ms(200);
    EXPECT(kill(pb, dead ? SIGKILL : SIGSTOP) == 0, "signal edge %d", (int)pb);
    h_sleep_ms(300); /* a dead edge is reaped by the master by then */
    resume_owner();
    if (!dead) {
        guard_start(pb);
        g_stopped = pb;
    }
    h_sleep_ms(100);
    return owner;
}

/* Defect 8 of issue 11: an edge that dies holding a key's refresh lock made
 * the colo's other edges answer nil for the (existing) key until the lock's
 * ttl.  The other edge must read the value, within miss-wait. */
START_TEST(dead_edge_lock_does_not_blank_a_key)
{
    struct daemon d;
    start(&d, LOCK_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    owner_set(&d, "cold", "c:lk", "here");
    leave_lock_with(&d, b, pb, "c:lk", 1);
    int64_t t0 = h_now_ms();
    struct h_reply *r = h_call(a, "GET", "c:lk", NULL);
    int64_t took = h_now_ms() - t0;
    note("dead lock holder: edge %d killed holding c:lk's lock; GET through edge %d -> %s "
         "after %lld ms",
         pb, pa, raw(r), (long long)took);
    EXPECT(is_bulk(r, "here"), "GET c:lk after the lock holder died: %s after %lld ms", raw(r),
           (long long)took);
    EXPECT(took < 1000, "GET c:lk took %lld ms (miss-wait 1s)", (long long)took);
    h_free(r);
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* Defect 8 of issue 11: a lock holder that is alive but does not fill the
 * segment (stopped, or its owner link down) must not make other edges'
 * readers answer nil for an existing key: past half its miss-wait a waiting
 * reader fetches the key itself. */
START_TEST(stuck_edge_lock_does_not_blank_a_key)
{
    struct daemon d;
    start(&d, LOCK_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    owner_set(&d, "cold", "c:lk", "here");
    leave_lock_with(&d, b, pb, "c:lk", 0);
    int64_t t0 = h_now_ms();
    struct h_reply *r = h_call(a, "GET", "c:lk", NULL);
    int64_t took = h_now_ms() - t0;
    note("stuck lock holder: edge %d stopped holding c:lk's lock; GET through edge %d -> %s "
         "after %lld ms",
         pb, pa, raw(r), (long long)took);
    EXPECT(is_bulk(r, "here"), "GET c:lk while the lock holder is stopped: %s after %lld ms",
           raw(r), (long long)took);
    EXPECT(took < 1000, "GET c:lk took %lld ms (miss-wait 1s)", (long long)took);
    h_free(r);
    resume_owner(); /* the stopped edge */
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* Defect 6 of issue 11: DEL then GET on one connection returned the deleted
 * value when a fetch of the key that started before the DEL was answered
 * after it: the DEL's invalidation found nothing to mark (the key was not
 * cached), so the late answer was stored as fresh.  Made deterministic: edge
 * pb sends the fetch while the owner is stopped, pb is stopped while the
 * owner answers it, edge pa deletes the key, pb resumes and stores (or, now,
 * refuses) the old answer, then pa reads the key.  Failed before the fix
 * (GET -> the deleted value). */
START_TEST(deleted_key_not_refilled_by_older_fetch)
{
    struct daemon d;
    /* no pushes: the owner's invalidation would reach one edge of the colo
     * (whichever holds the colo's push link) and, processed after the old
     * answer, hide the defect; what is tested is the edge's own invalidation */
    start(&d, LOCK_CONF "owner-push no\n");
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    owner_set(&d, "cold", "c:del", "deleted value");
    pid_t owner = child_with_title(&d, "hotkvd: owner cold/0");
    EXPECT(owner > 0, "no process titled 'hotkvd: owner cold/0'");
    guard_start2(owner, pb);
    EXPECT(kill(owner, SIGSTOP) == 0, "SIGSTOP owner %d", (int)owner);
    g_stopped = owner;
    send_get(b, "c:del"); /* pb: a miss, the fetch goes out and waits */
    h_sleep_ms(200);
    EXPECT(kill(pb, SIGSTOP) == 0, "SIGSTOP edge %d", (int)pb);
    g_stopped2 = pb;
    EXPECT(kill(owner, SIGCONT) == 0, "SIGCONT owner %d", (int)owner);
    g_stopped = 0;
    h_sleep_ms(200); /* the owner answers; the answer waits in pb's socket */
    struct h_reply *r = h_call(a, "DEL", "c:del", NULL);
    EXPECT(r->v->type == RESP_INT && r->v->integer == 1, "DEL c:del: %s", raw(r));
    h_free(r);
    resume_owner(); /* pb: stores its answer from before the DEL, or refuses it */
    h_sleep_ms(300);
    r = h_call(a, "GET", "c:del", NULL);
    note("older fetch after DEL: edge %d's fetch answered before edge %d's DEL; GET -> %s", pb,
         pa, raw(r));
    EXPECT(is_nil(r), "DEL then GET c:del returned %s", raw(r));
    h_free(r);
    r = h_read(b); /* pb's reader got its answer (from before the DEL) */
    h_free(r);
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- issue 11, defect 9: the staleness bound ---------------------------------- */

/* fresh 1s, miss-wait (the refresh allowance) 500ms, pushes off: only the
 * class's fresh carries a write from colo A to colo B. */
#define BOUND_CONF                                                                   \
    "colos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\nowner-push no\n"          \
    "miss-wait 500ms\nclass live pattern \"live:*\" pool hot fresh 1s keep 60s\n"
#define BOUND_FRESH_MS 1000
#define BOUND_ALLOW_MS 500
#define BOUND_MARGIN_MS 400 /* a loaded machine */

/* The first element of an MGET reply, if it is bulk `want`. */
static int mget1_is(const struct h_reply *r, const char *want)
{
    return r != NULL && r->v->type == RESP_ARRAY && r->v->n == 1 &&
           r->v->elems[0].type == RESP_BULK && h_str_is(&r->v->elems[0], want);
}

/* Defect 9 of issue 11: with the owner answering and pushes off, a read
 * through colo B must never return a value that a write through colo A
 * superseded more than fresh + the refresh allowance (miss-wait) earlier:
 * neither while B reads the key all the time (the stale read starts one
 * refresh and the next reads see it) nor when B reads it rarely (a stale
 * entry past the allowance is refreshed before it is served).  Before the
 * fix the sparse read got the value a write had replaced 2.5 s before. */
START_TEST(stale_reads_bounded_by_fresh_plus_allowance)
{
    struct daemon d;
    start(&d, BOUND_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb); /* one edge per colo: different colos */
    const int64_t bound = BOUND_FRESH_MS + BOUND_ALLOW_MS + BOUND_MARGIN_MS;
    /* B reads all the time: each write is seen within the bound */
    int64_t worst = 0;
    for (int i = 0; i < 4; i++) {
        char v[32];
        snprintf(v, sizeof(v), "v%d", i);
        set(a, "live:b", v);
        int64_t t0 = h_now_ms(), seen = -1;
        for (int n = 0; n < 1000 && seen < 0 && h_now_ms() - t0 < 5000; n++) {
            struct h_reply *r = h_call(b, "GET", "live:b", NULL);
            if (is_bulk(r, v))
                seen = h_now_ms() - t0;
            h_free(r);
            if (seen < 0)
                h_sleep_ms(20);
        }
        note("staleness, B reading all the time: write %d seen through colo B after %lld ms", i,
             (long long)seen);
        EXPECT(seen >= 0 && seen <= bound,
               "write %d through colo A seen through colo B after %lld ms (bound %lld)", i,
               (long long)seen, (long long)bound);
        if (seen > worst)
            worst = seen;
        h_sleep_ms(300 * i); /* the next write at another point of the fresh window */
    }
    /* B reads rarely: GET, then MGET */
    for (int k = 0; k < 2; k++) {
        const char *v = k == 0 ? "sparse-get" : "sparse-mget";
        struct h_reply *r = h_call(b, "GET", "live:b", NULL); /* cached in colo B now */
        h_free(r);
        set(a, "live:b", v);
        int64_t acked = h_now_ms();
        h_sleep_ms(2500); /* fresh 1s: stale for 1.5 s by the next read */
        int64_t t = h_now_ms();
        r = k == 0 ? h_call(b, "GET", "live:b", NULL) : h_call(b, "MGET", "live:b", NULL);
        int64_t took = h_now_ms() - t;
        int ok = k == 0 ? is_bulk(r, v) : mget1_is(r, v);
        note("staleness, B reading rarely: %s through colo B %lld ms after the write -> %s "
             "(in %lld ms)",
             k == 0 ? "GET" : "MGET", (long long)(t - acked), raw(r), (long long)took);
        EXPECT(ok,
               "%s through colo B returned %s, a value superseded at least %lld ms before "
               "(bound %lld)",
               k == 0 ? "GET" : "MGET", raw(r), (long long)(t - acked), (long long)bound);
        h_free(r);
    }
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

Suite *colo_bound_suite(void)
{
    Suite *s = suite_create("colo_bound");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"negative", negative_entries_cached_for_negative_ttl},
        {"two_colos", write_reaches_the_other_colo_by_push_then_by_fresh},
        {"coalesced_pushes", pipelined_writes_reach_the_other_colo_latest_last},
        {"deleted_key", deleted_hot_key_reads_stay_off_the_owner},
        {"dead_lock_holder", dead_edge_lock_does_not_blank_a_key},
        {"stuck_lock_holder", stuck_edge_lock_does_not_blank_a_key},
        {"del_then_get", deleted_key_not_refilled_by_older_fetch},
        {"staleness_bound", stale_reads_bounded_by_fresh_plus_allowance},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

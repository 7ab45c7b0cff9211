/*
 * check_tracking.c - CLIENT TRACKING on the real daemon (two edges): a
 * write through either edge invalidates every tracking client that read the
 * key, once; an invalidation of a version that reached the colo comes
 * before any later reply on the tracking connection (hotkvd's ordering
 * promise); BCAST prefixes, OPTIN/OPTOUT with CLIENT CACHING, NOLOOP,
 * REDIRECT; FLUSHALL and an owner restart (its push link down and back)
 * flush every tracking client; tracking-table-max-keys evicts with an
 * invalidation; Redis 7.0's error texts and TRACKINGINFO/GETREDIR; a
 * closed client leaves nothing in the table.  Every wait is bounded.
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

static struct daemon D;
static int started;
static pid_t stopped_owner; /* SIGSTOPped by a test: let go before any stop */

static void cleanup(void)
{
    if (stopped_owner > 0)
        kill(stopped_owner, SIGCONT);
    stopped_owner = 0;
    if (started)
        h_stop(&D);
    started = 0;
}

#define EXPECT(cond, ...) H_EXPECT(cleanup, cond, __VA_ARGS__)

static void start(const char *extra)
{
    h_on_fail(cleanup);
    EXPECT(h_start(&D, extra) == 0, "daemon did not start");
    started = 1;
}

/* Stops the daemon: every child exited 0 (a crash or, under ASan, a leak
 * report fails the test). */
static void stop(void)
{
    int st = h_stop(&D);
    started = 0;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon did not stop cleanly (%d)", st);
}

static int resp3(int fd)
{
    struct h_reply *r = h_call(fd, "HELLO", "3", NULL);
    int ok = r->v->type == RESP_MAP;
    h_free(r);
    return ok;
}

static const char *FLUSH = ">2\r\n$10\r\ninvalidate\r\n_\r\n";

/* The next reply is want; a flush before it is skipped (an owner's push link
 * greeted late, on a loaded machine, flushes every tracker: allowed). */
static void expect_raw(int fd, const char *want, const char *what, ...)
{
    struct h_reply *r = h_read(fd);
    for (int i = 0; i < 8 && r != NULL && strcmp(want, FLUSH) != 0 && strcmp(r->raw, FLUSH) == 0;
         i++) {
        h_free(r);
        r = h_read(fd);
    }
    EXPECT(r != NULL, "%s: no reply", what);
    int ok = strcmp(r->raw, want) == 0;
    if (!ok)
        fprintf(stderr, "tracking: %s: got %s, want %s\n", what, r->raw, want);
    h_free(r);
    EXPECT(ok, "%s: unexpected reply", what);
}

static void call_raw(int fd, const char *want, const char *what, const char *a, const char *b,
                     const char *c, const char *d2)
{
    EXPECT(h_sendv(fd, a, b, c, d2, NULL) == 0, "%s: send", what);
    expect_raw(fd, want, what);
}

/* 1 if fd has bytes within ms. */
static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* The invalidation push of one key, RESP3. */
static void inval_raw(const char *key, char *out, size_t len)
{
    snprintf(out, len, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$%zu\r\n%s\r\n", strlen(key), key);
}

/* The invalidation of key, after any flush (an owner's push link greeted
 * late, on a loaded machine, flushes every tracker: allowed, not asked). */
static void expect_inval(int fd, const char *key, const char *what)
{
    char want[256];
    inval_raw(key, want, sizeof(want));
    for (int i = 0; i < 8; i++) {
        ck_assert_msg(started, "%s: no daemon", what);
    EXPECT(readable(fd, 3000), "%s: no invalidation of %s within 3 s", what, key);
        struct h_reply *r = h_read(fd);
        EXPECT(r != NULL, "%s: no reply", what);
        int flush = strcmp(r->raw, FLUSH) == 0, ok = strcmp(r->raw, want) == 0;
        if (!flush && !ok)
            fprintf(stderr, "tracking: %s: got %s, want %s\n", what, r->raw, want);
        h_free(r);
        if (ok)
            return;
        EXPECT(flush, "%s: unexpected reply", what);
    }
    EXPECT(0, "%s: 8 flushes and no invalidation of %s", what, key);
}

static void expect_quiet(int fd, int ms, const char *what)
{
    if (readable(fd, ms)) {
        struct h_reply *r = h_read(fd);
        fprintf(stderr, "tracking: %s: unexpected %s\n", what, r ? r->raw : "(EOF)");
        h_free(r);
        EXPECT(0, "%s: something came", what);
    }
}

START_TEST(a_write_through_either_edge_invalidates_every_tracker_once)
{
    start("");
    int t, w;
    EXPECT(h_edge_pair(&D, &t, &w) == 0, "no second edge answered");
    int t2 = h_connect(D.port); /* a second tracker, whichever edge */
    EXPECT(resp3(t) && resp3(t2), "HELLO 3");
    h_free(h_call(w, "SET", "tk", "v1", NULL));
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    call_raw(t2, "+OK\r\n", "tracking on 2", "CLIENT", "TRACKING", "on", NULL);
    call_raw(t, "$2\r\nv1\r\n", "GET tk", "GET", "tk", NULL, NULL);
    call_raw(t2, "$2\r\nv1\r\n", "GET tk 2", "GET", "tk", NULL, NULL);
    EXPECT(h_info_int(D.port, "tracking_clients") == 2, "tracking_clients");
    h_free(h_call(w, "SET", "other", "x", NULL)); /* nobody read it */
    h_free(h_call(w, "SET", "tk", "v2", NULL));
    expect_inval(t, "tk", "tracker on another edge than the writer");
    expect_inval(t2, "tk", "second tracker");
    h_free(h_call(w, "SET", "tk", "v3", NULL)); /* forgotten since: not told again */
    expect_quiet(t, 300, "second write, key not read again");
    call_raw(t, "$2\r\nv3\r\n", "GET tk again", "GET", "tk", NULL, NULL);
    h_free(h_call(w, "DEL", "tk", NULL));
    expect_inval(t, "tk", "a delete");
    close(t);
    close(t2);
    close(w);
    int64_t end = h_now_ms() + 3000;
    while (h_info_int(D.port, "tracking_total_items") != 0 && h_now_ms() < end)
        h_sleep_ms(20);
    EXPECT(h_info_int(D.port, "tracking_clients") == 0, "closed trackers still counted");
    EXPECT(h_info_int(D.port, "tracking_total_items") == 0, "closed trackers' keys stay");
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* The promise: once a write is acknowledged, a tracking client's next reply
 * comes after the invalidation of the version it superseded. */
START_TEST(the_invalidation_comes_before_any_later_reply)
{
    start("");
    int t, w;
    EXPECT(h_edge_pair(&D, &t, &w) == 0, "no second edge answered");
    EXPECT(resp3(t), "HELLO 3");
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    char v[32], want[64];
    for (int i = 0; i < 50; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        h_free(h_call(w, "SET", "ord", v, NULL));
        if (i > 0)
            expect_inval(t, "ord", "before the next reply"); /* first, not after the GET */
        snprintf(want, sizeof(want), "$%zu\r\n%s\r\n", strlen(v), v);
        call_raw(t, want, "GET after the write's OK", "GET", "ord", NULL, NULL);
    }
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

START_TEST(bcast_noloop_optin_optout)
{
    start("");
    int b = h_connect(D.port), w = h_connect(D.port);
    EXPECT(resp3(b), "HELLO 3");
    call_raw(b, "+OK\r\n", "bcast", "CLIENT", "TRACKING", "on", "BCAST");
    EXPECT(h_sendv(b, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", NULL) == 0, "send");
    expect_raw(b, "-ERR Prefix 'user:' overlaps with an existing prefix ''. Prefixes for a "
                  "single client must not overlap.\r\n", "every key's prefix is there already");
    call_raw(b, "+OK\r\n", "off", "CLIENT", "TRACKING", "off", NULL);
    EXPECT(h_sendv(b, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "NOLOOP",
                   NULL) == 0, "send");
    expect_raw(b, "+OK\r\n", "bcast prefix noloop");
    h_free(h_call(w, "SET", "user:1", "a", NULL));
    expect_inval(b, "user:1", "bcast, never read");
    h_free(h_call(w, "SET", "item:1", "a", NULL));
    expect_quiet(b, 300, "another prefix");
    call_raw(b, "+OK\r\n", "own write", "SET", "user:2", "b", NULL);
    expect_quiet(b, 300, "NOLOOP: its own write");
    close(b);

    int o = h_connect(D.port);
    EXPECT(resp3(o), "HELLO 3");
    call_raw(o, "+OK\r\n", "optin", "CLIENT", "TRACKING", "on", "OPTIN");
    call_raw(o, "$1\r\na\r\n", "GET without CACHING", "GET", "user:1", NULL, NULL);
    h_free(h_call(w, "SET", "user:1", "c", NULL));
    expect_quiet(o, 300, "OPTIN without CLIENT CACHING yes");
    call_raw(o, "+OK\r\n", "caching yes", "CLIENT", "CACHING", "yes", NULL);
    call_raw(o, "$1\r\nc\r\n", "GET after CACHING yes", "GET", "user:1", NULL, NULL);
    h_free(h_call(w, "SET", "user:1", "d", NULL));
    expect_inval(o, "user:1", "OPTIN with CACHING yes");
    close(o);

    int n = h_connect(D.port);
    EXPECT(resp3(n), "HELLO 3");
    call_raw(n, "+OK\r\n", "optout", "CLIENT", "TRACKING", "on", "OPTOUT");
    call_raw(n, "+OK\r\n", "caching no", "CLIENT", "CACHING", "no", NULL);
    call_raw(n, "$1\r\nd\r\n", "GET after CACHING no", "GET", "user:1", NULL, NULL);
    h_free(h_call(w, "SET", "user:1", "e", NULL));
    expect_quiet(n, 300, "OPTOUT with CACHING no");
    call_raw(n, "$1\r\ne\r\n", "GET", "GET", "user:1", NULL, NULL);
    h_free(h_call(w, "SET", "user:1", "f", NULL));
    expect_inval(n, "user:1", "OPTOUT by default");
    close(n);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

START_TEST(redirect_flushall_and_an_owner_restart_flush)
{
    start("");
    /* a RESP3 redirect target on the same edge as its RESP2 tracker */
    int t = -1, r = -1, w = h_connect(D.port);
    for (int i = 0; i < 40 && t < 0; i++) {
        int a = h_connect(D.port), b = h_connect(D.port);
        if (h_edge_of(a) == h_edge_of(b)) {
            t = a;
            r = b;
        } else {
            close(a);
            close(b);
        }
    }
    EXPECT(t >= 0, "no two connections on one edge in 40 tries");
    EXPECT(resp3(r), "HELLO 3");
    struct h_reply *id = h_call(r, "CLIENT", "ID", NULL);
    char rid[32], want[64];
    snprintf(rid, sizeof(rid), "%lld", (long long)id->v->integer);
    h_free(id);
    EXPECT(h_sendv(t, "CLIENT", "TRACKING", "on", "REDIRECT", rid, NULL) == 0, "send");
    expect_raw(t, "+OK\r\n", "tracking on redirect");
    snprintf(want, sizeof(want), ":%s\r\n", rid);
    call_raw(t, want, "GETREDIR", "CLIENT", "GETREDIR", NULL, NULL);
    call_raw(t, "$-1\r\n", "GET rk", "GET", "rk", NULL, NULL);
    h_free(h_call(w, "SET", "rk", "1", NULL));
    expect_inval(r, "rk", "the redirect target");
    expect_quiet(t, 200, "the tracker itself (redirected)");

    /* FLUSHALL: every tracker, its redirect target and a RESP3 one, one flush */
    int f = h_connect(D.port);
    EXPECT(resp3(f), "HELLO 3");
    call_raw(f, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    call_raw(f, "$1\r\n1\r\n", "GET rk", "GET", "rk", NULL, NULL);
    call_raw(t, "$1\r\n1\r\n", "GET rk again", "GET", "rk", NULL, NULL);
    h_free(h_call(w, "FLUSHALL", NULL));
    EXPECT(readable(f, 3000), "no flush after FLUSHALL");
    expect_raw(f, FLUSH, "FLUSHALL, RESP3 tracker");
    EXPECT(readable(r, 3000), "no flush at the redirect target");
    expect_raw(r, FLUSH, "FLUSHALL, redirect target");
    expect_quiet(f, 300, "one flush per FLUSHALL");

    /* the target goes: the redirect is broken, said in TRACKINGINFO */
    close(r);
    call_raw(t, "$-1\r\n", "GET rk after FLUSHALL", "GET", "rk", NULL, NULL);
    h_free(h_call(w, "SET", "rk", "2", NULL));
    int64_t end = h_now_ms() + 3000;
    int broken = 0;
    while (!broken && h_now_ms() < end) {
        struct h_reply *ti = h_call(t, "CLIENT", "TRACKINGINFO", NULL);
        broken = strstr(ti->raw, "broken_redirect") != NULL;
        h_free(ti);
        if (!broken)
            h_sleep_ms(20);
    }
    EXPECT(broken, "TRACKINGINFO shows no broken_redirect after the target closed");

    /* an owner restarts: its push link breaks, pushes may be lost: a flush */
    call_raw(f, "$1\r\n2\r\n", "GET rk", "GET", "rk", NULL, NULL);
    pid_t o = h_child(&D, "hotkvd: owner", 0);
    EXPECT(o > 0, "no owner process");
    kill(o, SIGKILL);
    EXPECT(readable(f, 10000), "no flush within 10 s of an owner's kill");
    /* the second record of SET rk 2 (its owner's push, after the GET above
     * remembered rk) may tell rk first: README's one extra miss */
    char rk[64];
    inval_raw("rk", rk, sizeof(rk));
    struct h_reply *x = h_read(f);
    for (int i = 0; i < 4 && x != NULL && strcmp(x->raw, rk) == 0; i++) {
        h_free(x);
        x = h_read(f);
    }
    EXPECT(x != NULL && strcmp(x->raw, FLUSH) == 0, "owner restart: %s, not a flush",
           x != NULL ? x->raw : "no reply");
    h_free(x);
    close(f);
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* RESP2's way (redis-py's): the invalidations go to a connection SUBSCRIBEd
 * to __redis__:invalidate, here on the other edge (through the colo's bus). */
START_TEST(a_resp2_redirect_to_another_edge_gets_the_messages)
{
    start("");
    int t, r, w = h_connect(D.port);
    EXPECT(h_edge_pair(&D, &t, &r) == 0, "no second edge answered");
    struct h_reply *id = h_call(r, "CLIENT", "ID", NULL);
    char rid[32];
    snprintf(rid, sizeof(rid), "%lld", (long long)id->v->integer);
    h_free(id);
    EXPECT(h_sendv(r, "SUBSCRIBE", "__redis__:invalidate", NULL) == 0, "send");
    expect_raw(r, "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n", "subscribe");
    EXPECT(h_sendv(t, "CLIENT", "TRACKING", "on", "REDIRECT", rid, NULL) == 0, "send");
    expect_raw(t, "+OK\r\n", "redirect to the other edge");
    h_free(h_call(w, "SET", "xk", "1", NULL));
    call_raw(t, "$1\r\n1\r\n", "GET xk", "GET", "xk", NULL, NULL);
    h_free(h_call(w, "SET", "xk", "2", NULL));
    EXPECT(readable(r, 3000), "no message at the redirect target within 3 s");
    expect_raw(r, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\nxk\r\n",
               "the invalidation, as a message on the other edge");
    h_free(h_call(w, "FLUSHALL", NULL));
    EXPECT(readable(r, 3000), "no flush at the redirect target");
    expect_raw(r, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n",
               "FLUSHALL, as a null message");
    close(t);
    close(r);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

START_TEST(a_full_table_evicts_with_an_invalidation)
{
    start("tracking-table-max-keys 10\nedge-workers 1\n");
    int t = h_connect(D.port), w = h_connect(D.port);
    EXPECT(resp3(t), "HELLO 3");
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    char k[32];
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "full:%d", i);
        EXPECT(h_sendv(t, "GET", k, NULL) == 0, "send");
    }
    int pushes = 0, replies = 0;
    while (replies < 20 || readable(t, 300)) { /* each read is bounded by 5 s */
        struct h_reply *r = h_read(t);
        EXPECT(r != NULL, "no reply (%d replies, %d pushes)", replies, pushes);
        if (r->v->type == RESP_PUSH)
            pushes++;
        else
            replies += strcmp(r->raw, "_\r\n") == 0;
        h_free(r);
        EXPECT(pushes + replies <= 40, "more than 40 answers to 20 GETs");
    }
    EXPECT(pushes == 10, "%d evictions told, want 10", pushes);
    EXPECT(h_info_int(D.port, "tracking_total_keys") == 10, "table over its bound");
    EXPECT(h_info_int(D.port, "tracking_evicted_keys") == 10, "evictions not counted");
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* A key a read remembers is never the one evicted before that read's reply
 * (told first, then cached by the client and forgotten by the edge: stale
 * for good).  Found by the history checker (tracking-table-max-keys 1). */
START_TEST(an_eviction_never_precedes_the_reply_that_fills_the_cache)
{
    start("tracking-table-max-keys 1\nedge-workers 1\n");
    int t = h_connect(D.port), w = h_connect(D.port);
    EXPECT(resp3(t), "HELLO 3");
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    char k[32], told[64][32];
    int ntold = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof(k), "ev:%d", i);
        EXPECT(h_sendv(t, "GET", k, NULL) == 0, "send");
        for (int n = 0; n < 4; n++) { /* pushes of earlier keys, then the reply */
            struct h_reply *r = h_read(t);
            EXPECT(r != NULL, "GET %s: no reply", k);
            int push = r->v->type == RESP_PUSH;
            if (push) {
                EXPECT(strstr(r->raw, k) == NULL || strstr(r->raw, k)[strlen(k)] != '\r',
                       "%s evicted before its own reply", k);
                if (ntold < 64)
                    snprintf(told[ntold++], sizeof(told[0]), "%s", r->raw);
            }
            h_free(r);
            if (!push)
                break;
        }
    }
    EXPECT(ntold >= 30, "only %d evictions told for 40 keys in a table of 1", ntold);
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* Without pushes to the colo (owner-push no) a change made elsewhere (another
 * host) would never be told: a tracked key is told at the end of its
 * class's freshness instead, so a cached value is never older than the
 * bound.  Each key once per deadline, however often it is read. */
START_TEST(unpushed_keys_are_told_when_their_freshness_ends)
{
    start("owner-push no\nclass quick pattern \"q:*\" fresh 300ms keep 1s\n");
    int t = h_connect(D.port), w = h_connect(D.port);
    EXPECT(resp3(t), "HELLO 3");
    h_free(h_call(w, "SET", "q:1", "a", NULL));
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    int64_t t0 = h_now_ms();
    for (int i = 0; i < 5; i++)
        call_raw(t, "$1\r\na\r\n", "GET q:1", "GET", "q:1", NULL, NULL);
    expect_inval(t, "q:1", "the end of its freshness");
    int64_t ms = h_now_ms() - t0;
    fprintf(stderr, "tracking: unpushed key told after %lld ms (fresh 300 ms)\n", (long long)ms);
    EXPECT(ms >= 250 && ms < 2000, "told after %lld ms", (long long)ms);
    expect_quiet(t, 500, "one invalidation for five reads");
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* An owner that stops answering (stopped here; a cut link in a cluster,
 * where its pushes come seconds late through TCP's resends) pushes nothing
 * either: once the colo marks it silent, every tracker is flushed, and
 * what is read meanwhile is told one fresh later, as an unpushed key. */
START_TEST(an_owner_marked_silent_flushes_the_trackers)
{
    start("hot-owners 1\ncold-owners 1\nmiss-wait 200ms\n"
          "class quick pattern \"q:*\" pool hot fresh 300ms keep 20s\n");
    int t = h_connect(D.port), w = h_connect(D.port), r = h_connect(D.port);
    EXPECT(resp3(t), "HELLO 3");
    h_free(h_call(w, "SET", "q:1", "a", NULL));
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    call_raw(t, "$1\r\na\r\n", "GET q:1", "GET", "q:1", NULL, NULL);
    /* (a flush before the stop, a push link greeted late on a loaded
     * machine, is allowed and drained here) */
    while (readable(t, 300))
        h_free(h_read(t));
    stopped_owner = h_child(&D, "hotkvd: owner hot/0", 0);
    EXPECT(stopped_owner > 0, "no owner hot/0");
    kill(stopped_owner, SIGSTOP);
    int64_t t0 = h_now_ms();
    /* a miss of the same owner: its fetch goes unanswered, the colo marks it */
    h_free(h_call(r, "GET", "q:nothing", NULL));
    EXPECT(readable(t, 5000), "no flush within 5 s of the owner's stop");
    expect_raw(t, FLUSH, "the owner marked silent");
    fprintf(stderr, "tracking: flushed %lld ms after the owner stopped\n",
            (long long)(h_now_ms() - t0));
    /* read while it is silent: the colo's stale value, told one fresh later */
    call_raw(t, "$1\r\na\r\n", "GET q:1 while silent", "GET", "q:1", NULL, NULL);
    int64_t t1 = h_now_ms();
    expect_inval(t, "q:1", "a key read while its owner is silent");
    int64_t ms = h_now_ms() - t1;
    EXPECT(ms >= 250 && ms < 3000, "told after %lld ms (fresh 300 ms)", (long long)ms);
    kill(stopped_owner, SIGCONT);
    stopped_owner = 0;
    close(t);
    close(w);
    close(r);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* The same with no read going to the stopped owner: a write to it that goes
 * unacknowledged for write-deadline marks it silent too (a tracker on a host
 * cut off from an owner served a value 3 s past the bound: its host's
 * clients only wrote meanwhile). */
START_TEST(an_unacknowledged_write_marks_the_owner_silent_too)
{
    start("hot-owners 1\ncold-owners 1\nwrite-timeout 300ms\nwrite-retry-backoff\n"
          "write-deadline 300ms\nclass quick pattern \"q:*\" pool hot fresh 10s keep 20s\n");
    int t = h_connect(D.port), w = h_connect(D.port);
    EXPECT(resp3(t), "HELLO 3");
    h_free(h_call(w, "SET", "q:1", "a", NULL));
    call_raw(t, "+OK\r\n", "tracking on", "CLIENT", "TRACKING", "on", NULL);
    call_raw(t, "$1\r\na\r\n", "GET q:1", "GET", "q:1", NULL, NULL);
    while (readable(t, 300)) /* a late-greeted push link's flush: allowed */
        h_free(h_read(t));
    stopped_owner = h_child(&D, "hotkvd: owner hot/0", 0);
    EXPECT(stopped_owner > 0, "no owner hot/0");
    kill(stopped_owner, SIGSTOP);
    struct h_reply *r = h_call(w, "SET", "q:2", "b", NULL); /* fails: outcome unknown */
    EXPECT(r != NULL && r->v->type == RESP_ERROR, "SET to a stopped owner: %s",
           r != NULL ? r->raw : "(none)");
    h_free(r);
    EXPECT(readable(t, 3000), "no flush within 3 s of the failed write");
    expect_raw(t, FLUSH, "the owner marked silent by a write");
    kill(stopped_owner, SIGCONT);
    stopped_owner = 0;
    close(t);
    close(w);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

/* Redis 7.0's answers, checked against redis-server 7.0.15 by hand. */
START_TEST(errors_and_introspection_are_redis_s)
{
    start("");
    int c = h_connect(D.port);
    struct {
        const char *w[9];
        const char *want;
    } cases[] = {
        {{"CLIENT", "TRACKING", "foo"}, "-ERR syntax error\r\n"},
        {{"CLIENT", "TRACKING", "on", "bogus"}, "-ERR syntax error\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast", "optin"},
         "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n"},
        {{"CLIENT", "TRACKING", "on", "optin", "optout"},
         "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n"},
        {{"CLIENT", "TRACKING", "on", "prefix", "a"},
         "-ERR PREFIX option requires BCAST mode to be enabled\r\n"},
        {{"CLIENT", "TRACKING", "on", "redirect", "999999"},
         "-ERR The client ID you want redirect to does not exist\r\n"},
        {{"CLIENT", "TRACKING", "on", "redirect", "x"},
         "-ERR value is not an integer or out of range\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix"}, "-ERR syntax error\r\n"},
        {{"CLIENT", "CACHING", "yes"},
         "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
         "or OPTOUT mode enabled\r\n"},
        {{"CLIENT", "GETREDIR"}, ":-1\r\n"},
        {{"CLIENT", "TRACKINGINFO"},
         "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"},
        {{"CLIENT", "TRACKING", "on", "optin"}, "+OK\r\n"},
        {{"CLIENT", "CACHING", "maybe"}, "-ERR syntax error\r\n"},
        {{"CLIENT", "CACHING", "no"},
         "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n"},
        {{"CLIENT", "CACHING", "yes"}, "+OK\r\n"},
        {{"CLIENT", "TRACKINGINFO"},
         "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n$8\r\n"
         "redirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"},
        {{"CLIENT", "TRACKING", "on", "optout"},
         "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
         "then re-enabling it with a different mode.\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast"},
         "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
         "then re-enabling it with a different mode.\r\n"},
        {{"CLIENT", "TRACKING", "off"}, "+OK\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "ab"},
         "-ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single "
         "client must not overlap.\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast", "prefix", "a"}, "+OK\r\n"},
        {{"CLIENT", "TRACKING", "on", "bcast", "prefix", "ab"},
         "-ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client "
         "must not overlap.\r\n"},
        {{"CLIENT", "GETREDIR"}, ":0\r\n"},
        {{"RESET"}, "+RESET\r\n"},
        {{"CLIENT", "GETREDIR"}, ":-1\r\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = 0;
        while (n < 9 && cases[i].w[n] != NULL)
            n++;
        struct h_reply *r = h_cmd(c, n, cases[i].w);
        EXPECT(r != NULL, "case %zu: no reply", i);
        int ok = strcmp(r->raw, cases[i].want) == 0;
        if (!ok)
            fprintf(stderr, "tracking: case %zu: got %s want %s\n", i, r->raw, cases[i].want);
        h_free(r);
        EXPECT(ok, "case %zu", i);
    }
    close(c);
    stop();
    ck_assert(!started); /* stopped by PID, every child exited 0 */
}
END_TEST

Suite *tracking_suite(void)
{
    Suite *s = suite_create("tracking");
    TCase *tc = tcase_create("invalidations");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, h_dir_setup, h_dir_teardown);
    tcase_add_test(tc, a_write_through_either_edge_invalidates_every_tracker_once);
    tcase_add_test(tc, the_invalidation_comes_before_any_later_reply);
    tcase_add_test(tc, bcast_noloop_optin_optout);
    tcase_add_test(tc, redirect_flushall_and_an_owner_restart_flush);
    tcase_add_test(tc, a_full_table_evicts_with_an_invalidation);
    tcase_add_test(tc, a_resp2_redirect_to_another_edge_gets_the_messages);
    tcase_add_test(tc, unpushed_keys_are_told_when_their_freshness_ends);
    tcase_add_test(tc, an_owner_marked_silent_flushes_the_trackers);
    tcase_add_test(tc, an_unacknowledged_write_marks_the_owner_silent_too);
    tcase_add_test(tc, an_eviction_never_precedes_the_reply_that_fills_the_cache);
    tcase_add_test(tc, errors_and_introspection_are_redis_s);
    suite_add_tcase(s, tc);
    return s;
}

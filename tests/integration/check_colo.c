/*
 * check_colo.c - the hot-key read path through the colo segment, against the
 * real daemon (issue 5, DESIGN §2 and §3):
 * - a storm of 200 connections reading one hot key through 2 edges for 5 s
 *   costs the owner at most colos x keys x seconds / fresh (+2) reads;
 * - with the owner SIGSTOPped, a stale value keeps being served (within
 *   miss-wait once per edge, then at once), a
 *   cold miss answers nil (degrade) or -TRYAGAIN (error) within miss-wait,
 *   and values appear again once the owner resumes;
 * - a write through one edge is read back at once through the other;
 * - a write made directly at the owner (no edge involved) reaches the colo
 *   by push (hot pool: the value; cold pool: an invalidation) in < 100 ms;
 * - CLIENT META ON adds an attribute to RESP3 read replies only;
 * - HOTKEYS and INFO # Hotkeys name the hottest key (colos, deletes,
 *   negative entries, refresh locks and the staleness bound:
 *   check_colo_bound.c).
 *
 * Every wait and loop is bounded in time and count.  A failing check SIGCONTs
 * any owner the test stopped, prints the tail of the daemon log and stops the
 * daemon by pid (h_stop) before the test fails; a guardian process SIGCONTs a
 * stopped owner even if the test process dies some other way.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/colo_fixture.h"

/* ---- pipelined reads ------------------------------------------------------------ */

static size_t encode_bulk(char *out, size_t cap, const char *val)
{
    int n = snprintf(out, cap, "$%zu\r\n%s\r\n", strlen(val), val);
    return (size_t)n;
}

/* Sends `n` GETs of key on a blocking connection in batches of 500 and reads
 * every reply; returns how many were exactly `val` (bounded by 20 s). */
static int pipelined_gets(int fd, const char *key, const char *val, int n)
{
    char req[256], want[256];
    size_t rl = encode_get(req, sizeof(req), key), wl = encode_bulk(want, sizeof(want), val);
    char *batch = malloc(rl * 500);
    for (int i = 0; i < 500; i++)
        memcpy(batch + rl * (size_t)i, req, rl);
    size_t cap = 1 << 20, len = 0;
    char *in = malloc(cap);
    int good = 0, got = 0;
    int64_t end = h_now_ms() + 20000;
    for (int sent = 0; sent < n && h_now_ms() < end;) {
        int k = n - sent < 500 ? n - sent : 500;
        if (h_send(fd, batch, rl * (size_t)k) != 0)
            break;
        sent += k;
        int want_total = sent;
        while (got < want_total && h_now_ms() < end) {
            ssize_t r = recv(fd, in + len, cap - len, 0);
            if (r <= 0)
                goto out;
            len += (size_t)r;
            size_t off = 0;
            while (off < len) {
                if (len - off >= wl && memcmp(in + off, want, wl) == 0) {
                    good++;
                    got++;
                    off += wl;
                    continue;
                }
                struct resp_value *v = NULL;
                size_t used = 0;
                int rc = resp_parse_reply(in + off, len - off, &used, &v);
                if (rc != HKV_OK)
                    break;
                resp_value_free(&v);
                got++;
                off += used;
            }
            memmove(in, in + off, len - off);
            len -= off;
        }
    }
out:
    free(batch);
    free(in);
    return good;
}

/* ---- the storm: many non-blocking connections, pipelined GETs ---------------- */

enum { STORM_CONNS = 200, STORM_DEPTH = 4 };

struct sconn {
    int fd;
    int outstanding;
    char out[STORM_DEPTH * 64];
    size_t olen, ooff;
    char in[8192];
    size_t ilen;
    int want_out;
};

struct storm_result {
    long good, wrong, errors;
    char first_wrong[128];
};

static void storm_pump_out(int ep, struct sconn *c, const char *req, size_t rl, int sending)
{
    if (c->fd < 0)
        return;
    if (sending && c->ooff == c->olen && c->outstanding < STORM_DEPTH) {
        c->olen = c->ooff = 0;
        while (c->outstanding < STORM_DEPTH) {
            memcpy(c->out + c->olen, req, rl);
            c->olen += rl;
            c->outstanding++;
        }
    }
    while (c->ooff < c->olen) {
        ssize_t w = send(c->fd, c->out + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);
        if (w > 0) {
            c->ooff += (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        close(c->fd);
        c->fd = -1;
        return;
    }
    int want = c->ooff < c->olen;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
}

/* Reads what is there and counts replies; 0, or -1 when the connection broke. */
static int storm_read(struct sconn *c, const char *want, size_t wl, struct storm_result *res)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t r = recv(c->fd, c->in + c->ilen, sizeof(c->in) - c->ilen, 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (r <= 0)
            return -1;
        c->ilen += (size_t)r;
        size_t off = 0;
        while (off < c->ilen) {
            if (c->ilen - off >= wl && memcmp(c->in + off, want, wl) == 0) {
                res->good++;
                c->outstanding--;
                off += wl;
                continue;
            }
            struct resp_value *v = NULL;
            size_t used = 0;
            int rc = resp_parse_reply(c->in + off, c->ilen - off, &used, &v);
            if (rc == HKV_EAGAIN)
                break;
            if (rc != HKV_OK)
                return -1;
            if (res->wrong++ == 0) {
                size_t n = used < sizeof(res->first_wrong) - 1 ? used : sizeof(res->first_wrong) - 1;
                memcpy(res->first_wrong, c->in + off, n);
                res->first_wrong[n] = '\0';
            }
            resp_value_free(&v);
            c->outstanding--;
            off += used;
        }
        memmove(c->in, c->in + off, c->ilen - off);
        c->ilen -= off;
    }
    return 0;
}

/* Runs the storm on already connected fds for ms; fills res. */
static void storm(int *fds, int n, const char *key, const char *val, int ms,
                  struct storm_result *res)
{
    char req[256], want[256];
    size_t rl = encode_get(req, sizeof(req), key), wl = encode_bulk(want, sizeof(want), val);
    memset(res, 0, sizeof(*res));
    struct sconn *cs = calloc((size_t)n, sizeof(*cs));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    ck_assert_int_ge(ep, 0);
    for (int i = 0; i < n; i++) {
        cs[i].fd = fds[i];
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
    }
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < n; i++)
        storm_pump_out(ep, &cs[i], req, rl, 1);
    struct epoll_event evs[256];
    long iterations = 0;
    while (h_now_ms() < end && iterations++ < 50000000) {
        int k = epoll_wait(ep, evs, 256, 10);
        for (int i = 0; i < k; i++) {
            struct sconn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
                storm_read(c, want, wl, res) != 0) {
                res->errors++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                continue;
            }
            storm_pump_out(ep, c, req, rl, 1);
        }
    }
    close(ep);
    for (int i = 0; i < n; i++) {
        /* The caller's fds: closed here (a broken one already was). */
        if (cs[i].fd >= 0)
            close(cs[i].fd);
        fds[i] = -1;
    }
    free(cs);
}

/* ---- 1. hot-key storm --------------------------------------------------------- */

#define STORM_CONF                                                \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\n"               \
    "class live pattern \"live:*\" pool hot fresh 1s keep 30s\n"

START_TEST(hot_key_storm_bounded_owner_reads)
{
    struct daemon d;
    start(&d, STORM_CONF);
    int fd = conn(&d);
    set(fd, "live:score", "3-1");
    close(fd);
    h_sleep_ms(1500);
    int64_t reads0 = info(&d, "owner_reads");
    int64_t hits0 = info(&d, "cache_hits"), stale0 = info(&d, "cache_stale_hits");
    int64_t refr0 = info(&d, "cache_refreshes"), waits0 = info(&d, "cache_refresh_lock_waits");

    static int fds[STORM_CONNS];
    /* Both edges share one listening socket and the scheduler picks which
     * accepts; to put half the readers on each edge for sure, each half is
     * opened while the other edge is stopped. */
    pid_t e0 = h_child(&d, "hotkvd: edge", 0), e1 = h_child(&d, "hotkvd: edge", e0);
    EXPECT(e0 > 0 && e1 > 0, "two edges expected (%d, %d)", (int)e0, (int)e1);
    int per[2] = {0, 0};
    for (int half = 0; half < 2; half++) {
        pid_t stopped = half == 0 ? e1 : e0;
        kill(stopped, SIGSTOP);
        for (int i = half * STORM_CONNS / 2; i < (half + 1) * STORM_CONNS / 2; i++)
            fds[i] = h_connect(d.port);
        kill(stopped, SIGCONT);
        for (int i = half * STORM_CONNS / 2; i < (half + 1) * STORM_CONNS / 2; i++) {
            EXPECT(fds[i] >= 0, "connection %d failed", i);
            if (i % 10 == 0)
                per[h_edge_of(fds[i]) == (half == 0 ? e0 : e1) ? half : 1 - half]++;
        }
    }
    note("storm: sampled connections per edge: %d on pid %d, %d on pid %d", per[0], (int)e0,
         per[1], (int)e1);
    EXPECT(per[0] > 0 && per[1] > 0, "the connections did not use both edges (%d/%d)", per[0],
           per[1]);

    struct storm_result res;
    int64_t t0 = h_now_ms();
    storm(fds, STORM_CONNS, "live:score", "3-1", 5000, &res);
    int64_t took = h_now_ms() - t0;
    h_sleep_ms(1500); /* the owners' stats are polled every second */
    int64_t reads1 = info(&d, "owner_reads");
    int64_t delta = reads1 - reads0;
    int64_t bound = 1 * 1 * 5 / 1 + 2;
    note("storm: %ld reads in %lld ms (%.0f reads/s), %ld wrong, %ld broken connections; "
         "owner_reads %lld -> %lld (delta %lld, bound %lld); cache_hits +%lld, "
         "cache_stale_hits +%lld, cache_refreshes +%lld, cache_refresh_lock_waits +%lld",
         res.good, (long long)took, res.good * 1000.0 / (double)took, res.wrong, res.errors,
         (long long)reads0, (long long)reads1, (long long)delta, (long long)bound,
         (long long)(info(&d, "cache_hits") - hits0),
         (long long)(info(&d, "cache_stale_hits") - stale0),
         (long long)(info(&d, "cache_refreshes") - refr0),
         (long long)(info(&d, "cache_refresh_lock_waits") - waits0));
    EXPECT(res.wrong == 0, "%ld reads answered something else, first: %s", res.wrong,
           res.first_wrong);
    EXPECT(res.errors == 0, "%ld connections broke during the storm", res.errors);
    EXPECT(res.good > 10000, "only %ld reads answered in 5 s", res.good);
    EXPECT(delta <= bound, "the owner saw %lld reads for one key in 5 s (bound %lld)",
           (long long)delta, (long long)bound);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- 2. owner stopped ------------------------------------------------------------- */

#define STOP_CONF                                                                        \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\nmiss-wait 300ms\nwrite-timeout 2s\n"   \
    "cache-max-value 1kb\n"                                                              \
    "class live pattern \"live:*\" pool hot fresh 200ms keep 60s on-timeout degrade\n"   \
    "class strict pattern \"strict:*\" pool hot fresh 200ms keep 60s on-timeout error\n"

START_TEST(owner_stopped_serves_stale_and_degrades)
{
    struct daemon d;
    start(&d, STOP_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    set(a, "live:a", "1");
    /* A value over cache-max-value is never in the segment: every read of it
     * is a miss, which is what a cold miss during the stop needs. */
    static char big[2001];
    memset(big, 'x', 2000);
    big[2000] = '\0';
    set(a, "live:big", big);
    struct h_reply *r = h_call(b, "GET", "live:a", NULL);
    EXPECT(is_bulk(r, "1"), "GET live:a before the stop: %s", raw(r));
    h_free(r);
    pid_t owner = child_with_title(&d, "hotkvd: owner hot/0");
    EXPECT(owner > 0, "no process titled 'hotkvd: owner hot/0'");
    int64_t stale0 = info(&d, "cache_stale_hits"), degr0 = info(&d, "degraded_replies");

    guard_start(owner);
    EXPECT(kill(owner, SIGSTOP) == 0, "SIGSTOP %d failed", (int)owner);
    g_stopped = owner;
    h_sleep_ms(300); /* fresh 200ms: live:a is stale now */

    /* Stale reads through both edges, for 1 s: the stale value every time.
     * Staleness is bounded (issue 11, defect 9): an entry stale by the
     * refresh allowance (miss-wait) or more is not served before the owner
     * was asked, so on each edge one read waits for its fetch, at most
     * miss-wait, and gets the stale value; while that fetch stays
     * unanswered the edge's later reads are answered at once. */
    int n = 0, wrong = 0, slow = 0;
    int64_t slowest = 0;
    char bad[200] = "";
    int64_t end = h_now_ms() + 1000;
    while (h_now_ms() < end && n < 1000) {
        int fd = n % 2 ? b : a;
        int64_t t = h_now_ms();
        r = h_cmdv(fd, "GET", "live:a", NULL);
        int64_t dt = h_now_ms() - t;
        if (dt > slowest)
            slowest = dt;
        slow += dt >= 100;
        if (!is_bulk(r, "1") && wrong++ == 0)
            snprintf(bad, sizeof(bad), "%s", raw(r));
        h_free(r);
        n++;
        h_sleep_ms(10);
    }
    int64_t stale_hits = info(&d, "cache_stale_hits") - stale0;
    note("owner stopped: %d stale GETs of live:a over 1 s through edges %d and %d, slowest %lld ms, "
         "%d took 100 ms or more, %d wrong; cache_stale_hits +%lld",
         n, pa, pb, (long long)slowest, slow, wrong, (long long)stale_hits);
    EXPECT(wrong == 0, "%d stale reads were not \"1\", first: %s", wrong, bad);
    EXPECT(slowest < 300 + 200, "a stale read took %lld ms (miss-wait 300ms)",
           (long long)slowest);
    EXPECT(slow <= 4, "%d of %d stale reads took 100 ms or more (one per edge expected)", slow,
           n);
    EXPECT(stale_hits >= n, "cache_stale_hits grew by %lld for %d stale reads",
           (long long)stale_hits, n);

    /* A cold miss of a degrade class: nil after miss-wait. */
    int64_t t = h_now_ms();
    r = h_cmdv(a, "GET", "live:missing", NULL);
    int64_t miss_ms = h_now_ms() - t;
    int miss_nil = is_nil(r);
    char miss_txt[160];
    snprintf(miss_txt, sizeof(miss_txt), "%s", raw(r));
    h_free(r);
    t = h_now_ms();
    r = h_cmdv(b, "GET", "live:big", NULL);
    int64_t big_ms = h_now_ms() - t;
    int big_nil = is_nil(r);
    char big_txt[160];
    snprintf(big_txt, sizeof(big_txt), "%s", raw(r));
    h_free(r);
    int64_t degraded = info(&d, "degraded_replies") - degr0;
    /* An error class: -TRYAGAIN after miss-wait. */
    t = h_now_ms();
    r = h_cmdv(b, "GET", "strict:missing", NULL);
    int64_t strict_ms = h_now_ms() - t;
    int strict_ok = r != NULL && r->v->type == RESP_ERROR && r->v->len >= 8 &&
                    memcmp(r->v->str, "TRYAGAIN", 8) == 0;
    char strict_txt[160];
    snprintf(strict_txt, sizeof(strict_txt), "%s", raw(r));
    h_free(r);
    note("owner stopped: GET live:missing -> %s in %lld ms; GET live:big (not cacheable) -> %s "
         "in %lld ms; degraded_replies +%lld; GET strict:missing -> %s in %lld ms",
         miss_txt, (long long)miss_ms, big_nil ? "nil" : big_txt, (long long)big_ms,
         (long long)degraded, strict_txt, (long long)strict_ms);
    EXPECT(miss_nil, "GET live:missing with the owner stopped: expected nil, got %s", miss_txt);
    EXPECT(miss_ms >= 250 && miss_ms < 500,
           "GET live:missing answered in %lld ms (miss-wait 300ms: expected 250..500)",
           (long long)miss_ms);
    EXPECT(big_nil, "GET live:big with the owner stopped: expected nil, got %s", big_txt);
    EXPECT(big_ms >= 250 && big_ms < 500, "GET live:big answered in %lld ms", (long long)big_ms);
    EXPECT(degraded >= 2, "degraded_replies grew by %lld after 2 degraded answers",
           (long long)degraded);
    EXPECT(strict_ok, "GET strict:missing with the owner stopped: expected -TRYAGAIN, got %s",
           strict_txt);
    EXPECT(strict_ms < 500, "GET strict:missing answered in %lld ms", (long long)strict_ms);

    resume_owner();

    /* The owner is back: the uncached value appears, and a new write is read. */
    int64_t t1 = h_now_ms();
    int big_back = 0, polls = 0;
    while (!big_back && h_now_ms() < t1 + 2000 && polls++ < 200) {
        r = h_call(b, "GET", "live:big", NULL);
        big_back = is_bulk(r, big);
        h_free(r);
        if (!big_back)
            h_sleep_ms(10);
    }
    int64_t big_back_ms = h_now_ms() - t1;
    set(a, "live:a", "3");
    int64_t t2 = h_now_ms();
    int a_back = 0;
    polls = 0;
    while (!a_back && h_now_ms() < t2 + 1000 && polls++ < 100) {
        r = h_call(b, "GET", "live:a", NULL);
        a_back = is_bulk(r, "3");
        h_free(r);
        if (!a_back)
            h_sleep_ms(10);
    }
    int64_t a_back_ms = h_now_ms() - t2;
    r = h_call(a, "GET", "live:missing", NULL);
    int missing_nil = is_nil(r);
    h_free(r);
    note("owner resumed: live:big read back after %lld ms; live:a=3 read through the other edge "
         "after %lld ms",
         (long long)big_back_ms, (long long)a_back_ms);
    EXPECT(big_back, "live:big did not come back within 2 s of SIGCONT");
    EXPECT(a_back, "SET live:a 3 after SIGCONT not read back within 1 s");
    EXPECT(missing_nil, "GET live:missing after the resume is not nil");
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- 3. write through A, read through B ------------------------------------------ */

#define RW_CONF                                                     \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\n"                 \
    "class live pattern \"live:*\" pool hot fresh 1s keep 30s\n"

START_TEST(write_through_one_edge_read_through_another)
{
    struct daemon d;
    start(&d, RW_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    note("read-your-writes: edge A pid %d, edge B pid %d", pa, pb);
    /* A hot-pool key (the owner also pushes) and a cold default-class key. */
    const char *keys[2] = {"live:rw", "plain:rw"};
    for (int k = 0; k < 2; k++) {
        int wrong = 0;
        char bad[200] = "";
        int64_t t0 = h_now_ms();
        for (int i = 0; i < 200; i++) {
            char v[32];
            snprintf(v, sizeof(v), "v%d", i);
            set(a, keys[k], v);
            struct h_reply *r = h_call(b, "GET", keys[k], NULL);
            if (!is_bulk(r, v) && wrong++ == 0)
                snprintf(bad, sizeof(bad), "after SET %s %s through A, B read %s", keys[k], v,
                         raw(r));
            h_free(r);
        }
        note("read-your-writes %s: 200 SET-via-A/GET-via-B pairs in %lld ms, %d stale", keys[k],
             (long long)(h_now_ms() - t0), wrong);
        EXPECT(wrong == 0, "%d of 200 reads through B missed the write through A; first: %s",
               wrong, bad);
        /* B has the value cached now; INCR through A (the edge does not know
         * the new value: the entry is invalidated) and read through B. */
        set(a, keys[k], "10");
        struct h_reply *r = h_call(b, "GET", keys[k], NULL);
        EXPECT(is_bulk(r, "10"), "GET %s through B: %s", keys[k], raw(r));
        h_free(r);
        r = h_call(a, "INCR", keys[k], NULL);
        EXPECT(r->v->type == RESP_INT && r->v->integer == 11, "INCR %s: %s", keys[k], raw(r));
        h_free(r);
        r = h_call(b, "GET", keys[k], NULL);
        note("read-your-writes %s: after INCR through A, GET through B -> %s", keys[k], raw(r));
        EXPECT(is_bulk(r, "11"), "after INCR %s (10 -> 11) through A, GET through B: %s",
               keys[k], raw(r));
        h_free(r);
        /* DEL through A, GET through B: nil. */
        r = h_call(a, "DEL", keys[k], NULL);
        EXPECT(r->v->type == RESP_INT && r->v->integer == 1, "DEL %s: %s", keys[k], raw(r));
        h_free(r);
        r = h_call(b, "GET", keys[k], NULL);
        note("read-your-writes %s: after DEL through A, GET through B -> %s", keys[k], raw(r));
        EXPECT(is_nil(r), "after DEL %s through A, GET through B: %s", keys[k], raw(r));
        h_free(r);
    }
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- 4. pushes ------------------------------------------------------------------- */

#define PUSH_CONF                                                              \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\n"                            \
    "class live pattern \"live:*\" pool hot fresh 30s keep 60s\n"              \
    "class coldc pattern \"c:*\" pool cold fresh 30s keep 60s\n"

/* Writes key=val straight to an owner over the binary protocol. */
START_TEST(push_updates_cache_before_fresh_expires)
{
    struct daemon d;
    start(&d, PUSH_CONF);
    int a, b, pa, pb;
    edge_pair(&d, &a, &b, &pa, &pb);
    struct {
        const char *key, *pool;
    } cases[2] = {{"live:p", "hot"}, {"c:p", "cold"}};
    /* Both cases run before anything is asserted, so one report covers the
     * value push (hot pool) and the invalidation (cold pool). */
    int pushed[2], got_new[2], first_new[2], a_new[2];
    char first[2][160];
    for (int k = 0; k < 2; k++) {
        const char *key = cases[k].key;
        set(a, key, "old");
        struct h_reply *r = h_call(b, "GET", key, NULL);
        EXPECT(is_bulk(r, "old"), "GET %s: %s", key, raw(r));
        h_free(r);
        r = h_call(a, "GET", key, NULL);
        EXPECT(is_bulk(r, "old"), "GET %s: %s", key, raw(r));
        h_free(r);
        h_sleep_ms(100); /* the push of the SET above has arrived */
        int64_t push0 = info(&d, "pushes_received");
        int64_t hits0 = info(&d, "cache_hits");
        owner_set(&d, cases[k].pool, key, "new");
        int64_t t0 = h_now_ms();
        /* When did the push arrive? */
        int64_t pushes = push0;
        for (int i = 0; i < 100 && pushes == push0 && h_now_ms() < t0 + 100; i++) {
            pushes = info(&d, "pushes_received");
            if (pushes == push0)
                h_sleep_ms(2);
        }
        int64_t push_ms = h_now_ms() - t0;
        pushed[k] = pushes > push0;
        h_sleep_ms(5);
        /* The first read after the push: through either edge. */
        r = h_call(b, "GET", key, NULL);
        snprintf(first[k], sizeof(first[k]), "%s", raw(r));
        first_new[k] = is_bulk(r, "new");
        h_free(r);
        int got = first_new[k], polls = 0;
        while (!got && h_now_ms() < t0 + 100 && polls++ < 100) {
            r = h_call(polls % 2 ? a : b, "GET", key, NULL);
            got = is_bulk(r, "new");
            h_free(r);
        }
        got_new[k] = got;
        int64_t new_ms = h_now_ms() - t0;
        r = h_call(a, "GET", key, NULL);
        a_new[k] = is_bulk(r, "new");
        h_free(r);
        note("push %s (%s pool): pushes_received %lld -> %lld after %lld ms; first GET after "
             "the push -> %s; \"new\" %s after %lld ms; cache_hits +%lld",
             key, cases[k].pool, (long long)push0, (long long)pushes, (long long)push_ms,
             first[k], got ? "read" : "NOT read", (long long)new_ms,
             (long long)(info(&d, "cache_hits") - hits0));
    }
    for (int k = 0; k < 2; k++) {
        const char *key = cases[k].key;
        EXPECT(pushed[k], "no push received within 100 ms of the owner's write of %s (%s pool)",
               key, cases[k].pool);
        EXPECT(got_new[k],
               "GET %s did not return the owner's new value within 100 ms (fresh 30s)", key);
        EXPECT(first_new[k],
               "the first GET %s after the %s arrived returned %s, not the new value", key,
               k == 0 ? "push" : "invalidation", first[k]);
        EXPECT(a_new[k], "GET %s through the other edge is not the new value", key);
    }
    close(a);
    close(b);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- 6. CLIENT META ------------------------------------------------------------------ */

#define META_CONF                                                         \
    "edge-workers 1\nhot-owners 1\ncold-owners 1\n"                       \
    "class live pattern \"m:*\" pool hot fresh 200ms keep 60s\n"


START_TEST(client_meta_attributes_for_resp3_only)
{
    struct daemon d;
    start(&d, META_CONF);
    int r3 = conn(&d), r2 = conn(&d), plain3 = conn(&d);
    struct h_reply *r = h_call(r3, "HELLO", "3", NULL);
    EXPECT(r->v->type == RESP_MAP, "HELLO 3: %s", raw(r));
    h_free(r);
    r = h_call(plain3, "HELLO", "3", NULL);
    h_free(r);
    expect_ok(r3, "CLIENT META ON (RESP3)", h_call(r3, "CLIENT", "META", "ON", NULL));
    expect_ok(r2, "CLIENT META ON (RESP2)", h_call(r2, "CLIENT", "META", "ON", NULL));
    set(r2, "m:k", "val");

    r = h_call(r3, "GET", "m:k", NULL);
    note("meta: RESP3 + META GET m:k -> %s", raw(r));
    EXPECT(is_bulk(r, "val"), "RESP3 GET m:k: %s", raw(r));
    const struct resp_value *at = r->v->attr;
    EXPECT(at != NULL && at->type == RESP_ATTR, "RESP3 + CLIENT META ON: no attribute: %s",
           raw(r));
    EXPECT(r->raw[0] == '|', "the attribute does not come first: %s", raw(r));
    const struct resp_value *age = h_attr_get(at, "age_ms"), *stamp = h_attr_get(at, "stamp"),
                            *stale = h_attr_get(at, "stale"), *degr = h_attr_get(at, "degraded");
    EXPECT(age && stamp && stale && degr, "attribute lacks a field: %s", raw(r));
    EXPECT(age->type == RESP_INT && age->integer >= 0 && age->integer < 200, "age_ms: %s",
           raw(r));
    EXPECT(stamp->type == RESP_INT && stamp->integer != 0, "stamp: %s", raw(r));
    EXPECT(stale->type == RESP_BOOL && stale->integer == 0, "stale of a fresh value: %s", raw(r));
    EXPECT(degr->type == RESP_BOOL && degr->integer == 0, "degraded: %s", raw(r));
    int64_t stamp1 = stamp->integer;
    h_free(r);

    /* Past fresh (200ms) the value is served stale and says so. */
    h_sleep_ms(300);
    r = h_call(r3, "GET", "m:k", NULL);
    note("meta: RESP3 + META GET m:k after 300 ms -> %s", raw(r));
    at = r->v->attr;
    stale = h_attr_get(at, "stale");
    age = h_attr_get(at, "age_ms");
    stamp = h_attr_get(at, "stamp");
    EXPECT(is_bulk(r, "val") && stale != NULL && age != NULL && stamp != NULL,
           "stale GET m:k: %s", raw(r));
    EXPECT(stale->type == RESP_BOOL && stale->integer == 1, "stale flag after fresh passed: %s",
           raw(r));
    EXPECT(age->integer >= 250, "age_ms %lld after 300 ms", (long long)age->integer);
    EXPECT(stamp->integer == stamp1, "stamp changed without a write: %lld -> %lld",
           (long long)stamp1, (long long)stamp->integer);
    h_free(r);

    /* A degraded miss carries degraded = true (none here: the owner is up);
     * a negative answer still carries an attribute. */
    r = h_call(r3, "GET", "m:none", NULL);
    note("meta: RESP3 + META GET m:none -> %s", raw(r));
    EXPECT(r->v->type == RESP_NULL, "GET m:none: %s", raw(r));
    h_free(r);

    r = h_call(r2, "GET", "m:k", NULL);
    note("meta: RESP2 + META GET m:k -> %s", raw(r));
    EXPECT(is_bulk(r, "val") && r->v->attr == NULL && r->raw[0] == '$',
           "RESP2 with CLIENT META ON must get a plain bulk: %s", raw(r));
    h_free(r);
    r = h_call(plain3, "GET", "m:k", NULL);
    note("meta: RESP3 without META GET m:k -> %s", raw(r));
    EXPECT(is_bulk(r, "val") && r->v->attr == NULL && r->raw[0] == '$',
           "RESP3 without CLIENT META must get a plain bulk: %s", raw(r));
    h_free(r);
    /* META OFF turns it off again. */
    expect_ok(r3, "CLIENT META OFF", h_call(r3, "CLIENT", "META", "OFF", NULL));
    r = h_call(r3, "GET", "m:k", NULL);
    EXPECT(is_bulk(r, "val") && r->v->attr == NULL, "after CLIENT META OFF: %s", raw(r));
    h_free(r);
    close(r3);
    close(r2);
    close(plain3);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* ---- 7. HOTKEYS --------------------------------------------------------------------- */

START_TEST(hotkeys_lists_the_hottest)
{
    struct daemon d;
    start(&d, "edge-workers 2\nhot-owners 1\ncold-owners 1\n"
              "class live pattern \"hk:*\" pool hot fresh 1s keep 30s\n");
    int fd = conn(&d);
    set(fd, "hk:hottest", "1");
    set(fd, "hk:lukewarm", "2");
    int64_t t0 = h_now_ms();
    int hot = pipelined_gets(fd, "hk:hottest", "1", 20000);
    int64_t hot_ms = h_now_ms() - t0;
    int warm = pipelined_gets(fd, "hk:lukewarm", "2", 200);
    note("hotkeys: 20000 GETs of hk:hottest in %lld ms (%d right), 200 of hk:lukewarm (%d right)",
         (long long)hot_ms, hot, warm);
    EXPECT(hot == 20000 && warm == 200, "pipelined reads: %d/20000 and %d/200 right", hot, warm);

    struct h_reply *r = h_call(fd, "HOTKEYS", "COUNT", "2", NULL);
    note("hotkeys: HOTKEYS COUNT 2 -> %s", raw(r));
    EXPECT(r->v->type == RESP_ARRAY && r->v->n >= 1 && r->v->n <= 2, "HOTKEYS COUNT 2: %s",
           raw(r));
    const struct resp_value *first = &r->v->elems[0];
    EXPECT(first->type == RESP_ARRAY && first->n == 2, "HOTKEYS entry: %s", raw(r));
    EXPECT(first->elems[0].type == RESP_BULK && h_str_is(&first->elems[0], "hk:hottest"),
           "the hottest key is not first: %s", raw(r));
    EXPECT(first->elems[1].type == RESP_INT && first->elems[1].integer > 0,
           "the hottest key's rate is not > 0: %s", raw(r));
    long long rate = (long long)first->elems[1].integer;
    if (r->v->n == 2 && r->v->elems[1].type == RESP_ARRAY && r->v->elems[1].n == 2)
        EXPECT(r->v->elems[1].elems[1].integer <= first->elems[1].integer,
               "HOTKEYS not hottest first: %s", raw(r));
    h_free(r);
    r = h_call(fd, "HOTKEYS", "COUNT", "0", NULL);
    EXPECT(r->v->type == RESP_ERROR, "HOTKEYS COUNT 0: %s", raw(r));
    h_free(r);

    char line[256];
    int rc = h_info_field(d.port, "hotkey_0", line, sizeof(line));
    note("hotkeys: INFO hotkey_0:%s (HOTKEYS rate %lld)", rc == 0 ? line : "(absent)", rate);
    EXPECT(rc == 0, "INFO has no hotkey_0");
    EXPECT(strncmp(line, "key=hk:hottest,reads_per_sec=", 29) == 0 && atoll(line + 29) > 0,
           "INFO hotkey_0: %s", line);
    close(fd);
    ck_assert_msg(stop(&d), "the daemon did not stop cleanly");
}
END_TEST

/* Two colos on one host: each has its own segment, so only the owner's push
 * (or, with pushes off, the class's fresh) carries a write from one colo's
 * cache to the other's. */
Suite *colo_suite(void)
{
    Suite *s = suite_create("colo");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"storm", hot_key_storm_bounded_owner_reads},
        {"owner_stopped", owner_stopped_serves_stale_and_degrades},
        {"read_your_writes", write_through_one_edge_read_through_another},
        {"push", push_updates_cache_before_fresh_expires},
        {"meta", client_meta_attributes_for_resp3_only},
        {"hotkeys", hotkeys_lists_the_hottest},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

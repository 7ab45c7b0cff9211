/*
 * check_http_poll.c - long polls and watch streams of the HTTP front door
 * against the real daemon (issue 16):
 * - a poll held on one edge is answered soon after a write through ANOTHER
 *   edge of its colo (owner-push off, so only the colo's change ring and the
 *   edge's eventfd can wake it), and after a write through ANOTHER colo
 *   (the owner's push to that colo);
 * - a write of another key never wakes it: it is answered when its wait
 *   passes, with the same index;
 * - a client that saw a version in one colo and polls another whose cache
 *   still holds an older one gets the refreshed version, never the older;
 * - a client that hangs up frees its poll at once (counted), and past
 *   http-max-polls a poll is refused 503;
 * - an SSE stream resumed with Last-Event-ID starts after that version and
 *   then carries the next write, ids only growing; NDJSON by Accept; a
 *   reader too slow for the writes skips versions, never sees one go back,
 *   and ends on the last;
 * - a held poll is answered when the daemon stops.
 * Latency bounds are generous (the machine is loaded); the target (p99 <=
 * 20 ms) is measured by scripts/bench/http_wakeup.py, not asserted.  Every
 * wait is bounded; stopped edges are resumed by a guardian whatever
 * happens; daemons are stopped by pid.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define PY "/usr/bin/python3"
#define WAKE_BOUND_MS 1500 /* write -> poll answer, asserted; typically a few ms */

static struct hr P; /* the poll's connection */
static struct hr G; /* one-shot GETs */

static int start(struct daemon *d, int *hp, const char *extra)
{
    char conf[2048];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf), "hot-owners 1\ncold-owners 1\nhttp-port %d\n%s", *hp, extra);
    return h_start(d, conf);
}

static void set_on(int fd, const char *k, const char *v)
{
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "SET %s", k);
    h_free(r);
}

static void set_key(int port, const char *k, const char *v)
{
    int fd = h_connect(port);
    ck_assert_int_ge(fd, 0);
    set_on(fd, k, v);
    close(fd);
}

/* The current index of key over HTTP (a GET on connection fd if >= 0). */
static uint64_t index_of(int hp, const char *key)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/kv/%s", key);
    ck_assert_int_eq(hx_get(hp, "GET", path, NULL, &G), 0);
    ck_assert_int_eq(G.status, 200);
    return hx_index(&G);
}

/* Sends a long poll on fd. */
static void send_poll(int fd, const char *key, uint64_t index, const char *wait)
{
    char req[512];
    snprintf(req, sizeof(req), "GET /v1/kv/%s?index=%llu&wait=%s HTTP/1.1\r\nHost: t\r\n\r\n", key,
             (unsigned long long)index, wait);
    ck_assert_int_eq(hx_send(fd, req), 0);
}

/* A RESP connection served by edge `want` (the others stopped meanwhile). */
static int resp_on(const struct daemon *d, pid_t want, pid_t stop)
{
    kill(stop, SIGSTOP);
    int fd = h_connect(d->port);
    int on = fd >= 0 ? h_edge_of(fd) : -1;
    kill(stop, SIGCONT);
    ck_assert_msg(on == want, "RESP connection on edge %d, wanted %d", on, (int)want);
    return fd;
}

/* Holds a poll of key on edge `on` (the other, `off`, stopped while it
 * connects); returns the poll's connection. */
static int poll_on(const struct daemon *d, int hp, pid_t off, const char *key, uint64_t index)
{
    kill(off, SIGSTOP);
    int fd = h_connect(hp);
    ck_assert_int_ge(fd, 0);
    send_poll(fd, key, index, "20s");
    int held = hx_info_wait(d, "http_polls_held", 1, 5000);
    kill(off, SIGCONT);
    ck_assert_msg(held, "the poll was not held");
    return fd;
}

/* Writes key through fd and returns how long the poll on pf took to answer
 * (ms), its response in P. */
static int64_t write_and_time(int fd, int pf, const char *key, const char *v)
{
    int64_t t0 = h_now_ms();
    set_on(fd, key, v);
    memset(&P, 0, sizeof(P));
    ck_assert_int_eq(hx_read(pf, &P, 0, 10000), 0);
    return h_now_ms() - t0;
}

START_TEST(a_poll_wakes_on_a_write_through_another_edge_and_not_on_another_key)
{
    struct daemon d;
    int hp;
    /* owner-push off: only the writing edge's change ring wakes the poll */
    ck_assert_int_eq(start(&d, &hp, "edge-workers 2\nowner-push no\n"), 0);
    pid_t e0 = h_child(&d, "hotkvd: edge", 0), e1 = h_child(&d, "hotkvd: edge", e0);
    ck_assert(e0 > 0 && e1 > 0);
    int guard = h_sigcont_guard(e0, e1, NULL);
    set_key(d.port, "p:k", "v1");
    uint64_t i1 = index_of(hp, "p:k");
    int pf = poll_on(&d, hp, e0, "p:k", i1); /* held on e1 */
    int wf = resp_on(&d, e0, e1);            /* writes through e0 */
    int64_t ms = write_and_time(wf, pf, "p:k", "v2");
    ck_assert_msg(P.status == 200 && strcmp(P.body, "v2") == 0 && hx_index(&P) > i1, "%s %s",
                  P.head, P.body);
    ck_assert_msg(ms < WAKE_BOUND_MS, "answered %lld ms after the write", (long long)ms);
    ck_assert_int_eq(hx_info(&d, "http_polls_woken"), 1);
    /* another key's writes: the poll waits its whole wait, same index */
    uint64_t i2 = hx_index(&P);
    int64_t t0 = h_now_ms();
    send_poll(pf, "p:k", i2, "2s");
    ck_assert(hx_info_wait(&d, "http_polls_held", 1, 5000));
    for (int i = 0; i < 5; i++) {
        set_on(wf, "p:other", "x");
        h_sleep_ms(50);
    }
    memset(&P, 0, sizeof(P));
    ck_assert_int_eq(hx_read(pf, &P, 0, 10000), 0);
    int64_t took = h_now_ms() - t0;
    ck_assert_msg(took >= 1900, "answered after %lld ms: woken by another key", (long long)took);
    ck_assert_msg(P.status == 200 && hx_index(&P) == i2, "%s", P.head);
    ck_assert_int_eq(hx_info(&d, "http_polls_woken"), 1);
    ck_assert_int_eq(hx_info(&d, "http_polls_expired"), 1);
    close(pf);
    close(wf);
    close(guard);
    h_stop(&d);
}
END_TEST

START_TEST(a_poll_wakes_on_a_write_through_another_colo)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start(&d, &hp, "colos 2\nedge-workers 1\n"), 0);
    pid_t a0 = h_child(&d, "hotkvd: edge a-0", 0), a1 = h_child(&d, "hotkvd: edge a-1", 0);
    ck_assert_msg(a0 > 0 && a1 > 0, "edges %d %d", (int)a0, (int)a1);
    int guard = h_sigcont_guard(a0, a1, NULL);
    set_key(d.port, "c:k", "v1");
    /* the index as colo a-1 has it, then the poll held there */
    kill(a0, SIGSTOP);
    uint64_t i1 = index_of(hp, "c:k");
    kill(a0, SIGCONT);
    int pf = poll_on(&d, hp, a0, "c:k", i1);
    int wf = resp_on(&d, a0, a1); /* writes through colo a-0 */
    int64_t ms = write_and_time(wf, pf, "c:k", "v2");
    ck_assert_msg(P.status == 200 && strcmp(P.body, "v2") == 0 && hx_index(&P) > i1, "%s", P.head);
    ck_assert_msg(ms < WAKE_BOUND_MS, "answered %lld ms after the write", (long long)ms);
    close(pf);
    close(wf);
    close(guard);
    h_stop(&d);
}
END_TEST

START_TEST(a_poll_from_another_colo_never_gets_an_older_version)
{
    struct daemon d;
    int hp;
    /* no pushes and a long fresh: colo a-1 keeps v1 while a-0 writes v2 */
    ck_assert_int_eq(start(&d, &hp, "colos 2\nedge-workers 1\nowner-push no\n"
                                    "class slow pattern m:* fresh 60s keep 120s\n"), 0);
    pid_t a0 = h_child(&d, "hotkvd: edge a-0", 0), a1 = h_child(&d, "hotkvd: edge a-1", 0);
    ck_assert(a0 > 0 && a1 > 0);
    int guard = h_sigcont_guard(a0, a1, NULL);
    set_key(d.port, "m:k", "v1");
    kill(a0, SIGSTOP);
    uint64_t i1 = index_of(hp, "m:k"); /* cached in a-1 */
    kill(a0, SIGCONT);
    int wf = resp_on(&d, a0, a1);
    set_on(wf, "m:k", "v2");
    kill(a1, SIGSTOP);
    uint64_t i2 = index_of(hp, "m:k"); /* the client saw v2 in a-0 */
    kill(a1, SIGCONT);
    ck_assert_uint_gt(i2, i1);
    kill(a0, SIGSTOP);
    ck_assert_uint_eq(index_of(hp, "m:k"), i1); /* a plain GET in a-1: its fresh v1 */
    /* the client moves to a-1 and polls with v2's index: a-1 refreshes the key
     * from its owner and holds; the wait's end answers v2, never v1 */
    int pf = h_connect(hp);
    send_poll(pf, "m:k", i2, "1s");
    memset(&P, 0, sizeof(P));
    int rc = hx_read(pf, &P, 0, 10000);
    kill(a0, SIGCONT);
    ck_assert_msg(rc == 0 && P.status == 200 && hx_index(&P) == i2 && strcmp(P.body, "v2") == 0,
                  "%s %s", P.head, P.body);
    close(pf);
    close(wf);
    close(guard);
    h_stop(&d);
}
END_TEST

START_TEST(a_client_that_hangs_up_frees_its_poll_and_the_bound_refuses_more)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start(&d, &hp, "edge-workers 1\nhttp-max-polls 1\n"), 0);
    set_key(d.port, "h:k", "v");
    uint64_t i = index_of(hp, "h:k");
    int pf = h_connect(hp);
    send_poll(pf, "h:k", i, "30s");
    ck_assert(hx_info_wait(&d, "http_polls_held", 1, 5000));
    /* one more than http-max-polls: 503 at once */
    int qf = h_connect(hp);
    send_poll(qf, "h:k", i, "30s");
    memset(&P, 0, sizeof(P));
    ck_assert_int_eq(hx_read(qf, &P, 0, 5000), 0);
    char ra[16];
    ck_assert_msg(P.status == 503 && hx_hdr(&P, "Retry-After", ra, sizeof(ra)), "%s", P.head);
    ck_assert_int_eq(hx_info(&d, "http_polls_refused"), 1);
    close(qf);
    close(pf); /* the client leaves */
    ck_assert_msg(hx_info_wait(&d, "http_polls_held", 0, 3000), "the poll is still held");
    ck_assert_int_eq(hx_info(&d, "http_polls_hangup"), 1);
    h_stop(&d);
}
END_TEST

/* Runs http_client.py with args; out holds what it printed. */
static int py(char *out, size_t len, const char *mode, int hp, const char *key, const char *a,
              const char *b)
{
    char script[4096], port[16];
    ck_assert_ptr_nonnull(realpath("tests/integration/py/http_client.py", script));
    snprintf(port, sizeof(port), "%d", hp);
    char *argv[] = {PY, script, (char *)mode, port, (char *)key, (char *)a, (char *)b, NULL};
    return h_run(argv, NULL, out, len, 20000);
}

START_TEST(an_sse_stream_resumes_after_last_event_id_in_order)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start(&d, &hp, "edge-workers 2\nhttp-heartbeat 200ms\n"), 0);
    set_key(d.port, "w:k", "v1");
    uint64_t i1 = index_of(hp, "w:k");
    set_key(d.port, "w:k", "v2");
    uint64_t i2 = index_of(hp, "w:k");
    char out[8192], last[32], want[64];
    /* resumed after v1: the first event is v2, never v1 again */
    snprintf(last, sizeof(last), "%llu", (unsigned long long)i1);
    int rc = py(out, sizeof(out), "sse", hp, "w:k", last, "1");
    snprintf(want, sizeof(want), "id=%llu data={", (unsigned long long)i2);
    ck_assert_msg(rc == 0 && strstr(out, "content-type text/event-stream") && strstr(out, want) &&
                      strstr(out, "\"value\":\"v2\""), "%s", out);
    /* resumed after v2: nothing until the next write, which comes live */
    pid_t w = fork();
    ck_assert_int_ge(w, 0);
    if (w == 0) {
        h_sleep_ms(700);
        int fd = h_connect(d.port);
        struct h_reply *r = fd >= 0 ? h_cmdv(fd, "SET", "w:k", "v3", NULL) : NULL;
        _exit(r != NULL && r->raw[0] == '+' ? 0 : 1);
    }
    snprintf(last, sizeof(last), "%llu", (unsigned long long)i2);
    rc = py(out, sizeof(out), "sse", hp, "w:k", last, "1");
    int st = 0;
    waitpid(w, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_msg(rc == 0 && strstr(out, "\"value\":\"v3\"") && !strstr(out, "\"v2\""), "%s",
                  out);
    /* NDJSON by Accept: the current value as one JSON line */
    rc = py(out, sizeof(out), "ndjson", hp, "w:k", "1", NULL);
    ck_assert_msg(rc == 0 && strstr(out, "content-type application/x-ndjson") &&
                      strstr(out, "\"value\":\"v3\""), "%s", out);
    ck_assert_msg(hx_info_wait(&d, "http_watch_streams", 0, 3000), "streams left open");
    h_stop(&d);
}
END_TEST

START_TEST(a_slow_watch_reader_skips_versions_but_never_goes_back)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start(&d, &hp, "edge-workers 1\n"), 0);
    set_key(d.port, "slow:k", "n=0;");
    /* a reader with a tiny receive buffer that does not read for a while;
     * HTTP/1.0: the stream is not chunked, the SSE lines come as they are */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hp),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    ck_assert_int_eq(hx_send(fd, "GET /v1/watch/slow:k HTTP/1.0\r\n\r\n"), 0);
    ck_assert(hx_info_wait(&d, "http_watch_streams", 1, 5000));
    int wf = h_connect(d.port);
    static char v[16384 + 32];
    const int writes = 1000;
    for (int i = 1; i <= writes; i++) {
        int n = sprintf(v, "n=%d;", i);
        memset(v + n, 'x', 16384);
        v[n + 16384] = '\0';
        set_on(wf, "slow:k", v);
    }
    close(wf);
    /* now read: ids only grow, the last event is the last write, and versions
     * were skipped (16 MB of events never piled up in the edge) */
    static char buf[1 << 16];
    static char line[1 << 15];
    size_t ll = 0;
    int events = 0, last_n = -1;
    uint64_t last_id = 0;
    int64_t end = h_now_ms() + 20000;
    while (last_n != writes && h_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 1000) != 1)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof(line) - 1)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = '\0';
            ll = 0;
            if (strncmp(line, "id: ", 4) == 0) {
                uint64_t id = strtoull(line + 4, NULL, 10);
                ck_assert_msg(id > last_id, "event %llu after %llu", (unsigned long long)id,
                              (unsigned long long)last_id);
                last_id = id;
                events++;
            } else if (strncmp(line, "data: ", 6) == 0) {
                const char *at = strstr(line, "\"value\":\"n=");
                ck_assert_ptr_nonnull(at);
                int nv = atoi(at + 11);
                ck_assert_msg(nv > last_n, "value n=%d after n=%d", nv, last_n);
                last_n = nv;
            }
        }
    }
    close(fd);
    ck_assert_msg(last_n == writes, "the last value seen was n=%d", last_n);
    ck_assert_msg(events < writes, "%d events for %d writes: nothing was skipped", events, writes);
    h_stop(&d);
}
END_TEST

START_TEST(a_held_poll_is_answered_when_the_daemon_stops)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start(&d, &hp, "edge-workers 1\n"), 0);
    set_key(d.port, "s:k", "v");
    uint64_t i = index_of(hp, "s:k");
    int pf = h_connect(hp);
    send_poll(pf, "s:k", i, "60s");
    ck_assert(hx_info_wait(&d, "http_polls_held", 1, 5000));
    kill(d.pid, SIGTERM);
    memset(&P, 0, sizeof(P));
    int rc = hx_read(pf, &P, 0, 8000);
    char conn[32] = "";
    hx_hdr(&P, "Connection", conn, sizeof(conn));
    ck_assert_msg(rc == 0 && P.status == 200 && hx_index(&P) == i && strcmp(conn, "close") == 0,
                  "%s", P.head);
    ck_assert(hx_eof(pf, 5000));
    close(pf);
    h_stop(&d);
}
END_TEST

Suite *http_poll_suite(void)
{
    Suite *s = suite_create("http_poll");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"edges", a_poll_wakes_on_a_write_through_another_edge_and_not_on_another_key},
        {"colos", a_poll_wakes_on_a_write_through_another_colo},
        {"moved_colo", a_poll_from_another_colo_never_gets_an_older_version},
        {"hangup", a_client_that_hangs_up_frees_its_poll_and_the_bound_refuses_more},
        {"sse", an_sse_stream_resumes_after_last_event_id_in_order},
        {"slow_watch", a_slow_watch_reader_skips_versions_but_never_goes_back},
        {"stop", a_held_poll_is_answered_when_the_daemon_stops},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

/*
 * check_client_ctl.c - the connection controls a planned operation and a
 * fire-and-forget client use, against the real daemon:
 * - CLIENT REPLY OFF|SKIP|ON as Redis 7.0 answers them (byte for byte, one
 *   pipeline): a muted request still runs (a write under OFF is applied),
 *   a reply that waits for an owner is dropped too, and pushes (pub/sub
 *   messages) still come;
 * - CLIENT PAUSE ms WRITE, host-wide: a write sent to another edge waits
 *   for the pause and then succeeds (never an error), reads, queued MULTI
 *   commands and HTTP GETs are answered meanwhile, EXEC with a write and an
 *   HTTP PUT wait too; INFO's blocked_clients counts the parked ones and
 *   client_pause_parked what was parked; a parked connection outlives the
 *   idle timeouts (timeout, http-keepalive-timeout) shorter than the pause;
 * - CLIENT PAUSE ms ALL parks every command, CLIENT UNPAUSE (itself never
 *   parked) lets them go at once; a pause of 0 ms changes nothing; the
 *   argument errors are Redis's; a stop closes a held connection.
 * Lower bounds only (a parked request is not answered before the pause
 * ends); every wait is bounded; daemons are stopped by pid.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

static struct daemon D;

static void cleanup(void)
{
    if (D.pid > 0)
        h_stop(&D);
}

static int start(int *hp, const char *extra)
{
    char conf[512];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf), "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n%s",
             *hp, extra);
    h_on_fail(cleanup);
    return h_start(&D, conf);
}

/* 1 when fd has bytes to read within ms. */
static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* Every byte fd sends within ms of quiet, as a C string (static). */
static const char *drain(int fd, int ms)
{
    static char buf[4096];
    size_t n = 0;
    while (n + 1 < sizeof(buf) && readable(fd, ms)) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return buf;
}

static void expect_raw(int fd, const char *want, const char *what)
{
    struct h_reply *r = h_read(fd);
    H_EXPECT(cleanup, r != NULL && strcmp(r->raw, want) == 0, "%s: got %s, want %s", what,
             r != NULL ? r->raw : "(none)", want);
    h_free(r);
}

START_TEST(reply_off_skip_on_as_redis)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int fd = h_connect(D.port);
    /* "cold:" keys were never read: their GET waits for the owner (a reply
     * slot answered later), and is dropped all the same */
    static const char *pipeline =
        "SET a 1\r\nCLIENT REPLY OFF\r\nSET a 2\r\nGET a\r\nGET cold:1\r\nBADCMD\r\n"
        "CLIENT REPLY ON\r\nGET a\r\nCLIENT REPLY SKIP\r\nINCR a\r\nGET a\r\n"
        "CLIENT REPLY SKIP\r\nCLIENT REPLY OFF\r\nGET a\r\nCLIENT REPLY ON\r\nPING\r\n"
        "CLIENT REPLY MAYBE\r\n";
    ck_assert_int_eq(h_send(fd, pipeline, strlen(pipeline)), 0);
    const char *got = drain(fd, 500);
    /* what redis-server 7.0.15 sends for the same bytes */
    H_EXPECT(cleanup, strcmp(got, "+OK\r\n+OK\r\n$1\r\n2\r\n$1\r\n3\r\n+OK\r\n+PONG\r\n"
                                  "-ERR syntax error\r\n") == 0, "got %s", got);
    /* a write whose reply was dropped was applied, and counted */
    ck_assert_int_eq(h_send(fd, "CLIENT REPLY OFF\r\nSET b muted\r\nCLIENT REPLY ON\r\nGET b\r\n",
                            56), 0);
    expect_raw(fd, "+OK\r\n", "ON");
    expect_raw(fd, "$5\r\nmuted\r\n", "GET b");
    close(fd);

    /* pushes go on under OFF (RESP3: a message is not a reply) */
    int sub = h_connect(D.port), pub = h_connect(D.port);
    h_free(h_call(sub, "HELLO", "3", NULL));
    h_free(h_call(sub, "SUBSCRIBE", "ch", NULL));
    ck_assert_int_eq(h_sendv(sub, "CLIENT", "REPLY", "OFF", NULL), 0);
    ck_assert_int_eq(h_sendv(sub, "PING", NULL), 0);
    struct h_reply *r = h_call(pub, "PUBLISH", "ch", "hello", NULL);
    h_free(r);
    got = drain(sub, 500);
    H_EXPECT(cleanup, strcmp(got, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n") == 0,
             "got %s", got);
    close(sub);
    close(pub);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

/* An HTTP request on a new connection, its response not read yet: the fd. */
static int http_send(int hp, const char *method, const char *path, const char *body)
{
    int fd = h_connect(hp);
    char buf[512];
    snprintf(buf, sizeof(buf), "%s %s HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n%s", method, path, body != NULL ? strlen(body) : 0,
             body != NULL ? body : "");
    H_EXPECT(cleanup, fd >= 0 && hx_send(fd, buf) == 0, "HTTP %s", method);
    return fd;
}

static struct hr R;

static int http_status(int fd)
{
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int st = hx_read(fd, &R, 0, 5000) == 0 ? R.status : -1;
    close(fd);
    return st;
}

START_TEST(pause_write_parks_writes_host_wide)
{
    int hp;
    /* idle bounds shorter than the pause: a parked connection is not idle */
    ck_assert_int_eq(start(&hp, "timeout 1\nhttp-keepalive-timeout 1s\n"), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&D, &a, &b), 0); /* two edges: the pause is the host's */
    int tx = h_connect(D.port);
    h_free(h_call(b, "SET", "k", "v0", NULL));
    int64_t parked0 = h_info_int(D.port, "client_pause_parked");
    int64_t t0 = h_now_ms();
    struct h_reply *r = h_call(a, "CLIENT", "PAUSE", "1500", "WRITE", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    /* the write, sent to the other edge, waits */
    ck_assert_int_eq(h_sendv(b, "SET", "k", "v1", NULL), 0);
    int put = http_send(hp, "PUT", "/v1/kv/h", "body");
    /* reads, MULTI's queueing and HTTP GETs are answered meanwhile */
    r = h_call(a, "GET", "k", NULL);
    H_EXPECT(cleanup, strcmp(r->raw, "$2\r\nv0\r\n") == 0, "GET during the pause: %s", r->raw);
    h_free(r);
    h_free(h_call(tx, "MULTI", NULL));
    r = h_call(tx, "SET", "k2", "v2", NULL);
    ck_assert_str_eq(r->raw, "+QUEUED\r\n");
    h_free(r);
    ck_assert_int_eq(h_sendv(tx, "EXEC", NULL), 0);
    struct hr g;
    H_EXPECT(cleanup, hx_get(hp, "GET", "/v1/kv/k", NULL, &g) == 0 && g.status == 200,
             "HTTP GET during the pause: %d", g.status);
    /* the SET, the PUT and the EXEC are parked: INFO counts them */
    int64_t blocked = 0;
    for (int i = 0; i < 100 && (blocked = h_info_int(D.port, "blocked_clients")) < 3; i++)
        h_sleep_ms(10);
    H_EXPECT(cleanup, blocked == 3, "blocked_clients %lld", (long long)blocked);
    H_EXPECT(cleanup, !readable(b, 0) && !readable(tx, 0), "a write was answered during the pause");
    /* then every one succeeds, once, in order */
    expect_raw(b, "+OK\r\n", "the parked SET");
    H_EXPECT(cleanup, h_now_ms() - t0 >= 1400, "answered after %lld ms",
             (long long)(h_now_ms() - t0));
    expect_raw(tx, "*1\r\n+OK\r\n", "the parked EXEC");
    int st = http_status(put);
    H_EXPECT(cleanup, st == 200 || st == 201, "the parked PUT: %d", st);
    int fresh = h_connect(D.port); /* a was idle longer than `timeout` */
    r = h_call(fresh, "MGET", "k", "k2", NULL); /* two connections: either may run first */
    ck_assert_str_eq(r->raw, "*2\r\n$2\r\nv1\r\n$2\r\nv2\r\n");
    h_free(r);
    close(fresh);
    H_EXPECT(cleanup, h_info_int(D.port, "blocked_clients") == 0, "blocked_clients after");
    H_EXPECT(cleanup, h_info_int(D.port, "client_pause_parked") >= parked0 + 3,
             "client_pause_parked");
    close(a);
    close(b);
    close(tx);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

START_TEST(pause_all_until_unpause)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&D, &a, &b), 0);
    /* errors first, as Redis words them; 0 ms pauses nothing */
    static const struct {
        const char *w[6];
        const char *want;
    } bad[] = {
        {{"CLIENT", "PAUSE", "x"}, "-ERR timeout is not an integer or out of range\r\n"},
        {{"CLIENT", "PAUSE", "-1"}, "-ERR timeout is negative\r\n"},
        {{"CLIENT", "PAUSE", "10", "READ"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"},
        {{"CLIENT", "PAUSE"}, "-ERR wrong number of arguments for 'client|pause' command\r\n"},
        {{"CLIENT", "UNPAUSE", "x"},
         "-ERR wrong number of arguments for 'client|unpause' command\r\n"},
        {{"CLIENT", "PAUSE", "0", "ALL"}, "+OK\r\n"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = 0;
        while (n < 6 && bad[i].w[n] != NULL)
            n++;
        struct h_reply *r = h_cmd(a, n, (const char **)bad[i].w);
        H_EXPECT(cleanup, r != NULL && strcmp(r->raw, bad[i].want) == 0, "case %zu: %s", i,
                 r != NULL ? r->raw : "(none)");
        h_free(r);
    }
    struct h_reply *r = h_call(b, "PING", NULL);
    ck_assert_str_eq(r->raw, "+PONG\r\n");
    h_free(r);

    r = h_call(a, "CLIENT", "PAUSE", "60000", "ALL", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    ck_assert_int_eq(h_sendv(b, "GET", "k", NULL), 0);
    int get = http_send(hp, "GET", "/v1/kv/k", NULL);
    h_sleep_ms(300);
    H_EXPECT(cleanup, !readable(b, 0) && !readable(get, 0), "a read was answered under ALL");
    /* the operator's endpoints are not a client's */
    struct hr g;
    H_EXPECT(cleanup, hx_get(hp, "GET", "/healthz", NULL, &g) == 0 && g.status == 200,
             "/healthz under ALL: %d", g.status);
    int64_t t0 = h_now_ms();
    int c = h_connect(D.port);
    r = h_call(c, "CLIENT", "UNPAUSE", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    expect_raw(b, "$-1\r\n", "the parked GET");
    H_EXPECT(cleanup, http_status(get) == 404, "the parked HTTP GET: %d", R.status);
    H_EXPECT(cleanup, h_now_ms() - t0 < 3000, "released after %lld ms",
             (long long)(h_now_ms() - t0));
    /* a second pause keeps the stricter mode and the later end */
    h_free(h_call(a, "CLIENT", "PAUSE", "60000", "ALL", NULL));
    h_free(h_call(a, "CLIENT", "PAUSE", "10", "WRITE", NULL));
    ck_assert_int_eq(h_sendv(b, "GET", "k", NULL), 0);
    h_sleep_ms(200);
    H_EXPECT(cleanup, !readable(b, 0), "the later WRITE pause shortened ALL");
    h_free(h_call(c, "CLIENT", "UNPAUSE", NULL));
    expect_raw(b, "$-1\r\n", "GET after the second unpause");
    /* a stop closes a held connection without running what it sent */
    h_free(h_call(a, "CLIENT", "PAUSE", "60000", "ALL", NULL));
    ck_assert_int_eq(h_sendv(b, "SET", "never", "run", NULL), 0);
    h_sleep_ms(100);
    int64_t t1 = h_now_ms();
    ck_assert_int_eq(h_halt(&D), 0); /* stopped, its files kept */
    H_EXPECT(cleanup, h_now_ms() - t1 < 10000, "the stop waited for the pause");
    H_EXPECT(cleanup, h_read(b) == NULL, "the held SET was answered");
    close(a);
    close(b);
    close(c);
    ck_assert_int_eq(h_restart(&D), 0);
    int d = h_connect(D.port);
    struct h_reply *gr = h_call(d, "GET", "never", NULL);
    H_EXPECT(cleanup, strcmp(gr->raw, "$-1\r\n") == 0, "the held SET ran: %s", gr->raw);
    h_free(gr);
    close(d);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

Suite *client_ctl_suite(void)
{
    Suite *s = suite_create("client_ctl");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"reply", reply_off_skip_on_as_redis},
        {"pause_write", pause_write_parks_writes_host_wide},
        {"pause_all", pause_all_until_unpause},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

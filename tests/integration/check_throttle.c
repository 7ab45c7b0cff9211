/*
 * check_throttle.c - CL.THROTTLE and POST /v1/ratelimit/KEY against the
 * real daemon (issue 32):
 * - redis-cell's replies: its README's example, a burst drained to a
 *   limited answer with retry-after, a quantity of 0 that only looks,
 *   argument errors, app-ratelimit-key-max (CONFIG SET), not held by
 *   CLIENT PAUSE WRITE, inside MULTI (answered at EXEC, in its place);
 * - one colo, one table: calls alternating between two edges share the
 *   key's bucket, so N edges never admit more than the limit;
 * - never an owner's business: a storm of checks moves no owner counter
 *   (owner_reads, owner_writes, persist_rows) and lands in INFO's
 *   app_ratelimit_* counters;
 * - a full table fails open (allowed, counted in app_ratelimit_failopen and
 *   _failopen_full; the RESP3 attribute failopen 1 under CLIENT META ON),
 *   and the daemon's own limiter is a separate segment it cannot touch;
 * - HTTP: 200 / 429 with RateLimit-* and Retry-After, 400, 405, 413, and the
 *   ACL gates (a user's key patterns, +@read or +@write; NOPERM otherwise);
 * - the buckets outlive the edges (kill -9 of both: a limited key stays so).
 * Every loop is bounded; daemons are stopped by pid.
 */
#include <check.h>
#include <signal.h>
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
    char conf[1024];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf),
             "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n%s", *hp, extra);
    h_on_fail(cleanup);
    return h_start(&D, conf);
}

#define EXPECT_ON(fd, want, ...)                                                          \
    do {                                                                                  \
        struct h_reply *r_ = h_call((fd), __VA_ARGS__, NULL);                             \
        H_EXPECT(cleanup, strcmp(r_->raw, want) == 0, "%s: got %s", #__VA_ARGS__, r_->raw); \
        h_free(r_);                                                                       \
    } while (0)

/* The first four fields (reset-after truncates a time that moves on). */
#define EXPECT4(fd, want, ...)                                                            \
    do {                                                                                  \
        struct h_reply *r_ = h_call((fd), __VA_ARGS__, NULL);                             \
        H_EXPECT(cleanup, strncmp(r_->raw, want, strlen(want)) == 0, "%s: got %s",        \
                 #__VA_ARGS__, r_->raw);                                                  \
        h_free(r_);                                                                       \
    } while (0)
#define REPLY4(a, b, c, d) "*5\r\n:" #a "\r\n:" #b "\r\n:" #c "\r\n:" #d "\r\n:"

#define REPLY5(a, b, c, d, e) "*5\r\n:" #a "\r\n:" #b "\r\n:" #c "\r\n:" #d "\r\n:" #e "\r\n"

/* A reply's five integers, for failure messages. */
static const char *summary5(const struct h_reply *r)
{
    static char buf[128];
    if (r->v->type != RESP_ARRAY || r->v->n != 5)
        return r->raw;
    snprintf(buf, sizeof(buf), "%lld %lld %lld %lld %lld", (long long)r->v->elems[0].integer,
             (long long)r->v->elems[1].integer, (long long)r->v->elems[2].integer,
             (long long)r->v->elems[3].integer, (long long)r->v->elems[4].integer);
    return buf;
}

START_TEST(replies_as_redis_cell)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int fd = h_connect(D.port);
    EXPECT_ON(fd, REPLY5(0, 16, 15, -1, 2), "CL.THROTTLE", "user123", "15", "30", "60");
    EXPECT4(fd, REPLY4(0, 16, 14, -1), "cl.throttle", "user123", "15", "30", "60", "1");
    /* 3 at once, then one a minute: the fourth is limited */
    EXPECT_ON(fd, REPLY5(0, 3, 2, -1, 60), "CL.THROTTLE", "b", "2", "1", "60");
    EXPECT4(fd, REPLY4(0, 3, 1, -1), "CL.THROTTLE", "b", "2", "1", "60");
    EXPECT4(fd, REPLY4(0, 3, 0, -1), "CL.THROTTLE", "b", "2", "1", "60");
    struct h_reply *r = h_call(fd, "CL.THROTTLE", "b", "2", "1", "60", NULL);
    H_EXPECT(cleanup, strncmp(r->raw, "*5\r\n:1\r\n:3\r\n:0\r\n:59\r\n", 21) == 0 ||
                          strncmp(r->raw, "*5\r\n:1\r\n:3\r\n:0\r\n:58\r\n", 21) == 0,
             "limited: %.60s", summary5(r));
    h_free(r);
    /* quantity 0 looks and takes nothing; more than the burst never passes */
    EXPECT_ON(fd, REPLY5(0, 11, 11, -1, 0), "CL.THROTTLE", "q", "10", "1", "1", "0");
    EXPECT_ON(fd, REPLY5(1, 11, 11, -1, 0), "CL.THROTTLE", "q", "10", "1", "1", "12");
    EXPECT_ON(fd, "-ERR CL.THROTTLE max_burst must be an integer 0..1073741824\r\n",
              "CL.THROTTLE", "k", "-1", "1", "1");
    EXPECT_ON(fd, "-ERR CL.THROTTLE count_per_period must be an integer 1..1073741824\r\n",
              "CL.THROTTLE", "k", "1", "0", "1");
    EXPECT_ON(fd, "-ERR CL.THROTTLE period must be whole seconds 1..4194304\r\n",
              "CL.THROTTLE", "k", "1", "1", "1.5");
    EXPECT_ON(fd, "-ERR CL.THROTTLE quantity must be an integer 0..1073741824\r\n",
              "CL.THROTTLE", "k", "1", "1", "1", "x");
    EXPECT_ON(fd, "-ERR wrong number of arguments for 'cl.throttle' command\r\n", "CL.THROTTLE",
              "k", "1", "1");
    /* app-ratelimit-key-max bounds the key (reloadable) */
    EXPECT_ON(fd, "+OK\r\n", "CONFIG", "SET", "app-ratelimit-key-max", "8");
    EXPECT_ON(fd, "-ERR CL.THROTTLE key longer than app-ratelimit-key-max\r\n", "CL.THROTTLE",
              "123456789", "1", "1", "1");
    EXPECT4(fd, REPLY4(0, 2, 1, -1), "CL.THROTTLE", "12345678", "1", "1", "1");
    EXPECT_ON(fd, "+OK\r\n", "CONFIG", "SET", "app-ratelimit-key-max", "1024");
    /* CLIENT PAUSE WRITE does not hold it: it is no write */
    EXPECT_ON(fd, "+OK\r\n", "CLIENT", "PAUSE", "5000", "WRITE");
    EXPECT4(fd, REPLY4(0, 2, 1, -1), "CL.THROTTLE", "paused", "1", "1", "1");
    EXPECT_ON(fd, "+OK\r\n", "CLIENT", "UNPAUSE");
    EXPECT_ON(fd, "+OK\r\n", "MULTI");
    EXPECT_ON(fd, "+QUEUED\r\n", "CL.THROTTLE", "m", "0", "1", "10");
    EXPECT_ON(fd, "+QUEUED\r\n", "SET", "m", "v");
    EXPECT_ON(fd, "+QUEUED\r\n", "CL.THROTTLE", "m", "0", "1", "10");
    r = h_call(fd, "EXEC", NULL);
    static const char exec_want[] = "*3\r\n" REPLY5(0, 1, 0, -1, 10) "+OK\r\n*5\r\n:1\r\n";
    H_EXPECT(cleanup, strncmp(r->raw, exec_want, sizeof(exec_want) - 1) == 0, "EXEC: %.80s",
             r->raw);
    h_free(r);
    close(fd);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

START_TEST(one_table_per_colo_and_no_owner_work)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&D, &a, &b), 0);
    int64_t reads0 = h_info_int(D.port, "owner_reads"), writes0 = h_info_int(D.port, "owner_writes");
    int64_t rows0 = h_info_int(D.port, "persist_rows");
    /* 10 at once, then one per 100 s: across both edges, 10 pass of 40 */
    int admitted = 0;
    for (int i = 0; i < 40; i++) {
        struct h_reply *r = h_call(i % 2 ? b : a, "CL.THROTTLE", "shared", "9", "1", "100", NULL);
        H_EXPECT(cleanup, r->v->type == RESP_ARRAY && r->v->n == 5, "reply %s", r->raw);
        admitted += r->v->elems[0].integer == 0;
        h_free(r);
    }
    H_EXPECT(cleanup, admitted == 10, "admitted %d of 40 across two edges", admitted);
    /* a storm of distinct keys, pipelined */
    for (int i = 0; i < 5000; i++) {
        char k[32];
        snprintf(k, sizeof(k), "storm:%d", i % 500);
        ck_assert_int_eq(h_sendv(a, "CL.THROTTLE", k, "5", "10", "1", NULL), 0);
    }
    for (int i = 0; i < 5000; i++) {
        struct h_reply *r = h_read(a);
        H_EXPECT(cleanup, r != NULL && r->v->type == RESP_ARRAY, "storm reply %d", i);
        h_free(r);
    }
    h_sleep_ms(300); /* a persist interval would have passed */
    H_EXPECT(cleanup, h_info_int(D.port, "owner_reads") == reads0 &&
                          h_info_int(D.port, "owner_writes") == writes0 &&
                          h_info_int(D.port, "persist_rows") == rows0,
             "an owner saw CL.THROTTLE");
    int64_t allowed = h_info_int(D.port, "app_ratelimit_allowed"),
            rejected = h_info_int(D.port, "app_ratelimit_rejected");
    H_EXPECT(cleanup, allowed + rejected == 5040 && rejected >= 30,
             "app_ratelimit_allowed %lld rejected %lld", (long long)allowed, (long long)rejected);
    H_EXPECT(cleanup, h_info_int(D.port, "ratelimit_allowed") <= 1, "the daemon's own limiter moved");
    H_EXPECT(cleanup, h_info_int(D.port, "app_ratelimit_slots_used") >= 501, "slots used");
    close(a);
    close(b);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

START_TEST(a_full_table_fails_open)
{
    int hp;
    ck_assert_int_eq(start(&hp, "app-ratelimit-memory 1mb\n"), 0);
    int fd = h_connect(D.port);
    int64_t cap = h_info_int(D.port, "app_ratelimit_capacity");
    H_EXPECT(cleanup, cap > 0 && cap <= 65536, "capacity %lld", (long long)cap);
    /* more keys than buckets, each held an hour: some find no room */
    int n = (int)cap + cap / 2;
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof(k), "full:%d", i);
        ck_assert_int_eq(h_sendv(fd, "CL.THROTTLE", k, "0", "1", "3600", NULL), 0);
        if (i % 1000 == 999 || i == n - 1) /* read as we go: the socket buffers are bounded */
            for (int j = i - (i % 1000); j <= i; j++) {
                struct h_reply *r = h_read(fd);
                H_EXPECT(cleanup, r != NULL && r->v->type == RESP_ARRAY &&
                                      r->v->elems[0].integer == 0, "a new key was refused");
                h_free(r);
            }
    }
    int64_t open = h_info_int(D.port, "app_ratelimit_failopen"),
            full = h_info_int(D.port, "app_ratelimit_failopen_full");
    H_EXPECT(cleanup, open > 0 && full == open, "failopen %lld full %lld", (long long)open,
             (long long)full);
    /* the client is told, under CLIENT META ON, once the table is full */
    h_free(h_call(fd, "HELLO", "3", NULL));
    h_free(h_call(fd, "CLIENT", "META", "ON", NULL));
    int told = 0;
    for (int i = 0; i < 2000 && !told; i++) {
        char k[32];
        snprintf(k, sizeof(k), "more:%d", i);
        struct h_reply *r = h_call(fd, "CL.THROTTLE", k, "0", "1", "3600", NULL);
        told = strncmp(r->raw, "|1\r\n$8\r\nfailopen\r\n:1\r\n", 21) == 0;
        h_free(r);
    }
    H_EXPECT(cleanup, told, "no failopen attribute in 2000 new keys");
    close(fd);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

/* The table is the master's segment: an edge killed and restarted attaches
 * to it again, so a key limited before is limited after (a restart of the
 * daemon, not of an edge, starts keys afresh). */
START_TEST(buckets_outlive_an_edge)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int fd = h_connect(D.port);
    struct h_reply *r = h_call(fd, "CL.THROTTLE", "kept", "0", "1", "3600", NULL);
    ck_assert_int_eq(r->v->elems[0].integer, 0);
    h_free(r);
    close(fd);
    pid_t e0 = h_child(&D, "hotkvd: edge", 0), e1 = h_child(&D, "hotkvd: edge", e0);
    ck_assert(e0 > 0 && e1 > 0);
    kill(e0, SIGKILL);
    kill(e1, SIGKILL);
    int limited = -1;
    for (int i = 0; i < 100 && limited < 0; i++) { /* bounded: 10 s */
        h_sleep_ms(100);
        if (h_child(&D, "hotkvd: edge", e0) == e1 || !h_ping(D.port))
            continue;
        fd = h_connect(D.port);
        r = fd >= 0 ? h_cmdv(fd, "CL.THROTTLE", "kept", "0", "1", "3600", NULL) : NULL;
        if (r != NULL && r->v->type == RESP_ARRAY && r->v->n == 5)
            limited = (int)r->v->elems[0].integer;
        h_free(r);
        if (fd >= 0)
            close(fd);
    }
    H_EXPECT(cleanup, limited == 1, "after the edges' restart the key was %s",
             limited < 0 ? "not answered" : "allowed again");
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

static struct hr R;

static int post(int hp, const char *path, const char *extra)
{
    int fd = h_connect(hp);
    char buf[1024];
    snprintf(buf, sizeof(buf), "POST %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n", path,
             extra != NULL ? extra : "");
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int rc = hx_send(fd, buf) == 0 ? hx_read(fd, &R, 0, 5000) : -1;
    close(fd);
    return rc == 0 ? R.status : -1;
}

START_TEST(http_door_and_acl)
{
    int hp;
    ck_assert_int_eq(start(&hp, "user default on nopass ~* +@all\n"
                                "user ro on >ro ~app:* +@read\nuser adm on >adm ~* +@admin\n"), 0);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=1&rate=1&period=60", NULL), 200);
    char v[64];
    H_EXPECT(cleanup, hx_hdr(&R, "RateLimit-Limit", v, sizeof(v)) && strcmp(v, "2") == 0, "Limit");
    H_EXPECT(cleanup, hx_hdr(&R, "RateLimit-Remaining", v, sizeof(v)) && strcmp(v, "1") == 0,
             "Remaining");
    H_EXPECT(cleanup, strstr(R.in, "\"limited\":0") != NULL, "body %s", R.in);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=1&rate=1&period=60", NULL), 200);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=1&rate=1&period=60", NULL), 429);
    H_EXPECT(cleanup, hx_hdr(&R, "Retry-After", v, sizeof(v)) && atoi(v) >= 58, "Retry-After");
    /* the same bucket as RESP's */
    int fd = h_connect(D.port);
    struct h_reply *r = h_call(fd, "CL.THROTTLE", "app:1", "1", "1", "60", NULL);
    H_EXPECT(cleanup, r->v->n == 5 && r->v->elems[0].integer == 1, "RESP sees HTTP's bucket");
    h_free(r);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=1&rate=1", NULL), 400);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=x&rate=1&period=1", NULL), 400);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:1?burst=1&rate=1&period=1",
                          "Content-Length: 3\r\n"), 413);
    ck_assert_int_eq(post(hp, "/v1/kv/app:1", NULL), 405);
    struct hr g;
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/ratelimit/app:1", NULL, &g), 0);
    ck_assert_int_eq(g.status, 405);
    /* ro: "YWRtOmFkbQ==" is adm:adm, "cm86cm8=" ro:ro */
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:2?burst=1&rate=1&period=1",
                          "Authorization: Basic cm86cm8=\r\n"), 200);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/other?burst=1&rate=1&period=1",
                          "Authorization: Basic cm86cm8=\r\n"), 403);
    ck_assert_int_eq(post(hp, "/v1/ratelimit/app:2?burst=1&rate=1&period=1",
                          "Authorization: Basic YWRtOmFkbQ==\r\n"), 403);
    int ro = h_connect(D.port);
    h_free(h_call(ro, "AUTH", "ro", "ro", NULL));
    r = h_call(ro, "CL.THROTTLE", "other", "1", "1", "1", NULL);
    H_EXPECT(cleanup, strncmp(r->raw, "-NOPERM", 7) == 0, "ro outside its keys: %s", r->raw);
    h_free(r);
    r = h_call(ro, "CL.THROTTLE", "app:3", "1", "1", "1", NULL);
    H_EXPECT(cleanup, r->v->type == RESP_ARRAY, "ro in its keys: %s", r->raw);
    h_free(r);
    close(ro);
    close(fd);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

Suite *throttle_suite(void)
{
    Suite *s = suite_create("throttle");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"replies", replies_as_redis_cell},
        {"colo", one_table_per_colo_and_no_owner_work},
        {"failopen", a_full_table_fails_open},
        {"http", http_door_and_acl},
        {"edge_restart", buckets_outlive_an_edge},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

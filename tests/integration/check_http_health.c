/*
 * check_http_health.c - GET /healthz across a daemon's life (README, HTTP):
 * - starting: the owners cannot finish opening their files (the stall shim
 *   blocks their first disk writes) while the edges already answer: 503
 *   "starting" with Retry-After, although the edges' links to the owners'
 *   sockets are connected (an owner that has not answered is not serving);
 *   200 "ok" once the disk answers;
 * - draining: SIGTERM while a write is held by a stopped owner keeps the
 *   edge draining; meanwhile the HTTP port still takes connections and
 *   /healthz says 503 "draining" (then closes), a GET of a cached key is
 *   answered (and closed), a long poll is answered at once instead of held,
 *   a watch gets the colo's value and its end, and the RESP port takes no
 *   new client; once the owner answers, the
 *   write is acknowledged and the daemon exits 0.
 * A raw HTTP client (http_test.h).  Every wait is bounded; stopped owners
 * are continued by a guardian whatever happens; the daemon is stopped by
 * pid.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define FIXTURE "edge-workers 1\nhot-owners 1\ncold-owners 1\n"

static struct hr R;

/* method path on a new connection, answered within ms: its status (the
 * response in R), or -1 (refused, closed or silent). */
static int ask(int hp, const char *path, int ms)
{
    int fd = h_connect(hp);
    if (fd < 0)
        return -1;
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int st = hx_send(fd, req) == 0 && hx_read(fd, &R, 0, ms) == 0 ? R.status : -1;
    close(fd);
    return st;
}

/* /healthz until its status is want (up to ms); the last status seen. */
static int healthz_until(int hp, int want, int ms)
{
    int64_t end = h_now_ms() + ms;
    int st;
    do {
        st = ask(hp, "/healthz", 1000);
        if (st == want)
            return st;
        h_sleep_ms(50);
    } while (h_now_ms() < end);
    return st;
}

START_TEST(healthz_says_starting_until_the_owners_answer)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[256], flag[320];
    snprintf(conf, sizeof(conf), FIXTURE "http-port %d\n", hp);
    snprintf(flag, sizeof(flag), "%s/stall", h_fixture_dir);
    FILE *f = fopen(flag, "w"); /* the owners' first disk writes wait */
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(h_start_shim(&d, conf, flag, sizeof(flag)), 0);
    h_sleep_ms(300); /* the edge's links connect (the owners' sockets exist) */
    ck_assert_int_eq(ask(hp, "/healthz", 5000), 503);
    ck_assert_str_eq(R.body, "starting\n");
    char v[32];
    ck_assert(hx_hdr(&R, "Retry-After", v, sizeof(v)));
    ck_assert(hx_hdr(&R, "Cache-Control", v, sizeof(v)) && strcmp(v, "no-store") == 0);
    ck_assert_int_eq(unlink(flag), 0);
    ck_assert_int_eq(healthz_until(hp, 200, 15000), 200);
    ck_assert_str_eq(R.body, "ok\n");
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

START_TEST(healthz_says_draining_while_a_write_holds_the_stop)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[256];
    snprintf(conf, sizeof(conf), FIXTURE "http-port %d\nshutdown-timeout 30s\n", hp);
    ck_assert_int_eq(h_start(&d, conf), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "k0", "v0", NULL);
    ck_assert(r != NULL && r->raw[0] == '+');
    h_free(r);
    ck_assert_int_eq(ask(hp, "/v1/kv/k0", 5000), 200);
    uint64_t index = hx_index(&R);
    ck_assert_int_eq(healthz_until(hp, 200, 10000), 200);
    /* a write that no owner answers: the edge cannot finish its stop */
    pid_t hot = h_child(&d, "hotkvd: owner hot/0", 0);
    pid_t cold = h_child(&d, "hotkvd: owner cold/0", 0);
    ck_assert(hot > 0 && cold > 0);
    int guard = h_sigcont_guard(hot, cold, NULL);
    kill(hot, SIGSTOP);
    kill(cold, SIGSTOP);
    const char *set = "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$2\r\nv1\r\n";
    ck_assert_int_eq(h_send(fd, set, strlen(set)), 0);
    h_sleep_ms(200);
    kill(d.pid, SIGTERM);
    ck_assert_int_eq(healthz_until(hp, 503, 5000), 503);
    ck_assert_str_eq(R.body, "draining\n");
    char v[64];
    ck_assert(hx_hdr(&R, "Connection", v, sizeof(v)) && strcmp(v, "close") == 0);
    ck_assert(hx_hdr(&R, "Retry-After", v, sizeof(v)));
    /* still draining: reads are answered (then closed), a poll is not held */
    ck_assert_int_eq(ask(hp, "/v1/kv/k0", 5000), 200);
    ck_assert_str_eq(R.body, "v0");
    char path[128];
    snprintf(path, sizeof(path), "/v1/kv/k0?index=%llu&wait=30s", (unsigned long long)index);
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(ask(hp, path, 5000), 200);
    ck_assert_int_lt(h_now_ms() - t0, 3000);
    ck_assert_uint_eq(hx_index(&R), index);
    /* a watch: the colo's value, then the stream's end and a close */
    int w = h_connect(hp);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(hx_send(w, "GET /v1/watch/k0 HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    ck_assert_int_eq(hx_read(w, &R, 1, 5000), 0);
    ck_assert_int_eq(R.status, 200);
    t0 = h_now_ms();
    while (hx_fill(w, &R, 1000) > 0 && h_now_ms() - t0 < 5000)
        ;
    R.in[R.inlen < sizeof(R.in) ? R.inlen : sizeof(R.in) - 1] = '\0';
    snprintf(path, sizeof(path), "id: %llu\n", (unsigned long long)index);
    ck_assert_msg(strstr(R.in, path) != NULL && strstr(R.in, "\"value\":\"v0\"") != NULL &&
                      strstr(R.in, "\r\n0\r\n\r\n") != NULL, "%s", R.in);
    close(w);
    ck_assert(!h_ping(d.port)); /* the RESP port takes no new client */
    ck_assert(h_alive(d.pid));
    /* the owners answer: the write is acknowledged, the daemon exits 0 */
    kill(hot, SIGCONT);
    kill(cold, SIGCONT);
    close(guard);
    r = h_read(fd);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "the held write: %s", r ? r->raw : "(none)");
    h_free(r);
    close(fd);
    int status = h_wait(d.pid, 20000);
    ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d",
                  status);
    d.pid = 0;
    ck_assert_int_eq(ask(hp, "/healthz", 1000), -1); /* gone: refused */
    h_rmtree(d.dir);
}
END_TEST

Suite *http_health_suite(void)
{
    Suite *s = suite_create("http_health");
    TCase *tc = tcase_create("starting");
    tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, healthz_says_starting_until_the_owners_answer);
    suite_add_tcase(s, tc);
    tc = tcase_create("draining");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, healthz_says_draining_while_a_write_holds_the_stop);
    suite_add_tcase(s, tc);
    return s;
}

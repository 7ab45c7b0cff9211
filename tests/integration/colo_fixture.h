/*
 * colo_fixture.h - what the colo read path's suites share (check_colo.c,
 * check_colo_bound.c): notes, reply shapes, a daemon started and stopped
 * with a failure cleanup that never leaves a stopped owner or a running
 * daemon behind (a guardian process SIGCONTs it even if the test process
 * dies), connections to two edges, SET, and INFO fields.
 */
#ifndef HKV_TESTS_COLO_FIXTURE_H
#define HKV_TESTS_COLO_FIXTURE_H

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

/* ---- small helpers ---------------------------------------------------------- */

static inline void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "colo: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
}

static inline int is_bulk(const struct h_reply *r, const char *want)
{
    return r != NULL && r->v->type == RESP_BULK && h_str_is(r->v, want);
}

static inline int is_nil(const struct h_reply *r)
{
    return r != NULL && r->v->type == RESP_NULL;
}

/* The reply's raw text, shortened, for messages. */
static inline const char *raw(const struct h_reply *r)
{
    static char buf[4][160];
    static int k;
    char *b = buf[k++ & 3];
    if (r == NULL)
        return "(no reply)";
    size_t j = 0;
    for (const char *p = r->raw; *p && j < sizeof(buf[0]) - 5; p++) {
        if (*p == '\r') {
            b[j++] = '\\';
            b[j++] = 'r';
        } else if (*p == '\n') {
            b[j++] = '\\';
            b[j++] = 'n';
        } else {
            b[j++] = *p;
        }
    }
    b[j] = '\0';
    return b;
}

static inline pid_t child_with_title(const struct daemon *d, const char *prefix)
{
    return h_child(d, prefix, 0);
}

/* ---- failure handling: never leave a stopped owner or a running daemon ----- */

static pid_t g_stopped;      /* an owner this test SIGSTOPped, 0 = none */
static pid_t g_stopped2;     /* a second process it SIGSTOPped, 0 = none */
static int g_guard_fd = -1;  /* write end of the guardian's pipe */
static pid_t g_guard;

/* A process that SIGCONTs `target` and `target2` (0: none) when the test
 * process goes away (its pipe reaches EOF), however the test ends. */
static inline void guard_start2(pid_t target, pid_t target2)
{
    g_guard_fd = h_sigcont_guard(target, target2, &g_guard);
}

static inline void guard_start(pid_t target)
{
    guard_start2(target, 0);
}

static inline void resume_owner(void)
{
    if (g_stopped > 0)
        kill(g_stopped, SIGCONT);
    if (g_stopped2 > 0)
        kill(g_stopped2, SIGCONT);
    g_stopped = g_stopped2 = 0;
    if (g_guard_fd >= 0)
        close(g_guard_fd);
    g_guard_fd = -1;
    if (g_guard > 0)
        h_wait(g_guard, 2000);
    g_guard = 0;
}

static inline void log_tail(const struct daemon *d, int lines)
{
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return;
    static char ring[200][512];
    int n = 0;
    if (lines > 200)
        lines = 200;
    while (fgets(ring[n % lines], sizeof(ring[0]), f))
        n++;
    fclose(f);
    fprintf(stderr, "---- last %d lines of %s\n", n < lines ? n : lines, d->log);
    for (int i = n < lines ? 0 : n - lines; i < n; i++)
        fputs(ring[i % lines], stderr);
}

static struct daemon *g_d; /* the running daemon, for failure cleanup */

static inline void fail_cleanup(void)
{
    resume_owner();
    if (g_d != NULL && g_d->pid > 0) {
        log_tail(g_d, 60);
        h_stop(g_d);
    }
    g_d = NULL;
}

#define EXPECT(cond, ...) H_EXPECT(fail_cleanup, cond, __VA_ARGS__)

static inline void start(struct daemon *d, const char *conf)
{
    g_stopped = g_stopped2 = 0;
    g_guard_fd = -1;
    g_guard = 0;
    h_on_fail(fail_cleanup);
    int rc = h_start(d, conf);
    ck_assert_msg(rc == 0, "daemon did not start");
    g_d = d;
}

/* Stops the daemon by pid; 1 if every child exited 0 (a crash, or under
 * ASan a leak report, is a failed test: the caller asserts it). */
static inline int stop(struct daemon *d)
{
    resume_owner();
    int st = h_stop(d);
    g_d = NULL;
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        fprintf(stderr, "colo: daemon stop status %d\n", st);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- commands ----------------------------------------------------------------- */

static inline int conn(const struct daemon *d)
{
    int fd = h_connect(d->port);
    EXPECT(fd >= 0, "cannot connect to port %d", d->port);
    return fd;
}

static inline void expect_ok(int fd, const char *what, struct h_reply *r)
{
    int ok = r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK");
    const char *txt = raw(r);
    h_free(r);
    EXPECT(ok, "%s: expected +OK, got %s", what, txt);
}

static inline void set(int fd, const char *k, const char *v)
{
    expect_ok(fd, k, h_call(fd, "SET", k, v, NULL));
}

/* Two connections served by different edges (h_edge_pair) and their pids. */
static inline void edge_pair(const struct daemon *d, int *a, int *b, int *pa, int *pb)
{
    EXPECT(h_edge_pair(d, a, b) == 0, "no second edge answered");
    *pa = h_edge_of(*a);
    *pb = h_edge_of(*b);
    EXPECT(*pa > 0 && *pb > 0 && *pa != *pb, "edges %d and %d", *pa, *pb);
}

/* An INFO field as an integer, on a new connection (so either edge answers).
 * A failed attempt is reported (why, and what came back) and retried, at
 * most 3 times. */
static inline int64_t info(const struct daemon *d, const char *field)
{
    char why[300] = "";
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt > 0)
            h_sleep_ms(50);
        int fd = h_connect(d->port);
        if (fd < 0) {
            snprintf(why, sizeof(why), "connect failed: %s", strerror(errno));
            note("INFO %s attempt %d: %s", field, attempt, why);
            continue;
        }
        int64_t t0 = h_now_ms();
        struct h_reply *r = h_cmdv(fd, "INFO", "all", NULL);
        int epid = -1;
        if (r == NULL) {
            snprintf(why, sizeof(why), "no reply after %lld ms (%s)",
                     (long long)(h_now_ms() - t0), strerror(errno));
            close(fd);
            note("INFO %s attempt %d: %s", field, attempt, why);
            continue;
        }
        close(fd);
        const char *text = r->v->str != NULL ? r->v->str : "";
        const char *ep = strstr(text, "edge_pid:");
        if (ep != NULL)
            epid = atoi(ep + 9);
        char key[128];
        snprintf(key, sizeof(key), "\n%s:", field);
        const char *p = strstr(text, key);
        if (p == NULL && strncmp(text, key + 1, strlen(key) - 1) == 0)
            p = text - 1;
        if (p != NULL) {
            int64_t v = strtoll(p + strlen(key), NULL, 10);
            h_free(r);
            if (attempt > 0)
                note("INFO %s: answered on attempt %d (edge %d)", field, attempt, epid);
            return v;
        }
        snprintf(why, sizeof(why), "field absent (edge %d, reply type %d, %zu bytes: %.120s)",
                 epid, (int)r->v->type, r->v->len, raw(r));
        h_free(r);
        note("INFO %s attempt %d: %s", field, attempt, why);
    }
    EXPECT(0, "INFO %s: %s", field, why);
    return -1;
}

static inline size_t encode_get(char *out, size_t cap, const char *key)
{
    int n = snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    return (size_t)n;
}

static inline void owner_set(const struct daemon *d, const char *pool, const char *key, const char *val)
{
    struct h_wire w;
    int rc = h_wire_open(&w, d, pool, 0, WIRE_ROLE_WRITE);
    EXPECT(rc == 0, "cannot open a write link to owner %s/0", pool);
    struct wire_msg m;
    rc = h_wire_set(&w, key, val, 3000, &m);
    int ok = rc == 0 && m.type == WIRE_OK && m.u.ok.applied;
    int type = rc == 0 ? m.type : -1;
    h_wire_close(&w);
    EXPECT(ok, "wire SET %s at %s/0: rc %d type %d", key, pool, rc, type);
}

#endif

/*
 * check_resetstat.c - CONFIG RESETSTAT is daemon-wide (README, Metrics): the
 * edge that answers asks the master, which has every process zero its
 * counters (owners first, then edges) and zeroes the colo segments' own
 * (cache, rate limiter) before the OK.  So right after the OK, INFO from
 * ANOTHER edge shows small numbers everywhere (the INFO calls themselves),
 * while gauges (clients connected, keys, cache entries, memory) are intact.
 * - a daemon with 2 edges and 2 owners, reads and writes through both edges
 *   (reads limited by a generous rate limit, so the limiter counts them);
 * - a stopped owner (SIGSTOP) cannot wedge the command: the master gives up
 *   on it after a bounded wait and answers anyway.
 * Every wait is bounded; every process is stopped by pid (h_stop, and a
 * guard that SIGCONTs a stopped owner however the test ends).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define CONF                                                                                   \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\n"                                            \
    "ratelimit read 1000000/1s burst 1000000\n"

#define NKEYS 20

/* The INFO all text read over fd (malloc'd, NUL-terminated), or NULL. */
static char *info_all(int fd)
{
    struct h_reply *r = h_cmdv(fd, "INFO", "all", NULL);
    char *text = NULL;
    if (r != NULL && r->v->type == RESP_BULK)
        text = strndup(r->v->str, r->v->len);
    h_free(r);
    return text;
}

/* field's integer value in an INFO text, or -1 if absent. */
static long long field(const char *text, const char *name)
{
    char key[96];
    snprintf(key, sizeof(key), "%s:", name);
    size_t n = strlen(key);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, key, n) == 0)
            return strtoll(p + n, NULL, 10);
    }
    return -1;
}

static void ok_reply(int fd, const char *what, struct h_reply *r)
{
    ck_assert_msg(r != NULL && r->v->type != RESP_ERROR, "%s failed", what);
    h_free(r);
}

/* Writes and reads through both edges: SETs, GETs of what was written (cache
 * hits), GETs of keys that do not exist (misses), so every counter grows. */
static void traffic(int a, int b)
{
    char k[32];
    for (int i = 0; i < NKEYS; i++) {
        int fd = i % 2 ? b : a;
        snprintf(k, sizeof(k), "rs:%d", i);
        ok_reply(fd, "SET", h_cmdv(fd, "SET", k, "value", NULL));
        ok_reply(fd, "GET", h_cmdv(fd, "GET", k, NULL));
        ok_reply(a, "GET", h_cmdv(a, "GET", k, NULL));
        ok_reply(b, "GET", h_cmdv(b, "GET", k, NULL));
        snprintf(k, sizeof(k), "rs:none:%d", i);
        ok_reply(fd, "GET", h_cmdv(fd, "GET", k, NULL));
    }
}

/* Waits (up to 10 s) until INFO over fd has seen the owners' counters of the
 * traffic (edges poll owner STATS every second); returns that INFO text. */
static char *settled_info(int fd)
{
    int64_t end = h_now_ms() + 10000;
    char *text = NULL;
    for (;;) {
        free(text);
        text = info_all(fd);
        ck_assert_msg(text != NULL, "INFO failed");
        if ((field(text, "owner_writes") >= NKEYS && field(text, "owner_keys") >= NKEYS) ||
            h_now_ms() > end)
            return text;
        h_sleep_ms(100);
    }
}

/* The counters a RESETSTAT must zero in every process, and the most that the
 * INFO calls themselves (and the edges' own background) may count again. */
static const struct {
    const char *name;
    long long before_min;   /* what the traffic made it at least */
    long long after_max;
} counters[] = {
    {"total_commands_processed", 5 * NKEYS, 4},
    {"total_connections_received", 2, 1},
    {"owner_reads", 1, 2},
    {"owner_writes", NKEYS, 0},
    {"cache_hits", NKEYS, 2},
    {"cache_misses", 1, 2},
    {"ratelimit_allowed", 3 * NKEYS, 2},
};

struct setup {
    struct daemon d;
    int a, b;               /* connections served by two different edges */
    char *before;           /* INFO (from b) before the reset */
};

static void setup_traffic(struct setup *s)
{
    ck_assert_int_eq(h_start(&s->d, CONF), 0);
    ck_assert_msg(h_edge_pair(&s->d, &s->a, &s->b) == 0, "no two edges answered");
    traffic(s->a, s->b);
    s->before = settled_info(s->b);
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
        ck_assert_msg(field(s->before, counters[i].name) >= counters[i].before_min,
                      "before the reset %s is %lld, expected >= %lld", counters[i].name,
                      field(s->before, counters[i].name), counters[i].before_min);
}

static void finish(struct setup *s)
{
    free(s->before);
    close(s->a);
    close(s->b);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&s->d)), 0);
}

static void resetstat_ok(int fd)
{
    struct h_reply *r = h_cmdv(fd, "CONFIG", "RESETSTAT", NULL);
    ck_assert_msg(r != NULL, "CONFIG RESETSTAT: no reply");
    ck_assert_msg(r->v->type == RESP_SIMPLE && r->v->len == 2 && memcmp(r->v->str, "OK", 2) == 0,
                  "CONFIG RESETSTAT did not answer OK");
    h_free(r);
}

START_TEST(resetstat_on_one_edge_zeroes_every_process_counters)
{
    struct setup s;
    setup_traffic(&s);
    resetstat_ok(s.a);
    char *after = info_all(s.b); /* the other edge */
    ck_assert_ptr_nonnull(after);
    char bad[1024] = "";
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        long long v = field(after, counters[i].name);
        if (v < 0 || v > counters[i].after_max)
            snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " %s=%lld (was %lld)",
                     counters[i].name, v, field(s.before, counters[i].name));
    }
    ck_assert_msg(bad[0] == '\0', "not reset, seen from the other edge:%s", bad);
    free(after);
    finish(&s);
}
END_TEST

START_TEST(resetstat_keeps_gauges)
{
    struct setup s;
    setup_traffic(&s);
    resetstat_ok(s.a);
    char *after = info_all(s.b);
    ck_assert_ptr_nonnull(after);
    static const char *const gauges[] = {"owner_keys", "cache_entries", "cache_used_memory"};
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        long long was = field(s.before, gauges[i]);
        ck_assert_msg(was > 0, "before the reset %s is %lld", gauges[i], was);
        ck_assert_msg(field(after, gauges[i]) == was, "gauge %s was %lld, is %lld after the reset",
                      gauges[i], was, field(after, gauges[i]));
    }
    /* a and b are open: the clients gauge counts them still. */
    ck_assert_int_ge(field(after, "connected_clients"), 2);
    free(after);
    finish(&s);
}
END_TEST

START_TEST(resetstat_answers_while_an_owner_is_stopped)
{
    struct setup s;
    setup_traffic(&s);
    pid_t owner = h_child(&s.d, "hotkvd: owner cold/0", 0);
    ck_assert_int_gt(owner, 0);
    int guard = h_sigcont_guard(owner, 0, NULL);
    kill(owner, SIGSTOP);
    int64_t t0 = h_now_ms();
    resetstat_ok(s.a); /* h_cmd's own receive timeout (5 s) bounds the wait */
    int64_t took = h_now_ms() - t0;
    kill(owner, SIGCONT);
    close(guard);
    ck_assert_msg(took < 5000, "RESETSTAT took %lld ms", (long long)took);
    /* The edges' counters were reset all the same. */
    char *after = info_all(s.b);
    ck_assert_ptr_nonnull(after);
    ck_assert_int_le(field(after, "total_commands_processed"), 4);
    free(after);
    finish(&s);
}
END_TEST

Suite *resetstat_suite(void)
{
    Suite *s = suite_create("resetstat");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"zeroes_everywhere", resetstat_on_one_edge_zeroes_every_process_counters},
        {"keeps_gauges", resetstat_keeps_gauges},
        {"owner_stopped", resetstat_answers_while_an_owner_is_stopped},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

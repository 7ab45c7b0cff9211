/*
 * check_keyspace.c - the keyspace administration commands against the real
 * daemon (issue 13): FLUSHALL/FLUSHDB (every owner, durable, every colo
 * cache forgets), KEYS (bounded by keys-max), RANDOMKEY and OBJECT.
 *
 * Every test starts its own daemon on an ephemeral port, bounds every wait,
 * and stops the daemon by pid, also when a check fails (EXPECT).
 */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

/* 2 edges, 2 hot + 1 cold owners; values cached for a minute (so a read
 * after the flush would find them if the caches did not forget), and a
 * durable class. */
#define TWO_EDGES                                                                            \
    "edge-workers 2\nhot-owners 2\ncold-owners 1\n"                                          \
    "class live pattern \"k:*\" pool hot fresh 60s keep 5m durability ledger\n"              \
    "class safe pattern \"m:*\" pool cold fresh 60s keep 5m durability durable\n"

/* ---- helpers: a failed check stops the daemon first ------------------------------- */

static struct daemon *g_d;

static void fail_cleanup(void)
{
    if (g_d != NULL && g_d->pid > 0) {
        h_dump_log(g_d);
        h_stop(g_d);
    }
    g_d = NULL;
}

#define EXPECT(cond, ...) H_EXPECT(fail_cleanup, cond, __VA_ARGS__)

static void start(struct daemon *d, const char *conf)
{
    ck_assert_msg(h_start(d, conf) == 0, "daemon did not start");
    g_d = d;
    h_on_fail(fail_cleanup);
}

static void stop(struct daemon *d)
{
    int st = h_stop(d);
    g_d = NULL;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon stop status %d", st);
}

static int conn(const struct daemon *d)
{
    int fd = h_connect(d->port);
    EXPECT(fd >= 0, "cannot connect to port %d", d->port);
    return fd;
}

/* The reply's raw text on one line, for messages. */
static const char *raw(const struct h_reply *r)
{
    static char buf[4][200];
    static int k;
    char *b = buf[k++ & 3];
    if (r == NULL)
        return "(no reply)";
    size_t j = 0;
    for (const char *p = r->raw; *p && j < sizeof(buf[0]) - 5; p++) {
        if (*p == '\r' || *p == '\n') {
            b[j++] = '\\';
            b[j++] = *p == '\r' ? 'r' : 'n';
        } else {
            b[j++] = *p;
        }
    }
    b[j] = '\0';
    return b;
}

/* Runs a command and checks its raw reply. */
#define EXPECT_RAW(fd, want, ...)                                                           \
    do {                                                                                    \
        struct h_reply *r_ = h_call((fd), __VA_ARGS__, NULL);                               \
        int same_ = strcmp(r_->raw, (want)) == 0;                                           \
        char got_[200];                                                                     \
        snprintf(got_, sizeof(got_), "%s", raw(r_));                                        \
        h_free(r_);                                                                         \
        EXPECT(same_, "%s:%d: expected %s, got %s", __FILE__, __LINE__, #want, got_);      \
    } while (0)

static int is_nil(const struct h_reply *r)
{
    return r->v->type == RESP_NULL;
}

static int64_t int_of(int fd, const char *first, ...)
{
    const char *w[8];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s != NULL && n < 8; s = va_arg(ap, const char *))
        w[n++] = s;
    va_end(ap);
    struct h_reply *r = h_cmd(fd, n, w);
    EXPECT(r != NULL && r->v->type == RESP_INT, "%s: expected an integer, got %s", first, raw(r));
    int64_t v = r->v->integer;
    h_free(r);
    return v;
}

/* ---- FLUSHALL ---------------------------------------------------------------------- */

#define NKEYS 40 /* k:0..39 on the hot owners; m:0..9 on the cold one, durable */

static void key_name(char *b, size_t n, const char *prefix, int i)
{
    snprintf(b, n, "%s%d", prefix, i);
}

/* Every key written, read back through both edges (so both colos... one colo,
 * both edges' reads, hold it cached). */
static void write_and_cache(int a, int b)
{
    char k[32], v[32];
    for (int i = 0; i < NKEYS; i++) {
        key_name(k, sizeof(k), "k:", i);
        snprintf(v, sizeof(v), "v%d", i);
        EXPECT_RAW(i % 2 ? a : b, "+OK\r\n", "SET", k, v);
    }
    for (int i = 0; i < 10; i++) {
        key_name(k, sizeof(k), "m:", i);
        EXPECT_RAW(i % 2 ? b : a, "+OK\r\n", "SET", k, "durable");
    }
    for (int pass = 0; pass < 2; pass++) {
        int fd = pass ? b : a;
        for (int i = 0; i < NKEYS; i++) {
            key_name(k, sizeof(k), "k:", i);
            struct h_reply *r = h_call(fd, "GET", k, NULL);
            EXPECT(r->v->type == RESP_BULK, "GET %s before the flush: %s", k, raw(r));
            h_free(r);
        }
        for (int i = 0; i < 10; i++) {
            key_name(k, sizeof(k), "m:", i);
            EXPECT_RAW(fd, "$7\r\ndurable\r\n", "GET", k);
        }
    }
}

/* Every key of write_and_cache is missing through fd. */
static void all_missing(int fd, const char *when)
{
    char k[32];
    for (int i = 0; i < NKEYS + 10; i++) {
        if (i < NKEYS)
            key_name(k, sizeof(k), "k:", i);
        else
            key_name(k, sizeof(k), "m:", i - NKEYS);
        struct h_reply *r = h_call(fd, "GET", k, NULL);
        int nil = is_nil(r);
        char got[200];
        snprintf(got, sizeof(got), "%s", raw(r));
        h_free(r);
        EXPECT(nil, "%s: GET %s answered %s", when, k, got);
    }
    EXPECT(int_of(fd, "DBSIZE", NULL) == 0, "%s: DBSIZE is not 0", when);
}

START_TEST(flushall_empties_every_owner_and_every_cache_durably)
{
    struct daemon d;
    start(&d, TWO_EDGES);
    int a, b;
    EXPECT(h_edge_pair(&d, &a, &b) == 0, "no second edge answered");
    write_and_cache(a, b);
    EXPECT(int_of(a, "DBSIZE", NULL) == NKEYS + 10, "DBSIZE before the flush");
    EXPECT(h_info_int(d.port, "cache_entries") >= NKEYS, "the values are not cached");

    EXPECT_RAW(a, "+OK\r\n", "FLUSHALL");
    all_missing(a, "after FLUSHALL, the flushing edge");
    all_missing(b, "after FLUSHALL, the other edge");

    /* writes after the flush are kept, read through both edges */
    EXPECT_RAW(b, "+OK\r\n", "SET", "k:after", "1");
    EXPECT_RAW(a, "+OK\r\n", "SET", "m:after", "2");
    EXPECT_RAW(a, "$1\r\n1\r\n", "GET", "k:after");
    EXPECT_RAW(b, "$1\r\n2\r\n", "GET", "m:after");
    EXPECT(int_of(b, "DBSIZE", NULL) == 2, "DBSIZE after two new writes");
    close(a);
    close(b);

    /* an orderly stop and a start: the flush and the new writes are on disk */
    EXPECT(WEXITSTATUS(h_halt(&d)) == 0, "halt");
    EXPECT(h_restart(&d) == 0, "restart");
    EXPECT(h_edge_pair(&d, &a, &b) == 0, "no second edge answered after the restart");
    EXPECT_RAW(a, "$1\r\n1\r\n", "GET", "k:after");
    EXPECT_RAW(b, "$1\r\n2\r\n", "GET", "m:after");
    EXPECT_RAW(a, "$-1\r\n", "GET", "k:1");
    EXPECT_RAW(b, "$-1\r\n", "GET", "m:1");
    EXPECT(int_of(a, "DBSIZE", NULL) == 2, "DBSIZE after the restart");
    close(a);
    close(b);
    stop(&d);
}
END_TEST

/* Two colos (one edge each, one cache segment each): the FLUSHALL through
 * one colo's edge makes the other colo's segment forget too (the master
 * applies the forget to every segment of the host). */
START_TEST(flushall_reaches_the_cache_of_every_colo)
{
    struct daemon d;
    start(&d, "colos 2\nedge-workers 1\nhot-owners 2\ncold-owners 1\n"
              "class live pattern \"k:*\" pool hot fresh 60s keep 5m durability ledger\n"
              "class safe pattern \"m:*\" pool cold fresh 60s keep 5m durability durable\n");
    int a, b;
    EXPECT(h_edge_pair(&d, &a, &b) == 0, "no second edge answered");
    write_and_cache(a, b);
    EXPECT_RAW(b, "+OK\r\n", "FLUSHALL", "SYNC");
    all_missing(a, "after FLUSHALL through the other colo");
    all_missing(b, "after FLUSHALL through this colo");
    close(a);
    close(b);
    stop(&d);
}
END_TEST

/* kill -9 of the whole daemon right after the OK: a FLUSHALL is answered only
 * once every owner committed it, so nothing comes back. */
START_TEST(flushall_survives_a_crash_right_after_its_ok)
{
    struct daemon d;
    start(&d, TWO_EDGES);
    int a = conn(&d);
    char k[32];
    for (int i = 0; i < NKEYS; i++) {
        key_name(k, sizeof(k), i % 2 ? "k:" : "m:", i);
        EXPECT_RAW(a, "+OK\r\n", "SET", k, "v");
    }
    h_sleep_ms(300); /* the ledger-class keys are on disk (persist-interval) */
    EXPECT_RAW(a, "+OK\r\n", "FLUSHDB", "ASYNC");
    close(a);
    pid_t kids[16];
    int n = h_children(&d, kids, 16);
    kill(d.pid, SIGKILL);
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    EXPECT(h_wait(d.pid, 5000) >= 0, "the master did not die");
    for (int i = 0; i < n; i++)
        for (int t = 0; t < 100 && h_alive(kids[i]); t++)
            h_sleep_ms(20);
    d.pid = 0;
    EXPECT(h_restart(&d) == 0, "restart after kill -9");
    a = conn(&d);
    EXPECT(int_of(a, "DBSIZE", NULL) == 0, "keys came back after a crash");
    for (int i = 0; i < NKEYS; i++) {
        key_name(k, sizeof(k), i % 2 ? "k:" : "m:", i);
        EXPECT_RAW(a, "$-1\r\n", "GET", k);
    }
    close(a);
    stop(&d);
}
END_TEST

START_TEST(flushall_arguments_and_admin_category)
{
    struct daemon d;
    start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"
              "user default on nopass ~* +@all\n"
              "user writer on >pw ~* +@read +@write\n"
              "user some on >pw3 ~k:* +@read\n"
              "user boss on >pw2 ~* +@admin +@read\n");
    int a = conn(&d);
    EXPECT_RAW(a, "-ERR syntax error\r\n", "FLUSHALL", "now");
    EXPECT_RAW(a, "-ERR syntax error\r\n", "FLUSHALL", "ASYNC", "SYNC");
    EXPECT_RAW(a, "-ERR syntax error\r\n", "FLUSHDB", "");
    EXPECT_RAW(a, "+OK\r\n", "SET", "x", "1");
    EXPECT_RAW(a, "-ERR syntax error\r\n", "FLUSHDB", "sync", "x");
    EXPECT_RAW(a, "$1\r\n1\r\n", "GET", "x"); /* nothing was flushed by a refused one */
    EXPECT_RAW(a, "+OK\r\n", "FLUSHALL", "sync");
    EXPECT_RAW(a, "+OK\r\n", "flushdb", "Async");
    EXPECT_RAW(a, "+OK\r\n", "FLUSHALL");
    EXPECT_RAW(a, "+OK\r\n", "SET", "x", "1");
    EXPECT_RAW(a, "+OK\r\n", "AUTH", "writer", "pw");
    struct h_reply *r = h_call(a, "FLUSHALL", NULL);
    int noperm = r->v->type == RESP_ERROR && strncmp(r->raw, "-NOPERM", 7) == 0;
    char got[200];
    snprintf(got, sizeof(got), "%s", raw(r));
    h_free(r);
    EXPECT(noperm, "a user without @admin flushed: %s", got);
    EXPECT_RAW(a, "$1\r\n1\r\n", "GET", "x");
    EXPECT_RAW(a, "+OK\r\n", "AUTH", "boss", "pw2");
    EXPECT_RAW(a, "+OK\r\n", "FLUSHDB");
    EXPECT_RAW(a, "$-1\r\n", "GET", "x");
    /* KEYS and RANDOMKEY list keys: like SCAN, only for a user allowed every key */
    EXPECT_RAW(a, "+OK\r\n", "AUTH", "some", "pw3");
    const char *listing[][2] = {{"KEYS", "k:*"}, {"RANDOMKEY", NULL}};
    for (int i = 0; i < 2; i++) {
        r = h_call(a, listing[i][0], listing[i][1], NULL);
        noperm = r->v->type == RESP_ERROR && strncmp(r->raw, "-NOPERM", 7) == 0;
        snprintf(got, sizeof(got), "%s", raw(r));
        h_free(r);
        EXPECT(noperm, "%s by a user allowed k:* only: %s", listing[i][0], got);
    }
    EXPECT_RAW(a, "$-1\r\n", "OBJECT", "ENCODING", "k:1");
    close(a);
    stop(&d);
}
END_TEST

/* ---- KEYS ------------------------------------------------------------------------------ */

/* The reply of KEYS pattern as "k1 k2 ..." (sorted by the server), or the
 * raw reply when it is not an array. */
static void keys_of(int fd, const char *pattern, char *out, size_t len)
{
    struct h_reply *r = h_call(fd, "KEYS", pattern, NULL);
    out[0] = '\0';
    if (r->v->type != RESP_ARRAY) {
        snprintf(out, len, "%s", raw(r));
        h_free(r);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->v->n && n + 2 < len; i++) {
        const struct resp_value *e = &r->v->elems[i];
        int w = snprintf(out + n, len - n, "%s%.*s", i ? " " : "", (int)e->len, e->str);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
    h_free(r);
}

#define EXPECT_KEYS(fd, pattern, want)                                                   \
    do {                                                                                 \
        char got_[4096];                                                                 \
        keys_of((fd), (pattern), got_, sizeof(got_));                                    \
        EXPECT(strcmp(got_, (want)) == 0, "KEYS %s: '%s', expected '%s'", (pattern), got_, \
               (want));                                                                  \
    } while (0)

START_TEST(keys_walks_every_owner_with_redis_globs_and_stops_past_keys_max)
{
    struct daemon d;
    start(&d, TWO_EDGES "keys-max 30\n");
    int a = conn(&d);
    EXPECT_KEYS(a, "*", "");
    /* hot (k:*), durable cold (m:*) and plain cold keys */
    const char *ks[] = {"k:1", "k:2", "k:10", "k:a", "m:1", "m:22", "x", "y*", "ab",
                        "a\\b", "[x]", "h?llo", "hello", "hallo", "hillo", "hbllo"};
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
        EXPECT_RAW(a, "+OK\r\n", "SET", ks[i], "v");
    EXPECT_KEYS(a, "*", "[x] a\\b ab h?llo hallo hbllo hello hillo k:1 k:10 k:2 k:a m:1 m:22 x y*");
    EXPECT_KEYS(a, "k:*", "k:1 k:10 k:2 k:a");
    EXPECT_KEYS(a, "k:?", "k:1 k:2 k:a");
    EXPECT_KEYS(a, "k:[0-9]*", "k:1 k:10 k:2");
    EXPECT_KEYS(a, "?:[^1]*", "k:2 k:a m:22");
    EXPECT_KEYS(a, "h[ae]llo", "hallo hello");
    EXPECT_KEYS(a, "h[^e]llo", "h?llo hallo hbllo hillo");
    EXPECT_KEYS(a, "h[a-b]llo", "hallo hbllo");
    EXPECT_KEYS(a, "h\\?llo", "h?llo");
    EXPECT_KEYS(a, "y\\*", "y*");
    EXPECT_KEYS(a, "\\[x\\]", "[x]");
    EXPECT_KEYS(a, "a\\\\b", "a\\b");
    EXPECT_KEYS(a, "nothing*", "");
    EXPECT_KEYS(a, "", "");
    /* a deleted key and an expired one are not listed */
    EXPECT_RAW(a, ":1\r\n", "DEL", "k:10");
    EXPECT_RAW(a, "+OK\r\n", "SET", "k:gone", "v", "PX", "30");
    h_sleep_ms(200);
    EXPECT_KEYS(a, "k:*", "k:1 k:2 k:a");

    /* past keys-max: an error, not a reply that size; SCAN still works */
    char k[32];
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "n:%d", i);
        EXPECT_RAW(a, "+OK\r\n", "SET", k, "v");
    }
    EXPECT_KEYS(a, "*", "-ERR KEYS matches more than keys-max (30) keys; use SCAN with MATCH "
                     "and COUNT instead\\r\\n");
    EXPECT_KEYS(a, "k:*", "k:1 k:2 k:a"); /* the bound is on keys matched, not scanned */
    EXPECT_RAW(a, "+OK\r\n", "CONFIG", "SET", "keys-max", "1000");
    struct h_reply *r = h_call(a, "KEYS", "*", NULL);
    int n = r->v->type == RESP_ARRAY ? (int)r->v->n : -1;
    h_free(r);
    EXPECT(n == 35, "KEYS * after keys-max 1000: %d keys", n);
    EXPECT_RAW(a, "-ERR wrong number of arguments for 'keys' command\r\n", "KEYS");
    EXPECT_RAW(a, "-ERR wrong number of arguments for 'keys' command\r\n", "KEYS", "a", "b");
    close(a);
    stop(&d);
}
END_TEST

/* ---- RANDOMKEY ------------------------------------------------------------------------- */

START_TEST(randomkey_answers_live_keys_of_every_owner_and_nil_when_empty)
{
    struct daemon d;
    start(&d, TWO_EDGES);
    int a = conn(&d);
    EXPECT_RAW(a, "$-1\r\n", "RANDOMKEY");
    char k[32];
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "%s%d", i % 2 ? "k:" : "c:", i);
        EXPECT_RAW(a, "+OK\r\n", "SET", k, "v");
    }
    for (int i = 0; i < 20; i++) { /* expired, not yet swept maybe: never answered */
        snprintf(k, sizeof(k), "e:%d", i);
        EXPECT_RAW(a, "+OK\r\n", "SET", k, "v", "PX", "20");
    }
    h_sleep_ms(100);
    int hot = 0, cold = 0;
    for (int i = 0; i < 200; i++) {
        struct h_reply *r = h_call(a, "RANDOMKEY", NULL);
        int bulk = r->v->type == RESP_BULK && r->v->len >= 3;
        char key[64] = "";
        if (bulk)
            snprintf(key, sizeof(key), "%.*s", (int)r->v->len, r->v->str);
        char got[200];
        snprintf(got, sizeof(got), "%s", raw(r));
        h_free(r);
        EXPECT(bulk && (strncmp(key, "k:", 2) == 0 || strncmp(key, "c:", 2) == 0),
               "RANDOMKEY answered %s", got);
        hot += key[0] == 'k';
        cold += key[0] == 'c';
        EXPECT(int_of(a, "EXISTS", key, NULL) == 1, "RANDOMKEY answered %s, which is missing", key);
    }
    EXPECT(hot > 20 && cold > 20, "200 RANDOMKEYs: %d hot-owner keys, %d cold-owner keys", hot,
           cold);
    EXPECT_RAW(a, "-ERR wrong number of arguments for 'randomkey' command\r\n", "RANDOMKEY", "x");
    EXPECT_RAW(a, "+OK\r\n", "FLUSHALL");
    EXPECT_RAW(a, "$-1\r\n", "RANDOMKEY");
    EXPECT_RAW(a, "+OK\r\n", "SET", "only", "1");
    EXPECT_RAW(a, "$4\r\nonly\r\n", "RANDOMKEY");
    h_free(h_call(a, "HELLO", "3", NULL));
    EXPECT_RAW(a, ":1\r\n", "DEL", "only");
    EXPECT_RAW(a, "_\r\n", "RANDOMKEY");
    close(a);
    stop(&d);
}
END_TEST

/* ---- OBJECT ---------------------------------------------------------------------------- */

START_TEST(object_answers_from_the_keys_owner)
{
    struct daemon d;
    start(&d, TWO_EDGES);
    int a = conn(&d);
    EXPECT_RAW(a, "+OK\r\n", "SET", "k:1", "7");
    EXPECT_RAW(a, "+OK\r\n", "SET", "m:1", "hello");
    EXPECT_RAW(a, "+OK\r\n", "SET", "c", "12345");
    EXPECT_RAW(a, "$3\r\nint\r\n", "OBJECT", "ENCODING", "k:1");
    EXPECT_RAW(a, ":2147483647\r\n", "OBJECT", "REFCOUNT", "k:1");
    EXPECT_RAW(a, "$6\r\nembstr\r\n", "object", "encoding", "m:1");
    EXPECT_RAW(a, ":1\r\n", "OBJECT", "REFCOUNT", "c");
    EXPECT_RAW(a, "$-1\r\n", "OBJECT", "ENCODING", "nokey");
    EXPECT_RAW(a, "$-1\r\n", "OBJECT", "IDLETIME", "nokey");
    EXPECT_RAW(a, "-ERR OBJECT IDLETIME is not tracked: reads are answered by the colo caches, "
                  "which the key's owner does not see\r\n", "OBJECT", "IDLETIME", "c");
    EXPECT_RAW(a, "-ERR unknown subcommand 'nope'. Try OBJECT HELP.\r\n", "OBJECT", "nope");
    EXPECT_RAW(a, "-ERR wrong number of arguments for 'object|encoding' command\r\n", "OBJECT",
               "ENCODING");
    EXPECT_RAW(a, "-ERR wrong number of arguments for 'object' command\r\n", "OBJECT");
    struct h_reply *r = h_call(a, "OBJECT", "HELP", NULL);
    int lines = r->v->type == RESP_ARRAY ? (int)r->v->n : -1;
    h_free(r);
    EXPECT(lines == 15, "OBJECT HELP: %d lines", lines);
    close(a);
    stop(&d);
}
END_TEST

Suite *keyspace_suite(void)
{
    Suite *s = suite_create("keyspace");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"flushall", flushall_empties_every_owner_and_every_cache_durably},
        {"flushall_colos", flushall_reaches_the_cache_of_every_colo},
        {"flushall_crash", flushall_survives_a_crash_right_after_its_ok},
        {"flushall_args", flushall_arguments_and_admin_category},
        {"keys", keys_walks_every_owner_with_redis_globs_and_stops_past_keys_max},
        {"randomkey", randomkey_answers_live_keys_of_every_owner_and_nil_when_empty},
        {"object", object_answers_from_the_keys_owner},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

/*
 * check_ordering.c - the order of writes is the owner's, and what a write's
 * acknowledgment promises holds after a crash.  Regression tests of defects
 * a review reproduced (issue 11):
 * - sequential writes through two edges in the same millisecond keep the
 *   last one, and SETNX grants a lock once (edge clocks decided the order);
 * - MSET naming a key twice keeps the last value;
 * - a multi-key durable DEL is acknowledged only when every key's delete is
 *   committed (a batch cap split it, and only the last key was waited for);
 * - a reload that reorders classes does not change how a written key is
 *   persisted (the class was stored as a position in the config).
 */
#include <check.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define TWO_EDGES "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static void expect_ok(struct h_reply *r, const char *what)
{
    ck_assert_msg(r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK"), "%s: expected +OK, got %s",
                  what, r->raw != NULL ? r->raw : "?");
    h_free(r);
}

static int64_t expect_int(struct h_reply *r)
{
    ck_assert_int_eq(r->v->type, RESP_INT);
    int64_t v = r->v->integer;
    h_free(r);
    return v;
}

START_TEST(sequential_writes_through_two_edges_keep_the_last)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, TWO_EDGES), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    int lost = 0;
    char key[32], first[32], second[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "k%d", i % 7);
        snprintf(first, sizeof(first), "first-%d", i);
        snprintf(second, sizeof(second), "second-%d", i);
        /* alternate which edge writes first: both orders must hold */
        int x = i % 2 ? a : b, y = i % 2 ? b : a;
        expect_ok(h_call(x, "SET", key, first, NULL), "first SET");
        expect_ok(h_call(y, "SET", key, second, NULL), "second SET");
        for (int j = 0; j < 2; j++) {
            struct h_reply *r = h_call(j ? x : y, "GET", key, NULL);
            if (!h_str_is(r->v, second))
                lost++;
            h_free(r);
        }
    }
    ck_assert_msg(lost == 0, "%d reads of 600 did not see the second of two sequential writes",
                  lost);
    close(a);
    close(b);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(setnx_grants_a_lock_once_across_edges)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, TWO_EDGES), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    int twice = 0;
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof(key), "lock%d", i);
        int x = i % 2 ? a : b, y = i % 2 ? b : a;
        int64_t g1 = expect_int(h_call(x, "SETNX", key, "A", NULL));
        int64_t g2 = expect_int(h_call(y, "SETNX", key, "B", NULL));
        ck_assert_int_eq(g1, 1);
        twice += g2 != 0;
        struct h_reply *r = h_call(y, "GET", key, NULL);
        ck_assert_msg(h_str_is(r->v, "A"), "the lock holds %s, granted to A", r->raw);
        h_free(r);
    }
    ck_assert_msg(twice == 0, "SETNX granted a held lock %d times of 200", twice);
    close(a);
    close(b);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(mset_naming_a_key_twice_keeps_the_last_value)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, TWO_EDGES), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 50; i++) {
        char k[32], o[32], v1[32], v2[32];
        snprintf(k, sizeof(k), "m%d", i);
        snprintf(o, sizeof(o), "o%d", i);
        snprintf(v1, sizeof(v1), "v1-%d", i);
        snprintf(v2, sizeof(v2), "v2-%d", i);
        expect_ok(h_call(fd, "MSET", k, v1, o, "x", k, v2, NULL), "MSET");
        struct h_reply *r = h_call(fd, "MGET", k, o, NULL);
        ck_assert_int_eq(r->v->type, RESP_ARRAY);
        ck_assert_msg(h_str_is(&r->v->elems[0], v2), "MSET k v1 o x k v2 left %s", r->raw);
        ck_assert(h_str_is(&r->v->elems[1], "x"));
        h_free(r);
    }
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* kill -9 the owner, then stop and start the whole daemon on the same dir
 * (a new colo cache: what is read back comes from the owner's file). */
static void crash_owner_and_restart(struct daemon *d, const char *title)
{
    pid_t owner = h_child(d, title, 0);
    ck_assert_int_gt(owner, 0);
    ck_assert_int_eq(kill(owner, SIGKILL), 0);
    int64_t end = h_now_ms() + 10000;
    while (h_alive(owner) && h_now_ms() < end)
        h_sleep_ms(10);
    h_halt(d);
    ck_assert_int_eq(h_restart(d), 0);
}

#define DURABLE_ONE                                                                        \
    "edge-workers 1\nhot-owners 1\ncold-owners 1\n"                                       \
    "class money pattern \"m:*\" pool cold fresh 0 keep 0 durability durable on-timeout error\n"

START_TEST(multikey_durable_del_waits_for_every_key)
{
    enum { N = 100 };
    struct daemon d;
    /* One row per transaction: the DEL needs N commits. */
    ck_assert_int_eq(h_start(&d, DURABLE_ONE "persist-batch-max 1\n"), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    static char keys[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "m:%d", i);
        expect_ok(h_call(fd, "SET", keys[i], "money", NULL), "durable SET");
    }
    /* One pipeline: a SET of the last key, then the DEL of all of them.  The
     * owner reads both at once, so the last key is dirty before the others
     * and the first one-row batch holds it: waiting only for the last key
     * named would acknowledge the DEL after one commit of N. */
    static char pipe[N * 24 + 256];
    size_t n = (size_t)snprintf(pipe, sizeof(pipe), "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$1\r\nx\r\n",
                                strlen(keys[N - 1]), keys[N - 1]);
    n += (size_t)snprintf(pipe + n, sizeof(pipe) - n, "*%d\r\n$3\r\nDEL\r\n", N + 1);
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(pipe + n, sizeof(pipe) - n, "$%zu\r\n%s\r\n", strlen(keys[i]),
                              keys[i]);
    ck_assert_int_eq(h_send(fd, pipe, n), 0);
    struct h_reply *r = h_read(fd);
    ck_assert_ptr_nonnull(r);
    expect_ok(r, "pipelined SET");
    r = h_read(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(expect_int(r), N);
    close(fd);
    crash_owner_and_restart(&d, "hotkvd: owner cold/0");
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    int back = 0;
    for (int i = 0; i < N; i++)
        back += expect_int(h_call(fd, "EXISTS", keys[i], NULL)) != 0;
    ck_assert_msg(back == 0, "%d of %d keys of an acknowledged durable DEL came back after kill -9",
                  back, N);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

#define CLASSES_LM                                                                            \
    "class live pattern \"l:*\" pool cold durability ledger\n"                               \
    "class money pattern \"m:*\" pool cold fresh 0 keep 0 durability durable on-timeout error\n"
#define CLASSES_ML                                                                            \
    "class money pattern \"m:*\" pool cold fresh 0 keep 0 durability durable on-timeout error\n" \
    "class live pattern \"l:*\" pool cold durability ledger\n"
#define REORDER_BASE "edge-workers 1\nhot-owners 1\ncold-owners 1\npersist-interval 50ms\n"

START_TEST(reload_reordering_classes_keeps_deletes_persisted)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, REORDER_BASE CLASSES_LM), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 20; i++) {
        char k[16];
        snprintf(k, sizeof(k), "l:%d", i);
        expect_ok(h_call(fd, "SET", k, "live", NULL), "ledger SET");
    }
    h_sleep_ms(500); /* persisted (persist-interval 50ms) */
    h_write_conf(&d, REORDER_BASE CLASSES_ML);
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_generation") != 2)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 2);
    h_sleep_ms(300); /* every process has the new generation */
    for (int i = 0; i < 20; i++) {
        char k[16];
        snprintf(k, sizeof(k), "l:%d", i);
        ck_assert_int_eq(expect_int(h_call(fd, "DEL", k, NULL)), 1);
    }
    h_sleep_ms(1000); /* 20 persist intervals */
    close(fd);
    crash_owner_and_restart(&d, "hotkvd: owner cold/0");
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    int back = 0;
    for (int i = 0; i < 20; i++) {
        char k[16];
        snprintf(k, sizeof(k), "l:%d", i);
        back += expect_int(h_call(fd, "EXISTS", k, NULL)) != 0;
    }
    ck_assert_msg(back == 0, "%d of 20 deleted keys came back after a class reorder and kill -9",
                  back);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *ordering_suite(void)
{
    Suite *s = suite_create("ordering");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"two_edges", sequential_writes_through_two_edges_keep_the_last},
        {"setnx", setnx_grants_a_lock_once_across_edges},
        {"mset_dup", mset_naming_a_key_twice_keeps_the_last_value},
        {"durable_del", multikey_durable_del_waits_for_every_key},
        {"class_reorder", reload_reordering_classes_keeps_deletes_persisted},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

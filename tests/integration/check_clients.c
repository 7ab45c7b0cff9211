/*
 * check_clients.c - real Redis clients against the real daemon: redis-cli
 * (commands and --pipe mass insertion), redis-benchmark's tests that use the
 * data commands, and Debian's python3-redis (tests/integration/py/
 * redis_py_suite.py).  Every external process runs with a time bound and is
 * waited for by pid; a client that is not installed skips its test loudly.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define FIXTURE                                                                          \
    "edge-workers 2\nhot-owners 2\ncold-owners 2\n"                                       \
    "class live pattern h:* pool hot\nclass default pool cold\n"

static int run(char *const argv[], const char *in, char *out, size_t len, int ms)
{
    return h_run(argv, in, out, len, ms);
}

static int have(const char *path)
{
    return access(path, X_OK) == 0;
}

static char *cli(int port, char *out, size_t len, const char *a1, const char *a2, const char *a3)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    char *argv[] = {"/usr/bin/redis-cli", "-p", p, (char *)a1, (char *)a2, (char *)a3, NULL};
    ck_assert_int_eq(run(argv, NULL, out, len, 10000), 0);
    size_t n = strlen(out);
    if (n > 0 && out[n - 1] == '\n')
        out[n - 1] = '\0';
    return out;
}

START_TEST(redis_cli_runs_data_commands)
{
    if (!have("/usr/bin/redis-cli")) {
        fprintf(stderr, "SKIP redis_cli: redis-cli not installed\n");
        return;
    }
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    char out[4096];
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "SET", "h:x", "hello"), "OK");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "GET", "h:x", NULL), "hello");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "INCR", "n", NULL), "1");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "SET", "y", "world"), "OK");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "MGET", "h:x", "y"), "hello\nworld");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "TTL", "y", NULL), "-1");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "DBSIZE", NULL, NULL), "3");
    cli(d.port, out, sizeof(out), "--scan", NULL, NULL);
    ck_assert_ptr_nonnull(strstr(out, "h:x"));
    ck_assert_ptr_nonnull(strstr(out, "y"));
    ck_assert_ptr_nonnull(strstr(out, "n"));
    cli(d.port, out, sizeof(out), "INCRBY", "y", "1");
    ck_assert_msg(strstr(out, "ERR value is not an integer or out of range") != NULL, "got %s", out);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(redis_cli_pipe_mass_insert)
{
    if (!have("/usr/bin/redis-cli")) {
        fprintf(stderr, "SKIP redis_cli_pipe: redis-cli not installed\n");
        return;
    }
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    enum { N = 5000 };
    char path[400];
    snprintf(path, sizeof(path), "%s/mass.txt", d.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < N; i++) {
        char k[32], v[32];
        int kl = snprintf(k, sizeof(k), "%smass:%d", i % 2 ? "h:" : "", i);
        int vl = snprintf(v, sizeof(v), "value-%d", i);
        fprintf(f, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", kl, k, vl, v);
    }
    fclose(f);
    char port[16], out[4096];
    snprintf(port, sizeof(port), "%d", d.port);
    char *argv[] = {"/usr/bin/redis-cli", "-p", port, "--pipe", NULL};
    ck_assert_int_eq(run(argv, path, out, sizeof(out), 30000), 0);
    ck_assert_msg(strstr(out, "errors: 0, replies: 5000") != NULL, "got: %s", out);
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "DBSIZE", NULL, NULL), "5000");
    ck_assert_str_eq(cli(d.port, out, sizeof(out), "GET", "h:mass:4999", NULL), "value-4999");
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(redis_benchmark_default_tests_pass)
{
    if (!have("/usr/bin/redis-benchmark")) {
        fprintf(stderr, "SKIP redis_benchmark: redis-benchmark not installed\n");
        return;
    }
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    char port[16];
    static char out[1 << 16];
    snprintf(port, sizeof(port), "%d", d.port);
    char *argv[] = {"/usr/bin/redis-benchmark", "-p", port, "-t", "ping,set,get,incr,mset",
                    "-n", "2000", "-q", NULL};
    ck_assert_int_eq(run(argv, NULL, out, sizeof(out), 60000), 0);
    const char *want[] = {"PING_INLINE:", "PING_MBULK:", "SET:", "GET:", "INCR:", "MSET (10 keys):"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_msg(strstr(out, want[i]) != NULL, "no %s line in: %s", want[i], out);
    ck_assert_msg(strstr(out, "ERR") == NULL && strstr(out, "rror:") == NULL, "errors in: %s", out);
    ck_assert_int_eq(h_info_int(d.port, "write_failures"), 0);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(python_redis_suite_passes)
{
    if (!have("/usr/bin/python3")) {
        fprintf(stderr, "SKIP python_redis: /usr/bin/python3 not installed\n");
        return;
    }
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    char port[16], script[4096], out[1 << 14];
    snprintf(port, sizeof(port), "%d", d.port);
    /* The script sits next to this file in the source tree (cwd = repo). */
    ck_assert_ptr_nonnull(realpath("tests/integration/py/redis_py_suite.py", script));
    char *argv[] = {"/usr/bin/python3", script, port, NULL};
    int rc = run(argv, NULL, out, sizeof(out), 60000);
    ck_assert_msg(rc == 0, "redis-py suite failed (%d): %s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "redis-py suite passed"));
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *clients_suite(void)
{
    Suite *s = suite_create("clients");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"redis_cli", redis_cli_runs_data_commands},
        {"redis_cli_pipe", redis_cli_pipe_mass_insert},
        {"redis_benchmark", redis_benchmark_default_tests_pass},
        {"redis_py", python_redis_suite_passes},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

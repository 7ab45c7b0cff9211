/*
 * check_bench.c - a smoke test that the benchmark tools still work
 * (scripts/bench: storm, compare, kvload and http_compare).  No timing
 * assertions: only that the tools run, talk to the servers and print what
 * they promise.
 *
 * storm ($HOTKVD_STORM, built by `make test`) runs for 1 s with 5 readers
 * against a daemon the harness starts, and against redis-server when Debian's
 * is installed (skipped with a printed note when it is not).  compare runs
 * `--quick --rounds 1 --no-redis` (about 25 s), which needs no redis-server.
 * http_compare runs `--quick` (about 10 s): kvload ($HOTKVD_KVLOAD) against
 * hotkvd's RESP and HTTP ports and, when Debian's nginx is installed, nginx
 * (its row is then required), and http_wakeup.py.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define OUT_MAX (256 * 1024)

static const char *storm_bin(void)
{
    const char *b = getenv("HOTKVD_STORM");
    return b != NULL ? b : "build/release/storm";
}

static int on_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t n = e ? (size_t)(e - path) : strlen(path);
        snprintf(out, len, "%.*s/%s", (int)n, path, name);
        if (access(out, X_OK) == 0)
            return 1;
        path += n + (e ? 1 : 0);
    }
    return 0;
}

/* Runs argv with stdout+stderr into out (NUL-terminated) for at most
 * timeout_ms; past it the child gets SIGTERM, then SIGKILL 20 s later.
 * Returns the wait status, or -1 if it had to be killed. */
static int run_capture(char *const argv[], int timeout_ms, char *out, size_t len)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    int64_t end = h_now_ms() + timeout_ms;
    int killed = 0;
    for (;;) {
        int64_t left = end - h_now_ms();
        if (left <= 0) {
            kill(pid, SIGTERM);
            killed = 1;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, (int)(left > 200 ? 200 : left)) <= 0)
            continue;
        char tmp[4096];
        ssize_t n = read(fds[0], tmp, sizeof(tmp));
        if (n <= 0)
            break;
        size_t take = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;
        memcpy(out + used, tmp, take);
        used += take;
    }
    out[used] = '\0';
    close(fds[0]);
    int status = h_wait(pid, killed ? 20000 : 10000);
    if (status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    return killed ? -1 : status;
}

/* The value of `key=` on the STORM line of out, or -1. */
static long long storm_field(const char *out, const char *key)
{
    const char *line = strstr(out, "STORM ");
    if (line == NULL)
        return -1;
    const char *eol = strchr(line, '\n');
    char pat[64];
    snprintf(pat, sizeof(pat), " %s=", key);
    const char *p = strstr(line, pat);
    if (p == NULL || (eol != NULL && p > eol))
        return -1;
    return strtoll(p + strlen(pat), NULL, 10);
}

static void run_storm(int port, int owner_reads, char *out, size_t len)
{
    char portbuf[16];
    snprintf(portbuf, sizeof(portbuf), "%d", port);
    char *argv[] = {(char *)storm_bin(), "--port", portbuf, "--readers", "5", "--duration", "1",
                    "--write-interval-ms", "10", "--write-timeout-ms", "2000",
                    owner_reads ? "--info-owner-reads" : NULL, NULL};
    int st = run_capture(argv, 15000, out, len);
    ck_assert_msg(st != -1, "storm did not stop by itself: %s", out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "storm failed (status %d): %s", st, out);
}

static void check_storm_line(const char *out)
{
    ck_assert_msg(strstr(out, "STORM ") != NULL, "no STORM line: %s", out);
    ck_assert_msg(storm_field(out, "reader_ops") > 0, "no reads: %s", out);
    ck_assert_msg(storm_field(out, "writes") > 0, "no writes: %s", out);
    ck_assert_msg(storm_field(out, "write_errors") == 0, "writer errors: %s", out);
    ck_assert_msg(storm_field(out, "write_lost") == 0, "writes lost: %s", out);
    ck_assert_msg(storm_field(out, "reader_errors") == 0, "reader errors: %s", out);
}

START_TEST(storm_against_daemon_reads_and_writes_cleanly)
{
    ck_assert_msg(access(storm_bin(), X_OK) == 0, "no storm at %s (make test builds it)", storm_bin());
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nhot-owners 1\ncold-owners 1\n"
                                 "class bench pattern \"bench:*\" pool hot fresh 1s keep 60s "
                                 "durability ledger\n"), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "bench:hot", "v0", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(fd);
    static char out[OUT_MAX];
    run_storm(d.port, 1, out, sizeof(out));
    h_stop(&d);
    check_storm_line(out);
    ck_assert_msg(strstr(out, "owner_reads:") != NULL, "no owner_reads line: %s", out);
}
END_TEST

START_TEST(storm_against_redis_server_reads_and_writes_cleanly)
{
    char redis[512];
    if (!on_path("redis-server", redis, sizeof(redis))) {
        printf("bench: skipped: redis-server not installed (apt-get install -y redis-server); "
               "storm against Redis not checked\n");
        return;
    }
    ck_assert_msg(access(storm_bin(), X_OK) == 0, "no storm at %s (make test builds it)", storm_bin());
    char dir[256], portbuf[16];
    h_tmpdir(dir, sizeof(dir));
    int port = h_free_port();
    snprintf(portbuf, sizeof(portbuf), "%d", port);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl(redis, "redis-server", "--port", portbuf, "--bind", "127.0.0.1", "--dir", dir,
              "--save", "", "--appendonly", "no", "--daemonize", "no", (char *)NULL);
        _exit(127);
    }
    int up = 0;
    for (int64_t end = h_now_ms() + 10000; h_now_ms() < end && !up;) {
        up = h_ping(port);
        if (!up)
            usleep(50000);
    }
    static char out[OUT_MAX];
    if (up)
        run_storm(port, 0, out, sizeof(out));
    kill(pid, SIGTERM);
    if (h_wait(pid, 10000) == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    h_rmtree(dir);
    ck_assert_msg(up, "redis-server did not answer PING on port %d", port);
    check_storm_line(out);
}
END_TEST

START_TEST(compare_quick_runs_against_hotkvd)
{
    if (access("scripts/bench/compare", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        printf("bench: skipped: scripts/bench/compare or /usr/bin/python3 missing (run from the "
               "source tree)\n");
        return;
    }
    ck_assert_msg(access(storm_bin(), X_OK) == 0, "no storm at %s (make test builds it)", storm_bin());
    char dir[256], csv[320];
    h_tmpdir(dir, sizeof(dir));
    char *argv[] = {"scripts/bench/compare", "--quick", "--rounds", "1", "--no-redis",
                    "--hotkvd", (char *)h_bin(), "--storm", (char *)storm_bin(), "--out", dir, NULL};
    static char out[OUT_MAX];
    int64_t t0 = h_now_ms();
    int st = run_capture(argv, 60000, out, sizeof(out));
    printf("bench: compare --quick --rounds 1 --no-redis took %.1f s\n", (double)(h_now_ms() - t0) / 1000);
    snprintf(csv, sizeof(csv), "%s/results.csv", dir);
    struct stat sb;
    int have_csv = stat(csv, &sb) == 0 && sb.st_size > 0;
    h_rmtree(dir);
    ck_assert_msg(st != -1, "compare --quick did not finish within 60 s: %s", out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compare failed (status %d): %s", st, out);
    ck_assert_msg(strstr(out, "== medians") != NULL, "no summary table: %s", out);
    ck_assert_msg(strstr(out, "hotkvd r1  readers") != NULL, "no storm result: %s", out);
    ck_assert_msg(strstr(out, "!!") == NULL, "a server died during compare: %s", out);
    ck_assert_msg(have_csv, "no results.csv: %s", out);
}
END_TEST

START_TEST(http_compare_quick_runs_resp_http_and_nginx)
{
    const char *kvload = getenv("HOTKVD_KVLOAD");
    if (kvload == NULL)
        kvload = "build/release/kvload";
    ck_assert_msg(access("scripts/bench/http_compare", X_OK) == 0, "run from the source tree");
    ck_assert_msg(access(kvload, X_OK) == 0, "no kvload at %s (make test builds it)", kvload);
    char dir[256], csv[320];
    h_tmpdir(dir, sizeof(dir));
    char *argv[] = {"scripts/bench/http_compare", "--quick", "--hotkvd", (char *)h_bin(),
                    "--kvload", (char *)kvload, "--out", dir, NULL};
    static char out[OUT_MAX];
    int64_t t0 = h_now_ms();
    int st = run_capture(argv, 90000, out, sizeof(out));
    printf("bench: http_compare --quick took %.1f s\n", (double)(h_now_ms() - t0) / 1000);
    snprintf(csv, sizeof(csv), "%s/summary.csv", dir);
    struct stat sb;
    int have_csv = stat(csv, &sb) == 0 && sb.st_size > 0;
    h_rmtree(dir);
    ck_assert_msg(st != -1, "http_compare --quick did not finish within 90 s: %s", out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "http_compare failed (status %d): %s", st,
                  out);
    ck_assert_msg(strstr(out, "== medians") != NULL && strstr(out, "get-P16-1024B  http  r1") &&
                      strstr(out, "get-P1-64B     resp  r1") && strstr(out, "wakeup 50 polls r1"),
                  "missing rows: %s", out);
    if (access("/usr/sbin/nginx", X_OK) == 0)
        ck_assert_msg(strstr(out, "get-P1-64B     nginx r1") != NULL, "no nginx row: %s", out);
    else
        printf("bench: nginx not installed (apt-get install -y nginx): its rows not checked\n");
    ck_assert_msg(have_csv, "no summary.csv: %s", out);
}
END_TEST

Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("storm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, storm_against_daemon_reads_and_writes_cleanly);
    tcase_add_test(tc, storm_against_redis_server_reads_and_writes_cleanly);
    suite_add_tcase(s, tc);
    tc = tcase_create("compare");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, compare_quick_runs_against_hotkvd);
    suite_add_tcase(s, tc);
    tc = tcase_create("http_compare");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, http_compare_quick_runs_resp_http_and_nginx);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * check_difftest.c - the differential test of issue 13 in `make test`:
 * tests/diff/difftest.py sends one seeded stream of random commands to
 * Debian's redis-server and to the daemon under test ($HOTKVD_BIN) and
 * compares every reply; a difference not listed in tests/diff/differences.py
 * fails the test.  The script starts and stops both servers itself (temp
 * dirs, free loopback ports, stopped by PID), so this suite only runs it:
 * 10,000 commands with a fixed seed, then 10,000 with a seed from the clock,
 * printed so that a failure can be replayed with
 * `make difftest SEED=<seed> COUNT=10000`.
 *
 * Skipped, with a printed note, only when redis-server is not installed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define SCRIPT "tests/diff/difftest.py"
#define PYTHON "/usr/bin/python3"
#define STEPS "10000"
#define FIXED_SEED 13
#define OUT_MAX (512 * 1024)
/* The script's own bound, and ours around it (it stops its servers first). */
#define SCRIPT_LIMIT_S "150"
#define RUN_MS (180 * 1000)

static int redis_server(char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t n = e ? (size_t)(e - path) : strlen(path);
        snprintf(out, len, "%.*s/redis-server", (int)n, path);
        if (access(out, X_OK) == 0)
            return 1;
        path += n + (e ? 1 : 0);
    }
    snprintf(out, len, "/usr/bin/redis-server");
    return access(out, X_OK) == 0;
}

/* Runs the differential test with `seed`; fails the test, with the script's
 * report and the replay command, unless every difference was listed. */
static void difftest(long seed)
{
    char redis[512];
    if (!redis_server(redis, sizeof(redis))) {
        printf("difftest: skipped: redis-server not installed "
               "(scripts/install-deps.sh installs it: apt-get install -y redis-server)\n");
        return;
    }
    ck_assert_msg(access(SCRIPT, R_OK) == 0 && access(PYTHON, X_OK) == 0,
                  "%s or %s missing (run the tests from the source tree)", SCRIPT, PYTHON);
    char seedbuf[32];
    snprintf(seedbuf, sizeof(seedbuf), "%ld", seed);
    char *argv[] = {PYTHON, SCRIPT, "--seed", seedbuf, "--count", STEPS, "--hotkvd",
                    (char *)h_bin(), "--redis-server", redis, "--time-limit", SCRIPT_LIMIT_S, NULL};
    static char out[OUT_MAX];
    int64_t t0 = h_now_ms();
    int rc = h_run(argv, NULL, out, sizeof(out), RUN_MS);
    printf("difftest: seed %ld, %s commands: exit %d in %.1f s\n", seed, STEPS, rc,
           (double)(h_now_ms() - t0) / 1000);
    if (rc == 77) {
        printf("%s", out);
        return;
    }
    const char *summary = strstr(out, "difftest: ");
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    ck_assert_msg(rc != -1, "difftest (seed %ld) did not finish within %d s; replay: "
                  "make difftest SEED=%ld COUNT=%s", seed, RUN_MS / 1000, seed, STEPS);
    ck_assert_msg(rc == 0, "difftest (seed %ld) found differences not in tests/diff/differences.py "
                  "(exit %d; the report is above); replay: make difftest SEED=%ld COUNT=%s",
                  seed, rc, seed, STEPS);
    ck_assert_msg(summary != NULL && strstr(out, "difftest: OK") != NULL,
                  "difftest (seed %ld) exited 0 without its OK line: %s", seed, out);
    /* The rate line, for the log of the test run. */
    const char *rate = strstr(out, " steps in ");
    if (rate != NULL) {
        while (rate > out && rate[-1] != '\n')
            rate--;
        printf("%.*s\n", (int)(strchr(rate, '\n') ? strchr(rate, '\n') - rate : 200), rate);
    }
}

START_TEST(fixed_seed_replies_match_redis_or_are_listed)
{
    difftest(FIXED_SEED);
}
END_TEST

START_TEST(clock_seed_replies_match_redis_or_are_listed)
{
    long seed = (long)(h_wall_ms() % 2147483647);
    printf("difftest: seed from the clock: %ld (replay: make difftest SEED=%ld COUNT=%s)\n", seed,
           seed, STEPS);
    fflush(stdout);
    difftest(seed);
}
END_TEST

Suite *difftest_suite(void)
{
    Suite *s = suite_create("difftest");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, fixed_seed_replies_match_redis_or_are_listed);
    tcase_add_test(tc, clock_seed_replies_match_redis_or_are_listed);
    suite_add_tcase(s, tc);
    return s;
}

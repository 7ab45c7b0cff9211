/*
 * check_history_checker.c - the history tests of issue 10 that need no
 * daemon (the bounded run against the daemon is check_history.c): the
 * checker's own unit tests (tests/history/test_*.py), and the runner against
 * a reference server that is linearizable by construction (clean history)
 * or lies on purpose (the lies found).  Python (Debian's /usr/bin/python3,
 * standard library only) run through h_run, bounded in time.  A suite of
 * its own so that `make test` can run it beside another suite (it judges no
 * time of the daemon's), while the daemon's run has the machine alone.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define TEST_PY "tests/history/test_checker.py"
#define CHECKER_PY "tests/history/checker.py"

static char out[1 << 18];

START_TEST(checker_unit_tests_pass)
{
    if (access(TEST_PY, R_OK) != 0) {
        fprintf(stderr, "SKIP history: %s does not exist yet\n", TEST_PY);
        return;
    }
    ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
    char *argv[] = {"/usr/bin/python3", "-m", "unittest", "discover", "-s", "tests/history",
                    "-p", "test_*.py", NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), 120000);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    ck_assert_msg(rc == 0, "the checker's unit tests failed (exit %d); output above", rc);
    ck_assert_msg(strstr(out, "\nOK") != NULL || strncmp(out, "OK", 2) == 0,
                  "unittest did not report OK");
}
END_TEST

/* run_refserver.py: run.py's clients against a server linearizable by
 * construction (a dict under a lock that also answers -BUSY, -UNAVAILABLE and
 * closes connections, honestly).  The recorded history must check clean:
 * the runner records and classifies correctly. */
static int refserver(const char *bug, const char *seed)
{
    char dir[256], outdir[320];
    h_tmpdir(dir, sizeof(dir));
    snprintf(outdir, sizeof(outdir), "%s/out", dir);
    char *argv[] = {"/usr/bin/python3", "tests/history/run_refserver.py", "--duration", "6",
                    "--seed", (char *)seed, "--bug", (char *)bug, "--out", outdir, NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), 120000);
    printf("reference server (--bug %s):\n%s\n", bug, out);
    fflush(stdout);
    h_rmtree(dir);
    return rc;
}

START_TEST(reference_server_history_is_clean)
{
    if (access(CHECKER_PY, R_OK) != 0) {
        fprintf(stderr, "SKIP history: %s does not exist yet\n", CHECKER_PY);
        return;
    }
    int rc = refserver("none", "11");
    ck_assert_msg(rc == 0, "a history recorded against a linearizable server did not check "
                  "clean (exit %d): output above", rc);
}
END_TEST

/* The same server lying on purpose: a write answered -BUSY but applied, a
 * SET answered OK but dropped.  The checker must say anomaly (exit 1). */
START_TEST(reference_server_lies_are_caught)
{
    if (access(CHECKER_PY, R_OK) != 0) {
        fprintf(stderr, "SKIP history: %s does not exist yet\n", CHECKER_PY);
        return;
    }
    int rc = refserver("busy-applied", "12");
    ck_assert_msg(rc == 1, "writes applied after -BUSY were not reported (exit %d)", rc);
    rc = refserver("ok-not-applied", "13");
    ck_assert_msg(rc == 1, "acknowledged SETs that were dropped were not reported (exit %d)", rc);
}
END_TEST

Suite *history_checker_suite(void)
{
    Suite *s = suite_create("history_checker");
    TCase *tc = tcase_create("checker");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, checker_unit_tests_pass);
    suite_add_tcase(s, tc);
    tc = tcase_create("refserver");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, reference_server_history_is_clean);
    tcase_add_test(tc, reference_server_lies_are_caught);
    suite_add_tcase(s, tc);
    return s;
}

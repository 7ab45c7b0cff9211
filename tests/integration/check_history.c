/*
 * check_history.c - the history tests of issue 10, run by `make test`: the
 * checker's own unit tests and the reference server (check_history_checker.c,
 * a suite of its own so it can run beside another: it drives no daemon), and a bounded
 * Jepsen-style run (tests/history/run.py: 8 clients and 2 HTTP readers,
 * every fault kind at least once, about 30 s of workload plus what the
 * first round of faults needs) whose history the checker must find free of
 * anomalies, with no revoked credential accepted and no edge's memory over
 * its bound (issue 25: leaf moves and splits composed with owner pauses and
 * kills, credential churn, output-limit clients; issue 28: 2 tracking clients
 * whose reads from their own caches are judged too); and the runner itself, against a reference server that
 * is linearizable by construction (clean history) or lies on purpose (the
 * lies found).  Both are Python (Debian's /usr/bin/python3, standard
 * library only) run through h_run, bounded in time.
 *
 * The run needs the daemon ($HOTKVD_BIN), the disk stall shim ($HOTKVD_SHIM)
 * and the clock shim ($HOTKVD_CLOCKSHIM); the Makefile builds and passes all
 * three.  HISTORY_SEED fixes the seed (default: from the time); the summary
 * always prints the command that replays the run.  A failed run keeps its
 * output dir (history.jsonl, checker.txt, hotkvd.log) and says where.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define RUN_PY "tests/history/run.py"
#define RUN_SECONDS "30"
#define CHECK_LIMIT "90"    /* seconds of checker search; past it: unknown, a failure */
#define RUN_BOUND_MS 300000 /* workload, the first round of faults, stop, checker */

static const char *const KINDS[] = {"kill_owner", "kill_edge", "kill_master", "pause_owner",
                                    "disk_stall", "disk_eio", "sighup_reorder", "config_set",
                                    "big_request", "clock_shift", "leaf_split", "leaf_move",
                                    "move_pause", "move_kill", "auto_move", "cred_churn",
                                    "slow_reader", "http_stream", "restart"};

static char out[1 << 18];

/* The count after "<kind>=" on the summary's "faults:" line; -1 if absent. */
static long fault_count(const char *text, const char *kind)
{
    const char *line = strstr(text, "\nfaults: ");
    if (line == NULL)
        return -1;
    const char *eol = strchr(line + 1, '\n');
    char pat[64];
    snprintf(pat, sizeof(pat), " %s=", kind);
    const char *p = strstr(line, pat);
    if (p == NULL || (eol != NULL && p > eol))
        return -1;
    return strtol(p + strlen(pat), NULL, 10);
}

/* The number after the first pat in text; -1 if absent. */
static long count_after(const char *text, const char *pat)
{
    const char *p = strstr(text, pat);
    return p == NULL ? -1 : strtol(p + strlen(pat), NULL, 10);
}

START_TEST(bounded_run_finds_no_anomaly)
{
    const char *shim = getenv("HOTKVD_SHIM"), *clockshim = getenv("HOTKVD_CLOCKSHIM");
    ck_assert_msg(shim != NULL && access(shim, R_OK) == 0,
                  "the stall shim is not built (HOTKVD_SHIM=%s)", shim ? shim : "(unset)");
    ck_assert_msg(clockshim != NULL && access(clockshim, R_OK) == 0,
                  "the clock shim is not built (HOTKVD_CLOCKSHIM=%s)",
                  clockshim ? clockshim : "(unset)");
    char dir[256], outdir[320], seed[32];
    h_tmpdir(dir, sizeof(dir));
    snprintf(outdir, sizeof(outdir), "%s/out", dir);
    const char *s = getenv("HISTORY_SEED");
    snprintf(seed, sizeof(seed), "%s", s != NULL && s[0] ? s : "");
    if (seed[0] == '\0')
        snprintf(seed, sizeof(seed), "%lld", (long long)time(NULL));
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    char *argv[] = {"/usr/bin/python3", RUN_PY, "--bin", (char *)h_bin(), "--duration",
                    RUN_SECONDS, "--seed", seed, "--clients", "8", "--tracking", "2",
                    "--faults", "all",
                    "--shim", (char *)shim, "--clockshim", (char *)clockshim, "--out", outdir,
                    "--check-limit", CHECK_LIMIT, admin != NULL ? "--admin" : NULL,
                    (char *)admin, NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), RUN_BOUND_MS);
    printf("history run (seed %s):\n%s\n", seed, out);
    fflush(stdout);
    long ops = -1;
    const char *o = strstr(out, "\noperations: ");
    if (o != NULL)
        ops = strtol(o + 13, NULL, 10);
    ck_assert_msg(ops >= 1000, "the run recorded %ld operations (expected thousands); output "
                  "above, files in %s", ops, outdir);
    ck_assert_msg(strstr(out, "revoked credentials tried ") != NULL &&
                  strstr(out, "revoked credentials tried 0,") == NULL,
                  "no revoked credential was tried (seed %s): output above", seed);
    ck_assert_msg(strstr(out, ", accepted 0\n") != NULL,
                  "a revoked credential was accepted (seed %s): output above, files in %s", seed,
                  outdir);
    /* issue 28: tracking clients read from their own caches, were told of
     * changes, and each such read was judged like any other */
    ck_assert_msg(count_after(out, "reads from their caches ") > 0 &&
                  count_after(out, "invalidation pushes ") > 0,
                  "the tracking clients read nothing from their caches or were told nothing "
                  "(seed %s): output above", seed);
    ck_assert_msg(strstr(out, "OVER THE BOUND") == NULL,
                  "an edge's memory passed its bound (seed %s): output above", seed);
    ck_assert_msg(strstr(out, "moves done 0 ") == NULL && strstr(out, "splits done 0,") == NULL,
                  "no leaf moved or split (seed %s): output above", seed);
    for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
        ck_assert_msg(fault_count(out, KINDS[i]) >= 1,
                      "fault kind %s did not run (seed %s); output above, files in %s", KINDS[i],
                      seed, outdir);
    ck_assert_msg(rc == 0, "the history run exited %d (1 anomalies, 2 unknown, 3 run error, "
                  "-1 killed after %d s; seed %s): output above, files in %s", rc,
                  RUN_BOUND_MS / 1000, seed, outdir);
    h_rmtree(dir);
}
END_TEST

Suite *history_suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 330);
    tcase_add_test(tc, bounded_run_finds_no_anomaly);
    suite_add_tcase(s, tc);
    return s;
}

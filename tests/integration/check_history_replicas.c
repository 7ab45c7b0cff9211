/*
 * check_history_replicas.c - the history runner in replicas mode (issue 27,
 * tests/history/run_replicas.py), bounded, for `make test`:
 *
 *   - the control: the daemon with `replicas 0` and persist-interval 3s,
 *     kill -9 of history keys' primaries, checked in replicas mode
 *     (--strict-loss: no loss allowed across a kill).  Acknowledged ledger
 *     writes of the last 3 s die with the owner, so the checker MUST report
 *     anomalies: this is what shows the mode can see a loss;
 *   - the run: `replicas 1`, the same persist-interval, kill_primary,
 *     stop_follower (SIGSTOP of a follower past replica-timeout) and
 *     move_kill (a failover during a leaf move), which must check clean;
 *   - replication meeting the rest: reloads (SIGHUP with the classes
 *     reordered and replica-timeout changed; CONFIG SET of miss-wait and
 *     negative-ttl; CONFIG SET replica-timeout short with a follower
 *     stopped past it, which must leave the in-sync set, then replicas
 *     1 -> 0 -> 1, after which the followers must come back), planned
 *     hand-overs of history keys' leaves under focused writes (none may
 *     fail), kills of primaries and owners, with the HTTP readers beside
 *     the RESP clients: the checker must find no anomaly and the runner
 *     no broken promise.
 * Every run has 2 tracking clients (issue 28, run_track.py): their reads
 * from their own caches are in the history, judged as any read.
 *
 * Python (Debian's /usr/bin/python3, standard library only) through h_run,
 * bounded in time; HISTORY_SEED fixes the seed; a failed run keeps its
 * output dir and says where.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define RUN_PY "tests/history/run.py"
#define RUN_BOUND_MS 240000

static char out[1 << 18];

/* Runs run.py with the replicas flags given; its exit code (output in out). */
static int run(const char *dir, const char *seed, const char *duration, const char *faults,
               const char *replicas, int strict)
{
    char outdir[320];
    snprintf(outdir, sizeof(outdir), "%s/out", dir);
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    char *argv[32];
    int n = 0;
    const char *words[] = {"/usr/bin/python3", RUN_PY, "--bin", h_bin(), "--duration", duration,
                           "--seed", seed, "--clients", "8", "--tracking", "2", "--faults",
                           faults, "--replicas",
                           replicas, "--persist-interval", "3000", "--check-limit", "60",
                           "--out", outdir, NULL};
    for (int i = 0; words[i] != NULL; i++)
        argv[n++] = (char *)words[i];
    if (strict)
        argv[n++] = "--strict-loss";
    if (admin != NULL) {
        argv[n++] = "--admin";
        argv[n++] = (char *)admin;
    }
    argv[n] = NULL;
    int rc = h_run(argv, NULL, out, sizeof(out), RUN_BOUND_MS);
    printf("history run (replicas %s%s, seed %s):\n%s\n", replicas, strict ? ", strict" : "",
           seed, out);
    fflush(stdout);
    return rc;
}

static void seed_of(char *seed, size_t len)
{
    const char *s = getenv("HISTORY_SEED");
    snprintf(seed, len, "%s", s != NULL && s[0] ? s : "");
    if (seed[0] == '\0')
        snprintf(seed, len, "%lld", (long long)time(NULL));
}

/* issue 28: the tracking clients read from their own caches (judged as any
 * read) and were told of changes. */
static void assert_tracked(const char *seed)
{
    const char *p = strstr(out, "reads from their caches ");
    const char *q = strstr(out, "invalidation pushes ");
    ck_assert_msg(p != NULL && strtol(p + 24, NULL, 10) > 0 && q != NULL &&
                      strtol(q + 20, NULL, 10) > 0,
                  "the tracking clients read nothing from their caches or were told nothing "
                  "(seed %s): output above", seed);
}

START_TEST(control_replicas_0_kills_are_seen_as_losses)
{
    /* Whether a kill lands inside a persist interval with an acknowledged
     * write in it is chance: on a slow machine (a CI worker, an ASan build)
     * one 15 s run saw none (stop 39's CI).  The control asks that the mode
     * sees a loss at all, so up to three runs, each a seed of its own. */
    char dir[256], seed[32];
    h_tmpdir(dir, sizeof(dir));
    seed_of(seed, sizeof(seed));
    long long s0 = atoll(seed);
    int rc = -1, seen = 0, tries = 0;
    for (; tries < 3 && !seen; tries++) {
        char s[32];
        snprintf(s, sizeof(s), "%lld", s0 + tries);
        rc = run(dir, s, "15", "kill_primary", "0", 1);
        ck_assert_msg(strstr(out, "kill_primary=0") == NULL, "no kill_primary ran: output above");
        ck_assert_msg(rc == 0 || rc == 1, "the control run exited %d (seed %s): output above", rc,
                      s);
        seen = rc == 1 && strstr(out, "checker: exit 1 (anomalies)") != NULL;
        if (!seen)
            printf("control: no loss seen with seed %s; again\n", s);
    }
    ck_assert_msg(seen, "CONTROL: with replicas 0 and persist-interval 3s the kills of %d runs "
                  "(seeds %lld..%lld) lost nothing the checker saw (last exit %d): the replicas "
                  "mode cannot see a loss; output above, files in %s", tries, s0, s0 + tries - 1,
                  rc, dir);
    h_rmtree(dir);
}
END_TEST

START_TEST(replicas_1_kills_stops_and_moves_lose_nothing)
{
    char dir[256], seed[32];
    h_tmpdir(dir, sizeof(dir));
    seed_of(seed, sizeof(seed));
    int rc = run(dir, seed, "30", "kill_primary,stop_follower,move_kill", "1", 0);
    for (const char *k = "kill_primary\0stop_follower\0move_kill\0"; *k; k += strlen(k) + 1) {
        char none[48];
        snprintf(none, sizeof(none), " %s=0", k);
        ck_assert_msg(strstr(out, none) == NULL, "%s did not run (seed %s): output above", k,
                      seed);
    }
    assert_tracked(seed);
    ck_assert_msg(rc == 0, "the replicas run exited %d (1 anomalies: an acknowledged write "
                  "lost across a kill, 2 unknown, 3 run error; seed %s): output above, files "
                  "in %s", rc, seed, dir);
    h_rmtree(dir);
}
END_TEST

START_TEST(replicas_1_meets_reloads_handovers_and_http)
{
    char dir[256], seed[32];
    h_tmpdir(dir, sizeof(dir));
    seed_of(seed, sizeof(seed));
    int rc = run(dir, seed, "30",
                 "kill_primary,kill_owner,sighup_reorder,config_set,replica_config,leaf_failover",
                 "1", 0);
    for (const char *k = "kill_primary\0kill_owner\0sighup_reorder\0config_set\0"
                         "replica_config\0leaf_failover\0";
         *k; k += strlen(k) + 1) {
        char none[48];
        snprintf(none, sizeof(none), " %s=0", k);
        ck_assert_msg(strstr(out, none) == NULL, "%s did not run (seed %s): output above", k,
                      seed);
    }
    /* run.py's summary says "http clients:" since the HTTP clients write too */
    ck_assert_msg(strstr(out, "http clients: ") != NULL && strstr(out, "http clients: 0 gets") == NULL,
                  "no HTTP reader read beside the RESP clients (seed %s): output above", seed);
    assert_tracked(seed);
    ck_assert_msg(strstr(out, "hand-over promise: ") != NULL,
                  "no hand-over was checked (seed %s): output above", seed);
    ck_assert_msg(rc == 0, "the replicas run with reloads and hand-overs exited %d (1: an "
                  "anomaly or a PROMISE BROKEN line, 2 unknown, 3 run error; seed %s): output "
                  "above, files in %s", rc, seed, dir);
    h_rmtree(dir);
}
END_TEST

Suite *history_replicas_suite(void)
{
    Suite *s = suite_create("history_replicas");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"control", control_replicas_0_kills_are_seen_as_losses},
        {"replicas_1", replicas_1_kills_stops_and_moves_lose_nothing},
        {"replicas_1_reloads", replicas_1_meets_reloads_handovers_and_http},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 270);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

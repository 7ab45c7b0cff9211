/*
 * check_cluster.c - the cluster tests of issue 14 in `make test`:
 * tests/cluster/run.py --quick builds a cluster on this machine (etcd and
 * three hotkvd hosts, each in its own network namespace on a bridge in a
 * namespace of its own; on loopback addresses, said loudly, where namespaces
 * cannot be made), runs the harness's self-test and every scenario (pushes
 * across hosts, etcd down, an owner host cut off, agent kill -9, an owner id
 * started twice, compaction during the watch, a host's clock 10 s off, the
 * history checker across the cluster; then issue 27's `replicas 1` with a
 * follower cut off and a primary cut from etcd), prints the figures, and tears
 * everything down (every process stopped by pid).  The script owns its
 * processes and namespaces; this suite runs it bounded and judges its exit:
 * any failed scenario fails the test, and every skipped one is printed with
 * its reason (a skip is never silent).
 *
 * --quick shortens the etcd outage (8 s instead of 30 s) and the history run
 * to keep the cluster part under 3 minutes; `make cluster-test` runs the
 * full ones.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define SCRIPT "tests/cluster/run.py"
#define PYTHON "/usr/bin/python3"
/* run.py starts no scenario past its budget (a scenario not run is a
 * failure); the bound around it leaves room for the last one and teardown. */
#define BUDGET_S "150"
#define RUN_MS (200 * 1000)
#define OUT_MAX (512 * 1024)

static char out[OUT_MAX];

/* Prints each line of out that starts with `prefix` (skips, failures). */
static int print_lines(const char *prefix)
{
    int n = 0;
    size_t plen = strlen(prefix);
    const char *p = out;
    while (p != NULL && *p) {
        const char *e = strchr(p, '\n');
        if (strncmp(p, prefix, plen) == 0) {
            printf("%.*s\n", (int)(e ? (size_t)(e - p) : strlen(p)), p);
            n++;
        }
        p = e ? e + 1 : NULL;
    }
    return n;
}

START_TEST(cluster_scenarios_pass)
{
    ck_assert_msg(access(SCRIPT, R_OK) == 0 && access(PYTHON, X_OK) == 0,
                  "%s or %s missing (run the tests from the source tree)", SCRIPT, PYTHON);
    ck_assert_msg(access("/usr/bin/etcd", X_OK) == 0 && access("/usr/bin/etcdctl", X_OK) == 0,
                  "etcd is not installed (scripts/install-deps.sh installs etcd-server and "
                  "etcd-client)");
    const char *clockshim = getenv("HOTKVD_CLOCKSHIM");
    ck_assert_msg(clockshim != NULL && access(clockshim, R_OK) == 0,
                  "the clock shim is not built (HOTKVD_CLOCKSHIM=%s)",
                  clockshim ? clockshim : "(unset)");
    char *argv[] = {PYTHON, SCRIPT, "--bin", (char *)h_bin(), "--clockshim", (char *)clockshim,
                    "--quick", "--budget", BUDGET_S, NULL};
    int64_t t0 = h_now_ms();
    int rc = h_run(argv, NULL, out, sizeof(out), RUN_MS);
    printf("cluster: exit %d in %.1f s\n%s\n", rc, (double)(h_now_ms() - t0) / 1000, out);
    fflush(stdout);
    /* Said again at the end of the suite's output: what did not run, why. */
    int skipped = print_lines("skipped: ");
    if (strstr(out, "LOOPBACK MODE") != NULL)
        printf("cluster: ran WITHOUT network namespaces (see above); %d scenario(s) skipped\n",
               skipped);
    ck_assert_msg(rc != -1, "the cluster tests did not finish within %d s (output above)",
                  RUN_MS / 1000);
    ck_assert_msg(rc != 3, "the cluster harness could not run (exit 3): output above");
    if (rc != 0)
        print_lines("failed: ");
    ck_assert_msg(rc == 0, "cluster scenarios failed (exit %d): the failed: lines above",
                  rc);
    ck_assert_msg(strstr(out, " passed, 0 failed") != NULL,
                  "run.py exited 0 without its summary line: output above");
}
END_TEST

Suite *cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("cluster");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, cluster_scenarios_pass);
    suite_add_tcase(s, tc);
    return s;
}

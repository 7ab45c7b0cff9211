/*
 * check_csc.c - client libraries' client-side caching on the real daemon
 * (two edges), as their users run it:
 *  - node-redis 6.3.1 (npm's `redis@6.3.1`, createClient({RESP: 3,
 *    clientSideCache})): tests/integration/js/tracking_csc.mjs, two caching
 *    readers on two edges while another client writes (hotkvd's ordering
 *    promise and staleness bound, FLUSHALL, the cache really used).  The
 *    package is installed from the npm registry into build/npm by this
 *    suite when it is not there yet (never vendored); node and npm come from
 *    scripts/install-deps.sh, so CI runs it; a machine without them SKIPs
 *    with a message.
 *  - Debian's redis-py over RESP2 (tests/integration/py/tracking_resp2.py):
 *    tracking through a REDIRECT connection subscribed to
 *    __redis__:invalidate.  Runs once the daemon has SUBSCRIBE (COMMAND INFO
 *    subscribe answers), SKIPs with a message before.
 * Every external process runs with a time bound (h_run).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define NPM_DIR "build/npm"
#define NODE_REDIS "redis@6.3.1"

static struct daemon D;
static int started;

static void cleanup(void)
{
    if (started)
        h_stop(&D);
    started = 0;
}

#define EXPECT(cond, ...) H_EXPECT(cleanup, cond, __VA_ARGS__)

static int have(const char *path)
{
    return access(path, X_OK) == 0;
}

/* The absolute path of an executable named name in $PATH, or NULL. */
static const char *which(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, len, "%s/%s", d, name);
        if (have(buf))
            return buf;
    }
    return NULL;
}

/* 1 if NPM_DIR holds node-redis 6.3.1. */
static int node_redis_installed(void)
{
    FILE *f = fopen(NPM_DIR "/node_modules/redis/package.json", "r");
    if (f == NULL)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "\"version\": \"6.3.1\"") != NULL;
}

static void start(void)
{
    h_on_fail(cleanup);
    EXPECT(h_start(&D, "") == 0, "daemon did not start");
    started = 1;
}

static void stop(void)
{
    EXPECT(WEXITSTATUS(h_stop(&D)) == 0, "daemon did not stop cleanly");
    started = 0;
}

START_TEST(node_redis_client_side_cache_over_two_edges)
{
    char node[4096], npm[4096];
    if (which("node", node, sizeof(node)) == NULL || which("npm", npm, sizeof(npm)) == NULL) {
        fprintf(stderr, "SKIP node_redis_csc: node or npm not installed "
                        "(scripts/install-deps.sh installs them)\n");
        return;
    }
    static char out[1 << 16];
    if (!node_redis_installed()) {
        char *inst[] = {npm, "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund",
                        "--no-save", NODE_REDIS, NULL};
        int rc = h_run(inst, NULL, out, sizeof(out), 180000);
        ck_assert_msg(rc == 0 && node_redis_installed(), "npm install %s failed (%d): %s",
                      NODE_REDIS, rc, out);
    }
    char script[4096], prefix[4096], env_npm[4200];
    ck_assert_ptr_nonnull(realpath("tests/integration/js/tracking_csc.mjs", script));
    ck_assert_ptr_nonnull(realpath(NPM_DIR, prefix));
    snprintf(env_npm, sizeof(env_npm), "CSC_NPM=%s", prefix);
    putenv(env_npm); /* this test's own process: the child inherits it */
    start();
    char port[16];
    snprintf(port, sizeof(port), "%d", D.port);
    char *argv[] = {node, script, port, "200", "1200", NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), 90000);
    if (rc != 0)
        fprintf(stderr, "csc: %s\n", out);
    EXPECT(rc == 0, "node-redis client-side cache (%d): %s", rc, out);
    EXPECT(strstr(out, "csc ok") != NULL, "no verdict: %s", out);
    fprintf(stderr, "%s", out);
    stop();
}
END_TEST

/* 1 if the daemon knows SUBSCRIBE (COMMAND INFO answers its entry, not nil). */
static int has_subscribe(int port)
{
    int fd = h_connect(port);
    struct h_reply *r = h_call(fd, "COMMAND", "INFO", "subscribe", NULL);
    int ok = r->v->type == RESP_ARRAY && r->v->n == 1 && r->v->elems[0].type == RESP_ARRAY;
    h_free(r);
    close(fd);
    return ok;
}

START_TEST(redis_py_tracking_over_resp2_redirect)
{
    if (!have("/usr/bin/python3")) {
        fprintf(stderr, "SKIP redis_py_tracking: /usr/bin/python3 not installed\n");
        return;
    }
    start();
    if (!has_subscribe(D.port)) {
        fprintf(stderr, "SKIP redis_py_tracking: no SUBSCRIBE yet (RESP2 tracking needs "
                        "a redirect connection subscribed to __redis__:invalidate)\n");
        stop();
        return;
    }
    char port[16], script[4096];
    static char out[1 << 14];
    snprintf(port, sizeof(port), "%d", D.port);
    ck_assert_ptr_nonnull(realpath("tests/integration/py/tracking_resp2.py", script));
    /* the redirect target on the tracker's edge, then on the other one */
    for (int cross = 0; cross < 2; cross++) {
        char *argv[] = {"/usr/bin/python3", script, port, cross ? "--cross" : NULL, NULL};
        int rc = h_run(argv, NULL, out, sizeof(out), 60000);
        EXPECT(rc == 0, "redis-py tracking over RESP2 (cross %d) failed (%d): %s", cross, rc,
               out);
        EXPECT(strstr(out, "tracking-resp2 passed") != NULL, "no verdict: %s", out);
    }
    stop();
}
END_TEST

Suite *csc_suite(void)
{
    Suite *s = suite_create("csc");
    TCase *tc = tcase_create("libraries");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, h_dir_setup, h_dir_teardown);
    tcase_add_test(tc, node_redis_client_side_cache_over_two_edges);
    tcase_add_test(tc, redis_py_tracking_over_resp2_redirect);
    suite_add_tcase(s, tc);
    return s;
}

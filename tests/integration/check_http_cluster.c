/*
 * check_http_cluster.c - the HTTP front door's /healthz and /metrics on a
 * cluster host (a real etcd on free loopback ports, hotkvd as host h1 of
 * cluster t, as in check_agent.c):
 * - while the host waits for its first map (etcd unreachable, nothing saved)
 *   the master has forked no edge: the HTTP port is open (the master made
 *   it) but nothing answers, so a health check times out, as it would
 *   against a daemon not started yet;
 * - with a map that has no leaves yet (the cluster not initialised) /healthz
 *   says 503 "starting" (no key can be served); after `hotkvd
 *   --cluster-init` it says 200 "ok";
 * - /metrics has the hotkvd_cluster_* families with the map's numbers (the
 *   same as INFO # Cluster's), and promtool accepts the whole exposition.
 * curl and a raw client (http_test.h) are the clients.  Every wait is
 * bounded; etcd and the daemon are stopped by pid.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

static struct hr R;

/* GET /healthz until its status is want (up to ms); the last status seen
 * (-1: no answer). */
static int healthz_until(int hp, int want, int ms)
{
    int64_t end = h_now_ms() + ms;
    int st = -1;
    do {
        st = hx_get(hp, "GET", "/healthz", NULL, &R) == 0 ? R.status : -1;
        if (st == want)
            return st;
        h_sleep_ms(100);
    } while (h_now_ms() < end);
    return st;
}

static int64_t metric(const char *body, const char *line_start)
{
    const char *p = strstr(body, line_start);
    return p != NULL ? atoll(p + strlen(line_start)) : -1;
}

START_TEST(waiting_for_the_first_map_nothing_answers_http)
{
    /* etcd on a port nobody listens on, nothing saved: the host waits */
    struct daemon d;
    memset(&d, 0, sizeof(d));
    h_tmpdir(d.dir, sizeof(d.dir));
    d.port = h_free_port();
    int hp = h_free_port();
    snprintf(d.conf, sizeof(d.conf), "%s/hotkvd.conf", d.dir);
    snprintf(d.log, sizeof(d.log), "%s/hotkvd.log", d.dir);
    char extra[512];
    snprintf(extra, sizeof(extra), "cluster t\nhost h1\netcd-endpoints http://127.0.0.1:%d\n"
             "etcd-timeout 300ms\nhot-owners 1\nedge-workers 1\nhttp-port %d\n", h_free_port(), hp);
    h_write_conf(&d, extra);
    char *argv[] = {"hotkvd", d.conf, NULL};
    d.pid = h_spawn(argv, NULL);
    for (int i = 0; i < 100 && !h_log_has(&d, "waiting", "for the agent", NULL); i++)
        h_sleep_ms(100);
    ck_assert_msg(h_log_has(&d, "waiting", "for the agent", "etcd"), "no waiting line");
    /* the port takes the connection (the master opened it), no edge answers */
    int fd = h_connect(hp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hx_send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_fill(fd, &R, 1500), -1);
    close(fd);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

START_TEST(healthz_starting_until_the_map_has_leaves_and_cluster_metrics)
{
    ck_assert_msg(harness_etcd_available(), "etcd is not installed (scripts/install-deps.sh)");
    struct h_etcd etcd;
    ck_assert_int_eq(harness_etcd_start(&etcd, NULL), 0);
    struct daemon d;
    int hp = h_free_port();
    char extra[512];
    snprintf(extra, sizeof(extra),
             "cluster t\nhost h1\netcd-endpoints %s\netcd-timeout 500ms\netcd-lease-ttl 3s\n"
             "advertise-addr 127.0.0.1\nhot-owners 1\ncold-owners 1\nedge-workers 1\n"
             "http-port %d\n", etcd.url, hp);
    ck_assert_msg(h_start(&d, extra) == 0, "hotkvd did not start as h1");
    /* a map, no leaves yet: starting */
    ck_assert_int_eq(hx_get(hp, "GET", "/healthz", NULL, &R), 0);
    ck_assert_msg(R.status == 503 && strcmp(R.body, "starting\n") == 0, "%s%s", R.head, R.body);
    char ra[32];
    ck_assert(hx_hdr(&R, "Retry-After", ra, sizeof(ra)));
    ck_assert_int_eq(h_info_int(d.port, "leaves_hot"), 0);
    /* the cluster initialised: ok, once this host's owners are reached */
    char *init[] = {(char *)h_bin(), "--cluster-init", d.conf, NULL};
    char out[8192];
    ck_assert_msg(h_run(init, NULL, out, sizeof(out), 20000) == 0, "--cluster-init: %s", out);
    ck_assert_int_eq(healthz_until(hp, 200, 15000), 200);
    ck_assert_str_eq(R.body, "ok\n");
    /* /metrics: the cluster's families, INFO's numbers */
    char url[128], path[320];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", hp);
    snprintf(path, sizeof(path), "%s/metrics.txt", d.dir);
    char *curl[] = {"/usr/bin/curl", "-s", "-o", path, url, NULL};
    ck_assert_int_eq(h_run(curl, NULL, out, sizeof(out), 10000), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char body[1 << 20];
    size_t n = fread(body, 1, sizeof(body) - 1, f);
    fclose(f);
    body[n] = '\0';
    int64_t rev = metric(body, "\nhotkvd_cluster_map_revision ");
    ck_assert_int_gt(rev, 0);
    ck_assert_int_le(rev, h_info_int(d.port, "map_revision"));
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_host_number "), 1);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_etcd_up "), 1);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_owners_known "), 2);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_leaves{pool=\"hot\"} "), 64);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_leaves{pool=\"cold\"} "), 64);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_remote_links_up{colo=\"a\"} "), 0);
    ck_assert_int_eq(metric(body, "\nhotkvd_cluster_lease_ttl_seconds "), 3);
    ck_assert_ptr_nonnull(strstr(body, "\nhotkvd_cluster_lease_renewed_timestamp_seconds "));
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool check metrics: %s", out);
    ck_assert_int_eq(h_stop(&d), 0);
    harness_etcd_stop(&etcd);
}
END_TEST

Suite *http_cluster_suite(void)
{
    Suite *s = suite_create("http_cluster");
    TCase *tc = tcase_create("waiting");
    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, waiting_for_the_first_map_nothing_answers_http);
    suite_add_tcase(s, tc);
    tc = tcase_create("cluster");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, healthz_starting_until_the_map_has_leaves_and_cluster_metrics);
    suite_add_tcase(s, tc);
    return s;
}

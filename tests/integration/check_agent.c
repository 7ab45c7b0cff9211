/*
 * check_agent.c - the agent, end to end: a real etcd on free loopback ports
 * under a temp dir, hotkvd started as host h1 of cluster t.  The agent
 * registers the host and its owners, `hotkvd --cluster-init` writes the map
 * (once: a second run changes nothing), INFO # Cluster and `hotkvd-admin
 * status` show it; a leaf moved with etcdctl is routed within seconds, and
 * a map with a hole is refused and counted; an agent killed with -9 is
 * restarted by the master and takes over its lease with the map kept; with
 * etcd stopped the host keeps its map, from memory and, across a restart of
 * the whole daemon, from disk; the same owner id on a second hotkvd is
 * refused with a clear error; a watch whose revision was compacted away
 * recovers with a full read; a host still waiting for its first map stops
 * cleanly on SIGTERM.  A single host has no agent and no cluster lines.  Every process is stopped by PID, every wait is bounded.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "tests/harness.h"

/* ---- etcd: the harness's, plus a restart on the same data ---------------------- */

static struct h_etcd etcd;

static void etcd_start(void)
{
    ck_assert_msg(harness_etcd_available(), "etcd is not installed (scripts/install-deps.sh)");
    ck_assert_int_eq(harness_etcd_start(&etcd, NULL), 0);
}

static void etcd_stop(void)
{
    harness_etcd_stop(&etcd);
}

/* Stops etcd by PID, keeping its data (the harness's stop removes it). */
static void etcd_kill(void)
{
    if (etcd.pid > 0) {
        kill(etcd.pid, SIGTERM);
        if (h_wait(etcd.pid, 10000) == -1) {
            kill(etcd.pid, SIGKILL);
            h_wait(etcd.pid, 5000);
        }
    }
    etcd.pid = 0;
}

/* Starts it again on the same ports and data, as harness_etcd_start did. */
static void etcd_respawn(void)
{
    char data[320], log[320], peer[64], cluster[96], out[512];
    snprintf(data, sizeof(data), "%s/data", etcd.dir);
    snprintf(log, sizeof(log), "%s/etcd.log", etcd.dir);
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", etcd.peer_port);
    snprintf(cluster, sizeof(cluster), "t=%s", peer);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/usr/bin/etcd", "etcd", "--name", "t", "--data-dir", data, "--listen-client-urls",
              etcd.url, "--advertise-client-urls", etcd.url, "--listen-peer-urls", peer,
              "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
              "--experimental-watch-progress-notify-interval=1s", (char *)NULL);
        _exit(127);
    }
    etcd.pid = pid;
    for (int i = 0; i < 100; i++) {
        if (harness_etcdctl(&etcd, out, sizeof(out), "--dial-timeout=500ms", "endpoint", "health",
                            NULL) == 0)
            return;
        h_sleep_ms(100);
    }
    ck_abort_msg("etcd did not start again on %s", etcd.url);
}

/* etcdctl ARGS... (up to three words); its output into out. */
static int ctl(char *out, size_t len, const char *a, const char *b, const char *c)
{
    return harness_etcdctl(&etcd, out, len, a, b, c, NULL);
}

/* ---- the daemons ---------------------------------------------------------------- */

static void conf_of(char *buf, size_t len, const char *host)
{
    snprintf(buf, len,
             "cluster t\nhost %s\netcd-endpoints %s\netcd-timeout 500ms\netcd-lease-ttl 3s\n"
             "advertise-addr 127.0.0.1\nhot-owners 2\ncold-owners 1\nedge-workers 1\n",
             host, etcd.url);
}

static void start_h1(struct daemon *d)
{
    char extra[512];
    conf_of(extra, sizeof(extra), "h1");
    ck_assert_msg(h_start(d, extra) == 0, "hotkvd did not start as h1");
}

static int64_t info_int(const struct daemon *d, const char *field)
{
    return h_info_int(d->port, field);
}

/* Waits up to ms for INFO field to reach at least want; its last value. */
static int64_t wait_info(const struct daemon *d, const char *field, int64_t want, int ms)
{
    int64_t v = -1, end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        v = info_int(d, field);
        if (v >= want)
            return v;
        h_sleep_ms(50);
    }
    return v;
}

/* GET key over a new connection is the bulk string want. */
static int get_is(const struct daemon *d, const char *key, const char *want)
{
    int fd = h_connect(d->port);
    struct h_reply *r = fd >= 0 ? h_cmdv(fd, "GET", key, NULL) : NULL;
    int ok = r != NULL && r->v->str != NULL && r->v->len == strlen(want) &&
             memcmp(r->v->str, want, r->v->len) == 0;
    if (r != NULL)
        h_free(r);
    if (fd >= 0)
        close(fd);
    return ok;
}

static int run_init(const struct daemon *d, char *out, size_t len)
{
    char *argv[] = {(char *)h_bin(), "--cluster-init", (char *)d->conf, NULL};
    return h_run(argv, NULL, out, len, 20000);
}

static int run_status(const struct daemon *d, char *out, size_t len)
{
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    ck_assert_msg(admin != NULL, "HOTKVD_ADMIN_BIN is not set (run through make)");
    char *argv[] = {(char *)admin, (char *)d->conf, "status", NULL};
    return h_run(argv, NULL, out, len, 20000);
}

/* Waits up to ms until `hotkvd-admin status` prints a line holding s. */
static int wait_status(const struct daemon *d, const char *s, int ms, char *out, size_t len)
{
    int64_t end = h_now_ms() + ms;
    do {
        if (run_status(d, out, len) == 0 && strstr(out, s) != NULL)
            return 1;
        h_sleep_ms(100);
    } while (h_now_ms() < end);
    return 0;
}

static void init_cluster(const struct daemon *d)
{
    char out[4096];
    ck_assert_msg(run_init(d, out, sizeof(out)) == 0, "--cluster-init failed: %s", out);
    ck_assert_msg(strstr(out, "initialised") != NULL, "%s", out);
    ck_assert_int_eq(wait_info(d, "leaves_hot", 64, 10000), 64);
    ck_assert_int_eq(wait_info(d, "leaves_cold", 64, 10000), 64);
}

/* ---- tests ---------------------------------------------------------------------- */

START_TEST(single_host_has_no_agent_and_no_cluster_lines)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "hot-owners 1\ncold-owners 1\nedge-workers 1\n"), 0);
    ck_assert_int_eq(h_child(&d, "hotkvd: agent", 0), 0);
    char v[64];
    ck_assert_int_eq(h_info_field(d.port, "cluster_enabled", v, sizeof(v)), 0);
    ck_assert_str_eq(v, "0");
    ck_assert_int_eq(h_info_field(d.port, "map_revision", v, sizeof(v)), -1);
    ck_assert_int_eq(h_info_field(d.port, "host_number", v, sizeof(v)), -1);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

START_TEST(sigterm_while_waiting_for_the_map_stops_cleanly)
{
    /* etcd on a port nobody listens on, nothing saved: the host waits */
    struct daemon d;
    memset(&d, 0, sizeof(d));
    h_tmpdir(d.dir, sizeof(d.dir));
    d.port = h_free_port();
    snprintf(d.conf, sizeof(d.conf), "%s/hotkvd.conf", d.dir);
    snprintf(d.log, sizeof(d.log), "%s/hotkvd.log", d.dir);
    char extra[512];
    snprintf(extra, sizeof(extra), "cluster t\nhost h1\netcd-endpoints http://127.0.0.1:%d\n"
             "etcd-timeout 300ms\nhot-owners 1\nedge-workers 1\n", h_free_port());
    h_write_conf(&d, extra);
    char *argv[] = {"hotkvd", d.conf, NULL};
    d.pid = h_spawn(argv, NULL);
    /* The listening socket is the master's, so the PING is taken in but
     * unanswered until h_connect's 5 s timeout: meanwhile the master logs
     * its first "waiting 5 s" line (so the two waits overlap, not add up). */
    ck_assert(!h_ping(d.port));
    for (int i = 0; i < 100 && !h_log_has(&d, "waiting", "for the agent", NULL); i++)
        h_sleep_ms(100);
    ck_assert_msg(h_log_has(&d, "waiting", "for the agent", "etcd"), "no waiting line");
    kill(d.pid, SIGTERM);
    int status = h_wait(d.pid, 10000);
    if (status == -1)
        h_stop(&d);
    ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d",
                  status);
    d.pid = 0;
    ck_assert(!h_log_has(&d, "owner hot/0 started", NULL, NULL));
    ck_assert(h_log_has(&d, "stopped", NULL, NULL));
    h_rmtree(d.dir);
}
END_TEST

START_TEST(init_then_info_and_admin_show_the_map)
{
    etcd_start();
    struct daemon d;
    start_h1(&d);
    ck_assert_int_ne(h_child(&d, "hotkvd: agent", 0), 0);
    ck_assert_int_eq(info_int(&d, "host_number"), 1);
    ck_assert_int_eq(info_int(&d, "etcd_up"), 1);
    ck_assert_int_gt(info_int(&d, "lease_id"), 0);
    ck_assert_int_ge(info_int(&d, "lease_ttl_ms"), 2000);
    ck_assert_int_eq(wait_info(&d, "owners_live", 3, 5000), 3);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 0); /* not initialised: no map yet */
    /* the registrations, under the host lease: the edge (slot 3, after the
     * three owners) has edge id 1 << 12 | 4 */
    char keys[4096];
    ck_assert_int_eq(ctl(keys, sizeof(keys), "get", "--prefix", "/hotkvd/t/"), 0);
    ck_assert_msg(strstr(keys, "/hotkvd/t/writers/4100\n") != NULL, "%s", keys);
    ck_assert_msg(strstr(keys, "/hotkvd/t/hostnums/1\n{\"host\":\"h1\"}") != NULL, "%s", keys);
    ck_assert_msg(strstr(keys, "/hotkvd/t/members/h1/cold/0\n{\"number\":3,") != NULL, "%s", keys);
    ck_assert_msg(strstr(keys, "/hotkvd/t/owners/2\n{\"id\":\"h1/hot/1\"}") != NULL, "%s", keys);
    init_cluster(&d);
    ck_assert_int_gt(info_int(&d, "map_revision"), 0);
    ck_assert_int_eq(info_int(&d, "map_from_disk"), 0);
    ck_assert_int_eq(info_int(&d, "refused_maps"), 0);
    ck_assert_int_eq(info_int(&d, "owners_known"), 3);
    char out[8192], again[8192];
    ck_assert_int_eq(run_status(&d, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "host h1 number 1 addr 127.0.0.1 lease ") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "owner 1 h1/hot/0 live 127.0.0.1:0 leaves 32\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "owner 2 h1/hot/1 live 127.0.0.1:0 leaves 32\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "owner 3 h1/cold/0 live 127.0.0.1:0 leaves 64\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "pool hot leaves 64 ready min_bits 6\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "map ok\n") != NULL, "%s", out);
    /* a second init says so and changes nothing (the etcd revision stays) */
    char init[4096];
    ck_assert_int_eq(run_init(&d, init, sizeof(init)), 0);
    ck_assert_msg(strstr(init, "already initialised") != NULL, "%s", init);
    ck_assert_int_eq(run_status(&d, again, sizeof(again)), 0);
    ck_assert_msg(strncmp(out, again, strcspn(out, "\n")) == 0, "%s\nthen\n%s", out, again);
    /* data flows through the routed owners */
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "k1", "v1", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(fd);
    ck_assert(get_is(&d, "k1", "v1"));
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

START_TEST(map_change_by_etcdctl_is_seen_within_bounds)
{
    etcd_start();
    struct daemon d;
    start_h1(&d);
    init_cluster(&d);
    int64_t rev = info_int(&d, "map_revision");
    char out[8192];
    /* leaf 0 of hot went to owner 1 (round-robin): give it to owner 2 */
    ck_assert_int_eq(ctl(out, sizeof(out), "put", "/hotkvd/t/map/hot/6-00000000",
                         "{\"owner\":2,\"state\":\"serving\"}"), 0);
    int64_t t0 = h_now_ms();
    ck_assert_int_gt(wait_info(&d, "map_revision", rev + 1, 5000), rev);
    ck_assert_msg(h_now_ms() - t0 < 5000, "the move took %lld ms", (long long)(h_now_ms() - t0));
    ck_assert_msg(wait_status(&d, "owner 2 h1/hot/1 live 127.0.0.1:0 leaves 33\n", 5000, out,
                              sizeof(out)), "%s", out);
    ck_assert_msg(strstr(out, "owner 1 h1/hot/0 live 127.0.0.1:0 leaves 31\n") != NULL, "%s", out);
    /* a hole (a leaf deleted): refused, counted, routing stays */
    rev = info_int(&d, "map_revision");
    ck_assert_int_eq(ctl(out, sizeof(out), "del", "/hotkvd/t/map/hot/6-00000005", NULL), 0);
    ck_assert_int_eq(wait_info(&d, "refused_maps", 1, 5000), 1);
    ck_assert_int_eq(info_int(&d, "map_revision"), rev);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 64);
    ck_assert(h_log_has(&d, "ALARM: cluster map at etcd revision", "gap", NULL));
    ck_assert_msg(wait_status(&d, "map INVALID: pool hot: gap", 5000, out, sizeof(out)), "%s", out);
    /* repaired: accepted again */
    ck_assert_int_eq(ctl(out, sizeof(out), "put", "/hotkvd/t/map/hot/6-00000005",
                         "{\"owner\":2,\"state\":\"serving\"}"), 0);
    ck_assert_int_gt(wait_info(&d, "map_revision", rev + 1, 5000), rev);
    ck_assert_int_eq(info_int(&d, "refused_maps"), 1);
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

START_TEST(agent_killed_is_restarted_and_keeps_lease_and_map)
{
    etcd_start();
    struct daemon d;
    start_h1(&d);
    init_cluster(&d);
    int64_t lease = info_int(&d, "lease_id"), rev = info_int(&d, "map_revision");
    pid_t agent = h_child(&d, "hotkvd: agent", 0);
    ck_assert_int_gt(agent, 0);
    kill(agent, SIGKILL);
    pid_t next = 0;
    for (int i = 0; i < 100 && next == 0; i++) {
        h_sleep_ms(100);
        next = h_child(&d, "hotkvd: agent", agent);
    }
    ck_assert_msg(next > 0, "the master did not restart the agent");
    for (int i = 0; i < 100 && !h_log_has(&d, "took over lease", NULL, NULL); i++)
        h_sleep_ms(100);
    ck_assert(h_log_has(&d, "took over lease", NULL, NULL));
    ck_assert_int_eq(info_int(&d, "lease_id"), lease);
    ck_assert_int_ge(info_int(&d, "map_revision"), rev);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 64);
    ck_assert_int_eq(wait_info(&d, "owners_live", 3, 5000), 3);
    char out[8192];
    ck_assert_int_eq(run_status(&d, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "leases 1 live\n") != NULL, "%s", out);
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

START_TEST(etcd_down_keeps_the_map_in_memory_and_from_disk)
{
    etcd_start();
    struct daemon d;
    start_h1(&d);
    init_cluster(&d);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "kept", "yes", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(fd);
    int64_t rev = info_int(&d, "map_revision");
    etcd_kill();
    int64_t end = h_now_ms() + 10000;
    while (info_int(&d, "etcd_up") != 0 && h_now_ms() < end)
        h_sleep_ms(100);
    ck_assert_int_eq(info_int(&d, "etcd_up"), 0);
    ck_assert_int_eq(info_int(&d, "map_revision"), rev);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 64);
    char out[8192];
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(run_status(&d, out, sizeof(out)), 1);
    ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "not one line: %s", out);
    ck_assert_msg(h_now_ms() - t0 < 5000, "status took %lld ms", (long long)(h_now_ms() - t0));
    /* the whole daemon again, etcd still down: the saved map */
    ck_assert_int_eq(h_halt(&d), 0);
    ck_assert_int_eq(h_restart(&d), 0);
    ck_assert_int_eq(info_int(&d, "map_from_disk"), 1);
    ck_assert_int_eq(info_int(&d, "map_revision"), rev);
    ck_assert_int_eq(info_int(&d, "host_number"), 1);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 64);
    ck_assert(get_is(&d, "kept", "yes"));
    /* etcd back: the map is etcd's again */
    etcd_respawn();
    end = h_now_ms() + 15000;
    while ((info_int(&d, "etcd_up") != 1 || info_int(&d, "map_from_disk") != 0) &&
           h_now_ms() < end)
        h_sleep_ms(100);
    ck_assert_int_eq(info_int(&d, "map_from_disk"), 0);
    ck_assert_int_eq(wait_info(&d, "owners_live", 3, 10000), 3);
    /* and it stays: the restarted agent took over its predecessor's lease
     * (etcd kept it), it did not take it for another hotkvd's and stop */
    h_sleep_ms(2000);
    ck_assert_msg(h_ping(d.port), "the host stopped after etcd came back");
    ck_assert_int_eq(info_int(&d, "host_number"), 1);
    ck_assert(get_is(&d, "kept", "yes"));
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

START_TEST(same_owner_id_on_a_second_daemon_is_refused)
{
    etcd_start();
    struct daemon d, d2;
    start_h1(&d);
    memset(&d2, 0, sizeof(d2));
    h_tmpdir(d2.dir, sizeof(d2.dir));
    d2.port = h_free_port();
    snprintf(d2.conf, sizeof(d2.conf), "%s/hotkvd.conf", d2.dir);
    snprintf(d2.log, sizeof(d2.log), "%s/hotkvd.log", d2.dir);
    char extra[512];
    conf_of(extra, sizeof(extra), "h1");
    h_write_conf(&d2, extra);
    char *argv[] = {"hotkvd", d2.conf, NULL};
    d2.pid = h_spawn(argv, NULL);
    int status = h_wait(d2.pid, 20000);
    if (status == -1)
        h_stop(&d2);
    ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
                  "the second hotkvd did not stop with status 1 (%d)", status);
    d2.pid = 0;
    ck_assert_msg(h_log_has(&d2, "cannot start: owner h1/hot/0 is already registered in cluster t",
                            "another live hotkvd", NULL), "no clear error in the log");
    ck_assert(!h_ping(d2.port));
    h_rmtree(d2.dir);
    /* the first one is untouched */
    ck_assert(h_ping(d.port));
    ck_assert_int_eq(info_int(&d, "owners_live"), 3);
    char out[8192];
    ck_assert_int_eq(run_status(&d, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "leases 1 live\n") != NULL, "%s", out);
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

START_TEST(compaction_during_the_watch_is_recovered)
{
    etcd_start();
    struct daemon d;
    start_h1(&d);
    init_cluster(&d);
    pid_t agent = h_child(&d, "hotkvd: agent", 0);
    ck_assert_int_gt(agent, 0);
    /* the agent's watch is cut while it sleeps; meanwhile the map changes
     * and the revisions it would resume from are compacted away */
    int guard = h_sigcont_guard(agent, 0, NULL);
    kill(agent, SIGSTOP);
    etcd_kill();
    etcd_respawn();
    char out[8192], rev[64];
    ck_assert_int_eq(ctl(out, sizeof(out), "put", "/hotkvd/t/map/hot/6-00000000",
                         "{\"owner\":2,\"state\":\"serving\"}"), 0);
    ck_assert_int_eq(harness_etcdctl(&etcd, out, sizeof(out), "put", "/hotkvd/t/x", "y", "-w",
                                     "fields", NULL), 0);
    const char *p = strstr(out, "\"Revision\" : ");
    ck_assert_ptr_nonnull(p);
    snprintf(rev, sizeof(rev), "%lld", atoll(p + 13));
    ck_assert_int_eq(ctl(out, sizeof(out), "compact", rev, NULL), 0);
    kill(agent, SIGCONT);
    close(guard);
    ck_assert_int_eq(wait_info(&d, "watch_compactions", 1, 10000), 1);
    ck_assert_int_ge(wait_info(&d, "map_revision", atoll(rev), 10000), atoll(rev));
    ck_assert_msg(wait_status(&d, "owner 2 h1/hot/1 live 127.0.0.1:0 leaves 33\n", 5000, out,
                              sizeof(out)), "%s", out);
    ck_assert_int_eq(info_int(&d, "leaves_hot"), 64);
    ck_assert_int_eq(info_int(&d, "refused_maps"), 0);
    ck_assert_int_eq(h_stop(&d), 0);
    etcd_stop();
}
END_TEST

Suite *agent_suite(void)
{
    Suite *s = suite_create("agent");
    TCase *tc = tcase_create("single_host");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, single_host_has_no_agent_and_no_cluster_lines);
    tcase_add_test(tc, sigterm_while_waiting_for_the_map_stops_cleanly);
    suite_add_tcase(s, tc);
    tc = tcase_create("cluster");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, init_then_info_and_admin_show_the_map);
    tcase_add_test(tc, map_change_by_etcdctl_is_seen_within_bounds);
    suite_add_tcase(s, tc);
    tc = tcase_create("faults");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, agent_killed_is_restarted_and_keeps_lease_and_map);
    tcase_add_test(tc, etcd_down_keeps_the_map_in_memory_and_from_disk);
    tcase_add_test(tc, same_owner_id_on_a_second_daemon_is_refused);
    tcase_add_test(tc, compaction_during_the_watch_is_recovered);
    suite_add_tcase(s, tc);
    return s;
}

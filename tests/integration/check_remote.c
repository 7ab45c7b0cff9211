/*
 * check_remote.c - two hosts on loopback (issue 14): a real etcd, two hotkvd
 * daemons with their own dirs and ports, hosts h1 and h2 of cluster "test".
 * h2 runs the owners (one hot, one cold) on owner-port with mutual TLS; h1
 * runs edges only, so every key it serves lives on h2 and travels over
 * TCP + TLS.  The cluster is made as an operator makes it (`hotkvd
 * --cluster-init h2.conf --owners h2/hot/0,h2/cold/0`), the certificates
 * with the openssl command line (tests/unit/cluster_certs.h).
 *
 *   - a write through h1 lands on h2's owners and reads back through both;
 *   - a write through h2 is pushed into h1's colo cache: h1 sees it within
 *     a bounded time while its cached copy is still fresh, with no miss;
 *   - a client whose certificate another CA signed is refused by h2's
 *     owners (and one with h1's certificate is served: the control);
 *   - an owner of another cluster refuses a HELLO for this one.
 *
 * etcd and every daemon are stopped by PID; everything lives in temp dirs.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/log.h"
#include "server/core/tls_cluster.h"
#include "server/edge/edge_link.h"
#include "tests/harness.h"
#include "tests/unit/cluster_certs.h"

#define UP_MS 30000      /* a daemon serving keys of the other host (agent, map, links) */
#define PUSH_MS 3000     /* a write through h2 visible through h1 */

static char certs[256];
static struct h_etcd etcd;
static struct daemon h1, h2, h3;

static void make_certs(void)
{
    h_tmpdir(certs, sizeof(certs));
    cc_make_all(certs);
}

static void remove_certs(void)
{
    h_rmtree(certs);
}

static void start_etcd(void)
{
    ck_assert_msg(harness_etcd_available(), "etcd is not installed (scripts/install-deps.sh)");
    ck_assert_int_eq(harness_etcd_start(&etcd, NULL), 0);
}

static void stop_etcd(void)
{
    if (etcd.pid > 0)
        harness_etcd_stop(&etcd);
    memset(&etcd, 0, sizeof(etcd));
}

/* Two consecutive free loopback ports (owner-port + 0 and + 1) that none
 * of the daemons already prepared uses. */
static int port_pair(void)
{
    for (int tries = 0; tries < 100; tries++) {
        int p = h_free_port(), ok = 1;
        const struct daemon *ds[] = {&h1, &h2, &h3};
        for (size_t i = 0; i < 3; i++)
            ok &= ds[i]->port != p && ds[i]->port != p + 1;
        if (!ok || p + 1 > 65535)
            continue;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(p + 1)),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return p;
    }
    ck_abort_msg("no two consecutive free ports");
    return 0;
}

/* d's dir, port and config for host `host` of `cluster` (owners when
 * owner_port != 0), not started. */
static void prepare(struct daemon *d, const char *cluster, const char *host, int owner_port)
{
    memset(d, 0, sizeof(*d));
    h_tmpdir(d->dir, sizeof(d->dir));
    d->port = h_free_port();
    snprintf(d->conf, sizeof(d->conf), "%s/hotkvd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/hotkvd.log", d->dir);
    char extra[2048], owners[256];
    if (owner_port != 0)
        snprintf(owners, sizeof(owners),
                 "hot-owners 1\ncold-owners 1\nowner-port %d\nadvertise-addr 127.0.0.1\n",
                 owner_port);
    else
        snprintf(owners, sizeof(owners), "hot-owners 0\ncold-owners 0\n");
    snprintf(extra, sizeof(extra),
             "edge-workers 1\ncluster %s\nhost %s\netcd-endpoints http://127.0.0.1:%d\n"
             "etcd-lease-ttl 3s\n%s"
             "cluster-tls-cert-file %s/%s.crt\ncluster-tls-key-file %s/%s.key\n"
             "cluster-tls-ca-file %s/ca.crt\n"
             "class cold pattern \"c:*\" pool cold fresh 60s keep 120s\n"
             "class default pool hot fresh 60s keep 120s\n",
             cluster, host, etcd.port, owners, certs, host, certs, host, certs);
    h_write_conf(d, extra);
}

static void cluster_init(const struct daemon *d, const char *owners)
{
    char *argv[] = {"hotkvd", "--cluster-init", (char *)d->conf, "--owners", (char *)owners, NULL};
    pid_t pid = h_spawn(argv, NULL);
    int st = h_wait(pid, 30000);
    if (st < 0)
        kill(pid, SIGKILL);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "hotkvd --cluster-init %s --owners %s failed (status %d)", d->conf, owners, st);
}

static void start(struct daemon *d)
{
    char *argv[] = {"hotkvd", d->conf, NULL};
    d->pid = h_spawn(argv, NULL);
    int64_t end = h_now_ms() + UP_MS;
    while (h_now_ms() < end && !h_ping(d->port)) {
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            h_dump_log(d);
            ck_abort_msg("hotkvd exited at start (%s)", d->conf);
        }
        h_sleep_ms(50);
    }
    ck_assert_msg(h_ping(d->port), "hotkvd did not answer PING within %d ms", UP_MS);
}

/* The reply of one command on a new connection (the caller frees it). */
static struct h_reply *cmd(const struct daemon *d, const char *a, const char *b, const char *c)
{
    int fd = h_connect(d->port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, a, b, c, NULL);
    close(fd);
    ck_assert_ptr_nonnull(r);
    return r;
}

static int is(const struct h_reply *r, enum resp_type type, const char *s)
{
    return r->v->type == type && r->v->str != NULL && r->v->len == strlen(s) &&
           memcmp(r->v->str, s, r->v->len) == 0;
}

/* SET through d until it is answered OK (the first ones may meet links
 * still connecting), bounded. */
static void set_ok(const struct daemon *d, const char *key, const char *val, int ms)
{
    int64_t end = h_now_ms() + ms;
    char last[256] = "";
    while (h_now_ms() < end) {
        struct h_reply *r = cmd(d, "SET", key, val);
        int ok = is(r, RESP_SIMPLE, "OK");
        snprintf(last, sizeof(last), "%.*s", r->v->str != NULL ? (int)r->v->len : 1,
                 r->v->str != NULL ? r->v->str : "?");
        h_free(r);
        if (ok)
            return;
        h_sleep_ms(100);
    }
    h_dump_log(d);
    ck_abort_msg("SET %s through port %d not OK within %d ms: %s", key, d->port, ms, last);
}

static int get_is(const struct daemon *d, const char *key, const char *val)
{
    struct h_reply *r = cmd(d, "GET", key, NULL);
    int ok = is(r, RESP_BULK, val);
    h_free(r);
    return ok;
}

static void up(void)
{
    start_etcd();
    prepare(&h1, "test", "h1", 0);
    prepare(&h2, "test", "h2", port_pair());
    cluster_init(&h2, "h2/hot/0,h2/cold/0");
    start(&h2);
    start(&h1);
}

static void down(void)
{
    struct daemon *ds[] = {&h1, &h2, &h3};
    for (size_t i = 0; i < 3; i++)
        if (ds[i]->pid > 0)
            h_stop(ds[i]);
        else if (ds[i]->dir[0])
            h_rmtree(ds[i]->dir);
    memset(&h3, 0, sizeof(h3));
    stop_etcd();
}

START_TEST(writes_through_h1_land_on_h2s_owners_and_read_back)
{
    set_ok(&h1, "k:remote", "from-h1", UP_MS);
    set_ok(&h1, "c:remote", "cold-from-h1", 5000);
    ck_assert(get_is(&h1, "k:remote", "from-h1"));
    ck_assert(get_is(&h1, "c:remote", "cold-from-h1"));
    /* h2's own edges read them from its owners (h1 has none) */
    ck_assert(get_is(&h2, "k:remote", "from-h1"));
    ck_assert(get_is(&h2, "c:remote", "cold-from-h1"));
    struct h_reply *r = cmd(&h1, "DBSIZE", NULL, NULL);
    ck_assert_int_eq(r->v->type, RESP_INT);
    ck_assert_int_eq(r->v->integer, 2);
    h_free(r);
    /* h1's one edge reaches both of h2's owners over TCP (INFO # Cluster) */
    ck_assert_int_eq(h_info_int(h1.port, "remote_links_up"), 2);
    ck_assert_int_eq(h_info_int(h2.port, "remote_links_up"), 0);
}
END_TEST

START_TEST(a_write_through_h2_is_pushed_into_h1s_colo_cache)
{
    set_ok(&h1, "k:pushed", "v1", UP_MS);
    ck_assert(get_is(&h1, "k:pushed", "v1")); /* cached in h1's colo, fresh for 60 s */
    int64_t misses = h_info_int(h1.port, "cache_misses");
    set_ok(&h2, "k:pushed", "v2", 5000);
    int64_t end = h_now_ms() + PUSH_MS;
    int seen = 0;
    while (!seen && h_now_ms() < end) {
        seen = get_is(&h1, "k:pushed", "v2");
        if (!seen)
            h_sleep_ms(20);
    }
    ck_assert_msg(seen, "h1 still serves the old value %d ms after the write through h2", PUSH_MS);
    /* a fresh entry is only replaced by a push: no read of h1 missed */
    ck_assert_int_eq(h_info_int(h1.port, "cache_misses"), misses);
    ck_assert_int_gt(h_info_int(h1.port, "pushes_received"), 0);
}
END_TEST

struct answer {
    int done, status;
    uint8_t type;
};

static void answer_cb(void *arg, int status, const struct wire_msg *m)
{
    struct answer *a = arg;
    a->done = 1;
    a->status = status;
    a->type = m != NULL ? m->type : 0;
}

/* A PING to owner number `want` at 127.0.0.1:port over TLS, as host h1 of
 * `cluster`, presenting certificate `cert`: what came back. */
static struct answer ping_owner(int port, const char *cluster, uint32_t want, const char *cert)
{
    char text[2048], err[512];
    snprintf(text, sizeof(text),
             "cluster %s\nhost h1\nhot-owners 0\ncold-owners 0\ncluster-tls-cert-file %s/%s.crt\n"
             "cluster-tls-key-file %s/%s.key\ncluster-tls-ca-file %s/ca.crt\n",
             cluster, certs, cert, certs, cert, certs);
    struct cfg *c = cfg_create();
    struct cfg_error ce = {{0}};
    ck_assert_msg(cfg_load_text(c, text, strlen(text), "t", &ce) == HKV_OK, "%s", ce.msg);
    SSL_CTX *ctx = tls_cluster_ctx_new(c, 0, err, sizeof(err));
    ck_assert_msg(ctx != NULL, "%s", err);
    struct event_base *base = event_base_new();
    struct elink_opts lo = {
        .addr = "127.0.0.1", .port = port, .tls = ctx, .peer_host = "h2", .name = "test",
        .edge_id = 4095, .incarnation = 7, .cluster = cluster, .want_owner = want, .host = "h1",
        .colo = "t", .role = WIRE_ROLE_READ, .timeout_ms = 3000,
    };
    struct elink *l = elink_create(base, &lo);
    ck_assert_ptr_nonnull(l);
    struct answer a = {0};
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id); /* sets id: not in the same call */
    ck_assert_int_eq(wire_put_ping(b, id), HKV_OK);
    ck_assert_int_eq(elink_commit(l, id, answer_cb, &a), HKV_OK);
    int64_t end = h_now_ms() + 8000;
    while (!a.done && h_now_ms() < end) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        h_sleep_ms(2);
    }
    ck_assert_msg(a.done, "PING neither answered nor failed within 8 s");
    elink_destroy(&l);
    event_base_free(base);
    SSL_CTX_free(ctx);
    cfg_destroy(&c);
    return a;
}

/* h2's hot owner's number: its owner port answers owner numbers 1..16 only
 * for its own (a HELLO for another number is refused). */
static uint32_t number_at(int port)
{
    for (uint32_t n = 1; n <= 16; n++) {
        struct answer a = ping_owner(port, "test", n, "h1");
        if (a.status == HKV_OK && a.type == WIRE_PONG)
            return n;
    }
    ck_abort_msg("no owner number answered on port %d", port);
    return 0;
}

static int owner_port_of(const struct daemon *d)
{
    FILE *f = fopen(d->conf, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int port = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "owner-port %d", &port) == 1)
            break;
    fclose(f);
    ck_assert_int_gt(port, 0);
    return port;
}

START_TEST(a_client_certificate_from_another_ca_is_refused)
{
    set_ok(&h1, "k:ca", "x", UP_MS); /* the cluster serves */
    int port = owner_port_of(&h2);
    uint32_t n = number_at(port); /* the control: h1's certificate is served */
    struct answer a = ping_owner(port, "test", n, "rogue-h1");
    ck_assert_msg(a.status != HKV_OK, "a certificate of another CA was served (%s)",
                  wire_type_name(a.type));
    ck_assert(h_log_has(&h2, "edge link over TLS failed before HELLO", NULL, NULL) ||
              h_log_has(&h2, "certificate", NULL, NULL));
}
END_TEST

START_TEST(an_owner_of_another_cluster_refuses_a_hello_for_this_one)
{
    set_ok(&h1, "k:other", "x", UP_MS);
    int oport = port_pair();
    prepare(&h3, "other", "h2", oport); /* a host of cluster "other" (certificate h2) */
    cluster_init(&h3, "h2/hot/0,h2/cold/0");
    start(&h3);
    uint32_t n = 0;
    for (uint32_t k = 1; k <= 16 && n == 0; k++) { /* its own cluster's HELLO is served */
        struct answer a = ping_owner(oport, "other", k, "h1");
        if (a.status == HKV_OK && a.type == WIRE_PONG)
            n = k;
    }
    ck_assert_msg(n != 0, "the owner of cluster other never answered its own cluster");
    struct answer a = ping_owner(oport, "test", n, "h1");
    ck_assert_msg(a.status != HKV_OK, "an owner of cluster other served a HELLO for test");
    ck_assert(h_log_has(&h3, "edge link refused", "cluster 'test'", NULL));
}
END_TEST

Suite *remote_suite(void)
{
    Suite *s = suite_create("remote");
    TCase *tc = tcase_create("two_hosts");
    tcase_add_unchecked_fixture(tc, make_certs, remove_certs);
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, writes_through_h1_land_on_h2s_owners_and_read_back);
    tcase_add_test(tc, a_write_through_h2_is_pushed_into_h1s_colo_cache);
    tcase_add_test(tc, a_client_certificate_from_another_ca_is_refused);
    tcase_add_test(tc, an_owner_of_another_cluster_refuses_a_hello_for_this_one);
    suite_add_tcase(s, tc);
    return s;
}

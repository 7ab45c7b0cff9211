/*
 * check_elink_tls.c - an edge's link to an owner of another host: TCP with
 * mutual TLS (server/edge/edge_link_io.c, server/core/tls_cluster.c) against
 * a real owner listening with olink_listen_tls, with certificates the test
 * makes with the openssl command line (tests/unit/cluster_certs.h).
 *
 * A good pair of certificates carries requests both ways; everything else
 * is refused before a request reaches the owner: an owner certificate that
 * does not name the host the map gives (client side), one from a CA the
 * edge does not trust (client side), an edge without a certificate or with
 * one from another CA (owner side, in the handshake), an edge whose
 * certificate does not name the host its HELLO claims, a HELLO for another
 * cluster or another owner number (owner side, after HELLO), and an
 * address that is a name rather than an IP (no DNS on the loop).  A
 * certificate naming the host in subjectAltName (CN another) is accepted.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/cmap.h"
#include "server/core/listen.h"
#include "server/core/log.h"
#include "server/core/tls_cluster.h"
#include "server/edge/edge_link.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"
#include "tests/unit/cluster_certs.h"
#include "tests/unit/cluster_fixture.h"

#define ME 7
#define WAIT_MS 8000

static char dir[256], certs[256];
static struct worker_ctx ctx;
static struct owner own;
static int have_owner, port;
static struct cmap *seg;
static SSL_CTX *client;
static struct elink *link_;

/* The certificates are made once for the suite's one test case, in the
 * runner's process (an unchecked fixture), and removed after it. */
static void make_certs(void)
{
    h_tmpdir(certs, sizeof(certs));
    cc_make_all(certs);
}

static void remove_certs(void)
{
    h_rmtree(certs);
}

static struct cfg *load(const char *text)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = {{0}};
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(cfg_load_text(c, text, strlen(text), "tls.conf", &err) == HKV_OK, "%s", err.msg);
    ck_assert_msg(cfg_validate(c, &err) == HKV_OK, "%s", err.msg);
    return c;
}

/* The cluster-tls-* lines for certificate `name` (cert and key) and CA `ca`. */
static void tls_lines(char *buf, size_t len, const char *name, const char *ca)
{
    snprintf(buf, len,
             "cluster-tls-cert-file %s/%s.crt\ncluster-tls-key-file %s/%s.key\n"
             "cluster-tls-ca-file %s/%s.crt\n",
             certs, name, certs, name, certs, ca);
}

/* Owner h2/hot/0 (number ME) of cluster prod, with certificate `cert`,
 * listening on 127.0.0.1:port with mutual TLS. */
static void start_owner(const char *cert)
{
    char text[2048], tls[1024];
    tls_lines(tls, sizeof(tls), cert, "ca");
    snprintf(text, sizeof(text),
             "dir %s\ncluster prod\nhost h2\nhot-owners 1\ncold-owners 0\n%s"
             "class default pool hot fresh 1s keep 60s\n",
             dir, tls);
    struct cmap_table *t = cf_new(20);
    cf_owner(t, ME, CFG_POOL_HOT, 0, "h2", "127.0.0.1", 0);
    unsigned one[] = {ME};
    cf_deal(t, CFG_POOL_HOT, 2, one, 1, 20);
    cf_valid(t);
    ck_assert_int_eq(cmap_publish(seg, t), HKV_OK);
    free(t);
    ctx = (struct worker_ctx){.index = 0, .cfg = load(text), .cmap = seg};
    struct owner_ctx octx = {.pool = CFG_POOL_HOT, .link_fd = -1, .tcp_fd = -1};
    ck_assert_int_eq(owner_init(&own, &ctx, &octx), 0);
    ck_assert_int_eq(owner_open(&own), 0);
    have_owner = 1;
    char err[512];
    own.cluster_tls = tls_cluster_ctx_new(ctx.cfg, 1, err, sizeof(err));
    ck_assert_msg(own.cluster_tls != NULL, "%s", err);
    port = h_free_port();
    int fd = listen_tcp("127.0.0.1", port, 16, err, sizeof(err));
    ck_assert_msg(fd >= 0, "%s", err);
    ck_assert_int_eq(olink_listen_tls(&own, fd), 0);
    ck_assert_uint_eq(owner_own_number(&own), ME);
}

/* The edge's client context: certificate `cert`, trusting CA `ca`. */
static void client_ctx(const char *cert, const char *ca)
{
    char text[2048], tls[1024], err[512];
    tls_lines(tls, sizeof(tls), cert, ca);
    snprintf(text, sizeof(text), "dir %s\ncluster prod\nhost h1\nhot-owners 0\ncold-owners 0\n%s",
             dir, tls);
    struct cfg *c = load(text);
    client = tls_cluster_ctx_new(c, 0, err, sizeof(err));
    ck_assert_msg(client != NULL, "%s", err);
    cfg_destroy(&c);
}

static void setup(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    seg = cmap_create();
    ck_assert_ptr_nonnull(seg);
}

static void teardown(void)
{
    elink_destroy(&link_);
    SSL_CTX_free(client);
    client = NULL;
    if (have_owner) {
        owner_deinit(&own);
        cfg_destroy(&ctx.cfg);
        have_owner = 0;
    }
    cmap_destroy(&seg);
    h_rmtree(dir);
}

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

static size_t got_len;
static uint64_t got_sum;

static uint64_t sum(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    return h;
}

/* answer_cb, keeping a VALUE's length and checksum */
static void value_cb(void *arg, int status, const struct wire_msg *m)
{
    answer_cb(arg, status, m);
    if (m != NULL && m->type == WIRE_VALUE) {
        got_len = m->u.value.value.len;
        got_sum = sum(m->u.value.value.p, m->u.value.value.len);
    }
}

/* An edge link to the owner as host `host` wanting owner `want` of cluster
 * `cluster`, expecting the owner's certificate to name `peer`, at `addr`. */
static void open_link(const char *addr, const char *peer, const char *cluster, uint32_t want,
                      const char *host)
{
    struct elink_opts lo = {
        .addr = addr, .port = port, .tls = client, .peer_host = peer, .name = "7 hot/0 read",
        .edge_id = (1u << 12) | 1, .incarnation = 99, .cluster = cluster, .want_owner = want,
        .host = host, .colo = "a", .role = WIRE_ROLE_READ, .timeout_ms = 3000,
    };
    link_ = elink_create(own.base, &lo);
    ck_assert_ptr_nonnull(link_);
}

/* PING on the link; loops until it is answered (bounded). */
static struct answer ping(void)
{
    struct answer a = {0};
    uint64_t id;
    struct hkv_buf *b = elink_out(link_, &id);
    ck_assert_int_eq(wire_put_ping(b, id), HKV_OK);
    ck_assert_int_eq(elink_commit(link_, id, answer_cb, &a), HKV_OK);
    int64_t end = h_now_ms() + WAIT_MS;
    for (int i = 0; i < 100000 && !a.done; i++) {
        ck_assert_msg(h_now_ms() < end, "PING neither answered nor failed within %d ms", WAIT_MS);
        event_base_loop(own.base, EVLOOP_NONBLOCK);
        usleep(500);
    }
    return a;
}

/* The owner has no link that said HELLO. */
static void assert_no_hello_link(void)
{
    for (struct olink *l = own.links; l != NULL; l = l->next)
        ck_assert_msg(!l->hello, "a link was let through");
}

static void assert_refused(void)
{
    struct answer a = ping();
    ck_assert_msg(a.status != HKV_OK, "PING answered %s on a link that should be refused",
                  wire_type_name(a.type));
    assert_no_hello_link();
    ck_assert_uint_eq(own.st.owner_reads, 0);
}

START_TEST(good_certificates_carry_requests_both_ways)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    struct answer a = ping();
    ck_assert_int_eq(a.status, HKV_OK);
    ck_assert_uint_eq(a.type, WIRE_PONG);
    ck_assert(elink_is_up(link_));
    int hello = 0;
    for (struct olink *l = own.links; l != NULL; l = l->next)
        hello += l->hello && l->tls;
    ck_assert_int_eq(hello, 1);
    a = ping(); /* and again on the same connection */
    ck_assert_uint_eq(a.type, WIRE_PONG);
}
END_TEST

/* Requests sent while the link is still connecting, many at once and one
 * of several MB each way, cross TLS whole (partial writes, records the
 * socket no longer signals). */
START_TEST(pipelined_and_large_requests_cross_tls_whole)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    enum { N = 200, BIG = 3 << 20 };
    static struct answer pings[N];
    memset(pings, 0, sizeof(pings));
    for (int i = 0; i < N; i++) {
        uint64_t id;
        struct hkv_buf *b = elink_out(link_, &id); /* sets id: not in the same call */
        ck_assert_int_eq(wire_put_ping(b, id), HKV_OK);
        ck_assert_int_eq(elink_commit(link_, id, answer_cb, &pings[i]), HKV_OK);
    }
    char *big = malloc(BIG);
    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < BIG; i++)
        big[i] = (char)('a' + i % 26);
    struct answer set = {0}, get = {0};
    uint64_t id;
    struct wire_rid rid = {1, 1, 0};
    struct hkv_buf *out = elink_out(link_, &id);
    ck_assert_int_eq(wire_put_set(out, id, wire_cstr("big"),
                                  wire_slice(big, BIG), rid, (struct wire_expiry){0, 0}, 0),
                     HKV_OK);
    ck_assert_int_eq(elink_commit(link_, id, answer_cb, &set), HKV_OK);
    struct wire_slice k = wire_cstr("big");
    out = elink_out(link_, &id);
    ck_assert_int_eq(wire_put_get(out, id, &k, 1), HKV_OK);
    ck_assert_int_eq(elink_commit(link_, id, value_cb, &get), HKV_OK);
    int64_t end = h_now_ms() + WAIT_MS;
    for (int i = 0; i < 100000 && !get.done; i++) {
        ck_assert_msg(h_now_ms() < end, "the large GET not answered within %d ms", WAIT_MS);
        event_base_loop(own.base, EVLOOP_NONBLOCK);
    }
    for (int i = 0; i < N; i++)
        ck_assert_msg(pings[i].done && pings[i].type == WIRE_PONG, "PING %d: done %d status %d type %d", i,
                      pings[i].done, pings[i].status, pings[i].type);
    ck_assert_uint_eq(set.type, WIRE_OK);
    ck_assert_uint_eq(get.type, WIRE_VALUE);
    ck_assert_int_eq(got_len, BIG);
    ck_assert_int_eq(got_sum, sum(big, BIG));
    free(big);
}
END_TEST

START_TEST(owner_certificate_naming_the_host_in_san_is_accepted)
{
    start_owner("san"); /* CN=other, DNS:h2 */
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    ck_assert_uint_eq(ping().type, WIRE_PONG);
}
END_TEST

START_TEST(owner_certificate_for_another_host_is_refused)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h3", "prod", ME, "h1"); /* the map says the owner is on h3 */
    assert_refused();
}
END_TEST

START_TEST(owner_certificate_from_an_untrusted_ca_is_refused)
{
    start_owner("rogue-h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    assert_refused();
}
END_TEST

START_TEST(edge_without_a_certificate_is_refused)
{
    start_owner("h2");
    char ca[512];
    snprintf(ca, sizeof(ca), "%s/ca.crt", certs);
    client = SSL_CTX_new(TLS_client_method()); /* trusts the CA, presents nothing */
    ck_assert_ptr_nonnull(client);
    ck_assert_int_eq(SSL_CTX_load_verify_locations(client, ca, NULL), 1);
    SSL_CTX_set_verify(client, SSL_VERIFY_PEER, NULL);
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    assert_refused();
}
END_TEST

START_TEST(edge_certificate_from_an_untrusted_ca_is_refused)
{
    start_owner("h2");
    client_ctx("rogue-h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h1");
    assert_refused();
}
END_TEST

START_TEST(edge_claiming_a_host_its_certificate_does_not_name_is_refused)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "prod", ME, "h9");
    assert_refused();
}
END_TEST

START_TEST(hello_for_another_cluster_or_owner_is_refused_over_tls)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("127.0.0.1", "h2", "staging", ME, "h1");
    assert_refused();
    /* nothing sent on a connection whose HELLO was refused was applied: a
     * retry of it is a first attempt (rid.prev 0), not "outcome unknown" */
    ck_assert_uint_eq(elink_owner_of(link_, 1), 0);
    elink_destroy(&link_);
    open_link("127.0.0.1", "h2", "prod", ME + 1, "h1");
    assert_refused();
}
END_TEST

START_TEST(a_name_instead_of_an_ip_is_not_resolved)
{
    start_owner("h2");
    client_ctx("h1", "ca");
    open_link("localhost", "h2", "prod", ME, "h1");
    assert_refused();
    ck_assert_ptr_null(own.links);
}
END_TEST

Suite *elink_tls_suite(void)
{
    Suite *s = suite_create("elink_tls");
    /* one case: the certificates are made once (unchecked fixture) */
    TCase *tc = tcase_create("mutual_tls");
    tcase_add_unchecked_fixture(tc, make_certs, remove_certs);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, good_certificates_carry_requests_both_ways);
    tcase_add_test(tc, pipelined_and_large_requests_cross_tls_whole);
    tcase_add_test(tc, owner_certificate_naming_the_host_in_san_is_accepted);
    tcase_add_test(tc, owner_certificate_for_another_host_is_refused);
    tcase_add_test(tc, owner_certificate_from_an_untrusted_ca_is_refused);
    tcase_add_test(tc, edge_without_a_certificate_is_refused);
    tcase_add_test(tc, edge_certificate_from_an_untrusted_ca_is_refused);
    tcase_add_test(tc, edge_claiming_a_host_its_certificate_does_not_name_is_refused);
    tcase_add_test(tc, hello_for_another_cluster_or_owner_is_refused_over_tls);
    tcase_add_test(tc, a_name_instead_of_an_ip_is_not_resolved);
    suite_add_tcase(s, tc);
    return s;
}

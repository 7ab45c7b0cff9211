/* edge_fixture.h - a whole edge in the test's process, for the edge's unit
 * suites that go through its front door (check_edge_registry,
 * check_edge_tx, check_edge_http_wake): the real dispatch pipeline
 * (edge_dispatch) behind the connection layer, the real auth, rate-limit,
 * cache, flight, owner-link and HTTP modules, a real colo cache segment and
 * change ring, and scripted owners (fake_owner.h) on the test's own event
 * loop.  Clients are socketpairs: the test writes RESP (or HTTP) bytes and
 * reads the exact replies, every wait a bounded loop.
 *
 * This is the one place the edge's suites build a struct edge: when the
 * edge's insides move (its modules' objects, the session slots), this file
 * changes and the suites do not.  Header-only: each suite includes it once.
 *
 *   ef_setup(&F, nowners, on_request, tweak)   tweak(cfg) may set options
 *   ef_client()  / ef_http_client()            a new client's fd
 *   ef_cmd(fd, "SET", "k", "v", NULL)          one request's words
 *   ef_expect(fd, "+OK\r\n")                   exactly those bytes next
 *   ef_teardown()
 */
#ifndef HKV_TEST_EDGE_FIXTURE_H
#define HKV_TEST_EDGE_FIXTURE_H

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/cfg.h"
#include "proto/resp.h"
#include "server/colo/cache.h"
#include "server/colo/changes.h"
#include "server/core/board.h"
#include "server/core/topo.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_client.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_http.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_monitor.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_registry.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_track.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_keyspace.h"
#include "server/edge/edge_tx.h"
#include "tests/harness.h"
#include "tests/unit/fake_owner.h"

#define EF_OWNERS_MAX 2
#define EF_CLIENTS_MAX 8

struct edge_fixture {
    char dir[256];
    struct event_base *base;
    struct board *board;
    struct worker_ctx ctx;
    struct edge_ctx ectx;
    struct edge e;
    struct cache *cache;
    struct changes *changes;
    struct fake_owner fo[EF_OWNERS_MAX];
    int nowners;
    int fds[EF_CLIENTS_MAX];
    int nfds;
};

static struct edge_fixture F;

/* The edge's own hooks (edge.c's are private to the process file): a
 * session as edge.c starts it, every request through the registry. */
static inline void ef_sess_start(struct conn *c)
{
    sess_of(c)->proto = 2;
    sess_of(c)->last_stat = 0xffff;
    sess_of(c)->cur_stat = 0xffff;
}

static inline void ef_accepted(struct conn *c, const struct sockaddr *peer)
{
    ef_sess_start(c);
    edge_auth_accepted(c, peer);
}

static inline void ef_closing(struct conn *c)
{
    op_conn_gone(c);
    edge_tx_conn_gone(c);
    edge_track_conn_gone(c);
    monitor_stop(c);
    client_gone(c);
}

static const struct conn_hooks ef_hooks = {
    .accepted = ef_accepted,
    .dispatch = edge_dispatch,
    .closing = ef_closing,
    .sess_size = sizeof(struct sess)};

static inline void ef_http_accepted(struct conn *c, const struct sockaddr *peer)
{
    ef_sess_start(c);
    edge_http_accepted(c, peer);
}

static inline void ef_http_closing(struct conn *c)
{
    edge_http_closing(c);
    ef_closing(c);
}

static const struct conn_hooks ef_http_hooks = {
    .accepted = ef_http_accepted, .closing = ef_http_closing, .input = edge_http_input,
    .hangup = edge_http_hangup, .sess_size = sizeof(struct sess)};

static inline void ef_turn(void)
{
    event_base_loop(F.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* Runs the loop until cond() (at most ms); cond()'s last value. */
static inline int ef_until(int (*cond)(void), int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && !cond() && h_now_ms() < end; i++) {
        ef_turn();
        if (!cond())
            h_sleep_ms(1);
    }
    return cond();
}

static inline int ef_links_up(void)
{
    for (int i = 0; i < F.nowners; i++)
        if (!fo_links_up(&F.fo[i]))
            return 0;
    return 1;
}

/* An edge of colo "test" with nowners cold owners scripted by on_request;
 * tweak (may be NULL) adjusts the config before the modules read it. */
static inline void ef_setup(int nowners, fo_request_fn on_request, void (*tweak)(struct cfg *))
{
    signal(SIGPIPE, SIG_IGN);
    memset(&F, 0, sizeof(F));
    ck_assert_int_le(nowners, EF_OWNERS_MAX);
    F.nowners = nowners;
    h_tmpdir(F.dir, sizeof(F.dir));
    struct cfg *cfg = cfg_create();
    ck_assert_ptr_nonnull(cfg);
    free(cfg->dir);
    cfg->dir = strdup(F.dir);
    cfg->hot_owners = 0;
    cfg->cold_owners = nowners;
    if (tweak != NULL)
        tweak(cfg);
    F.ctx.cfg = cfg;
    F.board = board_create(2);
    ck_assert_ptr_nonnull(F.board);
    atomic_store(&F.board->slots[0].role, BOARD_EDGE);
    F.ctx.board = F.board;
    F.base = event_base_new();
    ck_assert_ptr_nonnull(F.base);
    struct cache_opts cao = {.bytes = 4 << 20, .max_value = 4096, .hot_sample = 1};
    ck_assert_int_eq(cache_create(&cao, &F.cache), HKV_OK);
    ck_assert_int_eq(changes_create(2, &F.changes), HKV_OK);
    snprintf(F.ectx.colo_name, sizeof(F.ectx.colo_name), "test");
    F.ectx.cache = F.cache;
    F.ectx.changes = F.changes;
    F.ectx.nhttp = 1; /* the HTTP front door's module, without a socket */
    F.e.ctx = &F.ctx;
    F.e.ectx = &F.ectx;
    F.e.base = F.base;
    F.e.stats = &F.board->slots[0];
    /* the modules in edge_main's order, with edge.c's option builders */
    struct conns_opts co = {.hooks = &ef_hooks, .poll = owners_poll_writes};
    edge_conns_opts(cfg, &co);
    ck_assert_int_eq(conns_setup(&F.e, &co), 0);
    edge_cmd_opts(cfg, &F.e.cmd_opts);
    for (int i = 0; i < nowners; i++) {
        char path[TOPO_PATH_MAX];
        topo_owner_socket(cfg, CFG_POOL_COLD, i, path, sizeof(path));
        fo_start(&F.fo[i], F.base, path, i, on_request);
    }
    ck_assert_int_eq(edge_auth_setup(&F.e, cfg), 0);
    edge_rl_setup(&F.e, cfg);
    struct owner_hooks oh = {.push = edge_cache_pushed};
    struct flights_opts fo;
    edge_flights_opts(cfg, &fo);
    struct op_opts oo;
    edge_op_opts(cfg, &oo);
    struct owners_opts ow;
    edge_owners_opts(cfg, &ow);
    struct http_opts ho;
    edge_http_opts(cfg, &ho);
    struct edge_cache_opts ko;
    edge_cache_opts(cfg, &ko);
    ck_assert_int_eq(edge_cache_setup(&F.e, &ko), 0);
    ck_assert_ptr_nonnull(F.e.cache);
    ck_assert_int_eq(edge_feed_setup(&F.e), 0);
    struct track_opts to;
    edge_track_opts(cfg, &to);
    ck_assert_int_eq(edge_track_setup(&F.e, &to), 0);
    ck_assert_int_eq(op_setup(&F.e, &oo), 0);
    ck_assert_int_eq(forgets_setup(&F.e), 0);
    ck_assert_int_eq(owners_setup(&F.e, &oh, &ow), 0);
    ck_assert_int_eq(flights_setup(&F.e, edge_read_answer, &fo), 0);
    ck_assert_int_eq(edge_health_setup(&F.e, cfg->owner_probe_interval_ms), 0);
    ck_assert_int_eq(edge_http_setup(&F.e, &ho), 0);
    ck_assert(ef_until(ef_links_up, 3000));
}

static inline void ef_teardown(void)
{
    conns_close_all(&F.e);
    for (int i = 0; i < F.nfds; i++)
        if (F.fds[i] >= 0)
            close(F.fds[i]);
    edge_http_teardown(&F.e);
    edge_track_teardown(&F.e);
    edge_feed_teardown(&F.e);
    flights_teardown(&F.e);
    op_teardown(&F.e.ops);
    forgets_teardown(&F.e.forgets);
    owners_teardown(&F.e);
    edge_health_teardown(&F.e);
    conns_teardown(&F.e.conns);
    edge_auth_teardown(&F.e.auth);
    edge_rl_teardown(&F.e.rl);
    monitor_teardown(&F.e.monitor);
    edge_cache_teardown(&F.e.cache);
    for (int i = 0; i < F.nowners; i++)
        fo_stop(&F.fo[i]);
    cache_destroy(&F.cache);
    changes_destroy(&F.changes);
    event_base_free(F.base);
    board_destroy(&F.board);
    cfg_destroy(&F.ctx.cfg);
    h_rmtree(F.dir);
}

static inline int ef_accept(const struct conn_hooks *hooks)
{
    ck_assert_int_lt(F.nfds, EF_CLIENTS_MAX);
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    if (hooks == NULL)
        conn_accept(&F.e, sv[0], 0);
    else
        conn_accept_with(&F.e, sv[0], 0, hooks);
    F.fds[F.nfds++] = sv[1];
    return sv[1];
}

/* A new RESP client; its fd. */
static inline int ef_client(void)
{
    return ef_accept(NULL);
}

/* A new HTTP client; its fd. */
static inline int ef_http_client(void)
{
    return ef_accept(&ef_http_hooks);
}

static inline void ef_write(int fd, const char *p, size_t n)
{
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
}

/* Sends one request of the words w0 and ap (NULL-terminated) as a RESP array. */
static inline void ef_cmd_va(int fd, const char *w0, va_list ap)
{
    const char *w[64];
    int n = 0;
    for (const char *s = w0; s != NULL && n < 64; s = va_arg(ap, const char *))
        w[n++] = s;
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, n);
    for (int i = 0; i < n; i++)
        resp_add_bulk(&b, w[i], strlen(w[i]));
    ef_write(fd, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
}

/* Sends one request of the words given (NULL-terminated) as a RESP array. */
static inline void ef_cmd(int fd, const char *w0, ...)
{
    va_list ap;
    va_start(ap, w0);
    ef_cmd_va(fd, w0, ap);
    va_end(ap);
}

/* Reads exactly strlen(want) bytes from fd within ms (running the loop)
 * into got; the count read. */
static inline size_t ef_read(int fd, char *got, size_t n, int ms)
{
    size_t have = 0;
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && have < n && h_now_ms() < end; i++) {
        ef_turn();
        ssize_t r = read(fd, got + have, n - have);
        if (r > 0)
            have += (size_t)r;
        else if (r == 0)
            break;
        else
            h_sleep_ms(1);
    }
    got[have] = '\0';
    return have;
}

/* The next bytes on fd are exactly want. */
#define ef_expect(fd, want) ef_expect_within(fd, want, 3000)
static inline void ef_expect_within(int fd, const char *want, int ms)
{
    size_t n = strlen(want);
    char *got = malloc(n + 1);
    ck_assert_ptr_nonnull(got);
    ef_read(fd, got, n, ms);
    ck_assert_msg(strcmp(got, want) == 0, "wanted [%s] got [%s]", want, got);
    free(got);
}

/* Nothing more arrives on fd within ms. */
static inline void ef_quiet(int fd, int ms)
{
    char c;
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        ef_turn();
        ck_assert_msg(read(fd, &c, 1) != 1, "unexpected byte '%c'", c);
        h_sleep_ms(1);
    }
}

/* One request and the exact reply it gets. */
static inline void ef_call(int fd, const char *want, const char *w0, ...)
{
    va_list ap;
    va_start(ap, w0);
    ef_cmd_va(fd, w0, ap);
    va_end(ap);
    ef_expect(fd, want);
}

/* The edge's board slot (its counters as INFO reads them). */
static inline struct board_slot *ef_stats(void)
{
    return F.e.stats;
}

#endif

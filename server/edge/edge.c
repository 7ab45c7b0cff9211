/*
 * edge.c - the edge process: accept clients on the sockets the master opened,
 * wire the edge's modules together, run the loop, stop in order.
 *
 * This file is where the layers meet, and the only one that knows them all:
 * it gives the connection layer its hooks (a new client's session, the
 * command registry's dispatch pipeline, the op engine's "client gone" and
 * the transaction's end), the
 * owners their hooks (pushes to the colo cache, drained links to the
 * connections held behind them) and the flights their answer callback (the
 * read family's renderer).  The modules themselves only call down; see the
 * list at the top of edge_int.h.
 */
#include "edge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/tls.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_client.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_cmd.h"
#include "server/edge/edge_config.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_http.h"
#include "server/edge/edge_monitor.h"
#include "server/edge/edge_pause.h"
#include "server/edge/edge_pubsub.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_keyspace.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_registry.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_track.h"
#include "server/edge/edge_tx.h"
#include "server/edge/info_redis.h"
#include "server/edge/edge_sess.h"

#define CRON_MS 100
#define FAST_STOP_MS 500

void edge_flights_opts(struct cfg *cfg, struct flights_opts *o)
{
    *o = (struct flights_opts){.miss_wait_ms = cfg->miss_wait_ms, .routed = cfg};
}

void edge_op_opts(const struct cfg *cfg, struct op_opts *o)
{
    *o = (struct op_opts){.write_timeout_ms = cfg->write_timeout_ms,
                          .write_deadline_ms = cfg->write_deadline_ms,
                          .backoff_ms = cfg->write_retry_backoff_ms,
                          .nbackoff = cfg->nwrite_retry_backoff,
                          .max_frame = cfg->wire_max_frame};
}

void edge_owners_opts(const struct cfg *cfg, struct owners_opts *o)
{
    *o = (struct owners_opts){.cfg = cfg,
                              .hot_owners = cfg->hot_owners,
                              .cold_owners = cfg->cold_owners,
                              .owner_push = cfg->owner_push,
                              .write_timeout_ms = cfg->write_timeout_ms,
                              .max_frame = cfg->wire_max_frame,
                              .dir = cfg->dir,
                              .cluster = cfg->cluster,
                              .host = cfg->host,
                              .cluster_tls_cert_file = cfg->cluster_tls_cert_file};
}

void edge_http_opts(const struct cfg *cfg, struct http_opts *o)
{
    *o = (struct http_opts){.metrics_allow = cfg->http_metrics_allow,
                              .nmetrics_allow = cfg->nhttp_metrics_allow,
                              .max_polls = cfg->http_max_polls,
                              .poll_max_wait_ms = cfg->http_poll_max_wait_ms,
                              .header_timeout_ms = cfg->http_header_timeout_ms,
                              .body_timeout_ms = cfg->http_body_timeout_ms,
                              .keepalive_timeout_ms = cfg->http_keepalive_timeout_ms,
                              .heartbeat_ms = cfg->http_heartbeat_ms,
                              .negative_ttl_ms = cfg->negative_ttl_ms};
}

void edge_cache_opts(const struct cfg *cfg, struct edge_cache_opts *o)
{
    *o = (struct edge_cache_opts){.write_timeout_ms = cfg->write_timeout_ms,
                                  .hotkey_threshold = cfg->hotkey_threshold,
                                  .negative_ttl_ms = cfg->negative_ttl_ms,
                                  .owner_push = cfg->owner_push};
}

void edge_cmd_opts(const struct cfg *cfg, struct edge_cmd_opts *o)
{
    *o = (struct edge_cmd_opts){.multi_max_commands = cfg->multi_max_commands,
                                .multi_max_bytes = cfg->multi_max_bytes,
                                .keys_max = cfg->keys_max,
                                .max_bulk = cfg->proto_max_bulk_len,
                                .cfg = cfg};
}

void edge_conns_opts(const struct cfg *cfg, struct conns_opts *o)
{
    o->limits.max_bulk = cfg->proto_max_bulk_len;
    o->limits.max_args = cfg->proto_max_args;
    o->limits.max_inline = 64 * 1024;
    o->maxclients = cfg->maxclients;
    o->timeout_ms = cfg->timeout_ms;
    o->tcp_keepalive_ms = cfg->tcp_keepalive_ms;
    o->query_buffer_limit = cfg->client_query_buffer_limit;
    o->output_hard = cfg->client_output_hard;
    o->output_soft = cfg->client_output_soft;
    o->output_soft_ms = cfg->client_output_soft_ms;
    o->pubsub_hard = cfg->pubsub_output_hard;
    o->pubsub_soft = cfg->pubsub_output_soft;
    o->pubsub_soft_ms = cfg->pubsub_output_soft_ms;
    o->max_pending = cfg->client_max_pending;
    o->max_pending_bytes = cfg->client_max_pending_bytes;
    o->tls_handshake_timeout_ms = cfg->tls_handshake_timeout_ms;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    conn_accept(arg, fd, 0);
}

static void on_accept_tls(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                          int len, void *arg)
{
    conn_accept(arg, fd, 1);
}

static void on_accept_error(struct evconnlistener *l, void *arg);

/* An owner link that was congested drained: the clients held behind it
 * read again (those still at their pending bound wait for their replies). */
/* A push link's message: a published message for this colo's bus, or a
 * key's new state for the colo cache. */
static void on_push(void *arg, const struct wire_msg *m)
{
    if (m->type == WIRE_PUBMSG) {
        const struct owner_ref *o = arg;
        pubsub_pushed(o->e, m->u.pub.channel.p, m->u.pub.channel.len, m->u.pub.msg.p,
                      m->u.pub.msg.len);
        return;
    }
    edge_cache_pushed(arg, m);
}

static void on_link_drained(struct elink *l, void *arg)
{
    conn_release(arg, l);
}

/* What every client connection plugs into (edge_conn.h): the session starts
 * as RESP2 with the initial user (or is refused by protected mode), every
 * request goes through the command registry, and a client that goes away
 * leaves its ops behind to finish without it. */
static void on_accepted(struct conn *c, const struct sockaddr *peer)
{
    sess_of(c)->proto = 2;
    sess_of(c)->last_stat = 0xffff; /* STATS_NONE: no command yet */
    sess_of(c)->cur_stat = 0xffff;
    edge_auth_accepted(c, peer);
    clients_accepted(c);
}

static void on_closing(struct conn *c)
{
    op_conn_gone(c);
    edge_tx_conn_gone(c);
    edge_track_conn_gone(c);
    monitor_stop(c);
    pubsub_conn_gone(c);
    edge_pause_conn_gone(c);
    clients_gone(c);
    client_gone(c);
}

static const struct conn_hooks conn_hooks = {
    .accepted = on_accepted,
    .dispatch = edge_dispatch,
    .closing = on_closing,
    .park = edge_park,
    .sess_size = sizeof(struct sess),
};

/* An HTTP connection (edge_http.h): its own session and parser on the same
 * connection layer, listed by CLIENT LIST like any client, and let go the
 * same way. */
static void on_http_accepted(struct conn *c, const struct sockaddr *peer)
{
    sess_of(c)->proto = 2;
    sess_of(c)->last_stat = 0xffff;
    sess_of(c)->cur_stat = 0xffff;
    edge_http_accepted(c, peer);
    clients_accepted(c);
}

static void on_http_closing(struct conn *c)
{
    edge_http_closing(c);
    on_closing(c);
}

static const struct conn_hooks http_hooks = {
    .accepted = on_http_accepted,
    .closing = on_http_closing,
    .input = edge_http_input,
    .hangup = edge_http_hangup,
    .refusal = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
               "Connection: close\r\n\r\n",
    .while_stopping = 1,
    .sess_size = sizeof(struct sess),
};

static void on_accept_http(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                           int len, void *arg)
{
    conn_accept_with(arg, fd, 0, &http_hooks);
}

static void on_accept_https(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                            int len, void *arg)
{
    conn_accept_with(arg, fd, 1, &http_hooks);
}

static int listen_on(struct edge *e, int fd, evconnlistener_cb cb)
{
    /* Backlog 0: the master called listen(511); libevent's -1 would call
     * listen() again with 128. */
    struct evconnlistener *l = evconnlistener_new(e->base, cb, e, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    if (l == NULL) {
        log_warning("cannot listen on inherited socket %d", fd);
        return -1;
    }
    evconnlistener_set_error_cb(l, on_accept_error);
    e->listeners[e->nlisteners++] = l;
    return 0;
}

/* Accepts on the TLS port's sockets (the last ntls inherited ones) and the
 * HTTPS port's (the last nhttps HTTP ones): one context for both. */
static int tls_listen(struct edge *e)
{
    const struct edge_ctx *ctx = e->ectx;
    for (size_t i = ctx->nlisten - ctx->ntls; i < ctx->nlisten; i++)
        if (listen_on(e, ctx->listen_fds[i], on_accept_tls) != 0)
            return -1;
    for (size_t i = ctx->nhttp - ctx->nhttps; i < ctx->nhttp; i++)
        if (listen_on(e, ctx->http_fds[i], on_accept_https) != 0)
            return -1;
    return 0;
}

/* A new TLS context from `cfg`, the certificate files re-read (SIGHUP, and
 * any reload).  On failure the old one stays, with one warning line for the
 * host (from its first edge; the others log it at debug level).  An edge
 * that started without one (the files broke between the master's check and
 * its start) begins to accept TLS clients once one loads. */
static void tls_reload(struct edge *e, const struct cfg *cfg)
{
    char err[512];
    SSL_CTX *ctx = tls_ctx_new(cfg, err, sizeof(err));
    if (ctx == NULL) {
        if (e->ectx->colo_index == 0 && e->ctx->index == 0)
            log_warning("TLS reload failed, keeping the previous certificate: %s", err);
        else
            log_debug("TLS reload failed, keeping the previous certificate: %s", err);
        return;
    }
    int first = e->conns->tls_ctx == NULL;
    SSL_CTX_free(e->conns->tls_ctx); /* open connections hold their own reference */
    e->conns->tls_ctx = ctx;
    if (first)
        tls_listen(e);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    /* EMFILE and friends: log once per burst; the listener keeps going. */
    log_warning("accept: %s", strerror(errno));
}

static void finish_if_drained(struct edge *e)
{
    /* Writes whose client left still run to their end: an owner may have
     * applied them, and their outcome is logged if they fail. */
    if (e->stopping && e->conns->n == 0 && op_writing(e) == 0) {
        worker_quiesce(e->worker);
        event_base_loopexit(e->base, NULL);
    }
}

static void on_cron(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    int64_t now = clock_mono_ms();
    conns_cron(e, now);
    edge_http_cron(e, now);
    clients_cron(e, now);
    client_kill_cron(e, now);
    info_publish(e);
    uint64_t total = board_load(&e->stats->total_commands_processed);
    if (now - e->ops_rate.at_ms >= 1000) {
        e->ops_rate.per_sec =
            (total - e->ops_rate.cmds) * 1000 / (uint64_t)(now - e->ops_rate.at_ms);
        e->ops_rate.at_ms = now;
        e->ops_rate.cmds = total;
    }
    finish_if_drained(e);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    if (e->conns->n > 0)
        log_warning("stop deadline passed, closing %llu connections",
                    (unsigned long long)e->conns->n);
    conns_close_all(e);
    if (op_writing(e) > 0)
        log_warning("stop deadline passed with %llu writes unfinished",
                    (unsigned long long)op_writing(e));
    worker_quiesce(e->worker);
    event_base_loopexit(e->base, NULL);
}

static int is_http_fd(const struct edge *e, evutil_socket_t fd)
{
    for (size_t i = 0; i < e->ectx->nhttp; i++)
        if (e->ectx->http_fds[i] == fd)
            return 1;
    return 0;
}

static void on_stop(void *arg, int fast)
{
    struct edge *e = arg;
    /* The RESP ports close now.  The HTTP ports accept while the edge
     * drains, so that a load balancer's health check reads /healthz's 503
     * "draining" (and takes the host out) rather than a refused or silent
     * port; each of those requests is answered and closed, and the edge
     * still exits as soon as nothing is owed (finish_if_drained). */
    size_t kept = 0;
    for (size_t i = 0; i < e->nlisteners; i++) {
        if (!fast && is_http_fd(e, evconnlistener_get_fd(e->listeners[i])))
            e->listeners[kept++] = e->listeners[i];
        else
            evconnlistener_free(e->listeners[i]);
    }
    e->nlisteners = kept;
    int64_t ms = fast ? FAST_STOP_MS : e->ctx->cfg->shutdown_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(e->deadline, &tv);
    e->stopping = 1;
    edge_http_stop(e); /* held polls answered, streams ended, on their timers */
    /* A connection with nothing owed is closed now; the others as soon as
     * their replies, including writes in flight, are written: a write ends
     * acknowledged by its owner or failed explicitly, never dropped. */
    conns_stop(e);
    finish_if_drained(e);
}

static void on_reload(void *arg, const struct cfg *next)
{
    struct edge *e = arg;
    edge_cmd_opts(next, &e->cmd_opts);
    struct conns_opts co = {0};
    edge_conns_opts(next, &co);
    conns_reload(e->conns, &co);
    edge_auth_reload(e, next); /* users; narrows unauthenticated parsers again */
    if (e->ectx->ntls + e->ectx->nhttps > 0 && !e->ectx->writer && !e->stopping)
        tls_reload(e, next);
    struct http_opts ho;
    edge_http_opts(next, &ho);
    edge_http_reload(e, &ho);
    edge_rl_reload(e->rl, e, next); /* rate limits: new rules, same buckets */
    struct track_opts to;
    edge_track_opts(next, &to);
    edge_track_reload(e, &to);
    struct edge_cache_opts ko;
    edge_cache_opts(next, &ko);
    edge_cache_reload(e, &ko);
    struct owners_opts ow;
    edge_owners_opts(next, &ow);
    owners_reload(e, &ow);
    /* next is the config worker_install is about to make ctx->cfg (its
     * own, not const there): flights take references to it */
    struct flights_opts fo;
    edge_flights_opts((struct cfg *)next, &fo);
    flights_reload(e, &fo); /* a lower miss-wait applies to readers waiting now */
    edge_health_reload(e->health, next->owner_probe_interval_ms);
    struct op_opts oo;
    edge_op_opts(next, &oo);
    op_reload(e, &oo); /* and a lower write-deadline to writes in flight */
}

int edge_main(struct worker_ctx *ctx, const struct edge_ctx *ectx)
{
    char title[96];
    snprintf(title, sizeof(title), "edge %s/%d", ectx->colo_name, ctx->index);
    if (worker_prepare(ctx, title) != 0)
        return 1;
    struct edge edge = {.ctx = ctx, .ectx = ectx};
    struct edge *e = &edge;
    int code = 1;
    e->stats = &ctx->board->slots[ctx->slot];
    atomic_store_explicit(&e->stats->connected_clients, 0, memory_order_relaxed);
    atomic_store_explicit(&e->stats->tls_connections, 0, memory_order_relaxed);
    struct conns_opts co = {.hooks = &conn_hooks,
                            .poll = owners_poll_writes}; /* owners' answers between client reads */
    edge_conns_opts(ctx->cfg, &co);
    if (conns_setup(e, &co) != 0)
        return 1;
    edge_cmd_opts(ctx->cfg, &e->cmd_opts);
    e->base = event_base_new();
    /* Two priorities: owner links (0) before clients (1, the default), so
     * owner answers, writes' above all, are handled as soon as they arrive
     * rather than after every ready client of the iteration. */
    if (e->base != NULL)
        event_base_priority_init(e->base, 2);
    if (e->base == NULL)
        return 1;
    struct worker_hooks hooks = {on_reload, on_stop, e, edge_stats_reset, edge_resetstat_done,
                                 edge_cache_forgotten};
    e->worker = worker_create(ctx, e->base, &hooks);
    e->cron = event_new(e->base, -1, EV_PERSIST, on_cron, e);
    e->deadline = evtimer_new(e->base, on_deadline, e);
    e->listeners = calloc(ectx->nlisten + ectx->nhttp + 1, sizeof(*e->listeners));
    if (e->worker == NULL || e->cron == NULL || e->deadline == NULL || e->listeners == NULL)
        goto out;
    if (edge_auth_setup(e, ctx->cfg) != 0) {
        log_warning("cannot build the users: out of memory");
        goto out;
    }
    edge_rl_setup(e, ctx->cfg); /* the colo's rate limiter; never fails (it fails open) */
    if (clients_setup(e) != 0)
        log_warning("no memory for the clients board: this edge's clients are listed by it only");
    struct owner_hooks oh = {
        .push = on_push, .drained = on_link_drained, .gap = edge_cache_push_gap};
    struct flights_opts fo;
    edge_flights_opts(ctx->cfg, &fo);
    struct op_opts oo;
    edge_op_opts(ctx->cfg, &oo);
    struct owners_opts ow;
    edge_owners_opts(ctx->cfg, &ow);
    struct http_opts ho;
    edge_http_opts(ctx->cfg, &ho);
    struct edge_cache_opts ko;
    edge_cache_opts(ctx->cfg, &ko);
    struct track_opts to;
    edge_track_opts(ctx->cfg, &to);
    if (edge_cache_setup(e, &ko) != 0 || edge_feed_setup(e) != 0 || edge_track_setup(e, &to) != 0 ||
        op_setup(e, &oo) != 0 || forgets_setup(e) != 0 ||
        owners_setup(e, &oh, &ow) != 0 || flights_setup(e, edge_read_answer, &fo) != 0 ||
        edge_health_setup(e, ctx->cfg->owner_probe_interval_ms) != 0 ||
        edge_http_setup(e, &ho) != 0 || pubsub_setup(e) != 0) {
        log_warning("cannot set up owner links: out of memory");
        goto out;
    }
    size_t plain = ectx->nlisten - ectx->ntls - ectx->nwriter;
    for (size_t i = ectx->writer ? plain : 0; i < (ectx->writer ? plain + ectx->nwriter : plain); i++)
        if (listen_on(e, ectx->listen_fds[i], on_accept) != 0)
            goto out;
    for (size_t i = 0; !ectx->writer && i < ectx->nhttp - ectx->nhttps; i++)
        if (listen_on(e, ectx->http_fds[i], on_accept_http) != 0)
            goto out;
    if (ectx->ntls + ectx->nhttps > 0 && !ectx->writer) {
        char err[512];
        e->conns->tls_ctx = tls_ctx_new(ctx->cfg, err, sizeof(err));
        if (e->conns->tls_ctx == NULL)
            log_warning("TLS port not served by this edge until a reload loads a certificate: %s",
                        err);
        else if (tls_listen(e) != 0)
            goto out;
    }
    struct timeval tv = {0, CRON_MS * 1000};
    event_add(e->cron, &tv);
    e->ops_rate.at_ms = clock_mono_ms();
    info_publish(e); /* its colo in the board before its first client (a REDIRECT looks) */
    worker_ready(e->worker);
    event_base_dispatch(e->base);
    code = 0;
out:
    conns_close_all(e);
    pubsub_teardown(e);
    edge_pause_teardown(e);
    edge_http_teardown(e);
    edge_track_teardown(e);
    edge_feed_teardown(e);
    for (size_t i = 0; i < e->nlisteners; i++)
        evconnlistener_free(e->listeners[i]);
    free(e->listeners);
    SSL_CTX_free(e->conns->tls_ctx);
    flights_teardown(e);
    op_teardown(&e->ops);
    forgets_teardown(&e->forgets);
    owners_teardown(e);
    edge_health_teardown(e);
    conns_teardown(&e->conns);
    edge_auth_teardown(&e->auth);
    edge_rl_teardown(&e->rl);
    clients_teardown(&e->clients);
    monitor_teardown(&e->monitor);
    edge_cache_teardown(&e->cache);
    if (e->cron)
        event_free(e->cron);
    if (e->deadline)
        event_free(e->deadline);
    worker_destroy(&e->worker);
    event_base_free(e->base);
    cfg_destroy(&ctx->cfg);
    return code;
}

/*
 * owner.c - the shard owner process; see owner.h.  This file is the
 * lifecycle only: recover the ledger from SQLite, serve edge links, and on
 * stop refuse new links, then flush every dirty key before exiting.  Links
 * are in owner_link.c, requests in owner_ops.c, persistence in
 * owner_persist.c, a cluster owner's leaves in owner_own.c.  This file also
 * assembles them: the request executor sits above the links and the
 * persister, which reach it only through the callbacks wired in owner_init
 * and owner_open (owner_int.h has the map).  In a cluster it also listens
 * for other hosts' edges on the TCP socket the master opened, with the
 * cluster's mutual TLS (server/core/tls_cluster.h), rebuilt on reload.
 */
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "proto/notify.h"
#include "server/core/log.h"
#include "server/core/tls_cluster.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_notify.h"
#include "server/owner/owner_handover.h"
#include "server/owner/owner_repl.h"
#include "server/owner/owner_move_int.h"
#include "server/core/topo.h"

static void on_stop(void *arg, int fast)
{
    struct owner *o = arg;
    if (o->stopping)
        return;
    o->stopping = 1;
    /* Edges are stopped first, so what is still in flight is theirs to
     * finish; the loop ends after this callback and flush_all runs. */
    if (o->listener != NULL) {
        evconnlistener_free(o->listener);
        o->listener = NULL;
    }
    if (o->tcp_listener != NULL) {
        evconnlistener_free(o->tcp_listener);
        o->tcp_listener = NULL;
    }
    worker_quiesce(o->worker);
    event_base_loopexit(o->base, NULL);
}

/* The owner's modules' options, from config c: the only place the owner
 * reads its config (scripts/check/cfg_reads.py). */
static void opts_of(struct owner_opts *p, const struct cfg *c, enum cfg_pool pool, int index)
{
    *p = (struct owner_opts){
        .cluster = c->cluster,
        .host = c->host,
        .dir = c->dir,
        .tls_cert = c->cluster_tls_cert_file,
        .tls_key = c->cluster_tls_key_file,
        .tls_ca = c->cluster_tls_ca_file,
        .wire_max_frame = (size_t)c->wire_max_frame,
        .proto_max_bulk_len = c->proto_max_bulk_len,
        .owner_maxmemory = (size_t)c->owner_maxmemory,
        .tombstone_ttl_ms = (uint64_t)c->tombstone_ttl_ms,
        .persist_interval_ms = c->persist_interval_ms,
        .persist_max_dirty = c->persist_max_dirty,
        .persist_batch_max = (size_t)c->persist_batch_max,
        .durable_timeout_ms = c->durable_timeout_ms,
        .etcd_timeout_ms = c->etcd_timeout_ms,
        .replica_timeout_ms = c->replica_timeout_ms,
        .local_map = cfg_local_map(c),
        .replicas = c->replicas,
        .move_fence_timeout_ms = c->move_fence_timeout_ms,
        .move_window_ms = c->move_window_ms,
        .owner_push = c->owner_push,
    };
    if (notify_parse(c->notify_keyspace_events, &p->notify) != 0)
        p->notify = 0; /* the config's check refused it already */
    topo_owner_db(c, pool, index, p->db_path, sizeof(p->db_path));
    topo_agent_socket(c, p->agent_socket, sizeof(p->agent_socket));
}

static void on_reload(void *arg, const struct cfg *next)
{
    struct owner *o = arg;
    struct owner_opts opts;
    opts_of(&opts, next, o->pool, o->index);
    router_set_config(o->router, next);
    rifl_set_max(o->rifl, (size_t)next->write_completions_max);
    owner_persist_reload(o, &opts); /* compares with o->opts, the options until now */
    o->opts = opts;
    if (o->cluster_tls != NULL) {
        /* New links use the files as they are now; a bad file keeps the old. */
        char err[512];
        SSL_CTX *ctx = tls_cluster_ctx_new(next, 1, err, sizeof(err));
        if (ctx == NULL) {
            log_warning("cluster TLS not reloaded, keeping the previous files: %s", err);
        } else {
            SSL_CTX_free(o->cluster_tls);
            o->cluster_tls = ctx;
        }
    }
}

/* A link is going away: whatever waits to answer on it forgets it. */
static void link_gone(struct owner *o, struct olink *l)
{
    owner_forget_link(o, l);
    owner_scan_forget_link(o, l);
}

/* A nonzero number no earlier run of this owner used (HELLO_OK): edges
 * learn from it that a retry may go to a process that lost the first
 * attempt's result. */
static uint64_t new_incarnation(void)
{
    uint64_t v = 0;
    while (v == 0 || v == WIRE_PREV_UNKNOWN || v == WIRE_PREV_SAME) {
        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            v = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
        }
    }
    return v;
}

int owner_init(struct owner *o, struct worker_ctx *ctx, const struct owner_ctx *octx)
{
    *o = (struct owner){.ctx = ctx, .pool = octx->pool, .index = ctx->index};
    opts_of(&o->opts, ctx->cfg, o->pool, o->index);
    wire_decoder_init(&o->dec, 0);
    o->base = event_base_new();
    o->router = router_create(ctx->cfg);
    o->incarnation = new_incarnation();
    if (o->base == NULL || o->router == NULL ||
        rifl_create((size_t)ctx->cfg->write_completions_max, &o->rifl) != HKV_OK)
        return -1;
    /* The request executor sits above the links and the persister; they
     * reach it through these callbacks. */
    struct olink_hooks links = {.on_request = owner_execute, .on_close = link_gone,
                                .on_handoff = owner_hlink_adopt};
    olink_setup(o, &links);
    return 0;
}

int owner_open(struct owner *o)
{
    if (owner_persist_setup(o, owner_execute) != 0 || owner_own_start(o) != 0 ||
        owner_work_setup(o) != 0)
        return -1;
    /* a cluster's leaf moves (owner_move_int.h), followers (owner_repl.h) and
     * planned hand-overs to them (owner_handover.h) */
    if (owner_move_setup(o) != 0 || owner_repl_setup(o) != 0)
        return -1;
    return owner_handover_setup(o);
}

void owner_deinit(struct owner *o)
{
    olink_close_all(o);
    if (o->tcp_listener != NULL)
        evconnlistener_free(o->tcp_listener);
    o->tcp_listener = NULL;
    owner_pushq_teardown(o);
    owner_notify_teardown(o);
    owner_handover_teardown(o);
    owner_repl_teardown(o); /* its streams' links go before the link layer does */
    owner_move_teardown(o);
    owner_work_teardown(o);
    owner_own_teardown(o);
    owner_persist_teardown(o);
    owner_purge_teardown(o); /* after the persister handed its jobs back */
    SSL_CTX_free(o->cluster_tls);
    o->cluster_tls = NULL;
    worker_destroy(&o->worker);
    router_destroy(&o->router);
    rifl_destroy(&o->rifl);
    if (o->base)
        event_base_free(o->base);
    o->base = NULL;
    wire_decoder_deinit(&o->dec);
}

int owner_main(struct worker_ctx *ctx, const struct owner_ctx *octx)
{
    char title[64];
    snprintf(title, sizeof(title), "owner %s/%d", topo_pool_name(octx->pool),
             ctx->index);
    if (worker_prepare(ctx, title) != 0)
        return 1;
    struct owner own;
    struct owner *o = &own;
    int code = 1;
    if (owner_init(o, ctx, octx) != 0)
        goto out;
    struct worker_hooks hooks = {on_reload, on_stop, o, owner_stats_reset, NULL, NULL};
    o->worker = worker_create(ctx, o->base, &hooks);
    if (o->worker == NULL || owner_open(o) != 0)
        goto out;
    if (olink_listen(o, octx->link_fd) != 0) {
        log_warning("cannot listen for edge links");
        goto out;
    }
    if (octx->tcp_fd >= 0) {
        char err[512];
        o->cluster_tls = tls_cluster_ctx_new(ctx->cfg, 1, err, sizeof(err));
        int fd = octx->tcp_fd;
        if (o->cluster_tls == NULL || olink_listen_tls(o, fd) != 0) {
            log_warning("cannot listen for other hosts' edges: %s",
                        o->cluster_tls == NULL ? err : "out of memory");
            close(fd);
            goto out;
        }
    }
    worker_ready(o->worker);
    event_base_dispatch(o->base);
    olink_close_all(o);
    owner_persist_flush_all(o);
    code = 0;
out:
    olink_close_all(o);
    if (o->listener != NULL)
        evconnlistener_free(o->listener);
    else if (octx->link_fd >= 0)
        close(octx->link_fd);
    owner_deinit(o);
    cfg_destroy(&ctx->cfg);
    return code;
}

/*
 * edge_owners.c - the owners as one edge sees them (edge_owners.h): routing
 * a key to its owner, the three links to each owner, and the 1 s STATS poll
 * that INFO's # owners and # keyspace show (INFO never waits for an owner).
 *
 * The design choice is that this module is the bottom of the data path:
 * ops, flights and the cache call down into it, and what owners send unasked
 * (pushes) or what the links report (drained) goes up through the hooks the
 * edge gives at setup, so nothing here names a module above it.
 *
 * A cluster changes three things, all here: the owner slots are the
 * cluster's owner numbers (a fixed array, so a pointer to a slot or its
 * index stays valid whatever the map does), routing syncs the router's copy
 * of the map on every lookup (one atomic load when nothing changed), and
 * links are made on first use, to the Unix socket of an owner of this host
 * or over TCP + TLS to the address the map gives for another host's.
 */
#include "server/edge/edge_owners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "proto/stamp.h"
#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/log.h"
#include "server/core/router_map.h"
#include "server/core/tls_cluster.h"
#include "server/core/topo.h"

/* The module's state: the head others read (edge_owners.h), then its own. */
struct owners_state {
    struct edge_owners pub;
    uint64_t incarnation;         /* this process, in HELLO (exactly-once retries) */
    uint32_t writer;              /* the edge id in HELLO */
    struct ssl_ctx_st *cluster_tls; /* a cluster: the client context of links to other
                                     * hosts (NULL: none can be made) */
    elink_push_fn link_push;      /* what links call up (owners_setup's hooks) */
    void (*link_gap)(void *arg);
    elink_drained_fn link_drained;
    struct event *stats_poll;     /* 1 s: STATS of every owner, for INFO */
    int64_t push_checked_ms;      /* edge_push_gap: when every push link was last looked at */
    int push_all_greeted;         /* and whether each was greeted then */
    struct owners_opts opts;      /* opts.cfg is NULL here: it was the call's */
};

static inline struct owners_state *ost(const struct edge *e)
{
    return (struct owners_state *)e->owners;
}

static void on_stats_poll(evutil_socket_t fd, short what, void *arg);

struct owner_ref *edge_owner_at(struct edge *e, int g)
{
    if (g < 0 || g >= e->owners->n)
        return NULL;
    struct rmap *m = router_map(e->owners->router);
    if (m == NULL)
        return &e->owners->ref[g];
    const struct cmap_owner *row = cmap_owner(rmap_table(m), (unsigned)g + 1);
    if (!rmap_serves(m, (unsigned)g + 1) || row == NULL)
        return NULL;
    struct owner_ref *o = &e->owners->ref[g];
    if (o->number == 0) { /* first seen: its name for logs and INFO */
        o->number = (unsigned)g + 1;
        o->pool = row->pool == CFG_POOL_COLD ? CFG_POOL_COLD : CFG_POOL_HOT;
        o->index = row->index;
    }
    return o;
}

struct owner_ref *edge_owner_polled(struct edge *e, int g)
{
    struct owner_ref *o = edge_owner_at(e, g);
    struct rmap *m = router_map(e->owners->router);
    if (o != NULL || m == NULL || g < 0 || g >= e->owners->n)
        return o;
    /* serves no leaf: still polled if it is one of this host's, whose
     * figures (a move just made, writes it parked) INFO adds up */
    const struct cmap_owner *row = cmap_owner(rmap_table(m), (unsigned)g + 1);
    if (row == NULL || strncmp(row->host, ost(e)->opts.host, sizeof(row->host)) != 0)
        return NULL;
    o = &e->owners->ref[g];
    if (o->number == 0) {
        o->number = (unsigned)g + 1;
        o->pool = row->pool == CFG_POOL_COLD ? CFG_POOL_COLD : CFG_POOL_HOT;
        o->index = row->index;
    }
    return o;
}

int edge_owner_next(struct edge *e, int after)
{
    for (int g = after < 0 ? 0 : after + 1; g < e->owners->n; g++)
        if (edge_owner_at(e, g) != NULL)
            return g;
    return -1;
}

int edge_owners_count(struct edge *e)
{
    int n = 0;
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g))
        n++;
    return n;
}

int edge_remote_links_up(const struct edge *e)
{
    int n = 0;
    for (int g = 0; e->owners != NULL && e->owners->ref != NULL && g < e->owners->n; g++) {
        struct elink *l = e->owners->ref[g].link[WIRE_ROLE_WRITE];
        n += l != NULL && elink_is_remote(l) && elink_is_up(l);
    }
    return n;
}

struct owner_ref *edge_owner_of(struct edge *e, const char *key, size_t len, struct route *rt)
{
    return edge_owner_of_hashed(e, key, len, router_hash(key, len), rt);
}

struct owner_ref *edge_owner_of_hashed(struct edge *e, const char *key, size_t len,
                                       uint64_t hash, struct route *rt)
{
    struct rmap *m = router_map(e->owners->router);
    if (m != NULL)
        rmap_sync(m, e->ctx->cmap);
    router_route_hashed(e->owners->router, key, len, hash, rt);
    if (rt->owner < 0)
        return NULL;
    if (m != NULL)
        return edge_owner_at(e, rt->owner - 1);
    int g = rt->pool == CFG_POOL_HOT ? rt->owner : ost(e)->opts.hot_owners + rt->owner;
    return edge_owner_at(e, g);
}

struct owner_ref *edge_owner_of_place(struct edge *e, enum cfg_pool pool, uint64_t place,
                                      uint32_t *leaf, uint8_t *bits)
{
    struct rmap *m = router_map(e->owners->router);
    if (m != NULL)
        rmap_sync(m, e->ctx->cmap);
    int owner = router_owner(e->owners->router, pool, place);
    router_leaf(e->owners->router, pool, place, leaf, bits);
    if (owner < 0)
        return NULL;
    if (m != NULL)
        return edge_owner_at(e, owner - 1);
    return edge_owner_at(e, pool == CFG_POOL_HOT ? owner : ost(e)->opts.hot_owners + owner);
}

int edge_same_owner(struct edge *e, const char *key, size_t len, struct owner_ref **o,
                    const char **err)
{
    struct route rt;
    struct owner_ref *k = edge_owner_of(e, key, len, &rt);
    if (k == NULL) {
        *err = "ERR no owner serves this key's pool";
        return -1;
    }
    if (*o != NULL && *o != k) {
        *err = EDGE_ERR_CROSSSLOT;
        return -1;
    }
    *o = k;
    return 0;
}

void edge_owner_take_stats(const struct wire_msg *m, int64_t *v)
{
    ctr_owner_take(m->u.stats_reply.stats, m->u.stats_reply.nstats, v);
}

/* The master told the owners first, so any poll sent from now on is
 * answered from zero; one already in flight may carry the old numbers. */
void edge_stats_reset(void *arg)
{
    struct edge *e = arg;
    for (int g = 0; g < e->owners->n; g++) {
        struct owner_ref *o = &e->owners->ref[g];
        for (int i = 0; i < CTR_OWNER_COUNT; i++)
            if (ctr_owner_defs[i].kind == CTR_COUNTER)
                o->stats[i] = 0;
        o->stats_drop = o->stats_inflight;
    }
}

/* ---- the STATS poll ----------------------------------------------------------- */

static void poll_cb(void *arg, int status, const struct wire_msg *m)
{
    struct owner_ref *o = arg;
    o->stats_inflight = 0;
    if (o->stats_drop) {
        o->stats_drop = 0;
        return;
    }
    if (status != HKV_OK || m->type != WIRE_STATS_REPLY)
        return; /* the last answer stays; its age shows in INFO */
    edge_owner_take_stats(m, o->stats);
    o->stats_at_ms = clock_mono_ms();
}

static void on_stats_poll(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    if (router_map(e->owners->router) != NULL) {
        rmap_sync(router_map(e->owners->router), e->ctx->cmap);
        /* for /metrics, which answers for every edge of the host */
        atomic_store_explicit(&e->stats->remote_links_up, (uint64_t)edge_remote_links_up(e),
                              memory_order_relaxed);
    }
    for (int g = 0; g < e->owners->n; g++) {
        struct owner_ref *o = edge_owner_polled(e, g);
        if (o == NULL || o->stats_inflight)
            continue;
        struct elink *l = edge_owner_link(o, WIRE_ROLE_READ);
        if (l == NULL)
            continue;
        uint64_t id;
        struct hkv_buf *b = elink_out(l, &id);
        if (wire_put_stats(b, id) == HKV_OK && elink_commit(l, id, poll_cb, o) == HKV_OK)
            o->stats_inflight = 1;
    }
}

/* ---- links -------------------------------------------------------------------- */

static const char *const roles[] = {"read", "write", "push"};

/* Where o's links go, in a cluster: 1 (lo filled: path, or addr/port/tls/
 * peer_host), or 0 with why. */
static int cluster_target(struct owner_ref *o, struct elink_opts *lo, char *path, size_t plen,
                          char *why, size_t wlen)
{
    struct edge *e = o->e;
    const struct owners_opts *oo = &ost(e)->opts;
    const struct cmap_owner *row = cmap_owner(rmap_table(router_map(e->owners->router)), o->number);
    if (row == NULL) {
        snprintf(why, wlen, "not in the cluster map");
        return 0;
    }
    lo->cluster = oo->cluster;
    lo->host = oo->host;
    lo->want_owner = o->number;
    if (strncmp(row->host, oo->host, sizeof(row->host)) == 0) { /* this host: its socket */
        topo_owner_socket_in(oo->dir, o->pool, o->index, path, plen);
        lo->path = path;
        return 1;
    }
    if (!row->live) {
        snprintf(why, wlen, "not live (its host's registration is gone)");
        return 0;
    }
    if (row->port == 0 || row->addr[0] == '\0' || ost(e)->cluster_tls == NULL) {
        snprintf(why, wlen, "%s",
                 ost(e)->cluster_tls == NULL ? "no cluster TLS context (cluster-tls-*)"
                                             : "no address in the map");
        return 0;
    }
    lo->addr = row->addr;
    lo->port = row->port;
    lo->tls = ost(e)->cluster_tls;
    lo->peer_host = row->host;
    return 1;
}

/* Makes o's three links. */
static int make_links(struct owner_ref *o)
{
    struct edge *e = o->e;
    const struct owners_opts *oo = &ost(e)->opts;
    char path[TOPO_PATH_MAX], name[64], why[128];
    struct elink_opts lo = {
        .edge_id = ost(e)->writer, .incarnation = ost(e)->incarnation, .colo = e->ectx->colo_name,
        .timeout_ms = oo->write_timeout_ms, .max_frame = (size_t)oo->max_frame,
        .drained = ost(e)->link_drained, .drained_arg = e, .push = ost(e)->link_push,

        .push_arg = o,
    };
    if (o->number == 0) {
        topo_owner_socket_in(oo->dir, o->pool, o->index, path, sizeof(path));
        lo.path = path;
    } else if (!cluster_target(o, &lo, path, sizeof(path), why, sizeof(why))) {
        if (!o->refused)
            log_warning("no link to owner %u (%s/%d): %s", o->number, topo_pool_name(o->pool),
                        o->index, why);
        o->refused = 1;
        return -1;
    }
    o->refused = 0;
    for (int role = WIRE_ROLE_READ; role <= WIRE_ROLE_PUSH; role++) {
        if (o->number != 0)
            snprintf(name, sizeof(name), "%u %s/%d %s", o->number, topo_pool_name(o->pool),
                     o->index, roles[role]);
        else
            snprintf(name, sizeof(name), "%s/%d %s", topo_pool_name(o->pool), o->index,
                     roles[role]);
        lo.name = name;
        lo.role = (uint8_t)role;
        lo.gap = role == WIRE_ROLE_PUSH ? ost(e)->link_gap : NULL;
        o->link[role] = elink_create(e->base, &lo);
        if (o->link[role] == NULL)
            return -1;
    }
    return 0;
}

int edge_push_gap(struct edge *e, const char *key, size_t len, int64_t now_ms)
{
    if (!ost(e)->opts.owner_push)
        return 0;
    if (now_ms - ost(e)->push_checked_ms >= EDGE_PUSH_CHECK_MS) {
        ost(e)->push_checked_ms = now_ms;
        ost(e)->push_all_greeted = 1;
        for (int g = edge_owner_next(e, -1); g >= 0 && ost(e)->push_all_greeted;
             g = edge_owner_next(e, g)) {
            struct elink *l = e->owners->ref[g].link[WIRE_ROLE_PUSH];
            ost(e)->push_all_greeted = l != NULL && elink_greeted(l);
        }
    }
    if (ost(e)->push_all_greeted)
        return 0;
    struct route rt;
    struct owner_ref *o = edge_owner_of(e, key, len, &rt);
    return o == NULL || o->link[WIRE_ROLE_PUSH] == NULL ||
           !elink_greeted(o->link[WIRE_ROLE_PUSH]);
}

struct elink *edge_owner_link(struct owner_ref *o, int role)
{
    if (o->link[role] == NULL && make_links(o) != 0) {
        for (int r = 0; r < 3; r++)
            elink_destroy(&o->link[r]);
        return NULL;
    }
    return o->link[role];
}

/* ---- setup -------------------------------------------------------------------- */

/* A cluster: the owner slots by number and the router on the map. */
static int cluster_setup(struct edge *e, const struct owners_opts *opts)
{
    struct rmap *m = rmap_create();
    if (m == NULL)
        return -1;
    router_use_map(e->owners->router, m);
    rmap_sync(m, e->ctx->cmap);
    e->owners->n = CMAP_MAX_OWNERS;
    if (opts->cluster_tls_cert_file[0] != '\0') {
        char err[512];
        ost(e)->cluster_tls = tls_cluster_ctx_new(opts->cfg, 0, err, sizeof(err));
        if (ost(e)->cluster_tls == NULL)
            log_warning("no links to other hosts' owners: %s", err);
    }
    return 0;
}

int owners_setup(struct edge *e, const struct owner_hooks *hooks, const struct owners_opts *opts)
{
    const struct cfg *cfg = opts->cfg;
    struct cmap_health ch = {0};
    if (e->ctx->cmap != NULL)
        cmap_health_get(e->ctx->cmap, &ch); /* the master forks edges once it is set */
    uint32_t writer = worker_edge_id(ch.host_number, e->ctx->slot);
    struct owners_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -1;
    e->owners = &st->pub;
    st->opts = *opts;
    st->opts.cfg = NULL;
    while (ost(e)->incarnation == 0 || ost(e)->incarnation == WIRE_PREV_UNKNOWN)
        if (getrandom(&ost(e)->incarnation, sizeof(ost(e)->incarnation), 0) !=
            sizeof(ost(e)->incarnation))
            ost(e)->incarnation = ((uint64_t)getpid() << 32) ^ (uint64_t)clock_unix_ms();
    ost(e)->writer = writer;
    ost(e)->link_push = hooks->push;
    ost(e)->link_gap = hooks->gap;
    ost(e)->link_drained = hooks->drained;
    e->owners->router = router_create(cfg);
    e->owners->n = opts->hot_owners + opts->cold_owners;
    if (e->owners->router == NULL || (e->ctx->cmap != NULL && cluster_setup(e, opts) != 0))
        return -1;
    e->owners->ref = calloc((size_t)(e->owners->n > 0 ? e->owners->n : 1), sizeof(*e->owners->ref));
    ost(e)->stats_poll = event_new(e->base, -1, EV_PERSIST, on_stats_poll, e);
    if (e->owners->ref == NULL || ost(e)->stats_poll == NULL)
        return -1;
    for (int g = 0; g < e->owners->n; g++) {
        struct owner_ref *o = &e->owners->ref[g];
        o->e = e;
        if (router_map(e->owners->router) != NULL)
            continue; /* a cluster: filled on first sight, links on first use */
        o->pool = g < opts->hot_owners ? CFG_POOL_HOT : CFG_POOL_COLD;
        o->index = g < opts->hot_owners ? g : g - opts->hot_owners;
        if (edge_owner_link(o, WIRE_ROLE_READ) == NULL)
            return -1;
    }
    struct timeval tv = {1, 0};
    event_add(ost(e)->stats_poll, &tv);
    return 0;
}

void owners_reload(struct edge *e, const struct owners_opts *opts)
{
    const struct cfg *cfg = opts->cfg;
    ost(e)->opts = *opts;
    ost(e)->opts.cfg = NULL;
    if (e->owners->router != NULL)
        router_set_config(e->owners->router, cfg);
    if (e->owners->router != NULL && router_map(e->owners->router) != NULL &&
        opts->cluster_tls_cert_file[0]) {
        char err[512]; /* new links use the files as they are now; a bad file keeps the old */
        SSL_CTX *ctx = tls_cluster_ctx_new(cfg, 0, err, sizeof(err));
        if (ctx == NULL) {
            log_warning("cluster TLS not reloaded, keeping the previous files: %s", err);
        } else {
            SSL_CTX_free(ost(e)->cluster_tls);
            ost(e)->cluster_tls = ctx;
        }
    }
    for (int g = 0; e->owners != NULL && e->owners->ref != NULL && g < e->owners->n; g++)
        for (int role = 0; role < 3; role++)
            if (e->owners->ref[g].link[role] != NULL) {
                elink_set_timeout(e->owners->ref[g].link[role], opts->write_timeout_ms);
                elink_set_tls(e->owners->ref[g].link[role], ost(e)->cluster_tls);
            }
}

void owners_poll_writes(struct edge *e)
{
    for (int g = 0; e->owners != NULL && e->owners->ref != NULL && g < e->owners->n; g++) {
        struct owner_ref *o = &e->owners->ref[g];
        if (o->wq_n > 0 && o->link[WIRE_ROLE_WRITE] != NULL)
            elink_poll(o->link[WIRE_ROLE_WRITE]);
    }
}

void owners_teardown(struct edge *e)
{
    struct owners_state *st = ost(e);
    if (st == NULL)
        return;
    if (st->stats_poll)
        event_free(st->stats_poll);
    for (int g = 0; st->pub.ref != NULL && g < st->pub.n; g++)
        for (int role = 0; role < 3; role++)
            elink_destroy(&st->pub.ref[g].link[role]);
    free(st->pub.ref);
    router_destroy(&st->pub.router);
    SSL_CTX_free(st->cluster_tls);
    free(st);
    e->owners = NULL;
}

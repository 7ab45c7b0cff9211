/*
 * edge_owners.c - the owners as one edge sees them (edge_owners.h): routing
 * a key to its owner, the three links to each owner, and the 1 s STATS poll
 * that INFO's # owners and # keyspace show (INFO never waits for an owner).
 *
 * The design choice is that this module is the bottom of the data path:
 * ops, flights and the cache call down into it, and what owners send unasked
 * (pushes) or what the links report (drained) goes up through the hooks the
 * edge gives at setup, so nothing here names a module above it.
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
#include "server/core/topo.h"

struct owner_ref *edge_owner_at(struct edge *e, int g)
{
    return g >= 0 && g < e->nowners ? &e->owners[g] : NULL;
}

struct owner_ref *edge_owner_of(struct edge *e, const char *key, size_t len, struct route *rt)
{
    router_route(e->router, key, len, rt);
    if (rt->owner < 0)
        return NULL;
    int g = rt->pool == CFG_POOL_HOT ? rt->owner : e->ctx->cfg->hot_owners + rt->owner;
    return edge_owner_at(e, g);
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

void owner_take_stats(const struct wire_msg *m, int64_t *v)
{
    ctr_owner_take(m->u.stats_reply.stats, m->u.stats_reply.nstats, v);
}

/* The master told the owners first, so any poll sent from now on is
 * answered from zero; one already in flight may carry the old numbers. */
void edge_stats_reset(void *arg)
{
    struct edge *e = arg;
    for (int g = 0; g < e->nowners; g++) {
        struct owner_ref *o = &e->owners[g];
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
    owner_take_stats(m, o->stats);
    o->stats_at_ms = clock_mono_ms();
}

static void on_stats_poll(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    for (int g = 0; g < e->nowners; g++) {
        struct owner_ref *o = &e->owners[g];
        if (o->stats_inflight)
            continue;
        struct elink *l = o->link[WIRE_ROLE_READ];
        uint64_t id;
        struct hkv_buf *b = elink_out(l, &id);
        if (wire_put_stats(b, id) == HKV_OK && elink_commit(l, id, poll_cb, o) == HKV_OK)
            o->stats_inflight = 1;
    }
}

/* ---- setup -------------------------------------------------------------------- */

int owners_setup(struct edge *e, const struct owner_hooks *hooks)
{
    const struct cfg *cfg = e->ctx->cfg;
    struct cmap_health ch = {0};
    if (e->ctx->cmap != NULL)
        cmap_health_get(e->ctx->cmap, &ch); /* the master forks edges once it is set */
    uint32_t writer = worker_edge_id(ch.host_number, e->ctx->slot);
    while (e->incarnation == 0 || e->incarnation == WIRE_PREV_UNKNOWN)
        if (getrandom(&e->incarnation, sizeof(e->incarnation), 0) != sizeof(e->incarnation))
            e->incarnation = ((uint64_t)getpid() << 32) ^ (uint64_t)clock_unix_ms();
    e->router = router_create(cfg);
    e->nowners = cfg->hot_owners + cfg->cold_owners;
    e->owners = calloc((size_t)(e->nowners > 0 ? e->nowners : 1), sizeof(*e->owners));
    e->stats_poll = event_new(e->base, -1, EV_PERSIST, on_stats_poll, e);
    if (e->router == NULL || e->owners == NULL || e->stats_poll == NULL)
        return -1;
    for (int g = 0; g < e->nowners; g++) {
        struct owner_ref *o = &e->owners[g];
        o->e = e;
        o->pool = g < cfg->hot_owners ? CFG_POOL_HOT : CFG_POOL_COLD;
        o->index = g < cfg->hot_owners ? g : g - cfg->hot_owners;
        char path[TOPO_PATH_MAX], name[64];
        topo_owner_socket(cfg, o->pool, o->index, path, sizeof(path));
        for (int role = WIRE_ROLE_READ; role <= WIRE_ROLE_PUSH; role++) {
            static const char *const roles[] = {"read", "write", "push"};
            snprintf(name, sizeof(name), "%s/%d %s", topo_pool_name(o->pool), o->index, roles[role]);
            struct elink_opts lo = {
                .path = path, .name = name, .edge_id = writer,
                .incarnation = e->incarnation, .colo = e->ectx->colo_name,
                .role = (uint8_t)role, .timeout_ms = cfg->write_timeout_ms,
                .max_frame = (size_t)cfg->wire_max_frame, .drained = hooks->drained,
                .drained_arg = e, .push = hooks->push, .push_arg = o,
            };
            o->link[role] = elink_create(e->base, &lo);
            if (o->link[role] == NULL)
                return -1;
        }
    }
    struct timeval tv = {1, 0};
    event_add(e->stats_poll, &tv);
    return 0;
}

void owners_reload(struct edge *e, const struct cfg *cfg)
{
    if (e->router != NULL)
        router_set_config(e->router, cfg);
    for (int g = 0; g < e->nowners; g++)
        for (int role = 0; role < 3; role++)
            if (e->owners[g].link[role] != NULL)
                elink_set_timeout(e->owners[g].link[role], cfg->write_timeout_ms);
}

void owners_teardown(struct edge *e)
{
    if (e->stats_poll)
        event_free(e->stats_poll);
    e->stats_poll = NULL;
    for (int g = 0; e->owners != NULL && g < e->nowners; g++)
        for (int role = 0; role < 3; role++)
            elink_destroy(&e->owners[g].link[role]);
    free(e->owners);
    e->owners = NULL;
    e->nowners = 0;
    router_destroy(&e->router);
}

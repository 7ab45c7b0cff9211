/*
 * agent_core.c - what the agent's registration and watch share (see
 * agent_int.h): etcd's reachability as the health shows it, retry clocks,
 * and the step from "every key of revision R is applied" to a published,
 * saved map.
 *
 * Reachability is logged on change only (one line when etcd stops
 * answering, one when it answers again), so an outage of an hour is two
 * lines, not one per retry.  A refused map is logged every time: it is an
 * operator's mistake in etcd that routing is ignoring.
 */
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/core/clock.h"
#include "server/core/log.h"

void agent_health_push(struct agent *a)
{
    cmap_health_set(a->ctx->cmap, &a->h);
}

void agent_etcd_ok(struct agent *a)
{
    if (a->etcd_said == 2)
        log_notice("etcd answers again");
    a->etcd_said = 1;
    a->h.etcd_up = 1;
    a->h.etcd_ok_ms = clock_unix_ms();
}

void agent_etcd_failed(struct agent *a, const char *what, const struct etcd_result *r)
{
    const char *why = r == NULL ? "no answer"
                      : r->status == HKV_ETIMEDOUT ? "timed out"
                      : r->status == HKV_EIO ? "no connection"
                      : r->status == HKV_EPROTO ? "an answer that is not etcd's"
                      : r->message != NULL ? r->message : "refused";
    if (r != NULL && r->status == HKV_EINVAL) {
        /* etcd answered: it is up, it said no */
        agent_etcd_ok(a);
        log_verbose("etcd: %s: %s (code %d)", what, why, r->code);
        return;
    }
    if (a->etcd_said != 2)
        log_warning("etcd does not answer (%s: %s); the host keeps its map (revision %lld) and "
                    "retries", what, why, (long long)cmap_revision(a->ctx->cmap));
    a->etcd_said = 2;
    a->h.etcd_up = 0;
    agent_health_push(a);
}

void agent_retry_failed(struct agent_retry *r)
{
    r->inflight = 0;
    r->backoff_ms = r->backoff_ms < AGENT_BACKOFF_MIN_MS ? AGENT_BACKOFF_MIN_MS
                    : r->backoff_ms * 2 > AGENT_BACKOFF_MAX_MS ? AGENT_BACKOFF_MAX_MS
                                                               : r->backoff_ms * 2;
    r->due_ms = clock_mono_ms() + r->backoff_ms;
}

void agent_retry_ok(struct agent_retry *r)
{
    r->inflight = 0;
    r->backoff_ms = 0;
    r->due_ms = 0;
}

int agent_retry_due(const struct agent_retry *r, int64_t now)
{
    return !r->inflight && now >= r->due_ms;
}

void agent_local_owner(const struct agent *a, int g, enum cfg_pool *pool, int *k, char *id,
                       size_t cap)
{
    const struct agent_opts *opt = &a->opt;
    *pool = g < opt->hot_owners ? CFG_POOL_HOT : CFG_POOL_COLD;
    *k = g < opt->hot_owners ? g : g - opt->hot_owners;
    snprintf(id, cap, "%s/%s/%d", opt->host, topo_pool_name(*pool), *k);
}

/* Every local owner is in t under the number it was registered with. */
static int owners_in(const struct agent *a, const struct cmap_table *t)
{
    for (int g = 0; g < a->nowners; g++) {
        enum cfg_pool pool;
        int k;
        char id[CMAP_NAME_MAX];
        agent_local_owner(a, g, &pool, &k, id, sizeof(id));
        if (cmap_owner_by_id(t, a->opt.host, pool, k) != a->owner_num[g])
            return 0;
    }
    return 1;
}

static void announce(struct agent *a, unsigned host_number)
{
    a->h.host_number = host_number;
    agent_health_push(a);
    log_notice("host %s is host number %u in cluster %s (map revision %lld)",
               a->opt.host, host_number, a->opt.cluster,
               (long long)cmap_revision(a->ctx->cmap));
}

void agent_announce_if_ready(struct agent *a)
{
    if (a->h.host_number != 0 || !a->registered)
        return;
    if (cmap_snapshot(a->ctx->cmap, a->scratch) > 0 && owners_in(a, a->scratch))
        announce(a, a->host_number);
}

int agent_commit(struct agent *a, int64_t rev)
{
    const struct cmap_table *t;
    char why[256];
    if (rev > a->applied_rev)
        a->applied_rev = rev;
    if (agent_map_commit(a->map, rev, &t, why, sizeof(why)) != HKV_OK) {
        a->h.refused_maps++;
        agent_health_push(a);
        log_warning("ALARM: cluster map at etcd revision %lld refused: %s; routing stays on "
                    "revision %lld until the map is repaired", (long long)rev, why,
                    (long long)cmap_revision(a->ctx->cmap));
        return 0;
    }
    if (cmap_publish(a->ctx->cmap, t) != HKV_OK)
        return 0; /* validated just above: cannot happen */
    a->h.from_disk = 0;
    agent_health_push(a);
    agent_saver_post_map(a->saver, t);
    log_verbose("cluster map revision %lld published (%u hot, %u cold leaves)", (long long)rev,
                t->nleaves[CFG_POOL_HOT], t->nleaves[CFG_POOL_COLD]);
    if (a->h.host_number == 0 && a->registered && owners_in(a, t))
        announce(a, a->host_number);
    return 1;
}

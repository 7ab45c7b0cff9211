/*
 * edge_metrics_colo.c - owners, colo segments and the cluster in /metrics;
 * see edge_metrics_colo.h.
 *
 * The owners' numbers are this edge's copy of each owner's last STATS (the
 * 1 s poll that INFO reads too), so a scrape never waits for an owner; an
 * owner that has not answered for three polls is reported down
 * (hotkvd_owner_up 0) and its counters are left out rather than repeated
 * stale.  The colo segments are mapped in every edge (the master made them
 * before forking), so one edge reads every colo's counter rows, which the
 * segments sum over their processes.  The cache's and limiter's counter
 * lists (CACHE_COUNTERS, RL_COUNTERS) name the families, as CTR_OWNER does.
 */
#include "server/edge/edge_metrics_colo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/core/clock.h"
#include "server/core/counters_prom.h"
#include "server/core/topo.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"

#define OWNER_UP_MS 3000           /* three STATS polls */
#define MET_COLOS 16               /* the config's bound on colos */

/* ---- owners -------------------------------------------------------------- */

static int owner_answered(const struct owner_ref *o, int64_t now)
{
    return o->stats_at_ms != 0 && now - o->stats_at_ms < OWNER_UP_MS;
}

hkv_status metrics_owners(struct edge *e, struct hkv_buf *out)
{
    int n = e->nowners > 0 && e->owners != NULL ? e->nowners : 0;
    int64_t now = clock_mono_ms();
    struct prom_label *labels = calloc((size_t)(n > 0 ? n : 1), 2 * sizeof(*labels));
    struct ctr_prom_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof(*rows));
    char (*idx)[16] = calloc((size_t)(n > 0 ? n : 1), sizeof(*idx));
    hkv_status s = labels != NULL && rows != NULL && idx != NULL ? HKV_OK : HKV_ENOMEM;
    size_t nrows = 0;
    for (int g = 0; s == HKV_OK && g < n; g++) {
        struct owner_ref *o = &e->owners[g];
        snprintf(idx[g], sizeof(idx[g]), "%d", o->index);
        labels[2 * g] = (struct prom_label){"pool", topo_pool_name(o->pool)};
        labels[2 * g + 1] = (struct prom_label){"owner", idx[g]};
        if (owner_answered(o, now))
            rows[nrows++] = (struct ctr_prom_row){&labels[2 * g], 2, o->stats};
    }
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_owner_up", PROM_GAUGE,
                        "1 when the owner answered this edge's STATS poll in the last 3 s");
    for (int g = 0; s == HKV_OK && g < n; g++)
        s = prom_sample(out, "hotkvd_owner_up", &labels[2 * g], 2,
                        owner_answered(&e->owners[g], now));
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_owner_stats_age_seconds", PROM_GAUGE,
                        "Age of the owner's last STATS answer (none yet: no sample)");
    for (int g = 0; s == HKV_OK && g < n; g++)
        if (e->owners[g].stats_at_ms != 0)
            s = prom_sample(out, "hotkvd_owner_stats_age_seconds", &labels[2 * g], 2,
                            (double)(now - e->owners[g].stats_at_ms) / 1000.0);
    if (s == HKV_OK)
        s = ctr_prom_render(out, ctr_owner_defs, CTR_OWNER_COUNT, rows, nrows);
    free(labels);
    free(rows);
    free(idx);
    return s;
}

/* ---- colo segments ------------------------------------------------------- */

static const struct ctr_def cache_defs[] = {
#define X(name, help) {#name, CTR_COUNTER, help},
    CACHE_COUNTERS(X)
#undef X
};
static const struct ctr_def rl_defs[] = {
#define X(name, help) {#name, CTR_COUNTER, help},
    RL_COUNTERS(X)
#undef X
};

/* The levels of a segment, one family each: name, help, and the value of
 * colo k (its stats already read into the caller's arrays). */
static hkv_status gauges(struct hkv_buf *out, const char *name, const char *help,
                         const struct prom_label *labels, const uint64_t *v, int n)
{
    hkv_status s = prom_family(out, name, PROM_GAUGE, help);
    for (int k = 0; s == HKV_OK && k < n; k++)
        if (labels[k].value != NULL)
            s = prom_sample_u64(out, name, &labels[k], 1, v[k]);
    return s;
}

hkv_status metrics_colos(struct edge *e, struct hkv_buf *out)
{
    const struct edge_ctx *x = e->ectx;
    int all = x != NULL && x->colo_caches != NULL && x->ncolos > 0;
    int n = all ? (x->ncolos < MET_COLOS ? x->ncolos : MET_COLOS) : 1;
    char names[MET_COLOS][TOPO_COLO_NAME_MAX];
    struct prom_label cl[MET_COLOS], rl[MET_COLOS];
    int64_t cv[MET_COLOS][CACHE_CTR_COUNT], rv[MET_COLOS][RL_CTR_COUNT];
    uint64_t used[MET_COLOS], entries[MET_COLOS], cap[MET_COLOS], buckets[MET_COLOS],
        bcap[MET_COLOS];
    struct ctr_prom_row crow[MET_COLOS], rrow[MET_COLOS];
    size_t nc = 0, nr = 0;
    for (int k = 0; k < n; k++) {
        int colo = all ? k : (x != NULL ? x->colo_index : 0);
        struct cache *c = all ? x->colo_caches[k] : e->cache;
        struct rl *r = all ? (x->colo_limiters != NULL ? x->colo_limiters[k] : NULL) : e->rl;
        topo_colo_name(e->ctx->cfg, colo, names[k], sizeof(names[k]));
        cl[k] = rl[k] = (struct prom_label){"colo", NULL};
        if (c != NULL) {
            struct cache_stats st;
            cache_stats(c, &st);
            for (int i = 0; i < CACHE_CTR_COUNT; i++)
                cv[k][i] = (int64_t)st.counters[i];
            used[k] = st.used_memory;
            entries[k] = st.entries;
            cap[k] = st.capacity;
            cl[k].value = names[k];
            crow[nc++] = (struct ctr_prom_row){&cl[k], 1, cv[k]};
        }
        if (r != NULL) {
            struct rl_stats st;
            rl_stats(r, rl_now(), &st);
            for (int i = 0; i < RL_CTR_COUNT; i++)
                rv[k][i] = (int64_t)st.counters[i];
            buckets[k] = st.buckets;
            bcap[k] = st.capacity;
            rl[k].value = names[k];
            rrow[nr++] = (struct ctr_prom_row){&rl[k], 1, rv[k]};
        }
    }
    hkv_status s = ctr_prom_render(out, cache_defs, CACHE_CTR_COUNT, crow, nc);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_cache_used_bytes", "Bytes of the colo cache's live entries", cl,
                   used, n);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_cache_entries", "Entries in the colo cache", cl, entries, n);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_cache_capacity_bytes", "Bytes the colo cache can give entries",
                   cl, cap, n);
    if (s == HKV_OK)
        s = ctr_prom_render(out, rl_defs, RL_CTR_COUNT, rrow, nr);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_ratelimit_buckets",
                   "Rate-limit buckets in use (a client not yet refilled to full)", rl, buckets, n);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_ratelimit_buckets_capacity", "Rate-limit buckets the table has",
                   rl, bcap, n);
    return s;
}

/* ---- the cluster --------------------------------------------------------- */

hkv_status metrics_cluster(struct edge *e, struct hkv_buf *out)
{
    /* CLUSTER METRICS GO HERE.  This branch has server/core/cmap.h but not
     * the map itself (ctx->cmap, cmap.c: branch h-agent).  Once it has,
     * when e->ctx->cmap != NULL:
     *   hotkvd_cluster_map_revision      gauge  cmap_revision()
     *   hotkvd_cluster_etcd_up           gauge  cmap_health.etcd_up
     *   hotkvd_cluster_etcd_last_ok_seconds gauge etcd_ok_ms / 1000 (unix)
     *   hotkvd_cluster_lease_ttl_seconds gauge  lease_ttl_ms / 1000
     *   hotkvd_cluster_lease_renewed_seconds gauge lease_renewed_ms / 1000
     *   hotkvd_cluster_watch_restarts_total counter compactions
     *   hotkvd_cluster_maps_refused_total counter refused_maps
     *   hotkvd_cluster_leaves{pool}      gauge  nleaves[pool] (a snapshot,
     *                                           taken only when the revision moved)
     * and nothing on a single host (no family at all). */
    (void)e;
    (void)out;
    return HKV_OK;
}

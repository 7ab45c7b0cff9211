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
 * The cluster's families come from info_cluster_view, the numbers INFO #
 * Cluster prints, except the links to other hosts' owners: INFO gives the
 * answering edge's, /metrics every edge's (the host), from the board.
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
#include "server/edge/edge_cache.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_rl.h"
#include "server/edge/info_cluster.h"

#define OWNER_UP_MS 3000           /* three STATS polls */
#define MET_COLOS 16               /* the config's bound on colos */

/* ---- owners -------------------------------------------------------------- */

static int owner_answered(const struct owner_ref *o, int64_t now)
{
    return o->stats_at_ms != 0 && now - o->stats_at_ms < OWNER_UP_MS;
}

hkv_status metrics_owners(struct edge *e, struct hkv_buf *out)
{
    int n = e->owners != NULL && e->owners->n > 0 ? e->owners->n : 0;
    int64_t now = clock_mono_ms();
    struct prom_label *labels = calloc((size_t)(n > 0 ? n : 1), 2 * sizeof(*labels));
    struct ctr_prom_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof(*rows));
    char (*idx)[16] = calloc((size_t)(n > 0 ? n : 1), sizeof(*idx));
    hkv_status s = labels != NULL && rows != NULL && idx != NULL ? HKV_OK : HKV_ENOMEM;
    size_t nrows = 0;
    for (int g = 0; s == HKV_OK && g < n; g++) {
        struct owner_ref *o = &e->owners->ref[g];
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
                        owner_answered(&e->owners->ref[g], now));
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_owner_stats_age_seconds", PROM_GAUGE,
                        "Age of the owner's last STATS answer (none yet: no sample)");
    for (int g = 0; s == HKV_OK && g < n; g++)
        if (e->owners->ref[g].stats_at_ms != 0)
            s = prom_sample(out, "hotkvd_owner_stats_age_seconds", &labels[2 * g], 2,
                            (double)(now - e->owners->ref[g].stats_at_ms) / 1000.0);
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
static const struct ctr_def app_defs[] = {
#define X(name, help) {"app_" #name, CTR_COUNTER, "CL.THROTTLE: " help},
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
    struct prom_label cl[MET_COLOS], rl[MET_COLOS], al[MET_COLOS];
    int64_t cv[MET_COLOS][CACHE_CTR_COUNT], rv[MET_COLOS][RL_CTR_COUNT], av[MET_COLOS][RL_CTR_COUNT];
    uint64_t used[MET_COLOS], entries[MET_COLOS], cap[MET_COLOS], buckets[MET_COLOS],
        bcap[MET_COLOS], aused[MET_COLOS], acap[MET_COLOS];
    struct ctr_prom_row crow[MET_COLOS], rrow[MET_COLOS], arow[MET_COLOS];
    size_t nc = 0, nr = 0, na = 0;
    for (int k = 0; k < n; k++) {
        int colo = all ? k : (x != NULL ? x->colo_index : 0);
        struct cache *c = all ? x->colo_caches[k] : e->cache->cache;
        struct rl *r = all ? (x->colo_limiters != NULL ? x->colo_limiters[k] : NULL) : e->rl->lim;
        struct rl *a = all ? (x->colo_app_limiters != NULL ? x->colo_app_limiters[k] : NULL)
                           : e->rl->app;
        topo_colo_name(edge_config(e), colo, names[k], sizeof(names[k]));
        cl[k] = rl[k] = al[k] = (struct prom_label){"colo", NULL};
        if (a != NULL) {
            struct rl_stats st;
            rl_stats_fast(a, &st);
            for (int i = 0; i < RL_CTR_COUNT; i++)
                av[k][i] = (int64_t)st.counters[i];
            aused[k] = st.buckets;
            acap[k] = st.capacity;
            al[k].value = names[k];
            arow[na++] = (struct ctr_prom_row){&al[k], 1, av[k]};
        }
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
    if (s == HKV_OK)
        s = ctr_prom_render(out, app_defs, RL_CTR_COUNT, arow, na);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_app_ratelimit_slots_used",
                   "CL.THROTTLE buckets holding a key (idle ones included)", al, aused, n);
    if (s == HKV_OK)
        s = gauges(out, "hotkvd_app_ratelimit_capacity", "CL.THROTTLE buckets the table has", al,
                   acap, n);
    return s;
}

/* ---- the cluster --------------------------------------------------------- */

static double ms_to_s(int64_t ms)
{
    return (double)ms / 1000.0;
}

/* Every edge's links up to other hosts' owners (its board slot, stored at
 * each STATS poll), summed per colo as the edge counters are. */
static hkv_status remote_links(struct edge *e, struct hkv_buf *out)
{
    struct board *bd = e->ctx->board;
    int ncolo = edge_config(e)->colos > 0 ? edge_config(e)->colos : 1;
    if (ncolo > MET_COLOS)
        ncolo = MET_COLOS;
    uint64_t up[MET_COLOS] = {0};
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *sl = &bd->slots[i];
        if (atomic_load_explicit(&sl->role, memory_order_relaxed) != BOARD_EDGE)
            continue;
        uint32_t c = atomic_load_explicit(&sl->colo, memory_order_relaxed);
        int k = c == 0 ? 0 : (int)c - 1;
        up[k < ncolo ? k : ncolo - 1] += board_load(&sl->remote_links_up);
    }
    char names[MET_COLOS][TOPO_COLO_NAME_MAX];
    struct prom_label labels[MET_COLOS];
    for (int k = 0; k < ncolo; k++) {
        topo_colo_name(edge_config(e), k, names[k], sizeof(names[k]));
        labels[k] = (struct prom_label){"colo", names[k]};
    }
    return gauges(out, "hotkvd_cluster_remote_links_up",
                  "Links up from the colo's edges to other hosts' owners (one per edge and owner)",
                  labels, up, ncolo);
}

/* One gauge or counter family with a single unlabelled sample (none when
 * `have` is 0: a time that never happened). */
static hkv_status one(struct hkv_buf *out, const char *name, enum prom_type type,
                      const char *help, double v, int have)
{
    hkv_status s = prom_family(out, name, type, help);
    return s == HKV_OK && have ? prom_sample(out, name, NULL, 0, v) : s;
}

hkv_status metrics_cluster(struct edge *e, struct hkv_buf *out)
{
    struct cluster_view v;
    if (info_cluster_view(e, &v) != 0)
        return HKV_OK; /* a single host: no cluster family at all */
    const struct cmap_health *h = &v.h;
    hkv_status s = one(out, "hotkvd_cluster_host_number", PROM_GAUGE,
                       "This host's number in the cluster (0: not known yet)", h->host_number, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_map_revision", PROM_GAUGE,
                "The etcd revision the routing table in use reflects (0: none yet)",
                (double)v.revision, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_map_from_disk", PROM_GAUGE,
                "1 while the table in use was loaded from dir, not (yet) read from etcd",
                h->from_disk, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_etcd_up", PROM_GAUGE,
                "1 when the agent's last call reached etcd", h->etcd_up, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_etcd_last_ok_timestamp_seconds", PROM_GAUGE,
                "When etcd last answered the agent, seconds since the Unix epoch (none yet: "
                "no sample)", ms_to_s(h->etcd_ok_ms), h->etcd_ok_ms > 0);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_lease_ttl_seconds", PROM_GAUGE,
                "The host lease's TTL as etcd last granted or renewed it", ms_to_s(h->lease_ttl_ms),
                1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_lease_renewed_timestamp_seconds", PROM_GAUGE,
                "When the host lease was last renewed, seconds since the Unix epoch (none yet: "
                "no sample)", ms_to_s(h->lease_renewed_ms), h->lease_renewed_ms > 0);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_watch_revision", PROM_GAUGE,
                "The last etcd revision the map's watch saw (events or progress)",
                (double)h->watch_revision, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_watch_restarts_total", PROM_COUNTER,
                "Times the watch restarted from a full read (its revision was compacted)",
                (double)h->compactions, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_maps_refused_total", PROM_COUNTER,
                "Map revisions not applied: their leaves did not partition the hash space",
                (double)h->refused_maps, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_leaf_auto_moves_total", PROM_COUNTER,
                "Leaf moves this host's agent ordered by itself (busy owners)",
                (double)h->auto_moves, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_leaf_auto_splits_total", PROM_COUNTER,
                "Leaf splits this host's agent ordered by itself (busy owners)",
                (double)h->auto_splits, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_leaf_auto_refused_total", PROM_COUNTER,
                "Busy leaves left alone because one key carried most of their work",
                (double)h->auto_refused, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_owners_known", PROM_GAUGE, "Owners the map names",
                v.owners_known, 1);
    if (s == HKV_OK)
        s = one(out, "hotkvd_cluster_owners_live", PROM_GAUGE,
                "Owners the map names whose host's registration is alive", v.owners_live, 1);
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_cluster_leaves", PROM_GAUGE, "Leaves of the pool in the map");
    for (int p = 0; s == HKV_OK && p < CMAP_NPOOLS; p++) {
        struct prom_label l = {"pool", topo_pool_name((enum cfg_pool)p)};
        s = prom_sample_u64(out, "hotkvd_cluster_leaves", &l, 1, v.leaves[p]);
    }
    if (s == HKV_OK)
        s = remote_links(e, out);
    return s;
}

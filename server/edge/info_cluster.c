/*
 * info_cluster.c - the cluster map as INFO # Cluster and /metrics see it on a
 * cluster host; see info_cluster.h.
 *
 * The table is copied from the segment only when its revision moved since
 * this edge last looked (a table is most of a megabyte; INFO and scrapes may
 * come often), into a copy this file keeps for the process; INFO and
 * /metrics both go through info_cluster_view, so they cannot disagree.
 */
#include "server/edge/info_cluster.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"

static struct cmap_table *seen; /* this process's copy, for INFO and /metrics only */
static int64_t seen_rev;

int info_remote_links_up(const struct edge *e)
{
    return edge_remote_links_up(e);
}

int info_cluster_view(struct edge *e, struct cluster_view *v)
{
    struct cmap *m = e->ctx->cmap;
    if (m == NULL)
        return -1;
    memset(v, 0, sizeof(*v));
    cmap_health_get(m, &v->h);
    v->revision = cmap_revision(m);
    if (seen == NULL)
        seen = calloc(1, sizeof(*seen));
    if (seen != NULL && v->revision != seen_rev) {
        int64_t got = cmap_snapshot(m, seen);
        seen_rev = got > 0 ? got : 0; /* 0: try again next time */
    }
    if (seen == NULL || seen_rev <= 0)
        return 0;
    v->have_table = 1;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (cmap_owner(seen, n) != NULL) {
            v->owners_known++;
            v->owners_live += seen->owners[n].live != 0;
        }
    for (int p = 0; p < CMAP_NPOOLS; p++)
        v->leaves[p] = seen->nleaves[p];
    return 0;
}

static long long ago(int64_t now, int64_t then)
{
    return then > 0 ? (long long)(now - then) : -1LL;
}

void info_cluster_lines(struct hkv_buf *b, struct edge *e)
{
    const struct cfg *cfg = edge_config(e);
    struct cluster_view v;
    if (info_cluster_view(e, &v) != 0)
        return;
    const struct cmap_health *h = &v.h;
    int64_t now = clock_unix_ms();
    buf_printf(b,
               "cluster:%s\r\nhost:%s\r\nhost_number:%u\r\nmap_revision:%lld\r\n"
               "map_from_disk:%u\r\netcd_up:%u\r\netcd_last_ok_ms_ago:%lld\r\nlease_id:%lld\r\n"
               "lease_ttl_ms:%lld\r\nlease_renewed_ms_ago:%lld\r\nwatch_revision:%lld\r\n"
               "watch_compactions:%lld\r\nrefused_maps:%lld\r\nowners_known:%u\r\n"
               "owners_live:%u\r\nleaves_hot:%u\r\nleaves_cold:%u\r\nremote_links_up:%d\r\n",
               cfg->cluster, cfg->host, h->host_number, (long long)v.revision, h->from_disk,
               h->etcd_up, ago(now, h->etcd_ok_ms), (long long)h->lease_id,
               (long long)h->lease_ttl_ms, ago(clock_mono_ms(), h->lease_renewed_mono_ms),
               (long long)h->watch_revision, (long long)h->compactions,
               (long long)h->refused_maps, v.owners_known, v.owners_live,
               v.leaves[CFG_POOL_HOT], v.leaves[CFG_POOL_COLD], info_remote_links_up(e));
}

/*
 * info_cluster.c - INFO # Cluster on a cluster host; see info_cluster.h.
 *
 * The table is copied from the segment only when its revision moved since
 * this edge last looked (a table is most of a megabyte; INFO may be called
 * often), into a copy this file keeps for the process.
 */
#include "server/edge/info_cluster.h"

#include <stdlib.h>

#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/edge/edge_owners.h"

static struct cmap_table *seen; /* this process's copy, for INFO only */
static int64_t seen_rev;

int info_remote_links_up(const struct edge *e)
{
    return edge_remote_links_up(e);
}

static long long ago(int64_t now, int64_t then)
{
    return then > 0 ? (long long)(now - then) : -1LL;
}

void info_cluster_lines(struct hkv_buf *b, struct edge *e)
{
    const struct cfg *cfg = e->ctx->cfg;
    struct cmap *m = e->ctx->cmap;
    if (m == NULL)
        return;
    struct cmap_health h;
    cmap_health_get(m, &h);
    int64_t rev = cmap_revision(m);
    if (seen == NULL)
        seen = calloc(1, sizeof(*seen));
    if (seen != NULL && rev != seen_rev) {
        int64_t got = cmap_snapshot(m, seen);
        seen_rev = got > 0 ? got : 0; /* 0: try again at the next INFO */
    }
    unsigned known = 0, live = 0;
    if (seen != NULL && seen_rev > 0)
        for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
            if (cmap_owner(seen, n) != NULL) {
                known++;
                live += seen->owners[n].live != 0;
            }
    int64_t now = clock_unix_ms();
    buf_printf(b,
               "cluster:%s\r\nhost:%s\r\nhost_number:%u\r\nmap_revision:%lld\r\n"
               "map_from_disk:%u\r\netcd_up:%u\r\netcd_last_ok_ms_ago:%lld\r\nlease_id:%lld\r\n"
               "lease_ttl_ms:%lld\r\nlease_renewed_ms_ago:%lld\r\nwatch_revision:%lld\r\n"
               "watch_compactions:%lld\r\nrefused_maps:%lld\r\nowners_known:%u\r\n"
               "owners_live:%u\r\nleaves_hot:%u\r\nleaves_cold:%u\r\nremote_links_up:%d\r\n",
               cfg->cluster, cfg->host, h.host_number, (long long)rev, h.from_disk, h.etcd_up,
               ago(now, h.etcd_ok_ms), (long long)h.lease_id, (long long)h.lease_ttl_ms,
               ago(now, h.lease_renewed_ms), (long long)h.watch_revision,
               (long long)h.compactions, (long long)h.refused_maps, known, live,
               seen_rev > 0 ? seen->nleaves[CFG_POOL_HOT] : 0,
               seen_rev > 0 ? seen->nleaves[CFG_POOL_COLD] : 0, info_remote_links_up(e));
}

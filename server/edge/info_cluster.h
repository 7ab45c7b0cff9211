/*
 * info_cluster.h - what a cluster host (`cluster` set) reports about its
 * cluster map: INFO's "# Cluster" lines, after Redis's cluster_enabled:0
 * (hotkvd's cluster is not Redis Cluster: clients must keep talking to one
 * endpoint), and the view /metrics renders as hotkvd_cluster_* families
 * (edge_metrics_colo.c), so both read one source.  Everything comes from the
 * cluster map segment the agent writes (server/core/cmap.h):
 *
 *   cluster, host, host_number      who this host is (0: not known yet)
 *   map_revision, map_from_disk     the routing table and where it came from
 *   etcd_up, etcd_last_ok_ms_ago    the agent's link to etcd (-1: never)
 *   lease_id, lease_ttl_ms, lease_renewed_ms_ago     the host lease
 *   watch_revision, watch_compactions, refused_maps  the watch
 *   owners_known, owners_live, leaves_hot, leaves_cold   the table
 *   remote_links_up                 this edge's links to other hosts' owners
 *                                   (/metrics: every edge's, from the board)
 */
#ifndef HKV_INFO_CLUSTER_H
#define HKV_INFO_CLUSTER_H

#include <stdint.h>

#include "proto/buf.h"
#include "server/core/cmap.h"
#include "server/edge/edge_int.h"

/* The map as INFO and /metrics show it.  The table's counts come from a
 * copy this process keeps and takes again only when the revision moved (a
 * table is most of a megabyte; INFO and scrapes may come often). */
struct cluster_view {
    struct cmap_health h;
    int64_t revision;             /* the published table's; 0 = none yet */
    int have_table;               /* the counts below are a table's (else all 0) */
    unsigned owners_known, owners_live;
    unsigned leaves[CMAP_NPOOLS]; /* by enum cfg_pool */
};

/* Fills *v on a cluster host: 0; -1 on a single host (nothing filled). */
int info_cluster_view(struct edge *e, struct cluster_view *v);

/* Appends the lines (nothing on a single host). */
void info_cluster_lines(struct hkv_buf *b, struct edge *e);

/* How many of this edge's links to owners on other hosts are up (one per
 * owner: edge_remote_links_up, server/edge/edge_owners.h). */
int info_remote_links_up(const struct edge *e);

#endif

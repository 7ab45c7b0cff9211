/*
 * info_cluster.h - INFO's "# Cluster" lines of a cluster host (`cluster`
 * set), after Redis's cluster_enabled:0 (hotkvd's cluster is not Redis
 * Cluster: clients must keep talking to one endpoint).  Everything comes
 * from the cluster map segment the agent writes (server/core/cmap.h):
 *
 *   cluster, host, host_number      who this host is (0: not known yet)
 *   map_revision, map_from_disk     the routing table and where it came from
 *   etcd_up, etcd_last_ok_ms_ago    the agent's link to etcd (-1: never)
 *   lease_id, lease_ttl_ms, lease_renewed_ms_ago     the host lease
 *   watch_revision, watch_compactions, refused_maps  the watch
 *   owners_known, owners_live, leaves_hot, leaves_cold   the table
 *   remote_links_up                 this edge's links to other hosts' owners
 */
#ifndef HKV_INFO_CLUSTER_H
#define HKV_INFO_CLUSTER_H

#include "proto/buf.h"
#include "server/edge/edge_int.h"

/* Appends the lines (nothing on a single host). */
void info_cluster_lines(struct hkv_buf *b, struct edge *e);

/* How many of this edge's links to owners on other hosts are up (one per
 * owner: edge_remote_links_up, server/edge/edge_owners.h). */
int info_remote_links_up(const struct edge *e);

#endif

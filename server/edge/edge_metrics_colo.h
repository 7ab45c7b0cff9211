/*
 * edge_metrics_colo.h - the parts of /metrics (edge_metrics.h) that do not
 * come from the scoreboard: the shard owners, as this edge's last STATS of
 * each saw them (edge_owners.h: owner and persister counters and gauges,
 * labels `pool` and `owner`, the owner's index in its pool), the colo
 * segments (cache and rate limiter counters and levels, label `colo`), and
 * the cluster map when the host is in a cluster.
 *
 * Each appends whole families to out: HKV_OK, HKV_ENOMEM, or HKV_EINVAL
 * for a bad name (a defect the unit test catches).
 */
#ifndef HKV_EDGE_METRICS_COLO_H
#define HKV_EDGE_METRICS_COLO_H

#include "proto/buf.h"
#include "proto/hkv.h"

struct edge;

/* Every CTR_OWNER family, one sample per owner that answered STATS, and
 * hotkvd_owner_up / hotkvd_owner_stats_age_seconds for every owner. */
hkv_status metrics_owners(struct edge *e, struct hkv_buf *out);
/* CACHE_COUNTERS and RL_COUNTERS per colo, and their segments' levels. */
hkv_status metrics_colos(struct edge *e, struct hkv_buf *out);
/* A cluster host's hotkvd_cluster_* families (the map, the agent's link to
 * etcd and its lease, the watch, owners and leaves of the table: INFO #
 * Cluster's numbers, from info_cluster_view; the links up to other hosts'
 * owners summed per colo); nothing at all on a single host. */
hkv_status metrics_cluster(struct edge *e, struct hkv_buf *out);

#endif

/*
 * info_leaves.h - INFO's "# Leaves" section on a cluster host: the leaf
 * moves and splits of the owners this edge polls (every owner it reaches,
 * this host's and the others'), from their STATS (the leaf_* fields of
 * server/core/counters.h, refreshed every second): counters are summed,
 * the last/longest/percentile gauges are the largest any owner reports.
 *
 *   leaf_moves_started, _committed, _aborted, _refused, _in_doubt
 *   leaf_moves_outgoing, leaf_moves_incoming       under way now
 *   leaf_moves_received, leaf_moves_dropped        the targets' side
 *   leaf_splits
 *   leaf_fence_ms_last, leaf_fence_ms_max          how long writes waited
 *   leaf_copy_rows, leaf_copy_bytes, leaf_copy_ms_last, leaf_copy_bytes_per_second
 *   leaf_parked, leaf_parked_writes, leaf_parked_now, leaf_parked_ms_max,
 *   leaf_parked_ms_p99, leaf_parked_timeouts       requests that waited
 */
#ifndef HKV_INFO_LEAVES_H
#define HKV_INFO_LEAVES_H

#include "proto/buf.h"
#include "server/edge/edge_int.h"

/* The section (nothing on a single host). */
void info_leaves(struct hkv_buf *b, struct edge *e);

#endif

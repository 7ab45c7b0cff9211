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
 *
 * and the automatic moves of this host's agent (server/agent/agent_policy.h,
 * through the map segment's health):
 *   auto_moves_enabled                             the auto-moves directive
 *   auto_moves_started, auto_splits_started        orders given
 *   auto_refused_hot_key, auto_refused_last_key    leaves left alone: one key
 *                                                  carried most of their work
 *   owner_<n>_busy                                 each polled owner's loop busy
 *                                                  fraction over its last window
 */
#ifndef HKV_INFO_LEAVES_H
#define HKV_INFO_LEAVES_H

#include "proto/buf.h"
#include "server/edge/edge_int.h"

/* The section (nothing on a single host). */
void info_leaves(struct hkv_buf *b, struct edge *e);
/* hotkvd's lines of INFO "# Replication" (CLUSTER.md §7; nothing on a
 * single host without leaf-moves): `replicas` and the repl_* fields of
 * server/core/counters.h, summed over the polled owners like # Leaves
 * (repl_role_primary_leaves, repl_role_follower_leaves, repl_followers,
 * repl_isr_members, repl_lag_entries_max, repl_lag_ms_max, repl_isr_adds,
 * repl_isr_removals, repl_acks_waited, repl_ack_timeouts, repl_deposed,
 * repl_waiting, repl_follows_seeded, _promoted, _dropped), then this host's
 * agent's: repl_promotions, repl_agent_isr_adds, repl_agent_isr_removals
 * (its CASes, dead followers' removals included), repl_follow_orders, _failed. */
void info_replicas(struct hkv_buf *b, struct edge *e);
/* key with anything outside printable ASCII (and , \\) as \\xHH. */
void info_key_escaped(struct hkv_buf *b, const char *key, size_t len);

#endif

/*
 * info_redis.h - INFO's sections named as Redis 7.0 names them, with
 * Redis's field names and hotkvd's honest values, for the whole host:
 *
 *   Memory        used_memory: bytes allocated by every process (each
 *                 publishes its anonymous resident bytes in its scoreboard
 *                 slot every 250 ms) plus the shared segments once (the
 *                 scoreboard, each colo's cache bytes in use);
 *                 used_memory_rss: the resident memory of the master and
 *                 every child less their shared pages, plus the same shared
 *                 segments once; maxmemory: the owners'
 *                 owner-maxmemory summed (keys past it leave memory for disk,
 *                 none is deleted: maxmemory_policy noeviction).
 *   Persistence   no RDB or AOF: rdb_changes_since_last_save is the keys not
 *                 yet persisted by the owners, rdb_last_save_time the time
 *                 before which every write is on disk, *_status err after a
 *                 failed SQLite transaction.
 *   Replication   role:master, no replicas.
 *   CPU           user and system time of the master and every child
 *                 (/proc), *_children 0, *_main_thread this edge's own.
 *   Modules, Cluster   none; cluster_enabled:0 (a hotkvd cluster host adds
 *                 its own lines: info_cluster.h).
 *   Commandstats, Errorstats   summed over every edge's slot (edge_stats.h).
 *   Latencystats  p50, p99 and p99.9 per command, in us, from every edge's
 *                 histograms (each within 12.5%: board.h).
 *
 * Each renders "# Name\r\n" and its lines, then a blank line.
 */
#ifndef HKV_INFO_REDIS_H
#define HKV_INFO_REDIS_H

#include "proto/buf.h"
#include "server/edge/edge_int.h"

void info_memory(struct hkv_buf *b, struct edge *e);
void info_persistence(struct hkv_buf *b, struct edge *e);
void info_replication(struct hkv_buf *b, struct edge *e);
void info_cpu(struct hkv_buf *b, struct edge *e);
void info_modules(struct hkv_buf *b, struct edge *e);
void info_commandstats(struct hkv_buf *b, struct edge *e);
void info_errorstats(struct hkv_buf *b, struct edge *e);
void info_latencystats(struct hkv_buf *b, struct edge *e);
void info_cluster(struct hkv_buf *b, struct edge *e);

/* Publishes this edge's colo cache bytes in its slot (for the Memory
 * section of every edge); from the edge's cron. */
void info_publish(struct edge *e);

#endif

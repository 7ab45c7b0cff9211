/*
 * info.h - INFO: the whole daemon's numbers, in Redis's "# Section" form:
 * Redis 7.0's sections in its order (info_redis.h has those hotkvd keeps
 * beside its own), then hotkvd's (Owners, Cache, Hotkeys, Ratelimit;
 * Processes when asked).  From the scoreboard, the colo segments and the
 * owners' STATS, so any edge answers the same thing.
 *
 * INFO with a section drawn from the owners (Keyspace, Owners, Memory,
 * Persistence) first asks every owner whose link is up for its STATS, so
 * keys= is exact, and waits at most 300 ms: an owner that is slow or down
 * is shown from its last answer (the 1 s poll's; its stats_age_ms says how
 * old), so INFO stays the tool to look at a sick daemon.
 */
#ifndef HKV_EDGE_INFO_H
#define HKV_EDGE_INFO_H

#include "proto/buf.h"
#include "proto/resp.h"
#include "server/edge/edge_int.h"

/* The INFO command (argv[0] "info"; the sections asked: none or "default",
 * "all", "everything", or names): asks the owners when a section needs
 * them, then answers (edge_conn.h: the reply may come later). */
struct conn;
void info_command(struct conn *c, int argc, const struct resp_slice *argv);

/* INFO all as it stands now, without asking the owners (their part is their
 * last answer, stats_age_ms old): /v1/stats (edge_http_stats.c). */
void info_text_now(struct edge *e, struct hkv_buf *out);

#endif

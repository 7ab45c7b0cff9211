/*
 * edge_monitor.h - MONITOR across every edge of the host.
 *
 * While a MONITOR client is open anywhere on the host, each edge writes a
 * line per command it runs into its monitor ring in the scoreboard (board.h),
 * and every edge with MONITOR clients reads all the rings every 10 ms and
 * sends the new lines to them.  Lines are Redis 7.0's:
 *   +<unix seconds>.<usec> [0 <client addr>] "cmd" "arg" ...
 * (arguments quoted and escaped as Redis's sdscatrepr; AUTH's and HELLO
 * AUTH's credentials "(redacted)"; admin commands, CONFIG and CLIENT
 * LIST/KILL among them, and refused ones not shown).  Each edge's lines come
 * in its order; lines of different edges are interleaved as they are read,
 * not by time.  A MONITOR client's output is bounded like any other
 * (client-output-buffer-limit: past it the client is closed); an edge whose
 * reading falls a whole ring (256 KB) behind another's writing closes its
 * MONITOR clients rather than send a stream with a hole in it.  A line is
 * cut at 64 KB (" ..." at the end).
 *
 * A MONITOR client can still run PING, QUIT, RESET and the like; a command
 * on keys gets Redis's "-ERR Replica can't interact with the keyspace".
 * When no MONITOR is open, a command costs one load of a shared counter.
 */
#ifndef HKV_EDGE_MONITOR_H
#define HKV_EDGE_MONITOR_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"

struct edge_monitor;

/* 1 while some MONITOR client is open on the host. */
static inline int monitor_on(const struct edge *e)
{
    return atomic_load_explicit(&e->ctx->board->monitors, memory_order_relaxed) != 0;
}
/* c is about to run argv (its gates passed): its line goes to this edge's
 * ring (call only when monitor_on; admin: not shown). */
void monitor_feed(struct conn *c, int argc, const struct resp_slice *argv, int admin);
/* MONITOR: c gets every command of the host from now on. */
void edge_cmd_monitor(struct conn *c, int argc, const struct resp_slice *argv);
/* c leaves MONITOR mode (RESET, or it is closing). */
void monitor_stop(struct conn *c);
/* Frees the edge's monitor state (process exit); *m is NULL after. */
void monitor_teardown(struct edge_monitor **m);

#endif

/*
 * edge_pause.h - CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE, for
 * the whole host: a planned operation's tool (a hand-over, a config
 * change, a snapshot) that holds clients back without failing them.
 *
 * The pause is one word in the host's board (server/core/board.h): its end
 * on CLOCK_MONOTONIC and its mode, so CLIENT PAUSE sent to any edge holds
 * every edge's clients, RESP and HTTP alike, and ends at the same instant
 * everywhere.  A request the pause covers is parked: it stays unread in its
 * connection's input, the connection stops reading (its later requests wait
 * behind it, in order) and nothing is answered until the pause ends or is
 * lifted; then it runs as if it had just arrived.  No request fails and no
 * timer runs while nothing is parked: a parked connection's edge looks
 * again every PAUSE_TICK_MS.
 *
 * What is covered, as Redis 7.0: WRITE parks the writes (a command flagged
 * CMD_F_WRITE, PUBLISH, an EXEC whose queue holds a write; commands queued
 * inside MULTI are queued as usual), HTTP PUT and DELETE; ALL parks
 * every client command and every HTTP request for a key, except the
 * pause's own controls, CLIENT PAUSE and UNPAUSE (Redis parks those too,
 * leaving a long ALL pause no way out but its end), and the operator's
 * endpoints (/healthz, /metrics).  A second
 * PAUSE keeps the stricter mode and the later end, as Redis's.
 */
#ifndef HKV_EDGE_PAUSE_H
#define HKV_EDGE_PAUSE_H

#include "proto/resp.h"

struct conn;
struct edge;

#define PAUSE_TICK_MS 10

/* The pause in force: 0 none, 1 WRITE, 2 ALL (one relaxed load when none). */
int edge_pause_mode(struct edge *e);
/* A client request that writes (or not) arrived: 1 when the pause covers
 * it and c is parked (its caller leaves the request unread), 0 to run it.
 * Which requests count as writes, and which are never held, is the
 * caller's: RESP's dispatch (edge_registry.c, edge_park), the HTTP door. */
int edge_pause_hold(struct conn *c, int write);

/* CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE (their replies). */
void edge_pause_cmd(struct conn *c, int argc, const struct resp_slice *argv);
void edge_unpause_cmd(struct conn *c);

/* The closing hook's part: a parked connection is no longer counted. */
void edge_pause_conn_gone(struct conn *c);
/* Stops the timer (the edge's teardown). */
void edge_pause_teardown(struct edge *e);

#endif

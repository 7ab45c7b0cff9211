/*
 * edge_clients.h - this edge's part of the clients board (server/core/
 * board.h): one row per client connection in the edge's table of the
 * shared scoreboard, so that any edge of the host can list every client
 * (CLIENT LIST) and have another edge close one (CLIENT KILL).
 *
 * Why shared memory rather than asking the other edges through the
 * master: CLIENT LIST then never waits on another process (a stalled or
 * dying edge cannot stall it: its rows are read, or skipped once it is
 * gone), the master keeps no request state and touches nothing of a
 * client, and it is how INFO already sums the edges (the scoreboard).  A
 * kill is a request written into the target's row; the owning edge acts on
 * it within its next cron tick (100 ms), and the asking edge waits, bounded,
 * until the row is gone before it answers, so a CLIENT KILL that answered is
 * done.
 *
 * What another edge sees of a client is at most one cron tick old for what
 * changes with every command (idle, cmd, buffers), and current for what the
 * client itself changes (name, user, protocol: published at once).  A name
 * longer than BOARD_CLIENT_NAME bytes is shown cut by the other edges (the
 * client's own edge shows all of it).  A row exists for at most
 * board->clients_cap clients per edge (maxclients at start, at most 65536):
 * one past that is listed by its own edge only.
 */
#ifndef HKV_EDGE_CLIENTS_H
#define HKV_EDGE_CLIENTS_H

#include <stdint.h>

#include "server/core/board.h"
#include "server/edge/edge_conn.h"

struct edge_clients;

/* Claims this edge's table (clearing what a dead predecessor left).  0, or
 * -1 out of memory (then no client is published). */
int clients_setup(struct edge *e);
/* Gives the table back; *m is NULL after (NULL: nothing to do). */
void clients_teardown(struct edge_clients **m);

/* c is new / changed its name, user or protocol / is closing. */
void clients_accepted(struct conn *c);
void clients_publish(struct conn *c);
void clients_gone(struct conn *c);

/* Every 100 ms: rows of clients that ran commands are refreshed (all of
 * them every second), and clients other edges asked to kill are closed. */
void clients_cron(struct edge *e, int64_t now_ms);

/* c's row as it would be published (for rendering c itself). */
void clients_fill(const struct conn *c, struct board_client *row);

/* Calls fn with a consistent copy of every published row of every other
 * live edge of the host (slot and row index say where it lives). */
typedef void (*clients_fn)(const struct board_client *row, uint32_t slot, uint32_t idx,
                           void *arg);
void clients_each_other(struct edge *e, clients_fn fn, void *arg);

/* Asks the edge of `slot` to close its client `id` in row idx. */
void clients_kill_other(struct edge *e, uint32_t slot, uint32_t idx, uint64_t id);
/* 1 while that client is still there (its edge alive, the row its own). */
int clients_still_there(struct edge *e, uint32_t slot, uint32_t idx, uint64_t id);

#endif

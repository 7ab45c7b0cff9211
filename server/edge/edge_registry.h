/*
 * edge_registry.h - the edge's command registry and dispatch pipeline: where
 * every client command is handled, in one table (edge_registry.c) indexed
 * by proto/cmd.h's id, one row per command: its handler and its family (the
 * file the handler lives in).  A newcomer looking for any command starts there.
 *
 * edge_dispatch is the connection layer's dispatch hook.  Each request goes
 * lookup -> arity -> auth gate -> rate gate -> handler; a request that fails
 * a step gets its error reply and never reaches the handler.  The pipeline
 * costs the hot GET path one call through this table beyond the handler:
 * the gates are a branch each unless the client is gated or the command is
 * limited.
 */
#ifndef HKV_EDGE_REGISTRY_H
#define HKV_EDGE_REGISTRY_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

/* A command's handler: the request's words (argv[0] the name; arity checked
 * already).  It appends its reply to c->out, or defers it (slot_defer /
 * an op) and answers later. */
typedef void (*edge_handler)(struct conn *c, int argc, const struct resp_slice *argv);

/* Which family, so which file, serves a command. */
enum edge_family {
    EDGE_FAM_CONN,                /* the connection itself: edge_cmd.c */
    EDGE_FAM_SERVER,              /* server administration: edge_cmd.c (COMMAND: edge_registry.c) */
    EDGE_FAM_READ,                /* reads through the colo cache: edge_read.c, edge_mread.c */
    EDGE_FAM_WRITE,               /* writes to owners: edge_write.c */
    EDGE_FAM_KEYSPACE,            /* the whole keyspace: edge_scan.c, edge_keyspace.c,
                                   * edge_keys.c */
    EDGE_FAM_CALL,                /* run by the keys' owner from its table: edge_call.c */
    EDGE_FAM_STRREAD,             /* computed over the value read: edge_strread.c */
    EDGE_FAM_TX,                  /* transactions: edge_tx.c, edge_exec.c (RESET too) */
    EDGE_FAM_THROTTLE,            /* applications' rate limits: edge_throttle.c */
};

/* The edge's row of a command: nothing proto/cmd.h says. */
struct edge_command {
    edge_handler handler;         /* NULL: not served by this edge */
    enum edge_family family;
};

/* Indexed by cmd_id. */
extern const struct edge_command edge_commands[CMD_COUNT];

/* The dispatch hook (struct conn_hooks): runs one request through the
 * pipeline. */
void edge_dispatch(struct conn *c, int argc, const struct resp_slice *argv);
/* The connection layer's park hook (CLIENT PAUSE, edge_pause.h): what a
 * RESP request is, as Redis 7.0 counts it; 1 when it waits. */
int edge_park(struct conn *c, int argc, const struct resp_slice *argv);

/* COMMAND [COUNT | LIST | INFO name... | DOCS name... | GETKEYS cmd... |
 * HELP]: what this table serves, each command described as Redis 7.0
 * describes it (edge_command.h). */
void edge_cmd_command(struct conn *c, int argc, const struct resp_slice *argv);

#endif

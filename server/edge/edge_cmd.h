/*
 * edge_cmd.h - the connection and server commands the edge answers itself,
 * without an owner: PING ECHO HELLO AUTH SELECT QUIT RESET TIME CLIENT CONFIG
 * INFO HOTKEYS.  Handlers (edge_registry.h's edge_handler) called only
 * through the command registry, after its arity, auth and rate gates.
 */
#ifndef HKV_EDGE_CMD_H
#define HKV_EDGE_CMD_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_CMD_HANDLERS(X)                                              \
    X(ping) X(echo) X(hello) X(auth) X(select) X(quit) X(reset) X(time)   \
    X(client) X(config) X(info) X(hotkeys)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_CMD_HANDLERS(X)
#undef X

/* The master's word that this edge's oldest CONFIG RESETSTAT is done
 * daemon-wide (worker hook, arg the edge): it is answered OK. */
void edge_resetstat_done(void *arg);

#endif

/*
 * edge_cmd.h - the connection and server commands the edge answers itself,
 * without an owner: PING ECHO HELLO AUTH SELECT QUIT RESET TIME LASTSAVE
 * INFO HOTKEYS WAIT (CLIENT: edge_client.h; CONFIG: edge_config.h; MONITOR:
 * edge_monitor.h).  Handlers (edge_registry.h's edge_handler) called only
 * through the command registry, after its arity, auth and rate gates.
 */
#ifndef HKV_EDGE_CMD_H
#define HKV_EDGE_CMD_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_CMD_HANDLERS(X)                                              \
    X(ping) X(echo) X(hello) X(auth) X(select) X(quit) X(reset) X(time)   \
    X(lastsave) X(info) X(hotkeys) X(wait)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_CMD_HANDLERS(X)
#undef X

#endif

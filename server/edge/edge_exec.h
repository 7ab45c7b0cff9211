/*
 * edge_exec.h - EXEC: the connection's queued transaction (edge_tx.h) run
 * atomically by the one owner of all its keys.
 *
 * EXEC answers, in Redis 7.0's order: "ERR EXEC without MULTI"; EXECABORT
 * when a command was refused while queuing; Redis Cluster's
 * "-CROSSSLOT Keys in request don't hash to the same slot" when the queued
 * commands' keys and the watched keys are not all on one owner (the
 * transaction is discarded, nothing is sent); nil when a watched key's
 * version could not be read; otherwise the array of every command's reply,
 * or nil when the owner found a watched key changed.
 *
 * The owner gets one WIRE_EXEC (a numbered write on its write link: the
 * same request id on every retry until write-deadline, so it runs at most
 * once) with the watched (key, version) pairs and the commands that have
 * keys; it runs them in its event loop with nothing in between, reads
 * included (they read the owner, not the colo cache), and commits the
 * durable-class writes together.  The key-less commands of the queue (PING
 * ECHO TIME UNWATCH) are answered by the edge as EXEC runs, in their
 * places in the reply: they read and change nothing, so where they run
 * makes no difference.  A transaction of key-less commands only is answered
 * by the edge, except that watched keys are still checked by their owner
 * (one EXEC whose only command, EXISTS of a watched key, is not shown).
 * An empty MULTI/EXEC answers an empty array.
 */
#ifndef HKV_EDGE_EXEC_H
#define HKV_EDGE_EXEC_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

void edge_cmd_exec(struct conn *c, int argc, const struct resp_slice *argv);

#endif

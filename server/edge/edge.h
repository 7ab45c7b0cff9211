/*
 * edge.h - an edge worker: it owns client connections.  It wires the client
 * protocol (proto/resp), the command table (proto/cmd) and the command
 * handlers together; it does not contain them.
 */
#ifndef HKV_EDGE_H
#define HKV_EDGE_H

#include "server/core/worker.h"

/* Runs the edge until it is stopped; returns the exit code. */
int edge_main(struct worker_ctx *ctx);

#endif

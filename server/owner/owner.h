/*
 * owner.h - a shard owner process: the single source of truth for the keys
 * of its leaves.  One event loop serializes every read and write of a key;
 * edges reach it over the binary protocol (proto/wire) on a Unix socket the
 * master opened before forking, so a restarted owner is reachable at once;
 * in a cluster, edges of other hosts reach it on a TCP socket (owner-port
 * + its host-wide index) with mutual TLS, also opened by the master.
 */
#ifndef HKV_OWNER_H
#define HKV_OWNER_H

#include <stddef.h>

#include "config/cfg.h"
#include "server/core/worker.h"

/* What the master hands an owner at fork besides the worker context. */
struct owner_ctx {
    enum cfg_pool pool;
    int link_fd;            /* the listening socket edges connect to (the owner takes it) */
    int tcp_fd;             /* cluster: the TCP socket other hosts' edges connect to (TLS;
                             * the owner takes it), -1 = none */
};

/* Runs the owner until it is stopped; returns the exit code. */
int owner_main(struct worker_ctx *ctx, const struct owner_ctx *octx);

#endif

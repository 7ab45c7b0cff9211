/*
 * edge.h - an edge worker: it owns client connections.  It wires the client
 * protocol (proto/resp), the command table (proto/cmd) and the command
 * handlers together; it does not contain them.
 */
#ifndef HKV_EDGE_H
#define HKV_EDGE_H

#include <stddef.h>

#include "server/core/topo.h"
#include "server/core/worker.h"

struct cache;
struct bus;
struct changes;
struct rl;

/* What the master hands an edge at fork besides the worker context: the colo
 * it serves and the client sockets, all made by the master before it
 * forked. */
struct edge_ctx {
    struct cache *cache;    /* the colo segment; NULL: every read asks the owner */
    struct rl *rl;          /* the colo's rate-limit segment; NULL: none (fails open) */
    struct rl *app_rl;      /* the colo's CL.THROTTLE segment; NULL: none (fails open) */
    int colo_index;         /* which colo of this host */
    /* every colo's segments, [colo_index] being the two above: /metrics
     * reports the whole host from any edge (edge_metrics.h).  NULL: this
     * colo's only. */
    struct cache *const *colo_caches;
    struct rl *const *colo_limiters;
    struct rl *const *colo_app_limiters;
    int ncolos;
    char colo_name[TOPO_COLO_NAME_MAX];     /* its name, as owners and INFO see it */
    const int *listen_fds;  /* the client listening sockets */
    size_t nlisten;
    size_t nwriter;         /* writer-port's: the nwriter before the tls-port ones */
    size_t ntls;            /* the last ntls of listen_fds are tls-port's */
    /* A writer edge (the last writer-edges of each colo while writer-port is
     * set) accepts on writer-port only: no RESP port, TLS or HTTP clients, so
     * its loop is idle between writes and a write is not queued behind a read
     * storm's clients in the loop or on the CPU (a sleeping process is
     * scheduled at once when woken). */
    int writer;
    const int *http_fds;    /* the HTTP listening sockets (edge_http.h) */
    size_t nhttp;           /* all of them */
    size_t nhttps;          /* the last nhttps of http_fds are https-port's */
    struct changes *changes; /* the colo's change ring (server/colo/changes.h); NULL: none */
    struct bus *bus;         /* the colo's pub/sub bus (server/colo/bus.h); NULL: none */
    struct bus *const *colo_buses; /* every colo's, [colo_index] being bus: a PUBLISH is
                                    * appended to each (edge_pubsub.c); NULL: this one's */
};

/* Runs the edge until it is stopped; returns the exit code.  ectx must stay
 * valid as long (the master passes its own, in the forked copy). */
int edge_main(struct worker_ctx *ctx, const struct edge_ctx *ectx);

#endif

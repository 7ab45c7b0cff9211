/*
 * owner_opts.h - the owner's options: what its modules read of the config.
 * Apart from owner_int.h (the owner's whole state) so that a module that
 * needs only its options need not see the rest.
 */
#ifndef HKV_OWNER_OPTS_H
#define HKV_OWNER_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/topo.h"

/* What the owner's modules read of the config.  owner.c, the one owner file
 * that reads the config, fills it at owner_init and again in the reload
 * hook; the others read o->opts, never o->ctx->cfg.  The strings point
 * into the config in effect (owner.c refills them before it is replaced). */
struct owner_opts {
    const char *cluster;          /* "" on a single host (restart-only) */
    const char *host;             /* this host's name in the cluster (restart-only) */
    const char *dir;              /* the data directory (restart-only) */
    char db_path[TOPO_PATH_MAX];  /* this owner's SQLite file */
    char agent_socket[TOPO_PATH_MAX]; /* the host's agent control channel */
    const char *tls_cert, *tls_key, *tls_ca; /* cluster-tls-*: links to other hosts' owners */
    size_t wire_max_frame;        /* restart-only */
    int64_t proto_max_bulk_len;   /* 0: STROPS_MAX_LEN_DEFAULT */
    size_t owner_maxmemory;       /* 0 = unbounded (restart-only: read at setup) */
    uint64_t tombstone_ttl_ms;
    int64_t persist_interval_ms;
    int64_t persist_max_dirty;    /* 0 = no bound */
    size_t persist_batch_max;
    int64_t durable_timeout_ms;
    int64_t etcd_timeout_ms;
    int64_t move_fence_timeout_ms;
    int64_t move_window_ms;
    int64_t replica_timeout_ms;   /* a follower this late leaves the in-sync set */
    int local_map;                /* a single host's leaf-moves: no lease to prove */
    int replicas;                 /* followers per leaf wanted (0: none) */
    int owner_push;
    unsigned notify;              /* notify-keyspace-events' classes (proto/notify.h) */
};

#endif

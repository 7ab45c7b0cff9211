/*
 * edge_op_int.h - the op engine's state (e->ops), shared by its two files
 * (edge_op.c: an op's life; edge_op_send.c: sending and answers) and by the
 * two modules that park ops in queues of their own here (CONFIG RESETSTAT,
 * CLIENT KILL).  Private to those; everyone else goes through edge_op.h.
 */
#ifndef HKV_EDGE_OP_INT_H
#define HKV_EDGE_OP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "server/edge/edge_op.h"

struct op;
struct oreq;
struct wire_slice;

struct edge_ops {
    uint64_t next_seq;            /* the last write request number given */
    struct oreq *wq_head, *wq_tail; /* unfinished write requests, in seq order (edge_op_send.c) */
    struct op *free;              /* the freelist */
    struct op *all;               /* every op ever made, for teardown */
    uint64_t nwriting;            /* write ops not finished (stop waits) */
    int *owner_req;               /* op_split's owner -> request table (nowners) */
    struct wire_slice *keys;      /* one request's keys, contiguous, for encoding */
    size_t keys_cap;
    struct op *rs_head, *rs_tail; /* CONFIG RESETSTATs waiting for the master, oldest first
                                   * (edge_config.c) */
    struct op *kill_waits;        /* CLIENT KILLs waiting for other edges (edge_client.c) */
    struct op_opts opts;          /* opts.backoff_ms is this module's copy */
    struct event *reroute;        /* a cluster, while writes wait for a resend: watches the
                                   * map's revision (edge_op_send.c) */
    int64_t map_seen;             /* the revision the last look saw */
};

/* Copies opts (and its backoff) into m->opts (edge_op.c; op_reload). 0,
 * or -1 out of memory (the old options stay). */
int op_take_opts(struct edge_ops *m, const struct op_opts *opts);

#endif

/*
 * edge_int.h - the edge process's context (struct edge), which every edge
 * module is handed, and the owner counters it keeps.  Each group of fields
 * belongs to the module named beside it; the others only read it.  Private
 * to server/edge/.
 */
#ifndef HKV_EDGE_INT_H
#define HKV_EDGE_INT_H

#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "proto/stamp.h"
#include "proto/wire.h"
#include "server/edge/edge_link.h"
#include "server/core/router.h"
#include "server/core/worker.h"
#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"

struct auth;
struct conn;
struct conn_hooks;
struct rslot;
struct owner_ref;
struct op;
struct flights;
struct ssl_st;                    /* OpenSSL's SSL */
struct ssl_ctx_st;                /* OpenSSL's SSL_CTX */

/* Requests a client may have waiting for replies before the edge stops
 * reading from it (Redis has no such bound; this is what keeps one client's
 * pipeline from holding unbounded edge memory).  TODO(config): make it the
 * directive client-max-pending once config/ grows it. */
#define EDGE_MAX_OWNERS 512

/* The owner counters INFO shows, in STATS_REPLY names. */
#define EDGE_OWNER_STATS(X)         \
    X(owner_reads)                  \
    X(owner_writes)                 \
    X(owner_idempotent_retries)     \
    X(owner_unknown_outcomes)       \
    X(owner_completion_records)     \
    X(owner_keys)                   \
    X(persist_dirty_keys)           \
    X(persist_batches)              \
    X(persist_rows)                 \
    X(persist_last_commit_ms)       \
    X(persist_stall_ms_max)         \
    X(persist_errors)               \
    X(owner_queue_depth)            \
    X(persist_backlog_bytes)

enum owner_stat {
#define X(n) OSTAT_##n,
    EDGE_OWNER_STATS(X)
#undef X
    OSTAT_COUNT
};

struct edge {
    struct worker_ctx *ctx;
    struct event_base *base;
    struct worker *worker;
    struct evconnlistener **listeners;
    size_t nlisteners;
    struct event *cron;           /* 100 ms: idle timeouts, soft output limits */
    struct event *deadline;       /* stop deadline */
    const struct conn_hooks *conn_hooks; /* what each connection calls (edge_conn.h) */
    struct conn *conns;           /* every open connection, a doubly linked list */
    uint64_t nconns;
    uint64_t next_client_id;
    struct board_slot *stats;     /* this edge's counters in the scoreboard */
    struct resp_limits limits;
    struct auth *auth;            /* users and ACLs (server/auth.h), rebuilt on reload */
    struct ssl_ctx_st *tls_ctx;   /* the TLS port's context (rebuilt on reload); NULL: no TLS */
    int stopping;
    int64_t ops_sample_ms;        /* instantaneous_ops_per_sec sampling */
    uint64_t ops_sample_cmds;
    uint64_t ops_per_sec;

    /* the data path (edge_data.c and friends) */
    struct router *router;
    uint64_t incarnation;         /* this process, in HELLO (exactly-once retries) */
    uint64_t next_seq;            /* the last write request number given */
    struct owner_ref *owners;     /* hot owners, then cold owners */
    int nowners;
    struct event *stats_poll;     /* 1 s: STATS of every owner, for INFO */
    struct op *free_ops;
    struct op *all_ops;           /* every op ever made, for teardown */
    uint64_t nops_writing;        /* write ops not finished (stop waits) */
    int *op_owner_req;            /* op_split's owner -> request table (nowners) */
    struct wire_slice *op_keys;   /* one request's keys, contiguous, for encoding */
    size_t op_keys_cap;
    struct rslot *free_slots;
    struct flights *flights;      /* single-flight fetches (edge_flight.c) */
    struct hkv_buf scratch;       /* encoding helpers' temporary space */

    /* the colo cache (edge_cache.c) */
    struct cache *cache;          /* NULL: every read asks the owner */
    uint64_t lock_seq;            /* refresh-lock tokens */
    struct hkv_buf cval;          /* a looked-up value, copied out of the segment */

    /* the rate limiter (edge_rl.c) */
    struct rl *rl;                /* the colo's limiter; NULL: none */
    const uint16_t *rl_map;       /* limit class of each command id, 0 = unlimited */
};

#endif

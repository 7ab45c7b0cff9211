/*
 * edge_int.h - the edge process's context (struct edge), which every edge
 * module is handed: the process's own fields, then one pointer per module
 * (as struct owner has).  A module's state is its own struct, defined in
 * its .c or its _int.h; what others may read of it is the head its header
 * shows (e->owners->ref, e->cache->cache ...).  Private to server/edge/.
 *
 * The modules, bottom up (a module calls only those before it; anything
 * that flows up is a hook given at setup):
 *   edge_arg, edge_link_io,
 *   edge_link, edge_link_make, auth
 *   edge_subcmd, edge_cmdinfo,
 *   edge_command                    words and integers; one owner link; ACLs;
 *                                   the subcommands and the command stat ids;
 *                                   Redis's COMMAND entries
 *   edge_reply, edge_conn_tls       reply slots; TLS on a connection
 *   edge_conn                       connections (hooks: accepted, dispatch, closing)
 *   edge_clients, edge_stats,
 *   edge_monitor                    this edge's rows in the clients board (CLIENT LIST/KILL);
 *                                   its command and error stats; MONITOR
 *   edge_auth, edge_rl              the auth gate; the rate gate
 *   edge_owners, edge_diag          owners, routing, links, STATS; the failed-write report
 *   edge_cache, edge_render         what goes into the colo cache; one-key reads' replies
 *   edge_feed                       this edge's reader of the colo's change ring
 *   edge_op, edge_op_send           the op engine (families: encode, answer, done)
 *   edge_flight                     single-flight fetches (answers through a callback)
 *   edge_read, edge_mread,
 *   edge_write_op, edge_write,
 *   edge_scan, edge_call,
 *   edge_keys, edge_keyspace        the data command families (edge_call, edge_keyspace:
 *                                   run by the owner)
 *   edge_strread                    reads computed over the value read (GETRANGE ... LCS)
 *   info_redis, edge_http_info, info,
 *   edge_cmd, edge_client,
 *   edge_config                     INFO (# HTTP from the scoreboard only); the connection
 *                                   and server commands; CLIENT; CONFIG
 *   edge_track                      CLIENT TRACKING: what tracking clients read,
 *                                   invalidations from the feed
 *   edge_tx, edge_exec              MULTI/WATCH state and the queue; EXEC
 *   edge_http_reply, edge_http_wake,
 *   edge_http_kv, edge_http_watch,
 *   edge_http                       the HTTP front door: replies; held readers and the
 *                                   change ring; GET /v1/kv and long polls; watch
 *                                   streams; connections, routing and gates
 *   edge_registry                   the command table and the dispatch pipeline
 *   edge                            the process: wires the hooks, runs the loop
 */
#ifndef HKV_EDGE_INT_H
#define HKV_EDGE_INT_H

#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "proto/buf.h"
#include "proto/resp.h"
#include "server/core/worker.h"
#include "server/edge/edge.h"

struct conns_opts;
struct edge_auth;
struct edge_cache;
struct edge_clients;
struct edge_conns;
struct edge_feed;
struct edge_forgets;
struct edge_track;
struct edge_monitor;
struct edge_ops;
struct edge_owners;
struct edge_pubsub;
struct edge_rl;
struct ehealth;
struct flights;
struct http_edge;

/* The connection layer's options from a config (edge.c, at setup and at
 * each reload; the unit suites build theirs with it too).  The hooks and
 * the poll are the caller's to set. */
void edge_conns_opts(const struct cfg *cfg, struct conns_opts *o);
/* The op engine's, likewise (o->backoff_ms points into cfg: op_setup and
 * op_reload copy it). */
struct op_opts;
void edge_op_opts(const struct cfg *cfg, struct op_opts *o);
/* The owners module's, likewise (its strings point into cfg). */
struct owners_opts;
void edge_owners_opts(const struct cfg *cfg, struct owners_opts *o);
/* The colo cache module's, likewise. */
struct edge_cache_opts;
void edge_cache_opts(const struct cfg *cfg, struct edge_cache_opts *o);
/* The flights', likewise (o->routed is cfg itself: each flight takes a
 * reference to it). */
struct flights_opts;
void edge_flights_opts(struct cfg *cfg, struct flights_opts *o);
/* The HTTP front door's, likewise (the allow list points into cfg). */
struct http_opts;
void edge_http_opts(const struct cfg *cfg, struct http_opts *o);

/* What the command families read of the config: edge.c fills it at setup
 * and at each reload (edge_cmd_opts). */
struct edge_cmd_opts {
    int64_t multi_max_commands;   /* MULTI's queue (edge_tx.c) */
    int64_t multi_max_bytes;
    int64_t keys_max;             /* KEYS refuses to answer more (edge_keys.c) */
    int64_t max_bulk;             /* proto-max-bulk-len: string results (edge_strread.c) */
    const struct cfg *cfg;        /* the config in force, as data: what INFO, CONFIG GET
                                   * and /metrics show (edge_config below) */
};
void edge_cmd_opts(const struct cfg *cfg, struct edge_cmd_opts *o);


struct edge {
    /* the process (edge.c) */
    struct worker_ctx *ctx;
    const struct edge_ctx *ectx;  /* the colo and the sockets (edge.h) */
    struct event_base *base;
    struct worker *worker;
    struct board_slot *stats;     /* this edge's counters in the scoreboard */
    struct evconnlistener **listeners;
    size_t nlisteners;
    struct event *cron;           /* 100 ms: idle timeouts, soft output limits */
    struct event *deadline;       /* stop deadline */
    int stopping;
    struct edge_ops_rate {        /* INFO's instantaneous_ops_per_sec, sampled by the cron */
        int64_t at_ms;            /* the last sample: when, */
        uint64_t cmds;            /* total_commands_processed then, */
        uint64_t per_sec;         /* and the rate since the one before */
    } ops_rate;
    struct edge_cmd_opts cmd_opts; /* the command families' options */

    /* one pointer per module, bottom up; each is set by the module's
     * setup, freed by its teardown, and read by others only through the
     * module's header */
    struct edge_conns *conns;     /* connections, reply slots, TLS (edge_conn.c) */
    struct edge_clients *clients; /* this edge's rows in the clients board (edge_clients.c);
                                   * NULL: its clients are listed by it only */
    struct edge_monitor *monitor; /* MONITOR (edge_monitor.c); NULL until first used */
    struct edge_auth *auth;       /* users, the auth gate (edge_auth.c) */
    struct edge_rl *rl;           /* the rate gate (edge_rl.c) */
    struct edge_owners *owners;   /* owners, routing, links, STATS (edge_owners.c) */
    struct edge_cache *cache;     /* the colo cache's use (edge_cache.c) */
    struct edge_ops *ops;         /* the op engine (edge_op.c) */
    struct flights *flights;      /* single-flight fetches (edge_flight.c) */
    struct ehealth *health;       /* owners marked silent in the colo (edge_health.c) */
    struct edge_feed *feed;       /* the colo change ring's reader (edge_feed.c) */
    struct edge_forgets *forgets; /* FLUSHALL's cache forgets (edge_keyspace.c) */
    struct edge_track *track;     /* CLIENT TRACKING (edge_track.c); NULL until first used */
    struct http_edge *http;       /* the HTTP front door (edge_http*.c); NULL: no HTTP port */
    struct edge_pubsub *pubsub;   /* pub/sub's tables and the colo bus's reader (edge_pubsub*.c) */
    struct edge_pause *pause;     /* CLIENT PAUSE's parked clients (edge_pause.c); NULL until used */
};

/* The live config, as data, for the modules that show it or copy it (INFO,
 * /metrics, CONFIG GET/SET, an HTTP GET's content type by class): edge.c
 * answer, so that no module reaches into the worker context for it.  A
 * module's own options come from its opts struct, never from here. */
static inline const struct cfg *edge_config(const struct edge *e)
{
    return e->cmd_opts.cfg;
}

#endif

/*
 * agent_int.h - what the agent's files share: the agent context.  Private
 * to server/agent/.
 *
 *   agent.c        the process: setup, the tick that drives retries and
 *                  keepalives, reload, stop
 *   agent_reg.c    the lease and the registrations (numbers, hosts/,
 *                  members/, writers/), the refusal
 *   agent_watch.c  the full read and the watch
 *   agent_core.c   what both of those call: etcd up/down bookkeeping,
 *                  commit + publish + save of a revision, health
 *   agent_map.c    keys -> table (pure);  agent_save.c  the disk thread
 *   agent_ctl.c    the owners' control channel (agent_ctl.h), over
 *   agent_leaf.c   the leaf txns owners ask for, operators' move requests
 *   agent_policy.c automatic moves from the owners' load reports (its rule:
 *                  agent_policy_decide.c, pure)
 *   agent_txn.c    the txns themselves (pure, shared with hotkvd-admin)
 *
 * The calls go one way: agent.c calls the others; agent_reg.c,
 * agent_watch.c and agent_leaf.c call agent_core.c; agent_ctl.c calls
 * agent_leaf.c, which answers through a callback; nothing calls agent.c.
 *
 * One etcd call per activity is in flight at a time (the registration, the
 * full read, the keepalive each have a flag); a failed call leaves its
 * activity to be retried by the tick after a backoff (due_ms).
 */
#ifndef HKV_AGENT_INT_H
#define HKV_AGENT_INT_H

#include <stdint.h>

#include <event2/event.h>

#include "server/agent/agent.h"
#include "server/agent/agent_map.h"
#include "server/agent/agent_save.h"
#include "server/agent/etcd.h"
#include "server/agent/etcd_remote.h"
#include "server/core/cmap.h"
#include "server/core/topo.h"

#define AGENT_BACKOFF_MIN_MS 200
#define AGENT_BACKOFF_MAX_MS 5000
#define AGENT_MAX_LOCAL 512        /* local owners + edges an agent registers */

/* One activity's retry clock. */
struct agent_retry {
    int inflight;                  /* a call of it is out */
    int64_t due_ms;                /* mono ms it may start (again); 0 = now */
    int64_t backoff_ms;
};

struct agent_ctl;
struct agent_policy;
struct agent_promote;
struct agent_follow;

/* What the agent's files know of the config: agent.c (the process) fills it
 * at setup and again at every reload, so no other file reads the config;
 * the strings point into the config in force. */
struct agent_opts {
    const char *cluster, *host, *dir;
    const char *advertise_addr;    /* NULL: none */
    int hot_owners, cold_owners;
    int edge_workers;              /* per colo */
    int edge_slot0;                /* the first edge's worker slot (worker_edge_slot) */
    int owner_port;                /* 0 = none */
    int64_t etcd_lease_ttl_ms;
    /* replicas (CLUSTER.md §7): followers per leaf, this host's zone ("" none) */
    int replicas;
    const char *zone;
    int local_map;                 /* a single host with leaf-moves (cfg_local_map) */
    /* automatic moves (agent_policy.h) */
    int auto_moves, move_busy_threshold, move_split_min_share, move_hot_key_share;
    int64_t move_window_ms, move_cooldown_leaf_ms, move_cooldown_owner_ms;
    char ctl_socket[TOPO_PATH_MAX]; /* the owners' control channel (topo_agent_socket) */
};

/* Fills o from cfg (agent.c: at setup and at each reload, from the config
 * about to be installed; a test's in-process agent fills it the same way). */
void agent_opts_fill(struct agent_opts *o, const struct cfg *cfg);

struct agent {
    struct worker_ctx *ctx;        /* the process's; its config is agent.c's to read */
    struct agent_opts opt;
    struct event_base *base;
    struct worker *w;
    struct etcd *etcd;
    struct agent_map *map;
    struct agent_saver *saver;
    struct cmap_table *scratch;    /* a heap table for loads and snapshots */
    struct agent_ctl *ctl;         /* the owners' control channel (agent_ctl.h); NULL: none */
    /* a single host with leaf-moves (cfg_local_map): the map's local store
     * and the socket hotkvd-admin reaches it through (etcd_remote.h) */
    char store_path[TOPO_PATH_MAX];
    struct etcd_rserver *rserver;
    struct agent_policy *policy;   /* automatic moves (agent_policy.h), made by agent_ctl.c;
                                    * NULL without a control channel */
    struct agent_follow *follow;   /* follower placement (agent_follow.h), made by agent_ctl.c
                                    * too; NULL without a control channel */
    struct agent_promote *promote; /* failover (agent_promote.h); NULL: out of memory */
    struct event *tick;
    int stopping;
    int exit_code;                 /* agent_main's: 1 once the local store failed a write */
    int fresh_start;               /* the segment had no map at start: the whole daemon
                                    * started, not just the agent (agent_promote.h) */
    uint64_t incarnation;          /* this agent process */
    char prefix[AGENT_KEY_MAX], prefix_end[AGENT_KEY_MAX];
    size_t plen, elen;
    struct cmap_health h;          /* what the segment says; pushed on change */
    int etcd_said;                 /* what the log last said: 0 nothing, 1 up, 2 down */

    /* the map: full read, then watch */
    int have_read;                 /* a full read completed since start */
    int reading;                   /* a full read is wanted or under way */
    struct agent_retry read;
    int64_t read_rev;              /* the revision the pages are read at */
    char read_next[AGENT_KEY_MAX]; /* the key the next page starts at */
    size_t read_next_len;
    struct etcd_watch *watch;
    struct agent_retry watch_retry;
    int64_t applied_rev;           /* the last revision applied to the map */

    /* the lease and the registrations */
    struct agent_retry reg;
    int registered;                /* every key is registered under the lease */
    int ever_registered;           /* once: later conflicts are alarms, not refusals */
    int refused;
    unsigned host_number;          /* found or created in hostnums/ (h.host_number
                                    * follows once the owners are in the map) */
    int step;                      /* where the registration is */
    int item;                      /* which owner / edge within the step */
    int attempts;                  /* number races lost in this step */
    int adopting;                  /* the lease step asked if the old lease lives */
    int plain_put;                 /* the claim found our own lease: put again */
    int restart_pending;           /* the lease went while a call was out */
    char cur_key[AGENT_KEY_MAX], cur_val[AGENT_VAL_MAX], cur_name[CMAP_NAME_MAX];
    size_t cur_klen, cur_vlen;
    unsigned owner_num[AGENT_MAX_LOCAL];
    int nowners, nedges;
    struct agent_retry keepalive;
    int64_t keepalive_next_ms;
    int64_t lease_asked_ms;       /* unix ms the last grant or keepalive was asked: etcd
                                   * renewed the lease no earlier (the fence counts from it) */
    int64_t lease_asked_mono_ms;  /* the same on the monotonic clock (what the fence reads) */
    int64_t last_conflict_log_ms;
};

/* ---- agent_core.c ---- */

/* An etcd answer came (ok) or a call failed (status); health follows. */
void agent_etcd_ok(struct agent *a);
void agent_etcd_failed(struct agent *a, const char *what, const struct etcd_result *r);
/* The keys of revision rev are all applied: validates, publishes, saves,
 * or refuses (counted, logged).  1 if a table was published. */
int agent_commit(struct agent *a, int64_t rev);
/* Pushes a->h to the segment. */
void agent_health_push(struct agent *a);
/* The next try after a failure (doubling backoff), or after a success. */
void agent_retry_failed(struct agent_retry *r);
void agent_retry_ok(struct agent_retry *r);
int agent_retry_due(const struct agent_retry *r, int64_t now);
/* Local owner g (hot first, then cold): its pool, index and id. */
void agent_local_owner(const struct agent *a, int g, enum cfg_pool *pool, int *k, char *id,
                       size_t cap);
/* Host number and owners known and registered once: the master may start
 * owners and edges (health.host_number set). */
void agent_announce_if_ready(struct agent *a);

/* ---- agent_reg.c ---- */

/* Drives the lease and the registration (called by the tick). */
void agent_reg_tick(struct agent *a, int64_t now);
/* Revokes the lease at stop: 1 when done(arg) will be called (bound it by a
 * timer: etcd may not answer), 0 when there is nothing to revoke. */
int agent_reg_revoke(struct agent *a, void (*done)(void *arg), void *arg);

/* ---- agent_watch.c ---- */

/* Drives the full read and the watch (called by the tick). */
void agent_watch_tick(struct agent *a, int64_t now);
void agent_watch_stop(struct agent *a);

#endif

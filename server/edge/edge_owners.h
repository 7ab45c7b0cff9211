/*
 * edge_owners.h - the shard owners as one edge sees them: a reference per
 * owner with its three links (READ, WRITE, PUSH: edge_link.h), the routing
 * of a key to its owner (server/core/router.h), and each owner's last STATS
 * (polled every second on its READ link, for INFO and the failed-write
 * report).
 *
 * In a cluster (ctx->cmap set) owners are the cluster's, by number: e->owners
 * has a slot per possible owner number (g = number - 1), routing reads the
 * edge's own copy of the cluster map (server/core/router_map.h, taken again
 * whenever the map's revision moves), and a slot gets its links on first
 * use (owner_link): an owner of this host over its Unix socket, one of
 * another host over TCP with mutual TLS to the address the map gives (its
 * certificate must name its host).  An owner the map shows not live (its
 * members/ key gone) gets no new link; one it already has stays in use.
 * Walks over every owner (SCAN, KEYS, DBSIZE, FLUSHALL, RANDOMKEY, INFO's
 * questions) go over the owners that serve a leaf (edge_owner_next); the
 * STATS poll goes to those and to every owner of this host
 * (edge_owner_polled), so that an owner that moved its last leaf away
 * still reports its figures (INFO # Leaves adds up every owner's last
 * STATS, and would keep the last ones before its last move forever).
 *
 * This is the bottom of the edge's data path: it knows no op, no command and
 * no cache.  What arrives unasked goes up through the hooks given to
 * owners_setup: an owner's push (PUSH / INVALIDATE, for the colo cache) and
 * a congested link that drained (for the clients held behind it).  Answers
 * to requests go to the callback each request registers (elink_commit).
 */
#ifndef HKV_EDGE_OWNERS_H
#define HKV_EDGE_OWNERS_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/router.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_link.h"

struct oreq;

/* One owner as the edge sees it: its links and its last STATS. */
struct owner_ref {
    struct edge *e;
    enum cfg_pool pool;
    int index;                    /* its index in its pool (on its host, in a cluster) */
    unsigned number;              /* cluster: its owner number; 0 on a single host */
    struct elink *link[3];        /* [WIRE_ROLE_READ], [WIRE_ROLE_WRITE], [WIRE_ROLE_PUSH] */
    int64_t stats[CTR_OWNER_COUNT]; /* by CTR_OWNER_<name> (server/core/counters.h) */
    int64_t stats_at_ms;          /* 0 = never answered */
    int stats_inflight;
    int stats_drop;               /* drop the answer in flight (asked before a RESETSTAT) */
    unsigned wq_n;                /* unfinished write requests to it (edge_op_send.c) */
    int refused;                  /* cluster: its links could not be made (logged once) */
};

/* e->owners: what the families, INFO and the health module read of the
 * module (the table and the router); the rest of its state is
 * edge_owners.c's, behind this head. */
struct edge_owners {
    struct router *router;
    struct owner_ref *ref;        /* hot owners, then cold owners (a cluster: by number - 1) */
    int n;
};

/* The owners module's options (the process builds them from the config,
 * at setup and at each reload).  The strings point into that config, which
 * lives until the next reload hands new ones. */
struct owners_opts {
    const struct cfg *cfg;        /* as data, during the call only: the router's rules
                                   * (router_create, router_set_config), the cluster TLS
                                   * files */
    int hot_owners, cold_owners;
    int owner_push;               /* owners push writes to colo caches */
    int64_t write_timeout_ms;     /* the links' */
    int64_t max_frame;            /* wire-max-frame */
    const char *dir;              /* the owners' Unix sockets live here */
    const char *cluster, *host;   /* a cluster: its name and this host's */
    const char *cluster_tls_cert_file; /* "": no links to other hosts' owners */
};

struct owner_hooks {
    elink_push_fn push;           /* a push link's PUSH / INVALIDATE; arg is the owner_ref */
    elink_drained_fn drained;     /* a congested link drained; arg is the edge */
    void (*gap)(void *arg);       /* a push link may have missed pushes; arg is the owner_ref */
};

/* e->owners: the router, this process's incarnation and the owners (links connecting at once on a
 * single host; on first use in a cluster) from the config, and the 1 s
 * STATS poll.  0, or -1 on allocation failure (call
 * owners_teardown either way). */
int owners_setup(struct edge *e, const struct owner_hooks *hooks, const struct owners_opts *opts);
/* Routing rules, link timeouts and the cluster TLS files from new options. */
void owners_reload(struct edge *e, const struct owners_opts *opts);
/* Frees links (no callback runs), owners and the router; e->owners is NULL
 * after. */
void owners_teardown(struct edge *e);
/* Handles the answers owners have sent to this edge's unfinished writes
 * (elink_poll on each write link with a write waiting), without waiting
 * for the loop to report them: the connection layer calls it between
 * client reads (e->conn_poll), so an acknowledgment does not queue behind a
 * loop turn of ready readers.  No system call when no write is waiting. */
void owners_poll_writes(struct edge *e);

/* The owner of key (rt filled by the router), or NULL if its pool has none. */
struct owner_ref *edge_owner_of(struct edge *e, const char *key, size_t len, struct route *rt);
/* The same for a key whose router_hash the request already computed. */
struct owner_ref *edge_owner_of_hashed(struct edge *e, const char *key, size_t len,
                                       uint64_t hash, struct route *rt);
/* The owner of placement hash `place` in pool, and its leaf as this edge's
 * map has it (*leaf, *bits); NULL if the pool has no owner. */
struct owner_ref *edge_owner_of_place(struct edge *e, enum cfg_pool pool, uint64_t place,
                                      uint32_t *leaf, uint8_t *bits);
/* Redis Cluster's refusal of a command over keys that do not live
 * together (here: on one owner), as an error reply's text. */
#define EDGE_ERR_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"
/* Folds key[0..len) into *o, the one owner of the keys seen so far (NULL
 * before the first): 0, or -1 with *err the error reply's text (without
 * '-'): EDGE_ERR_CROSSSLOT when the key lives elsewhere, or the key's pool
 * has no owner.  Owners are compared, not Redis's 16384 slots: keys on one
 * owner may be used together whatever their slots; hash tags
 * (server/core/router.h) put related keys on one owner. */
int edge_same_owner(struct edge *e, const char *key, size_t len, struct owner_ref **o,
                    const char **err);
/* Owner number g (hot owners first, then cold; in a cluster the owner
 * numbered g + 1), or NULL if there is none (in a cluster: it serves no
 * leaf). */
struct owner_ref *edge_owner_at(struct edge *e, int g);
/* Owner number g if the STATS poll asks it: edge_owner_at's, or, in a
 * cluster, an owner of this host that serves no leaf; else NULL. */
struct owner_ref *edge_owner_polled(struct edge *e, int g);
/* Walks every owner: the first g after `after` (-1 to start) that
 * edge_owner_at gives, or -1 when there is none. */
int edge_owner_next(struct edge *e, int after);
/* Whether the colo cache may be behind the owner of key because this
 * edge's push link to that owner is not greeted (down, reconnecting, not
 * made yet): pushes sent meanwhile were lost, so a cached value of that
 * owner is served as stale (and refreshed), not as fresh.  0 when owners
 * do not push.  Cheap while every push link is greeted (looked at once per
 * EDGE_PUSH_CHECK_MS); otherwise it routes the key. */
#define EDGE_PUSH_CHECK_MS 10
int edge_push_gap(struct edge *e, const char *key, size_t len, int64_t now_ms);
/* How many owners a walk visits. */
int edge_owners_count(struct edge *e);
/* Cluster: links of this edge to owners of other hosts that are up now (an
 * owner counts once, by its WRITE link); 0 on a single host.  Each STATS
 * poll also stores it in the edge's board slot (remote_links_up), where
 * /metrics sums it over the host's edges. */
int edge_remote_links_up(const struct edge *e);
/* o's link of role, made (all three of its links) on first use.  NULL if
 * it cannot be made: an owner of another host that is not live, has no
 * address, or no cluster TLS context; or no memory (logged once). */
struct elink *edge_owner_link(struct owner_ref *o, int role);

/* Stores the counters of a STATS_REPLY (server/core/counters.h, CTR_OWNER)
 * into v[CTR_OWNER_*]; the others are left as they were. */
void edge_owner_take_stats(const struct wire_msg *m, int64_t *v);
/* CONFIG RESETSTAT reached this edge (worker hook, arg the edge): the
 * counters of each owner's last STATS read 0 until its next answer. */
void edge_stats_reset(void *arg);

#endif

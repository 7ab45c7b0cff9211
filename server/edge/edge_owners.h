/*
 * edge_owners.h - the shard owners as one edge sees them: a reference per
 * owner with its three links (READ, WRITE, PUSH: edge_link.h), the routing
 * of a key to its owner (server/core/router.h), and each owner's last STATS
 * (polled every second on its READ link, for INFO and the failed-write
 * report).
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
    int index;
    struct elink *link[3];        /* [WIRE_ROLE_READ], [WIRE_ROLE_WRITE], [WIRE_ROLE_PUSH] */
    int64_t stats[CTR_OWNER_COUNT]; /* by CTR_OWNER_<name> (server/core/counters.h) */
    int64_t stats_at_ms;          /* 0 = never answered */
    int stats_inflight;
    int stats_drop;               /* drop the answer in flight (asked before a RESETSTAT) */
    struct oreq *wq_head, *wq_tail; /* unfinished write requests to it, in seq order (edge_op_send.c) */
};

struct owner_hooks {
    elink_push_fn push;           /* a push link's PUSH / INVALIDATE; arg is the owner_ref */
    elink_drained_fn drained;     /* a congested link drained; arg is the edge */
};

/* e->router, e->incarnation and e->owners (links connecting at once) from
 * the config, and the 1 s STATS poll.  0, or -1 on allocation failure (call
 * owners_teardown either way). */
int owners_setup(struct edge *e, const struct owner_hooks *hooks);
/* Routing rules and link timeouts from a new config. */
void owners_reload(struct edge *e, const struct cfg *cfg);
/* Frees links (no callback runs), owners and the router. */
void owners_teardown(struct edge *e);

/* The owner of key (rt filled by the router), or NULL if its pool has none. */
struct owner_ref *edge_owner_of(struct edge *e, const char *key, size_t len, struct route *rt);
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
/* Owner number g (hot owners first, then cold), or NULL. */
struct owner_ref *edge_owner_at(struct edge *e, int g);

/* Stores the counters of a STATS_REPLY (server/core/counters.h, CTR_OWNER)
 * into v[CTR_OWNER_*]; the others are left as they were. */
void owner_take_stats(const struct wire_msg *m, int64_t *v);
/* CONFIG RESETSTAT reached this edge (worker hook, arg the edge): the
 * counters of each owner's last STATS read 0 until its next answer. */
void edge_stats_reset(void *arg);

#endif

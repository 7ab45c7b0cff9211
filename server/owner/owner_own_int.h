/*
 * owner_own_int.h - what the two files of the ownership module share
 * (owner_own.c: the map copy, the serving list, marks, MOVED, the stored
 * table; owner_own_wait.c: the waits a leaf can be under: marks' blocks, a
 * hand-over's hold, a restarted owner's wait for the promotion, the lease
 * fence).  Private to them: one module (scripts/check/layers.py GROUPS).
 */
#ifndef HKV_OWNER_OWN_INT_H
#define HKV_OWNER_OWN_INT_H

#include <stdint.h>

#include "server/core/cmap.h"
#include "server/owner/owner_int.h"

struct owner_own {
    struct cmap_table *snap;     /* the last map copy (revision 0: none yet) */
    struct cmap_table *spare;    /* the next copy is made here */
    int64_t seen;                /* the segment revision last copied (or refused) */
    unsigned number;             /* this owner's cluster number; 0 = not known */
    struct persist_own *serving; /* the leaves the map gives this owner */
    struct own_mark marks[OWN_MAX_MARKS];
    int saving;                  /* a save is with the persister */
    int dirty;                   /* serving changed since the last save was handed over */
    uint64_t gen, gen_saving, gen_saved; /* changes made, handed over, committed */
    struct event *poll;
    void (*on_map)(struct owner *o); /* a new map copy was taken (owner_own_on_map) */
    /* The revision of this process's first map (0: none yet, or no wait):
     * a leaf the map gives it with in-sync followers at an epoch no newer
     * than that was its predecessor's, whose ledger died with it, so a
     * follower holds writes this process does not: requests on it wait
     * (parked) until the map moves past it (the agent promotes a follower,
     * or empties the set: CLUSTER.md §7).  Every such leaf, not a bounded
     * list of them: one left out was served stale (a history run's DEL). */
    int64_t await_rev;
    int first_map_seen, awaits_logged;
    /* In a cluster: this host's lease is not proven (the agent's last
     * keepalive answer + TTL - margin has passed), so its leaves with
     * followers are not served: another host may promote a follower as soon
     * as etcd lets the lease go (CLUSTER.md §7, fencing). */
    int lease_fenced;
    /* A planned hand-over's fence (owner_handover.c): memory only, one leaf. */
    struct { uint32_t start; uint8_t bits, block; } hold;
};

static inline uint64_t span(uint8_t bits)
{
    return 1ULL << (32 - bits);
}

static inline int covers(uint32_t start, uint8_t bits, uint64_t place)
{
    return (uint64_t)(uint32_t)(place >> 32) - start < span(bits);
}

/* A new map copy was taken: the restarted owner's waits it ends. */
void own_settle_awaits(struct owner *o);
/* The lease check: 1 when the fence changed. */
int own_check_lease(struct owner *o);

#endif

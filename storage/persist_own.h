/*
 * persist_own.h - an owner's ownership table: which leaves of its pool it
 * owns, at which epoch, as of which cluster map (../shared/CLUSTER.md §1:
 * "owners serve from a durable local ownership table").
 *
 * In a cluster the owner learns its leaves from the map the host's agent
 * publishes; it keeps a copy in its own SQLite file so that a restart while
 * the agent has not published yet (etcd down, the agent restarting) serves
 * exactly the leaves it served before, and nothing else.  The table lives
 * next to the kv rows (table `own`, created on first use; a single host
 * never creates it) and is written by the persister's writer thread, never
 * by the owner's loop: the owner hands a whole table over in a batch
 * (persist_batch.own), which replaces the stored one in the batch's
 * transaction, committed with synchronous=FULL.  At start, before the
 * persister's threads run, persister_own_load reads it back.
 *
 * A leaf is the prefix of the top `bits` bits of a key's placement hash
 * (server/core/router.h), stored as `start` = prefix << (32 - bits), as the
 * cluster map (server/core/cmap.h) keeps it.
 */
#ifndef HKV_PERSIST_OWN_H
#define HKV_PERSIST_OWN_H

#include <stddef.h>
#include <stdint.h>

#define PERSIST_OWN_NAME_MAX 64

struct persist_own_leaf {
    uint32_t start;           /* prefix << (32 - bits) */
    uint8_t bits;             /* 0..32 */
    int64_t epoch;            /* the leaf's epoch (etcd mod_revision of its map key) */
};

struct persist_own {
    char cluster[PERSIST_OWN_NAME_MAX]; /* the cluster the table belongs to */
    uint32_t number;          /* the owner's cluster number; 0 = not known */
    uint8_t pool;             /* enum cfg_pool of the owner */
    int64_t revision;         /* the map revision the table was taken from */
    size_t n;
    struct persist_own_leaf *leaves; /* n entries, sorted by start */
};

/* A table with room for n leaves (n set, leaves zeroed), or NULL. */
struct persist_own *persist_own_new(size_t n);
/* Frees it and sets *o = NULL.  NULL-safe. */
void persist_own_free(struct persist_own **o);
/* A copy of o, or NULL. */
struct persist_own *persist_own_copy(const struct persist_own *o);

#endif

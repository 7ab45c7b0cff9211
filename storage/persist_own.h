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
 * Each leaf row carries its move state (enum persist_own_state): a table
 * written before moves existed has no such columns and is read as OWNED
 * everywhere (the columns are added on first use).
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

/* A leaf's state in the owner's durable table (../shared/CLUSTER.md §5, the
 * names of the Spin model in tests/model/).  OWNED: served (the map gives it
 * to this owner).  HANDING_OFF(e1): this owner is the source of a move whose
 * intent made epoch e1; it serves the leaf until the move ends, and after a
 * restart not before the map says how it ended.  RECEIVING(e1): this owner
 * is the target of that move; it holds a copy it does not serve.  GONE: the
 * move committed (at epoch e2, to `peer`); the leaf is not served. */
enum persist_own_state {
    PERSIST_OWNED = 0,
    PERSIST_HANDING_OFF = 1,
    PERSIST_RECEIVING = 2,
    PERSIST_GONE = 3,
};

struct persist_own_leaf {
    uint32_t start;           /* prefix << (32 - bits) */
    uint8_t bits;             /* 0..32 */
    uint8_t state;            /* enum persist_own_state */
    int64_t epoch;            /* the leaf's epoch (etcd mod_revision of its map key) */
    int64_t e1;               /* HANDING_OFF, RECEIVING, GONE: the move's intent epoch */
    int64_t e2;               /* GONE: the epoch its commit gave the leaf */
    uint32_t peer;            /* the other owner of the move (T for a source, S for a target) */
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

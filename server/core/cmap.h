/*
 * cmap.h - the cluster map as this host sees it (../shared/CLUSTER.md §2):
 * which owner serves each leaf of each pool, at which epoch, and where each
 * owner is.  Only in a cluster (`cluster` set); a single host routes from the
 * router's fixed maps and has no cmap.
 *
 * One writer, many readers, no lock.  The host's agent is the only writer: it
 * builds a whole table from what etcd says (a struct cmap_table, a plain
 * value), checks it (cmap_validate: the leaves of every pool partition the
 * hash space), and publishes it into a shared segment the master mapped
 * before forking.  Edges, owners and the master read it.  The segment holds
 * two table buffers and a sequence counter: the writer fills the buffer
 * readers are not pointed at, then flips the index (seq odd while it does);
 * a reader copies the active buffer and retries if seq moved, so it never
 * sees half a table.  Readers poll cmap_revision() (one atomic load) and
 * take a snapshot only when it changed: routing itself reads the reader's
 * own copy, never the segment.
 *
 * Leaves.  A leaf is the prefix of the top `bits` bits of a key's placement
 * hash (router_place), as in server/core/router.h.  Its epoch is the etcd
 * mod_revision of its map key: global and monotonic, so of two claims about
 * a leaf the higher epoch wins (MOVED carries it).  A pool's leaves are kept
 * sorted by `start` (the prefix shifted to the top of a 32-bit word), so a
 * lookup is a binary search on the hash's top 32 bits.
 *
 * Owners.  Owner numbers are permanent and cluster-wide (etcd `owners/<n>`,
 * never reused), 1..CMAP_MAX_OWNERS; 0 means none.  An owner's identity is
 * "<host>/<pool>/<k>" (its host, its pool, its index on that host).
 * `live` says whether its members/ key exists now (its host's lease is
 * alive); a map may still name an owner that is not live (its host is down
 * or cut off from etcd), and edges keep using an established link to it.
 *
 * Persistence.  The agent saves each applied table to `dir` (cmap_save, a
 * checksummed file written aside and renamed) and loads it at start
 * (cmap_load), so a host restarting while etcd is down routes as before.
 * Both do disk I/O: never call them on an event-loop thread.
 */
#ifndef HKV_CMAP_H
#define HKV_CMAP_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

#define CMAP_MAX_OWNERS 256        /* owner numbers 1..CMAP_MAX_OWNERS */
#define CMAP_MAX_LEAVES 16384      /* per pool */
#define CMAP_MAX_BITS 24           /* deepest leaf */
#define CMAP_NAME_MAX 96           /* "<host>/<pool>/<k>", a host name, an address */
#define CMAP_NPOOLS 2              /* CFG_POOL_HOT, CFG_POOL_COLD */
#define CMAP_KEY_SHOWN 64          /* bytes of a refused hot key the health keeps */
#define CMAP_MAX_ISR 3             /* in-sync followers per leaf (config CFG_MAX_REPLICAS) */

enum cmap_leaf_state { CMAP_SERVING = 0, CMAP_MOVING = 1 };

struct cmap_leaf {
    uint32_t start;                /* prefix << (32 - bits) */
    uint8_t bits;                  /* 0..CMAP_MAX_BITS (0: the whole space) */
    uint8_t state;                 /* enum cmap_leaf_state */
    uint16_t owner;                /* owner number serving it */
    uint16_t to;                   /* MOVING: the target owner; else 0 */
    uint8_t nisr;                  /* in-sync followers (CLUSTER.md §7), 0..CMAP_MAX_ISR */
    uint8_t pad;
    uint16_t isr[CMAP_MAX_ISR];    /* their owner numbers, in the map's order (the
                                    * primary, `owner`, is not repeated here) */
    int64_t epoch;                 /* mod_revision of its map key */
};

struct cmap_owner {
    uint16_t number;               /* 0 = this slot is unused */
    uint8_t pool;                  /* enum cfg_pool */
    uint8_t live;                  /* its members/ key exists */
    uint16_t index;                /* k: its index on its host */
    uint16_t port;                 /* TCP owner port; 0 = not reachable by TCP */
    uint64_t incarnation;          /* of the registered process; 0 = not registered */
    char id[CMAP_NAME_MAX];        /* "<host>/<pool>/<k>" */
    char host[CMAP_NAME_MAX];
    char addr[CMAP_NAME_MAX];      /* its host's advertise-addr */
};

struct cmap_table {
    int64_t revision;              /* the etcd revision this table reflects; 0 = empty */
    uint32_t nleaves[CMAP_NPOOLS];
    struct cmap_leaf leaves[CMAP_NPOOLS][CMAP_MAX_LEAVES]; /* sorted by start */
    struct cmap_owner owners[CMAP_MAX_OWNERS + 1];          /* by number; [0] unused */
};

/* What the agent says about its link to etcd (INFO # Cluster, admin status).
 * Written with the table or alone (cmap_set_health); readers copy it. */
struct cmap_health {
    int64_t etcd_ok_ms;            /* unix ms of the last answer from etcd; 0 = never */
    int64_t lease_id;              /* the host lease; 0 = none */
    int64_t lease_ttl_ms;          /* the TTL etcd last granted or renewed */
    int64_t lease_renewed_ms;      /* unix ms of the last successful keepalive */
    int64_t lease_renewed_mono_ms; /* the same on CLOCK_MONOTONIC: the owners' lease fence */
    int64_t watch_revision;        /* the watch stream's last revision (events or progress) */
    int64_t compactions;           /* times the watch had to restart from a full read */
    int64_t refused_maps;          /* revisions not applied: the leaves did not partition */
    uint32_t host_number;          /* this host's number (writer prefixes); 0 = not yet */
    uint8_t etcd_up;               /* the last call reached etcd */
    uint8_t from_disk;             /* the table came from `dir`, not (yet) from etcd */
    /* automatic moves (server/agent/agent_policy.h), since the agent started */
    int64_t auto_moves;            /* moves ordered (a split's half included) */
    int64_t auto_splits;           /* splits ordered */
    int64_t auto_refused;          /* leaves left alone: one key carries most of their work */
    int64_t auto_refused_key_len;  /* bytes of the last refused key kept below */
    char auto_refused_key[CMAP_KEY_SHOWN];
    /* replicas (CLUSTER.md §7; server/agent/agent_follow.h, agent_promote.h),
     * since the agent started: INFO # Replication */
    int64_t repl_promotions;       /* followers made primary by this agent's CAS */
    int64_t repl_isr_adds;         /* LEAF_ISR_ADD txns applied for this host's owners */
    int64_t repl_isr_removals;     /* LEAF_ISR_DEL applied, and dead followers taken out */
    int64_t repl_follow_sent;      /* LEAF_ORDER_FOLLOW orders sent to this host's owners */
    int64_t repl_follow_failed;    /* of those: refused, failed or silent past their bound */
};

struct cmap;

/* The segment, mapped by the master before it forks (shared with every
 * child).  NULL on failure, errno set. */
struct cmap *cmap_create(void);
void cmap_destroy(struct cmap **m);

/* Readers.  cmap_revision: the published table's revision (0 = none yet).
 * cmap_snapshot copies the published table into *out (which is big: keep it
 * on the heap) and returns its revision, 0 if none has been published.
 * cmap_health copies the agent's health. */
int64_t cmap_revision(const struct cmap *m);
int64_t cmap_snapshot(const struct cmap *m, struct cmap_table *out);
void cmap_health_get(const struct cmap *m, struct cmap_health *out);

/* The writer (the agent only).  cmap_publish copies t into the segment; t
 * must have passed cmap_validate.  HKV_OK, or HKV_EINVAL for an invalid t
 * (then nothing changes). */
int cmap_publish(struct cmap *m, const struct cmap_table *t);
void cmap_health_set(struct cmap *m, const struct cmap_health *h);

/* HKV_OK when every pool's leaves are sorted, each leaf's start fits its
 * bits, they cover [0, 2^32) with no gap and no overlap (a pool with no
 * leaves is allowed: it has no owners), every leaf names an owner of its
 * pool, a MOVING leaf names a target, and each leaf's in-sync followers are
 * at most CMAP_MAX_ISR distinct owners of its pool other than its owner;
 * else HKV_EINVAL with the reason. */
int cmap_validate(const struct cmap_table *t, char *why, size_t whylen);

/* The leaf of placement hash `place` in pool, or NULL if the pool has none. */
const struct cmap_leaf *cmap_lookup(const struct cmap_table *t, enum cfg_pool pool,
                                    uint64_t place);
/* Owner number -> its row, or NULL if n is out of range or unused. */
const struct cmap_owner *cmap_owner(const struct cmap_table *t, unsigned n);
/* The owner number whose id is "<host>/<pool>/<k>", or 0. */
unsigned cmap_owner_by_id(const struct cmap_table *t, const char *host, enum cfg_pool pool,
                          int k);

/* Disk (never on a loop thread).  cmap_save writes t to path atomically
 * (temporary file, fsync, rename, fsync of the directory); cmap_load reads it
 * back and validates it.  HKV_OK; HKV_ENOENT (no file); HKV_EIO; HKV_EINVAL
 * (a file that is torn, from another format, or does not validate). */
int cmap_save(const struct cmap_table *t, const char *path);
int cmap_load(struct cmap_table *t, const char *path);

#endif

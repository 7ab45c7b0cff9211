/*
 * ledger_int.h - the ledger's insides, shared by its own files only
 * (ledger.c: table, persister side; ledger_entry.c: the entry's bytes
 * and its changes; ledger_cmd.c: the
 * commands; ledger_scan.c: the walks - scan, sweep, eviction; ledger_pos.c:
 * the position order and the walks in it; ledger_dirty.c: the dirty
 * order and the collection of dirty rows).  Nothing outside
 * storage/ledger*.c includes this.
 */
#ifndef HKV_LEDGER_INT_H
#define HKV_LEDGER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "storage/ledger.h"

#define E_TOMB 0x1u /* a delete (or a swept expiry): no value, keeps the stamp */
#define E_REF 0x2u  /* CLOCK bit: touched since the eviction hand last passed */
#define E_ENC_SHIFT 2 /* bits 2-3: enum ledger_enc of the value */
#define E_ENC_MASK (0x3u << E_ENC_SHIFT)

enum dstate { D_CLEAN = 0, D_PENDING, D_INFLIGHT };

/* The dirty entries in the order they became collectable (ledger_dirty.c):
 * slots [head, end) of one array, a removed entry leaving a hole (NULL)
 * until the array is compacted.  A dirty entry knows its slot (4 bytes in
 * the entry where two list pointers took 16).  Pending entries are only
 * ever appended, and collecting one marks it in flight where it stands, so
 * the pending entries in slot order are the old pending list's order,
 * oldest first; pend is a slot before which none is pending. */
struct ldirty {
    struct lentry **a;
    uint32_t cap, head, end;
    uint32_t pend;
    uint32_t n;             /* dirty entries: slots that are not holes */
};

#define E_EXT 0x10u /* live, value and deadline in a block of its own (struct lext) */

/* An entry is one allocation: this header, the key, and right after the
 * key (the "inline area") either the value with its NUL, or the address of
 * a block (struct lext) holding the value with its deadline.  A value goes
 * in place when the key has no deadline and the value fits what malloc gave
 * the entry (malloc_usable_size); else in a block (E_EXT).  Most keys have
 * no deadline, so the 16 bytes of one are paid only by keys that have one.
 * An entry asks for at least LENTRY_INL_MIN bytes of inline area, so any
 * entry can take a block later without moving (entries never move: the
 * table, the position order and the dirty order point at them).  A
 * tombstone has no value and a live entry no tombstone time, so vlen and
 * tomb_mono share a word: read them with entry_vlen() and, for a tombstone
 * only, tomb_mono.  The key's table hash is not kept (8 bytes a key): it is
 * computed again from the key where it is needed without a lookup at hand
 * (moving an entry to a grown table, the expiry heap), and a lookup
 * compares lengths and keys.
 * Per key (a 16-byte key, a 64-byte value): one 128-byte chunk (36 + 16 +
 * 65 bytes asked); with list pointers, a value pointer and the deadline in
 * every header (68 bytes) it was one 160-byte chunk, and with a 96-byte
 * header with the key and a separate value 128 + 80. */
struct lentry {
    struct lentry *next;   /* bucket chain */
    hkv_stamp stamp;
    union {
        uint32_t vlen;      /* live: the value's length */
        uint64_t tomb_mono; /* tombstone (E_TOMB): when it became one (horizon start) */
    };
    uint32_t klen;
    uint32_t dslot;        /* while dirty: its slot in the dirty order */
    uint16_t class_id;
    uint8_t flags;         /* E_TOMB, E_REF, E_ENC_*, E_EXT */
    uint8_t state;         /* enum dstate */
    char key[];
};
#define LENTRY_HDR offsetof(struct lentry, key)
#define LENTRY_INL_MIN sizeof(struct lext *)

/* A live entry's out-of-line value (E_EXT), with its deadline. */
struct lext {
    uint64_t expire_mono;  /* deadline (0 = none) */
    int64_t expire_wall;   /* unix ms the deadline corresponds to, 0 = none */
    char val[];            /* vlen + 1 bytes, NUL-terminated */
};

static inline char *entry_inl(const struct lentry *e) { return (char *)e->key + e->klen; }

/* e's block: only when (e->flags & (E_TOMB | E_EXT)) == E_EXT. */
static inline struct lext *entry_ext(const struct lentry *e)
{
    struct lext *x;
    memcpy(&x, entry_inl(e), sizeof(x)); /* the inline area is not aligned */
    return x;
}

static inline int entry_has_ext(const struct lentry *e)
{
    return (e->flags & (E_TOMB | E_EXT)) == E_EXT;
}

static inline uint32_t entry_vlen(const struct lentry *e)
{
    return (e->flags & E_TOMB) ? 0 : e->vlen;
}

/* The value (NUL-terminated), NULL for a tombstone. */
static inline const char *entry_val(const struct lentry *e)
{
    if (e->flags & E_TOMB)
        return NULL;
    return (e->flags & E_EXT) ? entry_ext(e)->val : entry_inl(e);
}

static inline uint64_t entry_expire_mono(const struct lentry *e)
{
    return entry_has_ext(e) ? entry_ext(e)->expire_mono : 0;
}

static inline int64_t entry_expire_wall(const struct lentry *e)
{
    return entry_has_ext(e) ? entry_ext(e)->expire_wall : 0;
}

/* A deadline on the active-expiry heap (ledger_expire.c). */
struct lexp {
    uint64_t deadline;      /* expire_mono */
    uint64_t hash;          /* the entry's hash: no pointer, so stale pairs are harmless */
};

struct ltable {
    struct lentry **b;
    size_t size, mask, used;
};

struct ledger {
    struct ltable t[2];     /* t[1] only while rehashing */
    struct postree *order;  /* every entry by position (ledger_pos.c): walks in hash order */
    long rehashidx;         /* next t[0] bucket to move, -1 when not rehashing */
    uint8_t hkey[SIPHASH_KEY_LEN];
    size_t maxmemory;
    uint64_t tombstone_ttl_ms;
    struct hlc clock;       /* issues every version (ledger.h, "Versions") */
    hkv_stamp floor;        /* ledger_set_floor: the least version a read reports */
    hkv_stamp flush_floor;  /* ledger_flush: a stored row older than this is deleted */
    struct ldirty dirty;    /* pending and in-flight entries (ledger_dirty.c) */
    void *held;             /* a replaced value kept alive for a SET GET reply */
    ledger_expired_fn on_expired; /* ledger_on_expired */
    void *expired_arg;
    size_t hand;            /* eviction CLOCK hand (bucket ordinal) */
    size_t sweep_pos;       /* sweep position (bucket ordinal) */
    struct lexp *xheap;     /* active expiry: min-heap of deadlines (ledger_expire.c) */
    size_t xn, xcap;
    int xlossy;             /* a push failed: rebuild before trusting the heap */
    const struct lentry *xprev; /* the entry ledger_acct_sub saw last, and its */
    uint64_t xprev_deadline;    /* deadline then: a push only when it changes */
    int complete;
    int evicted_ever;
    struct ledger_stats st; /* counters; gauges kept current by acct_add/sub */
};

static inline int entry_live(const struct lentry *e, uint64_t now_mono)
{
    if (e->flags & E_TOMB)
        return 0;
    if (!(e->flags & E_EXT))
        return 1;
    uint64_t d = entry_ext(e)->expire_mono;
    return d == 0 || d > now_mono;
}

static inline int entry_dirty(const struct lentry *e) { return e->state != D_CLEAN; }

/* What ledger_put() writes into an entry. */
struct ledger_put_args {
    const char *val;    /* ignored when tomb */
    size_t vlen;
    int tomb;
    hkv_stamp stamp;
    uint16_t class_id;
    uint64_t expire_mono;
    int64_t expire_wall;
    int dirty;          /* 0: a clean load from SQLite */
    int enc;            /* enum ledger_enc of the value (0: AUTO) */
    /* A view of the replaced (live) value that a reply still reads: its
     * bytes stay readable until the next mutating call (kept in l->held;
     * hold->val is re-pointed when they had to be copied out), or NULL. */
    struct ledger_view *hold;
};

/* Counters and gauges: call ledger_acct_sub() before changing an entry and
 * ledger_acct_add() after, so keys, tombstones, memory and dirty numbers stay
 * exact. */
void ledger_acct_add(struct ledger *l, const struct lentry *e);
void ledger_acct_sub(struct ledger *l, const struct lentry *e);
/* Makes sure a clean entry can become dirty without an allocation: call
 * before any change of an operation that may dirty a clean entry.  HKV_OK
 * or HKV_ENOMEM.  No other state change needs one (a collected entry is
 * marked where it stands, a re-pended one leaves a hole). */
int ledger_dirty_reserve(struct ledger *l);
/* Moves e into the dirty order (pending: at its end; in flight: where it
 * stands) or out of it (between acct calls).  Never fails: clean to pending
 * needs ledger_dirty_reserve() first. */
void ledger_set_state(struct ledger *l, struct lentry *e, enum dstate s);
void ledger_dirty_free(struct ledger *l);
uint64_t ledger_dirty_bytes(const struct ledger *l);
uint64_t ledger_hash(const struct ledger *l, const char *key, size_t klen);
/* Finds a key, moving one bucket first while a resize is under way (that
 * moves entries between chains but never frees or copies them, so handed-out
 * pointers stay valid). */
struct lentry *ledger_find(struct ledger *l, uint64_t h, const char *key, size_t klen);
/* Creates (e = NULL) or replaces the entry for a key: the one path by which
 * a value enters the ledger.  HKV_OK, HKV_ENOMEM or HKV_EINVAL (key over 4
 * GiB); nothing changed on error. */
int ledger_put(struct ledger *l, struct lentry *e, uint64_t h, const char *key, size_t klen,
               const struct ledger_put_args *a, uint64_t now_mono);
/* Frees the value kept for the previous SET GET reply: called at the start
 * of every mutating operation, which is what bounds that pointer's life. */
void ledger_release_held(struct ledger *l);
/* Resolves a REL/ABS expiry to a deadline.  Returns 1 if it is at or before
 * now (the key should go; the outputs untouched), 0 otherwise. */
int ledger_deadline(struct ledger_expiry exp, struct ledger_clock now, uint64_t *mono,
                    int64_t *wall);
/* Evicts if over maxmemory; called after every change that applied. */
void ledger_after_write(struct ledger *l);

/* Up to two chain heads that bucket ordinal `pos` maps to (one per table;
 * t[0] buckets already moved are skipped).  Returns how many. */
int ledger_slots(struct ledger *l, size_t pos, struct ltable **tabs, size_t *idx);
/* Links a new entry into the table (ledger_put, after ledger_order_add). */
void ledger_insert(struct ledger *l, struct lentry *e, uint64_t h);
/* Frees e and its block (ledger_entry.c); e is out of every structure. */
void ledger_entry_free(struct lentry *e);
/* Unlinks *pp (a chain link in table t) and frees the entry. */
void ledger_drop(struct ledger *l, struct ltable *t, struct lentry **pp);
/* The version for a write that applies now to e (NULL: a new key): newer
 * than e's and than anything this ledger issued or loaded. */
hkv_stamp ledger_next_version(struct ledger *l, const struct lentry *e, struct ledger_clock now);
/* Turns e into a dirty tombstone carrying `stamp`.  HKV_OK, or HKV_ENOMEM
 * (a clean e could not join the dirty order: nothing changed). */
int ledger_make_tomb(struct ledger *l, struct lentry *e, hkv_stamp stamp, uint64_t now_mono);
/* Active-expiry bookkeeping, called by ledger_acct_sub/add (ledger_expire.c). */
void ledger_xnote_sub(struct ledger *l, const struct lentry *e);
void ledger_xnote_add(struct ledger *l, const struct lentry *e);
void ledger_xheap_free(struct ledger *l);
/* Starts moving to a table a fraction of the size when under a tenth of the
 * buckets hold entries (after mass deletes: scans and memory follow the live
 * keys, as Redis's dict resize). */
void ledger_shrink_if_sparse(struct ledger *l);
/* The position order (ledger_pos.c): every entry that is in the table is
 * in it, added before it enters the table (HKV_OK / HKV_ENOMEM: then it is
 * not added) and taken out as it leaves. */
int ledger_order_add(struct ledger *l, struct lentry *e);
void ledger_order_del(struct ledger *l, struct lentry *e);
uint64_t ledger_order_bytes(const struct ledger *l);

/* Evicts clean entries while usage is over maxmemory (bounded work). */
void ledger_evict(struct ledger *l);
int ledger_glob(const char *p, size_t plen, const char *s, size_t slen);

#endif

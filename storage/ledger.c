/*
 * ledger.c - the owner's key map: hash table, stamp guard, dirty tracking.
 *
 * The table is chained and keyed with SipHash-2-4 under a per-start random
 * key, so nobody can choose keys that collide.  It grows like Redis's dict:
 * when it is full a second table twice the size is allocated and every
 * operation (reads included) moves one bucket of the old table to the new
 * one, so a million-key table never pauses to rehash; lookups look in both
 * tables meanwhile.  The table never shrinks (a shrink would be the same
 * move in the other direction; memory of an emptied table is bucket
 * pointers only).
 *
 * Every change of an entry goes through ledger_acct_sub() before and ledger_acct_add()
 * after it, which keeps the gauges (keys, tombstones, memory, dirty keys and
 * bytes) exact without recomputation.  A dirty entry is pending (to
 * collect, in order of first dirtying) or in flight (its current stamp was
 * handed to the persister), in the dirty order of ledger_dirty.c.  A write
 * moves an entry back to pending, so the persister always gets the latest
 * version and gets each key once however often it changed.
 *
 * This file holds the table and the persister side (persisted, load); the
 * entry changes every operation is built from are in ledger_entry.c, the
 * commands in ledger_cmd.c and the walks over the table (scan, sweep,
 * eviction) in ledger_scan.c.
 */
#include "storage/ledger.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "proto/hkv.h"
#include "storage/ledger_int.h"
#include "storage/postree.h"

#define INITIAL_BUCKETS 16
#define REHASH_EMPTY_VISITS 10

/* ---- the table ---------------------------------------------------------- */

static int table_alloc(struct ledger *l, struct ltable *t, size_t size)
{
    t->b = calloc(size, sizeof(*t->b));
    if (t->b == NULL)
        return HKV_ENOMEM;
    t->size = size;
    t->mask = size - 1;
    t->used = 0;
    l->st.memory_bytes += size * sizeof(*t->b);
    l->st.buckets += size;
    return HKV_OK;
}

static void table_free(struct ledger *l, struct ltable *t)
{
    l->st.memory_bytes -= t->size * sizeof(*t->b);
    l->st.buckets -= t->size;
    free(t->b);
    memset(t, 0, sizeof(*t));
}

static int rehashing(const struct ledger *l) { return l->rehashidx >= 0; }

/* Moves up to n non-empty buckets of t[0] into t[1]. */
static void rehash_step(struct ledger *l, int n)
{
    int empty = n * REHASH_EMPTY_VISITS;
    if (!rehashing(l))
        return;
    while (n-- > 0 && l->t[0].used > 0) {
        while (l->t[0].b[l->rehashidx] == NULL) {
            l->rehashidx++;
            if (--empty == 0)
                return;
        }
        struct lentry *e = l->t[0].b[l->rehashidx];
        while (e != NULL) {
            struct lentry *next = e->next;
            size_t i = ledger_hash(l, e->key, e->klen) & l->t[1].mask;
            e->next = l->t[1].b[i];
            l->t[1].b[i] = e;
            l->t[0].used--;
            l->t[1].used++;
            e = next;
        }
        l->t[0].b[l->rehashidx] = NULL;
        l->rehashidx++;
    }
    if (l->t[0].used == 0) {
        table_free(l, &l->t[0]);
        l->t[0] = l->t[1];
        memset(&l->t[1], 0, sizeof(l->t[1]));
        l->rehashidx = -1;
    }
}

/* Starts growing when the table is full.  A failed allocation only means
 * longer chains, so it is not an error. */
void ledger_shrink_if_sparse(struct ledger *l)
{
    const struct ltable *t = &l->t[0];
    if (rehashing(l)) {
        rehash_step(l, 256); /* the sweep's tick moves a quiet table along too */
        return;
    }
    if (t->size <= INITIAL_BUCKETS || t->used * 10 >= t->size)
        return;
    size_t size = INITIAL_BUCKETS;
    while (size < t->used * 2)
        size *= 2;
    if (table_alloc(l, &l->t[1], size) == HKV_OK)
        l->rehashidx = 0; /* moved bucket by bucket like a growth */
}

static void grow_if_needed(struct ledger *l)
{
    if (rehashing(l) || l->t[0].used < l->t[0].size)
        return;
    if (table_alloc(l, &l->t[1], l->t[0].size * 2) == HKV_OK)
        l->rehashidx = 0;
}

uint64_t ledger_hash(const struct ledger *l, const char *key, size_t klen)
{
    return siphash24(l->hkey, key, klen);
}

struct lentry *ledger_find(struct ledger *l, uint64_t h, const char *key, size_t klen)
{
    rehash_step(l, 1);
    for (int ti = 0; ti <= (rehashing(l) ? 1 : 0); ti++) {
        const struct ltable *t = &l->t[ti];
        for (struct lentry *e = t->b[h & t->mask]; e != NULL; e = e->next)
            if (e->klen == klen && memcmp(e->key, key, klen) == 0)
                return e;
    }
    return NULL;
}

void ledger_insert(struct ledger *l, struct lentry *e, uint64_t h)
{
    grow_if_needed(l);
    struct ltable *t = &l->t[rehashing(l) ? 1 : 0];
    size_t i = h & t->mask;
    e->next = t->b[i];
    t->b[i] = e;
    t->used++;
}

void ledger_drop(struct ledger *l, struct ltable *t, struct lentry **pp)
{
    struct lentry *e = *pp;
    *pp = e->next;
    t->used--;
    ledger_acct_sub(l, e);
    l->xprev = NULL; /* freed: a new entry at this address is not its successor */
    ledger_set_state(l, e, D_CLEAN);
    ledger_order_del(l, e);
    ledger_entry_free(e);
}

int ledger_slots(struct ledger *l, size_t pos, struct ltable **tabs, size_t *idx)
{
    int n = 0;
    size_t i0 = pos & l->t[0].mask;
    if (!rehashing(l) || (long)i0 >= l->rehashidx) {
        tabs[n] = &l->t[0];
        idx[n++] = i0;
    }
    if (rehashing(l)) {
        tabs[n] = &l->t[1];
        idx[n++] = pos & l->t[1].mask;
    }
    return n;
}

/* ---- create / destroy --------------------------------------------------- */

int ledger_create(const struct ledger_options *opts, struct ledger **out)
{
    struct ledger *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return HKV_ENOMEM;
    l->maxmemory = opts->maxmemory;
    l->tombstone_ttl_ms = opts->tombstone_ttl_ms;
    hlc_init(&l->clock, opts->writer);
    l->rehashidx = -1;
    if (opts->has_hash_key) {
        memcpy(l->hkey, opts->hash_key, sizeof(l->hkey));
    } else {
        size_t got = 0;
        while (got < sizeof(l->hkey)) {
            ssize_t r = getrandom(l->hkey + got, sizeof(l->hkey) - got, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                free(l);
                return HKV_EIO;
            }
            got += (size_t)r;
        }
    }
    if (table_alloc(l, &l->t[0], INITIAL_BUCKETS) != HKV_OK) {
        free(l);
        return HKV_ENOMEM;
    }
    l->order = postree_create(&l->st.memory_bytes);
    if (l->order == NULL) {
        free(l->t[0].b);
        free(l);
        return HKV_ENOMEM;
    }
    *out = l;
    return HKV_OK;
}

void ledger_destroy(struct ledger **lp)
{
    if (lp == NULL || *lp == NULL)
        return;
    struct ledger *l = *lp;
    for (int ti = 0; ti < 2; ti++) {
        struct ltable *t = &l->t[ti];
        for (size_t i = 0; i < t->size; i++) {
            struct lentry *e = t->b[i];
            while (e != NULL) {
                struct lentry *next = e->next;
                ledger_entry_free(e);
                e = next;
            }
        }
        free(t->b);
    }
    free(l->held);
    ledger_dirty_free(l);
    ledger_xheap_free(l);
    postree_destroy(&l->order);
    free(l);
    *lp = NULL;
}

hkv_stamp ledger_set_floor(struct ledger *l, struct ledger_clock now, uint64_t margin_ms)
{
    uint64_t newest = l->clock.last_ms + STAMP_EPOCH_MS + margin_ms;
    uint64_t wall = now.wall_ms > 0 ? (uint64_t)now.wall_ms : 0;
    l->floor = hlc_next(&l->clock, wall > newest ? wall : newest);
    for (int ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < l->t[ti].size; i++)
            for (struct lentry *e = l->t[ti].b[i]; e != NULL; e = e->next)
                if (e->stamp < l->floor && !entry_dirty(e))
                    e->stamp = l->floor;
    return l->floor;
}

int ledger_mark_complete(struct ledger *l)
{
    if (l->evicted_ever)
        return HKV_EFULL;
    l->complete = 1;
    return HKV_OK;
}

int ledger_is_complete(const struct ledger *l) { return l->complete; }

/* ---- versions and deadlines --------------------------------------------- */

hkv_stamp ledger_next_version(struct ledger *l, const struct lentry *e, struct ledger_clock now)
{
    if (e != NULL)
        hlc_observe(&l->clock, e->stamp);
    return hlc_next(&l->clock, now.wall_ms > 0 ? (uint64_t)now.wall_ms : 0);
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

int ledger_deadline(struct ledger_expiry exp, struct ledger_clock now, uint64_t *mono,
                    int64_t *wall)
{
    int64_t rel = exp.kind == LEDGER_EXP_REL ? exp.ms : sat_add(exp.ms, -now.wall_ms);
    if (rel <= 0)
        return 1;
    *wall = exp.kind == LEDGER_EXP_REL ? sat_add(now.wall_ms, rel) : exp.ms;
    *mono = (uint64_t)rel > UINT64_MAX - now.mono_ms ? UINT64_MAX : now.mono_ms + (uint64_t)rel;
    return 0;
}

void ledger_after_write(struct ledger *l)
{
    /* only when some entry is clean: a ledger full of dirty keys would
     * otherwise walk buckets in vain on every write */
    if (l->maxmemory != 0 && l->st.memory_bytes > l->maxmemory &&
        l->st.keys + l->st.tombstones > l->st.dirty_keys)
        ledger_evict(l);
}

size_t ledger_count(const struct ledger *l) { return (size_t)l->st.keys; }

void ledger_stats(const struct ledger *l, struct ledger_stats *out)
{
    *out = l->st;
    out->order_bytes = ledger_order_bytes(l);
    out->dirty_order_bytes = ledger_dirty_bytes(l);
    out->rehashing = rehashing(l);
    out->complete = l->complete;
}

void ledger_dirty(const struct ledger *l, size_t *keys, size_t *bytes)
{
    if (keys != NULL)
        *keys = (size_t)l->st.dirty_keys;
    if (bytes != NULL)
        *bytes = (size_t)l->st.dirty_bytes;
}

/* ---- persister interface ------------------------------------------------ */

static int persist_outcome(struct ledger *l, const char *key, size_t klen, hkv_stamp stamp,
                           enum dstate to)
{
    struct lentry *e = ledger_find(l, ledger_hash(l, key, klen), key, klen);
    if (e == NULL)
        return HKV_ENOENT;
    if (e->stamp != stamp)
        return HKV_ESTALE;
    if (e->state == D_CLEAN || e->state == to)
        return HKV_OK; /* already clean, or already collectable */
    ledger_acct_sub(l, e);
    ledger_set_state(l, e, to);
    ledger_acct_add(l, e);
    return HKV_OK;
}

int ledger_persisted(struct ledger *l, const char *key, size_t klen, hkv_stamp stamp)
{
    ledger_release_held(l);
    int rc = persist_outcome(l, key, klen, stamp, D_CLEAN);
    if (rc == HKV_OK)
        ledger_after_write(l);
    return rc;
}

int ledger_persist_failed(struct ledger *l, const char *key, size_t klen, hkv_stamp stamp)
{
    ledger_release_held(l);
    return persist_outcome(l, key, klen, stamp, D_PENDING);
}

void ledger_batch_done(struct ledger *l, const struct persist_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct persist_row *r = &b->rows[i];
        if (b->status == HKV_OK)
            ledger_persisted(l, r->key, r->klen, r->stamp);
        else
            ledger_persist_failed(l, r->key, r->klen, r->stamp);
    }
}

int ledger_load(struct ledger *l, const struct persist_row *row, struct ledger_clock now)
{
    ledger_release_held(l);
    uint64_t h = ledger_hash(l, row->key, row->klen);
    struct lentry *e = ledger_find(l, h, row->key, row->klen);
    hlc_observe(&l->clock, row->stamp);
    hkv_stamp stamp = row->stamp > l->floor ? row->stamp : l->floor;
    if (e != NULL && e->stamp >= stamp)
        return HKV_EEXIST;
    struct ledger_put_args a = {.val = row->val, .vlen = row->vlen, .tomb = row->tombstone != 0,
                         .stamp = stamp, .class_id = row->class_id};
    if (row->stamp < l->flush_floor)
        a.tomb = 1; /* written before a FLUSHALL the file has not applied yet */
    if (!a.tomb && row->expire_at_ms != 0) {
        struct ledger_expiry x = {LEDGER_EXP_ABS, row->expire_at_ms};
        if (ledger_deadline(x, now, &a.expire_mono, &a.expire_wall)) {
            a.expire_mono = now.mono_ms; /* already expired; the sweep will take it */
            a.expire_wall = row->expire_at_ms;
        }
    }
    int rc = ledger_put(l, e, h, row->key, row->klen, &a, now.mono_ms);
    if (rc == HKV_OK)
        ledger_after_write(l);
    return rc;
}

int ledger_load_absent(struct ledger *l, const char *key, size_t klen, struct ledger_clock now)
{
    ledger_release_held(l);
    uint64_t h = ledger_hash(l, key, klen);
    if (ledger_find(l, h, key, klen) != NULL)
        return HKV_EEXIST;
    struct ledger_put_args a = {.tomb = 1, .stamp = l->floor};
    int rc = ledger_put(l, NULL, h, key, klen, &a, now.mono_ms);
    if (rc == HKV_OK)
        ledger_after_write(l);
    return rc;
}

/*
 * ledger_move.c - the ledger's part in a leaf move (../shared/CLUSTER.md
 * §5): a walk over every resident entry, to send a leaf's entries (the
 * source) or to drop them (a target's leftovers, a source's copy once the
 * move committed), and the load of a row that comes from another owner.
 *
 * The walk uses SCAN's reverse-binary cursor (ledger_scan.c), so every
 * entry resident for the whole walk is visited at least once across
 * resizes between calls, but unlike SCAN it sees tombstones and expired
 * entries too: a moving leaf's deletes must travel, or a key deleted at the
 * source would come back from an older row at the target.
 *
 * A moved row keeps the version it was written with: the target's floors
 * (ledger_set_floor after its recovery, a FLUSHALL's flush floor) are about
 * the target's own past, and raising or refusing a row by them would make
 * an older write of the source look newer than a later one, or drop it.
 */
#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

static uint64_t rev64(uint64_t v)
{
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((v & 0x0F0F0F0F0F0F0F0FULL) << 4);
    v = ((v >> 8) & 0x00FF00FF00FF00FFULL) | ((v & 0x00FF00FF00FF00FFULL) << 8);
    v = ((v >> 16) & 0x0000FFFF0000FFFFULL) | ((v & 0x0000FFFF0000FFFFULL) << 16);
    return (v >> 32) | (v << 32);
}

struct walk {
    struct ledger *l;
    ledger_walk_fn fn;
    void *arg;
};

static void walk_chain(struct walk *w, struct ltable *t, struct lentry **pp)
{
    while (*pp != NULL) {
        struct lentry *e = *pp;
        struct ledger_item it = {
            .key = e->key, .klen = e->klen, .val = entry_val(e), .vlen = entry_vlen(e),
            .stamp = e->stamp, .expire_at_ms = entry_expire_wall(e), .class_id = e->class_id,
            .tomb = (e->flags & E_TOMB) != 0, .dirty = entry_dirty(e),
        };
        if (w->fn(w->arg, &it) == LEDGER_WALK_DROP)
            ledger_drop(w->l, t, pp);
        else
            pp = &e->next;
    }
}

static uint64_t walk_step(struct ledger *l, uint64_t v, struct walk *w)
{
    if (l->rehashidx < 0) {
        uint64_t m0 = l->t[0].mask;
        walk_chain(w, &l->t[0], &l->t[0].b[v & m0]);
        v |= ~m0;
        return rev64(rev64(v) + 1);
    }
    struct ltable *small = &l->t[0], *big = &l->t[1];
    if (small->size > big->size) {
        struct ltable *t = small;
        small = big;
        big = t;
    }
    uint64_t m0 = small->mask, m1 = big->mask;
    walk_chain(w, small, &small->b[v & m0]);
    do {
        walk_chain(w, big, &big->b[v & m1]);
        v |= ~m1;
        v = rev64(rev64(v) + 1);
    } while (v & (m0 ^ m1));
    return v;
}

uint64_t ledger_walk(struct ledger *l, uint64_t cursor, size_t buckets, ledger_walk_fn fn,
                     void *arg)
{
    struct walk w = {l, fn, arg};
    ledger_release_held(l);
    if (l->t[0].size == 0)
        return 0;
    size_t n = 0;
    do {
        cursor = walk_step(l, cursor, &w);
    } while (cursor != 0 && ++n < buckets);
    return cursor;
}

static int load_row(struct ledger *l, const struct persist_row *row, struct ledger_clock now,
                    int dirty)
{
    ledger_release_held(l);
    uint64_t h = ledger_hash(l, row->key, row->klen);
    struct lentry *e = ledger_find(l, h, row->key, row->klen);
    hlc_observe(&l->clock, row->stamp);
    if (e != NULL && e->stamp >= row->stamp)
        return HKV_EEXIST;
    struct ledger_put_args a = {.val = row->val, .vlen = row->vlen, .tomb = row->tombstone != 0,
                                .stamp = row->stamp, .class_id = row->class_id, .dirty = dirty};
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

int ledger_load_moved(struct ledger *l, const struct persist_row *row, struct ledger_clock now)
{
    return load_row(l, row, now, 0);
}

int ledger_load_followed(struct ledger *l, const struct persist_row *row, struct ledger_clock now)
{
    return load_row(l, row, now, 1);
}

/*
 * ledger_pos.c - the ledger's second order: every entry by its position in
 * the hash space (proto/place.h place_pos), and the walk in that order
 * that SCAN pages through (ledger.h ledger_scan_pos).
 *
 * The table finds a key by its identity hash, under a per-start secret key;
 * nothing in it follows placement.  So beside it a B+ tree (postree.h)
 * holds (position, entry) for every entry, tombstones included: an entry
 * enters the tree before the table and leaves it as it leaves the table,
 * so the two always hold the same entries.  The position is not stored in
 * the entry (it would cost 8 bytes a key): it is computed again from the
 * key (two SipHash calls) on the rare paths that need it, an entry's
 * creation and its removal.  The tree costs ~20 bytes a key (measured by
 * check_ledger_pos: 19.8 at 1M keys); see postree.h for why a B+ tree.
 */
#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"
#include "proto/place.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"
#include "storage/postree.h"

int ledger_order_add(struct ledger *l, struct lentry *e)
{
    int rc = postree_insert(l->order, place_pos(e->key, e->klen), e);
    return rc == HKV_ENOMEM ? HKV_ENOMEM : HKV_OK;
}

void ledger_order_del(struct ledger *l, struct lentry *e)
{
    postree_remove(l->order, place_pos(e->key, e->klen), e);
}

uint64_t ledger_scan_pos(struct ledger *l, uint64_t from, uint64_t to, size_t count,
                         size_t max_visits, const char *pattern, size_t plen,
                         struct ledger_clock now, ledger_scan_fn fn, void *arg)
{
    struct postree_iter it;
    size_t emitted = 0, visits = 0;
    uint64_t pos, last = 0;
    void *p;
    if (count == 0)
        count = 1;
    if (max_visits < count)
        max_visits = count;
    if (from >= to || !postree_seek(l->order, from, &it))
        return to;
    while (postree_get(&it, &pos, &p) && pos < to) {
        /* stop only between positions: the caller resumes at pos */
        if (visits > 0 && pos != last && (emitted >= count || visits >= max_visits))
            return pos;
        const struct lentry *e = p;
        visits++;
        last = pos;
        if (entry_live(e, now.mono_ms) &&
            (pattern == NULL || ledger_glob(pattern, plen, e->key, e->klen))) {
            fn(e->key, e->klen, arg);
            emitted++;
        }
        postree_next(&it);
    }
    return to;
}

int ledger_resident(struct ledger *l, const char *key, size_t klen)
{
    return ledger_find(l, ledger_hash(l, key, klen), key, klen) != NULL;
}

int ledger_row_live(const struct ledger *l, const struct persist_row *row, int64_t wall_ms)
{
    return !row->tombstone && row->stamp >= l->flush_floor &&
           (row->expire_at_ms == 0 || row->expire_at_ms > wall_ms);
}

int ledger_match(const char *pattern, size_t plen, const char *key, size_t klen)
{
    return ledger_glob(pattern, plen, key, klen);
}

uint64_t ledger_order_bytes(const struct ledger *l)
{
    return postree_bytes(l->order);
}

/*
 * ledger_dirty.c - the order of the dirty entries, and what the persister
 * collects from it.
 *
 * A dirty entry is pending (to collect, oldest first) or in flight (its
 * current stamp was handed to the persister).  Both live in one array of
 * entry pointers (struct ldirty), each dirty entry knowing its slot:
 *   - an entry that becomes pending is appended, from clean or from in
 *     flight (a write after a collect, a failed batch): the end of the
 *     pending order, as a list append was;
 *   - collecting an entry marks it in flight in its slot, so the pending
 *     ones keep their order, and `pend` (no pending slot before it) lets
 *     the next collect start past the ones already taken;
 *   - an entry that leaves (persisted, dropped, flushed) leaves a hole.
 * Holes at the head are skipped as they appear; the others go when the
 * array is compacted, which is when an append finds the array's end and
 * half of it or more is holes (else it doubles), or when a removal leaves
 * it less than a quarter full (then it halves).  Each compaction moves at
 * most cap slots and follows at least cap / 4 removals or appends, so every
 * change costs O(1) amortized; the array is freed when no entry is dirty,
 * so a ledger that has caught up holds nothing for it.
 *
 * Only a clean entry that becomes pending may need the array to grow; the
 * operations that can do that reserve first (ledger_dirty_reserve) and fail
 * with nothing changed.  Leaving flight for pending first leaves a hole, so
 * its append always finds room, by compaction if the array cannot grow.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

#define DIRTY_MIN_CAP 64

/* Reallocates to cap slots (>= end); the memory figure follows. */
static int resize(struct ledger *l, uint32_t cap)
{
    struct ldirty *d = &l->dirty;
    struct lentry **a = realloc(d->a, (size_t)cap * sizeof(*a));
    if (a == NULL)
        return HKV_ENOMEM;
    l->st.memory_bytes -= (uint64_t)d->cap * sizeof(*a);
    l->st.memory_bytes += (uint64_t)cap * sizeof(*a);
    d->a = a;
    d->cap = cap;
    return HKV_OK;
}

/* Moves the entries to slots [0, n), in order, telling each its slot. */
static void compact(struct ldirty *d)
{
    uint32_t j = 0, pend = UINT32_MAX;
    for (uint32_t i = d->head; i < d->end; i++) {
        if (pend == UINT32_MAX && i >= d->pend)
            pend = j; /* the first slot at or past pend, wherever it lands */
        struct lentry *e = d->a[i];
        if (e == NULL)
            continue;
        e->dslot = j;
        d->a[j++] = e;
    }
    d->head = 0;
    d->end = j;
    d->pend = pend < j ? pend : j;
}

int ledger_dirty_reserve(struct ledger *l)
{
    struct ldirty *d = &l->dirty;
    if (d->n < d->cap)
        return HKV_OK; /* a free slot at the end, or holes to compact */
    if (d->cap > UINT32_MAX / 2)
        return HKV_ENOMEM;
    return resize(l, d->cap ? d->cap * 2 : DIRTY_MIN_CAP);
}

static void append(struct ledger *l, struct lentry *e)
{
    struct ldirty *d = &l->dirty;
    if (d->end == d->cap) {
        /* n < cap here (reserved, or a hole just left): compaction makes
         * room when growth is not worth it or not possible */
        int grown = d->n > d->cap / 2 && d->cap <= UINT32_MAX / 2 &&
                    resize(l, d->cap * 2) == HKV_OK;
        if (!grown)
            compact(d);
    }
    e->dslot = d->end;
    d->a[d->end++] = e;
    d->n++;
}

/* Leaves a hole in e's slot.  settle: the array may shrink or go (not when
 * e is appended right after). */
static void remove_slot(struct ledger *l, struct lentry *e, int settle)
{
    struct ldirty *d = &l->dirty;
    d->a[e->dslot] = NULL;
    d->n--;
    if (!settle)
        return;
    if (d->n == 0) {
        l->st.memory_bytes -= (uint64_t)d->cap * sizeof(*d->a);
        free(d->a);
        *d = (struct ldirty){0};
        return;
    }
    while (d->a[d->head] == NULL)
        d->head++; /* stops: n > 0 */
    if (d->pend < d->head)
        d->pend = d->head;
    if (d->cap > DIRTY_MIN_CAP && d->n < d->cap / 4) {
        compact(d);
        resize(l, d->cap / 2); /* a smaller block: cannot fail in practice, harmless if it does */
    }
}

void ledger_set_state(struct ledger *l, struct lentry *e, enum dstate s)
{
    if (e->state == s)
        return;
    if (s == D_INFLIGHT) {
        e->state = (uint8_t)s; /* collected: stays in its slot */
        return;
    }
    if (e->state != D_CLEAN)
        remove_slot(l, e, s == D_CLEAN);
    if (s == D_PENDING)
        append(l, e);
    e->state = (uint8_t)s;
}

void ledger_dirty_free(struct ledger *l)
{
    free(l->dirty.a);
    l->dirty = (struct ldirty){0};
}

uint64_t ledger_dirty_bytes(const struct ledger *l)
{
    return (uint64_t)l->dirty.cap * sizeof(*l->dirty.a);
}

int ledger_collect_dirty(struct ledger *l, struct persist_batch *b, size_t max_rows,
                         ledger_filter_fn filter, void *arg)
{
    struct ldirty *d = &l->dirty;
    int n = 0, rc = HKV_OK;
    uint32_t i = d->pend, left = UINT32_MAX; /* left: the first pending slot not taken */
    for (; i < d->end && (size_t)n < max_rows && n < INT_MAX; i++) {
        struct lentry *e = d->a[i];
        if (e == NULL || e->state != D_PENDING)
            continue;
        if (filter != NULL && !filter(e->class_id, arg)) {
            if (left == UINT32_MAX)
                left = i;
            continue;
        }
        int tomb = (e->flags & E_TOMB) != 0;
        if (persist_batch_add(b, e->key, e->klen, entry_val(e), entry_vlen(e), e->stamp,
                              entry_expire_wall(e), e->class_id, tomb) != HKV_OK) {
            rc = HKV_ENOMEM;
            break;
        }
        ledger_set_state(l, e, D_INFLIGHT); /* dirty either way: no accounting change */
        n++;
    }
    if (d->n > 0)
        d->pend = left < i ? left : i;
    return rc == HKV_OK ? n : rc;
}

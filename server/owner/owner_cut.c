/*
 * owner_cut.c - cutting persister batches out of the ledger's dirty keys:
 * the write-behind's (owner_persist.c) and a follow's fence (owner_recv.c),
 * below both.
 */
#include <stdint.h>

#include "server/owner/owner_int.h"
#include "server/owner/owner_cut.h"

int owner_ledger_class(uint16_t tag, void *arg)
{
    return tag != OWNER_TAG_DURABLE;
}

struct persist_batch *owner_cut_batch(struct ledger *l, int durable, size_t max_rows,
                                     ledger_filter_fn filter, void *arg, int *status)
{
    *status = HKV_OK;
    struct persist_batch *b = persist_batch_new(durable);
    if (b == NULL) {
        *status = HKV_ENOMEM;
        return NULL;
    }
    int n = ledger_collect_dirty(l, b, max_rows, filter, arg);
    if (n < 0) {
        /* Cut short: the rows taken so far are in flight.  Handing them on
         * would be fine, but the status must not say "stored" for rows that
         * were not: give them back as failed, so they stay dirty and the
         * next cut takes every one of them again. */
        b->status = n;
        ledger_batch_done(l, b);
        persist_batch_free(&b);
        *status = n;
        return NULL;
    }
    if (n == 0 && !durable) {
        persist_batch_free(&b);
        return NULL;
    }
    return b;
}

struct persist_batch *owner_cut_dirty(struct owner *o, int *status)
{
    return owner_cut_batch(o->ledger, 1, SIZE_MAX, owner_ledger_class, o, status);
}

/*
 * owner_cut.h - persister batches cut out of the ledger's dirty keys, for
 * the write-behind (owner_persist.c) and a follow's fence (owner_recv.c).
 * Private to server/owner.
 */
#ifndef HKV_OWNER_CUT_H
#define HKV_OWNER_CUT_H

#include "server/owner/owner_int.h"

/* The next batch for the persister: up to max_rows dirty keys that filter
 * accepts (NULL: all), or NULL when there is nothing to send (a ledger batch
 * with no rows; *status = HKV_OK) or on an allocation failure (*status =
 * HKV_ENOMEM): then the rows taken before it are given back as not persisted,
 * so every key stays dirty and the next cut takes it again. */
struct persist_batch *owner_cut_batch(struct ledger *l, int durable, size_t max_rows,
                                      ledger_filter_fn filter, void *arg, int *status);
/* A ledger_filter_fn: the classes the write-behind persists (not durable). */
int owner_ledger_class(uint16_t tag, void *arg);
/* Every ledger-class dirty key not in flight, in one durable batch (empty
 * when there is none: it still commits behind what is queued), for the
 * caller to submit; NULL on an allocation failure, as owner_cut_batch. */
struct persist_batch *owner_cut_dirty(struct owner *o, int *status);

#endif

/*
 * persist_row.h - what the ledger hands the persister: one key's latest state.
 *
 * The ledger copies the newest version of each dirty key into rows; the
 * persister owns a batch from the moment it is submitted until it reports the
 * batch done, then the owner's loop frees it.  Rows never point into the
 * ledger, so the loop may change or evict the key while its row is on disk's
 * way: the stamp is what ties the two back together (ledger_persisted clears
 * the dirty flag only if the key still holds that stamp).
 */
#ifndef HKV_PERSIST_ROW_H
#define HKV_PERSIST_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "proto/stamp.h"

struct persist_row {
    char *key;            /* malloc'd, owned by the row */
    size_t klen;
    char *val;            /* malloc'd, NULL for a tombstone */
    size_t vlen;
    hkv_stamp stamp;
    int64_t expire_at_ms; /* wall-clock unix ms, 0 = no expiry */
    uint16_t class_id;    /* index of the class in the config */
    uint8_t tombstone;    /* a delete: the row keeps the stamp, not the value */
};

struct persist_batch {
    struct persist_row *rows;
    size_t n, cap;
    int durable;          /* commit before acknowledging (synchronous=FULL) */
    hkv_stamp flush_below;/* FLUSHALL: first delete every row with an older stamp and
                           * record the floor (meta flush_floor) in the same
                           * transaction; 0 = none */
    struct persist_own *own; /* a cluster owner's ownership table (persist_own.h): replaces
                              * the stored one in the same transaction, committed with
                              * synchronous=FULL; NULL = none.  Owned by the batch */
    uint64_t id;          /* assigned by the owner, echoed when done */
    int status;           /* hkv_status, set by the persister when done */
    int64_t commit_ms;    /* how long the commit took, set when done */
    struct persist_batch *next; /* queue link, owned by whoever holds the batch */
};

/* Appends a copy of the key (and value unless tombstone).  HKV_OK/HKV_ENOMEM. */
int persist_batch_add(struct persist_batch *b, const char *key, size_t klen, const char *val,
                      size_t vlen, hkv_stamp stamp, int64_t expire_at_ms, uint16_t class_id,
                      int tombstone);
/* Frees every row and the batch itself; sets *b = NULL.  NULL-safe. */
void persist_batch_free(struct persist_batch **b);
struct persist_batch *persist_batch_new(int durable);

/* TEST-ONLY: the next `n` persist_batch_add calls succeed and every later one
 * fails with HKV_ENOMEM, as an allocation failure would, until this is called
 * again; n < 0 (the default) turns the failure off.  For tests of what the
 * callers do with a batch cut short (one loop thread, like the batches). */
void persist_batch_test_fail_after(int n);

#endif

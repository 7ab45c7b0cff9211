/* persist_row.c - batches of rows handed from the ledger to the persister. */
#include "persist_row.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/persist_own.h"

struct persist_batch *persist_batch_new(int durable)
{
    struct persist_batch *b = calloc(1, sizeof(*b));
    if (b != NULL)
        b->durable = durable;
    return b;
}

static int fail_after = -1; /* persist_batch_test_fail_after */

void persist_batch_test_fail_after(int n)
{
    fail_after = n;
}

int persist_batch_add(struct persist_batch *b, const char *key, size_t klen, const char *val,
                      size_t vlen, hkv_stamp stamp, int64_t expire_at_ms, uint16_t class_id,
                      int tombstone)
{
    if (fail_after == 0)
        return HKV_ENOMEM;
    if (fail_after > 0)
        fail_after--;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        struct persist_row *r = realloc(b->rows, cap * sizeof(*r));
        if (r == NULL)
            return HKV_ENOMEM;
        b->rows = r;
        b->cap = cap;
    }
    struct persist_row *r = &b->rows[b->n];
    memset(r, 0, sizeof(*r));
    r->key = malloc(klen ? klen : 1);
    if (r->key == NULL)
        return HKV_ENOMEM;
    memcpy(r->key, key, klen);
    r->klen = klen;
    if (!tombstone) {
        r->val = malloc(vlen ? vlen : 1);
        if (r->val == NULL) {
            free(r->key);
            return HKV_ENOMEM;
        }
        if (vlen)
            memcpy(r->val, val, vlen);
        r->vlen = vlen;
    }
    r->stamp = stamp;
    r->expire_at_ms = expire_at_ms;
    r->class_id = class_id;
    r->tombstone = tombstone ? 1 : 0;
    b->n++;
    return HKV_OK;
}

void persist_batch_free(struct persist_batch **bp)
{
    if (bp == NULL || *bp == NULL)
        return;
    struct persist_batch *b = *bp;
    for (size_t i = 0; i < b->n; i++) {
        free(b->rows[i].key);
        free(b->rows[i].val);
    }
    free(b->rows);
    persist_own_free(&b->own);
    free(b);
    *bp = NULL;
}

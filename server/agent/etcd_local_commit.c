/*
 * etcd_local_commit.c - the local store's road from a call to its answer
 * (etcd_local.h): an answer waits in the queue with the revision it
 * depends on, and a change set becomes a revision: kept in the history
 * (for watches and older ranges, trimmed by whole revisions) and handed to
 * the writer as a record, with a new snapshot now and then.  The calls
 * (etcd_local_txn.c) and the loop side (etcd_local.c) both use it; it
 * calls neither.
 */
#include "server/agent/etcd_local.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"

/* ---- answers ---- */

void etcd_local_ans_free(struct lans *a)
{
    for (size_t i = 0; i < a->nkvs; i++)
        lstore_kv_free(&a->kvs[i]);
    free(a->kvs);
    free(a->ekvs);
    free(a);
}

struct lans *etcd_local_ans_new(etcd_cb cb, void *arg)
{
    struct lans *a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->cb = cb;
        a->arg = arg;
    }
    return a;
}

void etcd_local_ans_queue(struct etcd_local *l, struct lans *a)
{
    a->need = l->t.rev;
    if (a->r.status == HKV_OK || a->r.status == HKV_EINVAL)
        a->r.revision = l->t.rev;
    *l->tail = a;
    l->tail = &a->next;
    event_active(l->kick, EV_TIMEOUT, 1);
}

/* ---- changes: table, history, file ---- */

static void trim_history(struct etcd_local *l)
{
    if (l->nhist <= ETCD_LOCAL_HISTORY)
        return;
    size_t drop = l->nhist / 2;
    while (drop < l->nhist && l->hist[drop].rev == l->hist[drop - 1].rev)
        drop++; /* whole revisions only */
    l->hist_base = l->hist[drop - 1].rev;
    for (size_t i = 0; i < drop; i++)
        lstore_change_free(&l->hist[i].c);
    memmove(l->hist, l->hist + drop, (l->nhist - drop) * sizeof(*l->hist));
    l->nhist -= drop;
}

/* The writer has written nothing for a while past the snapshot: hand it a
 * new one when the file is several snapshots long. */
static void maybe_snapshot(struct etcd_local *l)
{
    int failed;
    size_t since, snap;
    lstore_log_durable(l->w, &failed, &since, &snap);
    if (l->snapshot_pending && l->durable >= l->snapshot_rev)
        l->snapshot_pending = 0;
    if (failed || l->snapshot_pending || since < (1u << 20) || since < 4 * snap)
        return;
    struct hkv_buf b = HKV_BUF_INIT;
    if (lstore_rec_snapshot(&b, &l->t) != HKV_OK) {
        buf_deinit(&b);
        return; /* the log goes on growing: correct, only longer */
    }
    l->snapshot_pending = 1;
    l->snapshot_rev = l->t.rev;
    lstore_log_post(l->w, &b, l->t.rev, 1);
}

int etcd_local_commit(struct etcd_local *l, struct lchange *c, size_t n)
{
    if (n == 0)
        return HKV_OK;
    int64_t rev = l->t.rev + 1;
    struct hkv_buf b = HKV_BUF_INIT;
    int rc = HKV_OK;
    if (l->nhist + n > l->caphist) {
        size_t cap = (l->nhist + n) * 2;
        struct hev *h = realloc(l->hist, cap * sizeof(*h));
        if (h == NULL)
            rc = HKV_ENOMEM;
        else {
            l->hist = h;
            l->caphist = cap;
        }
    }
    if (rc == HKV_OK)
        rc = lstore_rec_changes(&b, rev, c, n);
    if (rc != HKV_OK) {
        buf_deinit(&b);
        l->failed = 1;
        for (size_t i = 0; i < n; i++)
            lstore_change_free(&c[i]);
        return rc;
    }
    l->t.rev = rev;
    for (size_t i = 0; i < n; i++)
        l->hist[l->nhist++] = (struct hev){rev, c[i]};
    lstore_log_post(l->w, &b, rev, 0);
    trim_history(l);
    maybe_snapshot(l);
    return HKV_OK;
}

/*
 * etcd_local_commit.c - the local store's road from a call to its answer
 * (etcd_local.h): an answer waits in the queue with the revision it
 * depends on (the engine, storage/lstore.h, made the revision).  The calls
 * (etcd_local_txn.c) and the loop side (etcd_local.c) both use it; it
 * calls neither.
 */
#include "server/agent/etcd_local.h"

#include <stdlib.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"

/* ---- answers ---- */

void etcd_local_ans_free(struct lans *a)
{
    lstore_ans_free(&a->res);
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
    a->need = l->s.t.rev;
    if (a->res.r.status == HKV_OK || a->res.r.status == HKV_EINVAL)
        a->res.r.revision = l->s.t.rev;
    *l->tail = a;
    l->tail = &a->next;
    event_active(l->kick, EV_TIMEOUT, 1);
}

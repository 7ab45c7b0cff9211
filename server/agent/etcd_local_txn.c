/*
 * etcd_local_txn.c - the local store's calls (etcd_local.h): txns (and put
 * and delete, txns of one op), ranges now or at an older revision, leases.
 *
 * Each call checks its arguments as etcd.h's do, runs on the engine
 * (storage/lstore.h: the table, the history, the leases, the log), and
 * queues the answer behind the revision it depends on
 * (etcd_local_ans_queue): it leaves once the file holds that revision.
 */
#include "server/agent/etcd_local.h"

#include <stdlib.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"

int etcd_local_txn(struct etcd_local *l, const struct etcd_cmp *cmp, size_t ncmp,
                   const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail,
                   etcd_cb cb, void *arg)
{
    if (cb == NULL || (ncmp > 0 && cmp == NULL) || (nok > 0 && ok == NULL) ||
        (nfail > 0 && fail == NULL))
        return HKV_EINVAL;
    struct lans *a = etcd_local_ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    if (lstore_txn(&l->s, cmp, ncmp, ok, nok, fail, nfail, &a->res) != HKV_OK) {
        free(a);
        return HKV_ENOMEM;
    }
    etcd_local_ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_put(struct etcd_local *l, const char *key, size_t klen, const char *val,
                   size_t vlen, int64_t lease, etcd_cb cb, void *arg)
{
    if (key == NULL || klen == 0)
        return HKV_EINVAL;
    struct etcd_op op = {.kind = ETCD_OP_PUT, .key = key, .klen = klen, .value = val,
                         .vlen = vlen, .lease = lease};
    return etcd_local_txn(l, NULL, 0, &op, 1, NULL, 0, cb, arg);
}

int etcd_local_delete(struct etcd_local *l, const char *key, size_t klen, const char *end,
                      size_t elen, etcd_cb cb, void *arg)
{
    if (key == NULL || klen == 0)
        return HKV_EINVAL;
    struct etcd_op op = {.kind = ETCD_OP_DELETE, .key = key, .klen = klen, .end = end,
                         .elen = elen};
    return etcd_local_txn(l, NULL, 0, &op, 1, NULL, 0, cb, arg);
}

int etcd_local_range(struct etcd_local *l, const char *key, size_t klen, const char *end,
                     size_t elen, int64_t revision, int64_t limit, etcd_cb cb, void *arg)
{
    if (key == NULL || cb == NULL)
        return HKV_EINVAL;
    struct lans *a = etcd_local_ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    lstore_range(&l->s, key, klen, end, elen, revision, limit, &a->res);
    etcd_local_ans_queue(l, a);
    return HKV_OK;
}

/* The start every lease call shares: its argument checked (ok: positive),
 * its answer made, and answered at once with EIO while the store is failed.
 * Returns the answer to fill and queue, or NULL with *rc what the call
 * returns (HKV_EINVAL, HKV_ENOMEM, or HKV_OK when already answered). */
static struct lans *lease_call(struct etcd_local *l, int64_t arg_ok, etcd_cb cb, void *arg,
                               int *rc)
{
    *rc = HKV_OK;
    if (arg_ok <= 0 || cb == NULL) {
        *rc = HKV_EINVAL;
        return NULL;
    }
    struct lans *a = etcd_local_ans_new(cb, arg);
    if (a == NULL) {
        *rc = HKV_ENOMEM;
        return NULL;
    }
    if (!lstore_poisoned(&l->s, &a->res))
        return a;
    etcd_local_ans_queue(l, a);
    return NULL;
}

int etcd_local_lease_grant(struct etcd_local *l, int64_t ttl_s, etcd_cb cb, void *arg)
{
    int rc;
    struct lans *a = lease_call(l, ttl_s, cb, arg, &rc);
    if (a == NULL)
        return rc;
    if (lstore_lease_grant(&l->s, ttl_s, &a->res) != HKV_OK) {
        free(a);
        return HKV_ENOMEM;
    }
    etcd_local_ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_lease_keepalive(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg)
{
    int rc;
    struct lans *a = lease_call(l, id, cb, arg, &rc);
    if (a == NULL)
        return rc;
    lstore_lease_keepalive(&l->s, id, &a->res);
    etcd_local_ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_lease_revoke(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg)
{
    int rc;
    struct lans *a = lease_call(l, id, cb, arg, &rc);
    if (a == NULL)
        return rc;
    lstore_lease_revoke(&l->s, id, &a->res);
    etcd_local_ans_queue(l, a);
    return HKV_OK;
}

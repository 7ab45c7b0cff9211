/*
 * etcd_calls.c - the calls of etcd.h (range, put, delete, txn, leases): each
 * goes to the local store (leaf-moves on one host, etcd_local.h), to the
 * agent's store over its socket (etcd_remote.h), or is encoded as etcd's
 * JSON and queued for the HTTP client (etcd.c).
 */
#include "server/agent/etcd_int.h"

#include <string.h>

static int queue_call(struct etcd *e, struct etcd_call *c, int rc, etcd_cb cb, void *arg)
{
    if (c == NULL)
        return HKV_ENOMEM;
    if (rc != HKV_OK || cb == NULL) {
        etcd_call_free(c);
        return rc != HKV_OK ? rc : HKV_EINVAL;
    }
    c->cb = cb;
    c->arg = arg;
    etcd_submit(e, c);
    return HKV_OK;
}

/* A call for an agent's store (etcd_remote.h), its body encoded in b. */
static int forward(struct etcd *e, struct hkv_buf *b, int rc, etcd_cb cb, void *arg)
{
    if (rc == HKV_OK)
        rc = etcd_remote_call(e->remote, b, cb, arg);
    buf_deinit(b);
    return rc;
}

int etcd_range(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
               int64_t revision, int64_t limit, etcd_cb cb, void *arg)
{
    if (e->local != NULL)
        return etcd_local_range(e->local, key, klen, end, elen, revision, limit, cb, arg);
    if (e->remote != NULL) {
        struct hkv_buf b = HKV_BUF_INIT;
        int rc = cb == NULL ? HKV_EINVAL
                            : etcd_remote_req_range(&b, key, klen, end, elen, revision, limit);
        return forward(e, &b, rc, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_RANGE, "/v3/kv/range");
    return queue_call(e, c, c ? etcd_req_range(&c->body, key, klen, end, elen, revision, limit) : 0,
                      cb, arg);
}

int etcd_put(struct etcd *e, const char *key, size_t klen, const char *val, size_t vlen,
             int64_t lease, etcd_cb cb, void *arg)
{
    if (e->local != NULL || e->remote != NULL) {
        if (key == NULL || klen == 0)
            return HKV_EINVAL;
        struct etcd_op op = {.kind = ETCD_OP_PUT, .key = key, .klen = klen, .value = val,
                             .vlen = vlen, .lease = lease};
        return etcd_txn(e, NULL, 0, &op, 1, NULL, 0, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_PUT, "/v3/kv/put");
    return queue_call(e, c, c ? etcd_req_put(&c->body, key, klen, val, vlen, lease) : 0, cb, arg);
}

int etcd_delete(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
                etcd_cb cb, void *arg)
{
    if (e->local != NULL || e->remote != NULL) {
        if (key == NULL || klen == 0)
            return HKV_EINVAL;
        struct etcd_op op = {.kind = ETCD_OP_DELETE, .key = key, .klen = klen, .end = end,
                             .elen = elen};
        return etcd_txn(e, NULL, 0, &op, 1, NULL, 0, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_DELETE, "/v3/kv/deleterange");
    return queue_call(e, c, c ? etcd_req_delete(&c->body, key, klen, end, elen) : 0, cb, arg);
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok,
             size_t nok, const struct etcd_op *fail, size_t nfail, etcd_cb cb, void *arg)
{
    if (e->local != NULL)
        return etcd_local_txn(e->local, cmp, ncmp, ok, nok, fail, nfail, cb, arg);
    if (e->remote != NULL) {
        struct hkv_buf b = HKV_BUF_INIT;
        int rc = cb == NULL ? HKV_EINVAL
                            : etcd_remote_req_txn(&b, cmp, ncmp, ok, nok, fail, nfail);
        return forward(e, &b, rc, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_TXN, "/v3/kv/txn");
    return queue_call(e, c, c ? etcd_req_txn(&c->body, cmp, ncmp, ok, nok, fail, nfail) : 0, cb,
                      arg);
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, etcd_cb cb, void *arg)
{
    if (e->local != NULL)
        return etcd_local_lease_grant(e->local, ttl_s, cb, arg);
    if (e->remote != NULL) {
        struct hkv_buf b = HKV_BUF_INIT;
        int rc = cb == NULL || ttl_s <= 0 ? HKV_EINVAL : etcd_remote_req_int(&b, ETCD_R_GRANT, ttl_s);
        return forward(e, &b, rc, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_GRANT, "/v3/lease/grant");
    return queue_call(e, c, ttl_s <= 0 ? HKV_EINVAL : c ? etcd_req_int(&c->body, "TTL", ttl_s) : 0,
                      cb, arg);
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, etcd_cb cb, void *arg)
{
    if (e->local != NULL)
        return etcd_local_lease_keepalive(e->local, id, cb, arg);
    if (e->remote != NULL) {
        struct hkv_buf b = HKV_BUF_INIT;
        int rc = cb == NULL || id <= 0 ? HKV_EINVAL : etcd_remote_req_int(&b, ETCD_R_KEEPALIVE, id);
        return forward(e, &b, rc, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_KEEPALIVE, "/v3/lease/keepalive");
    return queue_call(e, c, id <= 0 ? HKV_EINVAL : c ? etcd_req_int(&c->body, "ID", id) : 0, cb,
                      arg);
}

int etcd_lease_revoke(struct etcd *e, int64_t id, etcd_cb cb, void *arg)
{
    if (e->local != NULL)
        return etcd_local_lease_revoke(e->local, id, cb, arg);
    if (e->remote != NULL) {
        struct hkv_buf b = HKV_BUF_INIT;
        int rc = cb == NULL || id <= 0 ? HKV_EINVAL : etcd_remote_req_int(&b, ETCD_R_REVOKE, id);
        return forward(e, &b, rc, cb, arg);
    }
    struct etcd_call *c = etcd_call_new(ETCD_K_REVOKE, "/v3/lease/revoke");
    return queue_call(e, c, id <= 0 ? HKV_EINVAL : c ? etcd_req_int(&c->body, "ID", id) : 0, cb,
                      arg);
}

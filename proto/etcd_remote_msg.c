/*
 * etcd_remote_msg.c - the bodies hotkvd-admin and the agent exchange for a
 * single host's local store (server/agent/etcd_remote.h).  Little-endian integers;
 * bytes are a u32 length and the bytes; an optional range end is a u8
 * flag first.  Decoding is bounded by the body (a peer's lengths are
 * checked against what is left before anything is read or allocated).
 */
#include "proto/etcd_remote_msg.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/etcd_msg.h"

static int put_u(struct hkv_buf *b, uint64_t v, int bytes)
{
    unsigned char x[8];
    for (int i = 0; i < bytes; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    return buf_append(b, x, (size_t)bytes);
}

static int put_bytes(struct hkv_buf *b, const char *p, size_t n)
{
    int rc = put_u(b, n, 4);
    return rc != HKV_OK || n == 0 ? rc : buf_append(b, p, n);
}

static int put_end(struct hkv_buf *b, const char *end, size_t elen)
{
    int rc = put_u(b, end != NULL, 1);
    return rc != HKV_OK || end == NULL ? rc : put_bytes(b, end, elen);
}

int etcd_remote_req_range(struct hkv_buf *b, const char *key, size_t klen, const char *end,
                          size_t elen, int64_t revision, int64_t limit)
{
    if (key == NULL)
        return HKV_EINVAL;
    int rc = put_u(b, ETCD_R_RANGE, 1);
    rc = rc ? rc : put_bytes(b, key, klen);
    rc = rc ? rc : put_end(b, end, elen);
    rc = rc ? rc : put_u(b, (uint64_t)revision, 8);
    return rc ? rc : put_u(b, (uint64_t)limit, 8);
}

static int put_ops(struct hkv_buf *b, const struct etcd_op *ops, size_t n)
{
    int rc = put_u(b, n, 4);
    for (size_t i = 0; i < n && rc == HKV_OK; i++) {
        rc = put_u(b, (uint64_t)ops[i].kind, 1);
        rc = rc ? rc : put_bytes(b, ops[i].key, ops[i].klen);
        rc = rc ? rc : put_end(b, ops[i].end, ops[i].elen);
        rc = rc ? rc : put_bytes(b, ops[i].value, ops[i].value != NULL ? ops[i].vlen : 0);
        rc = rc ? rc : put_u(b, (uint64_t)ops[i].lease, 8);
    }
    return rc;
}

int etcd_remote_req_txn(struct hkv_buf *b, const struct etcd_cmp *cmp, size_t ncmp,
                        const struct etcd_op *ok, size_t nok, const struct etcd_op *fail,
                        size_t nfail)
{
    if (ncmp > ETCD_MAX_OPS || nok > ETCD_MAX_OPS || nfail > ETCD_MAX_OPS)
        return HKV_EINVAL;
    int rc = put_u(b, ETCD_R_TXN, 1);
    rc = rc ? rc : put_u(b, ncmp, 4);
    for (size_t i = 0; i < ncmp && rc == HKV_OK; i++) {
        rc = put_u(b, (uint64_t)cmp[i].target, 1);
        rc = rc ? rc : put_u(b, (uint64_t)cmp[i].result, 1);
        rc = rc ? rc : put_bytes(b, cmp[i].key, cmp[i].klen);
        rc = rc ? rc : put_u(b, (uint64_t)cmp[i].n, 8);
        rc = rc ? rc : put_bytes(b, cmp[i].value, cmp[i].value != NULL ? cmp[i].vlen : 0);
    }
    rc = rc ? rc : put_ops(b, ok, nok);
    return rc ? rc : put_ops(b, fail, nfail);
}

int etcd_remote_req_int(struct hkv_buf *b, enum etcd_rkind kind, int64_t v)
{
    int rc = put_u(b, (uint64_t)kind, 1);
    return rc ? rc : put_u(b, (uint64_t)v, 8);
}

int etcd_remote_ans_encode(struct hkv_buf *b, const struct etcd_result *r)
{
    const char *msg = r->message != NULL ? r->message : "";
    int rc = put_u(b, (uint32_t)r->status, 4);
    rc = rc ? rc : put_u(b, (uint32_t)r->code, 4);
    rc = rc ? rc : put_bytes(b, msg, strlen(msg));
    rc = rc ? rc : put_u(b, (uint64_t)r->revision, 8);
    rc = rc ? rc : put_u(b, (uint64_t)(r->succeeded != 0), 1);
    rc = rc ? rc : put_u(b, (uint64_t)(r->more != 0), 1);
    rc = rc ? rc : put_u(b, (uint64_t)r->count, 8);
    rc = rc ? rc : put_u(b, (uint64_t)r->deleted, 8);
    rc = rc ? rc : put_u(b, (uint64_t)r->lease_id, 8);
    rc = rc ? rc : put_u(b, (uint64_t)r->ttl_s, 8);
    rc = rc ? rc : put_u(b, r->nkvs, 4);
    for (size_t i = 0; i < r->nkvs && rc == HKV_OK; i++) {
        const struct etcd_kv *k = &r->kvs[i];
        rc = put_bytes(b, k->key, k->key_len);
        rc = rc ? rc : put_bytes(b, k->value, k->value_len);
        rc = rc ? rc : put_u(b, (uint64_t)k->create_revision, 8);
        rc = rc ? rc : put_u(b, (uint64_t)k->mod_revision, 8);
        rc = rc ? rc : put_u(b, (uint64_t)k->version, 8);
        rc = rc ? rc : put_u(b, (uint64_t)k->lease, 8);
    }
    return rc;
}

/* ---- decoding ---- */

struct rd {
    const unsigned char *p;
    size_t n, off;
    int bad;
};

static uint64_t get_u(struct rd *r, int bytes)
{
    if (r->bad || r->n - r->off < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
    r->off += (size_t)bytes;
    return v;
}

static const char *get_bytes(struct rd *r, size_t *len)
{
    size_t n = get_u(r, 4);
    if (r->bad || r->n - r->off < n) {
        r->bad = 1;
        *len = 0;
        return "";
    }
    const char *p = (const char *)r->p + r->off;
    r->off += n;
    *len = n;
    return p;
}

static const char *get_end(struct rd *r, size_t *len)
{
    *len = 0;
    return get_u(r, 1) ? get_bytes(r, len) : NULL;
}

static int get_ops(struct rd *r, struct etcd_op **ops, size_t *n)
{
    *n = get_u(r, 4);
    if (r->bad || *n > ETCD_MAX_OPS)
        return HKV_EPROTO;
    *ops = calloc(*n + 1, sizeof(**ops));
    if (*ops == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < *n; i++) {
        struct etcd_op *o = &(*ops)[i];
        o->kind = (enum etcd_op_kind)get_u(r, 1);
        o->key = get_bytes(r, &o->klen);
        o->end = get_end(r, &o->elen);
        o->value = get_bytes(r, &o->vlen);
        o->lease = (int64_t)get_u(r, 8);
        if (o->kind != ETCD_OP_PUT && o->kind != ETCD_OP_DELETE && o->kind != ETCD_OP_RANGE)
            r->bad = 1;
    }
    return r->bad ? HKV_EPROTO : HKV_OK;
}

int etcd_remote_req_decode(const char *p, size_t n, struct etcd_rreq *q)
{
    memset(q, 0, sizeof(*q));
    struct rd r = {(const unsigned char *)p, n, 0, 0};
    q->kind = (enum etcd_rkind)get_u(&r, 1);
    int rc = HKV_OK;
    switch (q->kind) {
    case ETCD_R_RANGE:
        q->key = get_bytes(&r, &q->klen);
        q->end = get_end(&r, &q->elen);
        q->revision = (int64_t)get_u(&r, 8);
        q->limit = (int64_t)get_u(&r, 8);
        break;
    case ETCD_R_TXN:
        q->ncmp = get_u(&r, 4);
        if (r.bad || q->ncmp > ETCD_MAX_OPS)
            return HKV_EPROTO;
        q->cmp = calloc(q->ncmp + 1, sizeof(*q->cmp));
        if (q->cmp == NULL)
            return HKV_ENOMEM;
        for (size_t i = 0; i < q->ncmp; i++) {
            struct etcd_cmp *c = &q->cmp[i];
            c->target = (enum etcd_target)get_u(&r, 1);
            c->result = (enum etcd_cmp_result)get_u(&r, 1);
            c->key = get_bytes(&r, &c->klen);
            c->n = (int64_t)get_u(&r, 8);
            c->value = get_bytes(&r, &c->vlen);
            if (c->target > ETCD_VALUE || c->result > ETCD_NOT_EQUAL)
                r.bad = 1;
        }
        rc = get_ops(&r, &q->ok, &q->nok);
        if (rc == HKV_OK)
            rc = get_ops(&r, &q->fail, &q->nfail);
        break;
    case ETCD_R_GRANT:
    case ETCD_R_KEEPALIVE:
    case ETCD_R_REVOKE:
        q->n = (int64_t)get_u(&r, 8);
        break;
    default:
        return HKV_EPROTO;
    }
    if (rc == HKV_OK && (r.bad || r.off != n))
        rc = HKV_EPROTO;
    if (rc != HKV_OK)
        etcd_remote_req_free(q);
    return rc;
}

void etcd_remote_req_free(struct etcd_rreq *q)
{
    free(q->cmp);
    free(q->ok);
    free(q->fail);
    q->cmp = NULL;
    q->ok = q->fail = NULL;
}

int etcd_remote_ans_decode(const char *p, size_t n, struct etcd_result *res, void **mem)
{
    memset(res, 0, sizeof(*res));
    *mem = NULL;
    struct rd r = {(const unsigned char *)p, n, 0, 0};
    res->status = (int)(int32_t)get_u(&r, 4);
    res->code = (int)(int32_t)get_u(&r, 4);
    size_t mlen;
    const char *msg = get_bytes(&r, &mlen);
    res->revision = (int64_t)get_u(&r, 8);
    res->succeeded = (int)get_u(&r, 1);
    res->more = (int)get_u(&r, 1);
    res->count = (int64_t)get_u(&r, 8);
    res->deleted = (int64_t)get_u(&r, 8);
    res->lease_id = (int64_t)get_u(&r, 8);
    res->ttl_s = (int64_t)get_u(&r, 8);
    size_t nkvs = get_u(&r, 4);
    if (r.bad || nkvs > (n - r.off) / 40)
        return HKV_EPROTO;
    /* the kvs, then every string NUL-terminated (etcd.h promises it) */
    size_t room = nkvs * sizeof(struct etcd_kv) + mlen + 1 + 2 * (n - r.off);
    char *m = malloc(room + 1);
    if (m == NULL)
        return HKV_ENOMEM;
    struct etcd_kv *kvs = (struct etcd_kv *)m;
    char *s = m + nkvs * sizeof(struct etcd_kv);
    memcpy(s, msg, mlen);
    s[mlen] = '\0';
    res->message = mlen > 0 ? s : NULL;
    s += mlen + 1;
    for (size_t i = 0; i < nkvs && !r.bad; i++) {
        size_t kl, vl;
        const char *k = get_bytes(&r, &kl);
        const char *v = get_bytes(&r, &vl);
        memcpy(s, k, kl);
        s[kl] = '\0';
        kvs[i].key = s;
        kvs[i].key_len = kl;
        s += kl + 1;
        memcpy(s, v, vl);
        s[vl] = '\0';
        kvs[i].value = s;
        kvs[i].value_len = vl;
        s += vl + 1;
        kvs[i].create_revision = (int64_t)get_u(&r, 8);
        kvs[i].mod_revision = (int64_t)get_u(&r, 8);
        kvs[i].version = (int64_t)get_u(&r, 8);
        kvs[i].lease = (int64_t)get_u(&r, 8);
    }
    if (r.bad || r.off != n) {
        free(m);
        memset(res, 0, sizeof(*res));
        return HKV_EPROTO;
    }
    res->kvs = nkvs > 0 ? kvs : NULL;
    res->nkvs = nkvs;
    *mem = m;
    return HKV_OK;
}

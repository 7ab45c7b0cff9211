/*
 * fuzz_etcd_remote.c - libFuzzer target for the bodies of dir/leaf-map.sock
 * (proto/etcd_remote_msg.c): the request decoder the agent runs on
 * whatever a local process sends, and the answer decoder hotkvd-admin runs
 * on the agent's reply.
 *
 * The input is one body, an exact-size heap copy (ASan catches a read past
 * it).  As a request: the decoder returns HKV_OK or HKV_EPROTO (never
 * anything else: the input is far below any allocation limit); an accepted
 * request keeps the rules the agent relies on (a known kind, at most
 * ETCD_MAX_OPS compares and ops a branch, known targets, results and op
 * kinds, every key, end and value inside the body), re-encodes with the
 * client's encoders, decodes again to an equal request, and encodes again
 * to the same bytes.  As an answer: HKV_OK or HKV_EPROTO; an accepted
 * answer's keys and values are NUL-terminated inside its own memory, and
 * it too round-trips (encode, decode, equal, same bytes).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_etcd_remote.c proto/etcd_remote_msg.c \
 *     proto/buf.c proto/hkv.c -o /tmp/fuzz_etcd_remote
 *   /tmp/fuzz_etcd_remote -max_total_time=20 tests/fuzz/corpus_etcd_remote
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/etcd_msg.h"
#include "proto/etcd_remote_msg.h"

#define CHECK(x)          \
    do {                  \
        if (!(x))         \
            abort();      \
    } while (0)

static const char *lo, *hi; /* the body being decoded */

static void inside(const char *p, size_t n)
{
    CHECK(p != NULL);
    if (n > 0)
        CHECK(p >= lo && p + n <= hi);
}

static int bytes_eq(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static int end_eq(const char *a, size_t al, const char *b, size_t bl)
{
    return (a == NULL) == (b == NULL) && (a == NULL || bytes_eq(a, al, b, bl));
}

static void ops_rules(const struct etcd_op *o, size_t n)
{
    CHECK(n <= ETCD_MAX_OPS);
    for (size_t i = 0; i < n; i++) {
        CHECK(o[i].kind == ETCD_OP_PUT || o[i].kind == ETCD_OP_DELETE ||
              o[i].kind == ETCD_OP_RANGE);
        inside(o[i].key, o[i].klen);
        if (o[i].end != NULL)
            inside(o[i].end, o[i].elen);
        inside(o[i].value, o[i].vlen);
    }
}

static int ops_eq(const struct etcd_op *a, const struct etcd_op *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].kind != b[i].kind || !bytes_eq(a[i].key, a[i].klen, b[i].key, b[i].klen) ||
            !end_eq(a[i].end, a[i].elen, b[i].end, b[i].elen) ||
            !bytes_eq(a[i].value, a[i].vlen, b[i].value, b[i].vlen) || a[i].lease != b[i].lease)
            return 0;
    return 1;
}

static int req_eq(const struct etcd_rreq *a, const struct etcd_rreq *b)
{
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case ETCD_R_RANGE:
        return bytes_eq(a->key, a->klen, b->key, b->klen) &&
               end_eq(a->end, a->elen, b->end, b->elen) && a->revision == b->revision &&
               a->limit == b->limit;
    case ETCD_R_TXN:
        if (a->ncmp != b->ncmp || a->nok != b->nok || a->nfail != b->nfail)
            return 0;
        for (size_t i = 0; i < a->ncmp; i++) {
            const struct etcd_cmp *x = &a->cmp[i], *y = &b->cmp[i];
            if (x->target != y->target || x->result != y->result || x->n != y->n ||
                !bytes_eq(x->key, x->klen, y->key, y->klen) ||
                !bytes_eq(x->value, x->vlen, y->value, y->vlen))
                return 0;
        }
        return ops_eq(a->ok, b->ok, a->nok) && ops_eq(a->fail, b->fail, a->nfail);
    default:
        return a->n == b->n;
    }
}

static void req_encode(struct hkv_buf *b, const struct etcd_rreq *q)
{
    buf_reset(b);
    int rc;
    switch (q->kind) {
    case ETCD_R_RANGE:
        rc = etcd_remote_req_range(b, q->key, q->klen, q->end, q->elen, q->revision, q->limit);
        break;
    case ETCD_R_TXN:
        rc = etcd_remote_req_txn(b, q->cmp, q->ncmp, q->ok, q->nok, q->fail, q->nfail);
        break;
    default:
        rc = etcd_remote_req_int(b, q->kind, q->n);
        break;
    }
    CHECK(rc == HKV_OK);
}

static void request(const char *p, size_t n)
{
    static struct hkv_buf b1, b2;
    struct etcd_rreq q, q2;
    lo = p;
    hi = p + n;
    int rc = etcd_remote_req_decode(p, n, &q);
    CHECK(rc == HKV_OK || rc == HKV_EPROTO);
    if (rc != HKV_OK) {
        CHECK(q.cmp == NULL && q.ok == NULL && q.fail == NULL);
        return;
    }
    switch (q.kind) {
    case ETCD_R_RANGE:
        inside(q.key, q.klen);
        if (q.end != NULL)
            inside(q.end, q.elen);
        break;
    case ETCD_R_TXN:
        CHECK(q.ncmp <= ETCD_MAX_OPS);
        for (size_t i = 0; i < q.ncmp; i++) {
            CHECK(q.cmp[i].target <= ETCD_VALUE && q.cmp[i].result <= ETCD_NOT_EQUAL);
            inside(q.cmp[i].key, q.cmp[i].klen);
            inside(q.cmp[i].value, q.cmp[i].vlen);
        }
        ops_rules(q.ok, q.nok);
        ops_rules(q.fail, q.nfail);
        break;
    case ETCD_R_GRANT:
    case ETCD_R_KEEPALIVE:
    case ETCD_R_REVOKE:
        break;
    default:
        abort(); /* the agent would run a kind it does not know */
    }
    req_encode(&b1, &q);
    lo = b1.data;
    hi = b1.data + b1.len;
    CHECK(etcd_remote_req_decode(b1.data, b1.len, &q2) == HKV_OK);
    CHECK(req_eq(&q, &q2));
    req_encode(&b2, &q2);
    CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
    etcd_remote_req_free(&q);
    etcd_remote_req_free(&q2);
}

static int str_eq(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static int ans_eq(const struct etcd_result *a, const struct etcd_result *b)
{
    if (a->status != b->status || a->code != b->code || !str_eq(a->message, b->message) ||
        a->revision != b->revision || !a->succeeded != !b->succeeded ||
        !a->more != !b->more || a->count != b->count || a->deleted != b->deleted ||
        a->lease_id != b->lease_id || a->ttl_s != b->ttl_s || a->nkvs != b->nkvs)
        return 0;
    for (size_t i = 0; i < a->nkvs; i++) {
        const struct etcd_kv *x = &a->kvs[i], *y = &b->kvs[i];
        if (!bytes_eq(x->key, x->key_len, y->key, y->key_len) ||
            !bytes_eq(x->value, x->value_len, y->value, y->value_len) ||
            x->create_revision != y->create_revision || x->mod_revision != y->mod_revision ||
            x->version != y->version || x->lease != y->lease)
            return 0;
    }
    return 1;
}

static void answer_rules(const struct etcd_result *r)
{
    CHECK((r->nkvs == 0) == (r->kvs == NULL));
    if (r->message != NULL)
        CHECK(strlen(r->message) < SIZE_MAX); /* NUL-terminated, readable: ASan checks */
    for (size_t i = 0; i < r->nkvs; i++) {
        CHECK(r->kvs[i].key[r->kvs[i].key_len] == '\0');
        CHECK(r->kvs[i].value[r->kvs[i].value_len] == '\0');
    }
}

static void answer(const char *p, size_t n)
{
    static struct hkv_buf b1, b2;
    struct etcd_result r, r2;
    void *mem = NULL, *mem2 = NULL;
    int rc = etcd_remote_ans_decode(p, n, &r, &mem);
    CHECK(rc == HKV_OK || rc == HKV_EPROTO);
    if (rc != HKV_OK) {
        CHECK(mem == NULL);
        return;
    }
    answer_rules(&r);
    buf_reset(&b1);
    CHECK(etcd_remote_ans_encode(&b1, &r) == HKV_OK);
    CHECK(etcd_remote_ans_decode(b1.data, b1.len, &r2, &mem2) == HKV_OK);
    answer_rules(&r2);
    CHECK(ans_eq(&r, &r2));
    buf_reset(&b2);
    CHECK(etcd_remote_ans_encode(&b2, &r2) == HKV_OK);
    CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
    free(mem);
    free(mem2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size > 0 ? size : 1);
    if (p == NULL)
        return 0;
    if (size > 0)
        memcpy(p, data, size);
    request(p, size);
    answer(p, size);
    free(p);
    return 0;
}

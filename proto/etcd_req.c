/*
 * etcd_req.c - the JSON bodies of the etcd client's requests (see
 * etcd_msg.h).
 *
 * The gateway maps JSON to etcd's protobuf messages: bytes fields (keys,
 * values, range ends) are base64, int64 fields are strings, enums are their
 * names.  Bodies are built with buf_printf and a base64 writer straight into
 * the buffer; nothing here can produce JSON that needs escaping except the
 * user name and password of authenticate, which are escaped.
 */
#include "proto/etcd_msg.h"

#include <inttypes.h>
#include <string.h>

#include "proto/b64.h"

/* Appends "<name>":"<base64 of p>" (with a leading comma unless first). */
static int put_b64(struct hkv_buf *b, int first, const char *name, const char *p, size_t n)
{
    if (buf_printf(b, "%s\"%s\":\"", first ? "" : ",", name) != HKV_OK ||
        buf_reserve(b, b64_encoded_len(n) + 1, 0) != HKV_OK)
        return HKV_ENOMEM;
    b64_encode(p, n, buf_tail(b));
    b->len += b64_encoded_len(n);
    return buf_append(b, "\"", 1);
}

static int put_int(struct hkv_buf *b, const char *name, int64_t v)
{
    return buf_printf(b, ",\"%s\":\"%" PRId64 "\"", name, v);
}

/* "key" and, when end is given, "range_end". */
static int put_range(struct hkv_buf *b, const char *key, size_t klen, const char *end,
                     size_t elen)
{
    if (key == NULL || klen == 0)
        return HKV_EINVAL; /* etcd: "key is not provided" */
    int rc = put_b64(b, 1, "key", key, klen);
    if (rc == HKV_OK && end != NULL)
        rc = put_b64(b, 0, "range_end", end, elen);
    return rc;
}

int etcd_req_range(struct hkv_buf *b, const char *key, size_t klen, const char *end, size_t elen,
                   int64_t revision, int64_t limit)
{
    if (revision < 0 || limit < 0)
        return HKV_EINVAL;
    int rc = buf_append_str(b, "{");
    if (rc == HKV_OK)
        rc = put_range(b, key, klen, end, elen);
    if (rc == HKV_OK && revision > 0)
        rc = put_int(b, "revision", revision);
    if (rc == HKV_OK && limit > 0)
        rc = put_int(b, "limit", limit);
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

static int put_kv(struct hkv_buf *b, const char *key, size_t klen, const char *val, size_t vlen,
                  int64_t lease)
{
    if (lease < 0 || (val == NULL && vlen != 0))
        return HKV_EINVAL;
    int rc = put_range(b, key, klen, NULL, 0);
    if (rc == HKV_OK)
        rc = put_b64(b, 0, "value", val != NULL ? val : "", vlen);
    if (rc == HKV_OK && lease != 0)
        rc = put_int(b, "lease", lease);
    return rc;
}

int etcd_req_put(struct hkv_buf *b, const char *key, size_t klen, const char *val, size_t vlen,
                 int64_t lease)
{
    int rc = buf_append_str(b, "{");
    if (rc == HKV_OK)
        rc = put_kv(b, key, klen, val, vlen, lease);
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

int etcd_req_delete(struct hkv_buf *b, const char *key, size_t klen, const char *end, size_t elen)
{
    int rc = buf_append_str(b, "{");
    if (rc == HKV_OK)
        rc = put_range(b, key, klen, end, elen);
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

static int put_cmp(struct hkv_buf *b, const struct etcd_cmp *c)
{
    static const char *const targets[] = {"MOD", "CREATE", "VERSION", "VALUE"};
    static const char *const results[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
    static const char *const fields[] = {"mod_revision", "create_revision", "version"};
    if ((unsigned)c->target > ETCD_VALUE || (unsigned)c->result > ETCD_NOT_EQUAL)
        return HKV_EINVAL;
    int rc = buf_append_str(b, "{");
    if (rc == HKV_OK)
        rc = put_range(b, c->key, c->klen, NULL, 0);
    if (rc == HKV_OK)
        rc = buf_printf(b, ",\"target\":\"%s\",\"result\":\"%s\"", targets[c->target],
                        results[c->result]);
    if (rc == HKV_OK && c->target == ETCD_VALUE) {
        if (c->value == NULL && c->vlen != 0)
            return HKV_EINVAL;
        rc = put_b64(b, 0, "value", c->value != NULL ? c->value : "", c->vlen);
    } else if (rc == HKV_OK) {
        rc = put_int(b, fields[c->target], c->n);
    }
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

static int put_op(struct hkv_buf *b, const struct etcd_op *o)
{
    static const char *const names[] = {"request_put", "request_delete_range", "request_range"};
    if ((unsigned)o->kind > ETCD_OP_RANGE)
        return HKV_EINVAL;
    int rc = buf_printf(b, "{\"%s\":{", names[o->kind]);
    if (rc == HKV_OK && o->kind == ETCD_OP_PUT)
        rc = put_kv(b, o->key, o->klen, o->value, o->vlen, o->lease);
    else if (rc == HKV_OK)
        rc = put_range(b, o->key, o->klen, o->end, o->elen);
    return rc == HKV_OK ? buf_append_str(b, "}}") : rc;
}

static int put_ops(struct hkv_buf *b, const char *name, const struct etcd_op *ops, size_t n)
{
    int rc = buf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < n && rc == HKV_OK; i++) {
        if (i > 0)
            rc = buf_append_str(b, ",");
        if (rc == HKV_OK)
            rc = put_op(b, &ops[i]);
    }
    return rc == HKV_OK ? buf_append_str(b, "]") : rc;
}

int etcd_req_txn(struct hkv_buf *b, const struct etcd_cmp *cmp, size_t ncmp,
                 const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail)
{
    if (ncmp > ETCD_MAX_OPS || nok > ETCD_MAX_OPS || nfail > ETCD_MAX_OPS ||
        (ncmp > 0 && cmp == NULL) || (nok > 0 && ok == NULL) || (nfail > 0 && fail == NULL))
        return HKV_EINVAL;
    int rc = buf_append_str(b, "{\"compare\":[");
    for (size_t i = 0; i < ncmp && rc == HKV_OK; i++) {
        if (i > 0)
            rc = buf_append_str(b, ",");
        if (rc == HKV_OK)
            rc = put_cmp(b, &cmp[i]);
    }
    if (rc == HKV_OK)
        rc = buf_append_str(b, "]");
    if (rc == HKV_OK)
        rc = put_ops(b, "success", ok, nok);
    if (rc == HKV_OK)
        rc = put_ops(b, "failure", fail, nfail);
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

int etcd_req_int(struct hkv_buf *b, const char *field, int64_t v)
{
    return buf_printf(b, "{\"%s\":\"%" PRId64 "\"}", field, v);
}

int etcd_req_watch(struct hkv_buf *b, const char *key, size_t klen, const char *end, size_t elen,
                   int64_t start_revision)
{
    if (start_revision < 0)
        return HKV_EINVAL;
    int rc = buf_append_str(b, "{\"create_request\":{");
    if (rc == HKV_OK)
        rc = put_range(b, key, klen, end, elen);
    if (rc == HKV_OK && start_revision > 0)
        rc = put_int(b, "start_revision", start_revision);
    return rc == HKV_OK ? buf_append_str(b, ",\"progress_notify\":true}}") : rc;
}

/* A JSON string of s. */
static int put_str(struct hkv_buf *b, const char *s)
{
    int rc = buf_append_str(b, "\"");
    for (; *s != '\0' && rc == HKV_OK; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            rc = buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            rc = buf_printf(b, "\\u%04x", c);
        else
            rc = buf_append(b, s, 1);
    }
    return rc == HKV_OK ? buf_append_str(b, "\"") : rc;
}

int etcd_req_auth(struct hkv_buf *b, const char *user, const char *password)
{
    if (user == NULL || password == NULL)
        return HKV_EINVAL;
    int rc = buf_append_str(b, "{\"name\":");
    if (rc == HKV_OK)
        rc = put_str(b, user);
    if (rc == HKV_OK)
        rc = buf_append_str(b, ",\"password\":");
    if (rc == HKV_OK)
        rc = put_str(b, password);
    return rc == HKV_OK ? buf_append_str(b, "}") : rc;
}

size_t etcd_prefix_end(const char *prefix, size_t plen, char *out)
{
    memcpy(out, prefix, plen);
    while (plen > 0) {
        unsigned char last = (unsigned char)out[plen - 1];
        if (last < 0xFF) {
            out[plen - 1] = (char)(last + 1);
            return plen;
        }
        plen--; /* 0xFF cannot be raised: drop it and raise the byte before */
    }
    out[0] = '\0'; /* all 0xFF (or empty): every key from the prefix on */
    return 1;
}

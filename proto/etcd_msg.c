/*
 * etcd_msg.c - decoding the JSON gateway's answers and watch lines (see
 * etcd_msg.h).
 *
 * An answer is tokenized twice (once to count, once into an array of exactly
 * that size), then copied out: keys and values are base64-decoded, messages
 * unescaped, into one block allocated for the answer, after its kv or event
 * array.  Decoded bytes are never longer than their JSON form, so the block
 * is sized from the body's length and nothing a peer writes can make it grow
 * further.  The tokens are freed before the caller sees the answer.
 *
 * Every member is optional unless etcd always writes it (a kv's key, a
 * grant's ID, a token): a missing int64 is 0, a missing bool false, a missing
 * array empty, exactly the proto3 defaults the gateway leaves out.  A member
 * of the wrong type is a protocol error, not a default.
 */
#include "proto/etcd_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/b64.h"
#include "proto/json.h"

struct dec {
    const char *js;
    struct json_tok *t;
    char *mem;          /* the answer's block */
    size_t used, cap;   /* bytes of the block's data area */
};

/* Tokenizes body; 0 or a status. */
static int tokenize(struct dec *d, const char *body, size_t len)
{
    int n = json_parse(body, len, NULL, 0);
    if (n < 0)
        return HKV_EPROTO;
    d->js = body;
    d->t = malloc((size_t)n * sizeof(*d->t));
    if (d->t == NULL)
        return HKV_EIO;
    if (json_parse(body, len, d->t, (size_t)n) != n)
        return HKV_EPROTO;
    return HKV_OK;
}

/* The block: nitems items of isz bytes, then room for the decoded bytes. */
static void *alloc_block(struct dec *d, size_t nitems, size_t isz, size_t len)
{
    size_t head = nitems * isz;
    head = (head + 15) & ~(size_t)15;
    d->cap = len + 64;
    d->mem = calloc(1, head + d->cap);
    if (d->mem == NULL)
        return NULL;
    d->used = head;
    d->cap += head;
    return d->mem;
}

/* A member as int64: absent = 0.  0 or HKV_EPROTO. */
static int get_int(struct dec *d, int obj, const char *name, int64_t *out)
{
    int i = json_member(d->js, d->t, obj, name);
    *out = 0;
    if (i < 0)
        return HKV_OK;
    return json_int64(d->js, d->t, i, out) == HKV_OK ? HKV_OK : HKV_EPROTO;
}

static int get_bool(struct dec *d, int obj, const char *name, int *out)
{
    int i = json_member(d->js, d->t, obj, name);
    *out = 0;
    if (i < 0)
        return HKV_OK;
    return json_bool(d->t, i, out) == HKV_OK ? HKV_OK : HKV_EPROTO;
}

/* A string member copied (unescaped, NUL-terminated) into the block; absent
 * gives "" unless required. */
static int get_str(struct dec *d, int obj, const char *name, int required, const char **out)
{
    int i = json_member(d->js, d->t, obj, name);
    *out = "";
    if (i < 0)
        return required ? HKV_EPROTO : HKV_OK;
    size_t n;
    char *dst = d->mem + d->used;
    if (json_string(d->js, d->t, i, dst, d->cap - d->used - 1, &n) != HKV_OK)
        return HKV_EPROTO;
    dst[n] = '\0';
    d->used += n + 1;
    *out = dst;
    return HKV_OK;
}

/* A base64 member decoded into the block (NUL-terminated). */
static int get_bytes(struct dec *d, int obj, const char *name, int required, const char **out,
                     size_t *len)
{
    int i = json_member(d->js, d->t, obj, name);
    *out = "";
    *len = 0;
    if (i < 0)
        return required ? HKV_EPROTO : HKV_OK;
    if (d->t[i].type != JSON_STRING)
        return HKV_EPROTO;
    char *dst = d->mem + d->used;
    if (b64_decode(d->js + d->t[i].start, d->t[i].len, dst, d->cap - d->used - 1, len) != HKV_OK)
        return HKV_EPROTO;
    if (required && *len == 0)
        return HKV_EPROTO; /* etcd has no empty key */
    dst[*len] = '\0';
    d->used += *len + 1;
    *out = dst;
    return HKV_OK;
}

static int get_kv(struct dec *d, int obj, struct etcd_kv *kv)
{
    if (obj < 0 || d->t[obj].type != JSON_OBJECT)
        return HKV_EPROTO;
    int rc = get_bytes(d, obj, "key", 1, &kv->key, &kv->key_len);
    if (rc == HKV_OK)
        rc = get_bytes(d, obj, "value", 0, &kv->value, &kv->value_len);
    if (rc == HKV_OK)
        rc = get_int(d, obj, "create_revision", &kv->create_revision);
    if (rc == HKV_OK)
        rc = get_int(d, obj, "mod_revision", &kv->mod_revision);
    if (rc == HKV_OK)
        rc = get_int(d, obj, "version", &kv->version);
    if (rc == HKV_OK)
        rc = get_int(d, obj, "lease", &kv->lease);
    return rc;
}

/* An optional array member: its token, or -1; HKV_EPROTO if not an array. */
static int get_array(struct dec *d, int obj, const char *name, int *arr)
{
    *arr = json_member(d->js, d->t, obj, name);
    return *arr < 0 || d->t[*arr].type == JSON_ARRAY ? HKV_OK : HKV_EPROTO;
}

/* A range answer (top level or inside a txn): kvs, count, more. */
static int get_range(struct dec *d, int obj, struct etcd_result *r, struct etcd_kv *kvs)
{
    int arr;
    if (get_array(d, obj, "kvs", &arr) != HKV_OK)
        return HKV_EPROTO;
    r->kvs = kvs;
    r->nkvs = arr < 0 ? 0 : d->t[arr].size;
    uint32_t i = (uint32_t)arr + 1;
    for (size_t k = 0; k < r->nkvs; k++, i = d->t[i].next)
        if (get_kv(d, (int)i, &kvs[k]) != HKV_OK)
            return HKV_EPROTO;
    if (get_int(d, obj, "count", &r->count) != HKV_OK)
        return HKV_EPROTO;
    return get_bool(d, obj, "more", &r->more);
}

/* The first response_range of a txn's responses: its object, or -1. */
static int txn_range(struct dec *d, int arr)
{
    if (arr < 0)
        return -1;
    uint32_t i = (uint32_t)arr + 1;
    for (uint32_t k = 0; k < d->t[arr].size; k++, i = d->t[i].next) {
        int rr = json_member(d->js, d->t, (int)i, "response_range");
        if (rr >= 0)
            return rr;
    }
    return -1;
}

static int header_revision(struct dec *d, int obj, int64_t *rev)
{
    int h = json_member(d->js, d->t, obj, "header");
    *rev = 0;
    if (h < 0)
        return HKV_OK;
    if (d->t[h].type != JSON_OBJECT)
        return HKV_EPROTO;
    return get_int(d, h, "revision", rev);
}

static int decode_ok(struct dec *d, enum etcd_kind kind, struct etcd_answer *a)
{
    struct etcd_result *r = &a->r;
    int top = 0;
    if (d->t[0].type != JSON_OBJECT)
        return HKV_EPROTO;
    if (kind == ETCD_K_KEEPALIVE) {
        /* a streaming call: {"result":{...}} */
        top = json_member(d->js, d->t, 0, "result");
        if (top < 0 || d->t[top].type != JSON_OBJECT)
            return HKV_EPROTO;
    }
    /* the most kvs this answer can hold (range, or the txn's first range) */
    int rr = top, arr = -1;
    if (kind == ETCD_K_TXN) {
        if (get_array(d, top, "responses", &arr) != HKV_OK)
            return HKV_EPROTO;
        rr = txn_range(d, arr);
        if (rr >= 0 && d->t[rr].type != JSON_OBJECT)
            return HKV_EPROTO;
    }
    int kvs = -1;
    if ((kind == ETCD_K_RANGE || kind == ETCD_K_TXN) && rr >= 0 &&
        get_array(d, rr, "kvs", &kvs) != HKV_OK)
        return HKV_EPROTO;
    size_t nkvs = kvs >= 0 ? d->t[kvs].size : 0;
    struct etcd_kv *kv = alloc_block(d, nkvs, sizeof(*kv), d->t[0].len);
    if (kv == NULL)
        return HKV_EIO;
    if (header_revision(d, top, &r->revision) != HKV_OK)
        return HKV_EPROTO;
    switch (kind) {
    case ETCD_K_RANGE:
        return get_range(d, top, r, kv);
    case ETCD_K_TXN:
        if (get_bool(d, top, "succeeded", &r->succeeded) != HKV_OK)
            return HKV_EPROTO;
        return rr >= 0 ? get_range(d, rr, r, kv) : HKV_OK;
    case ETCD_K_DELETE:
        return get_int(d, top, "deleted", &r->deleted);
    case ETCD_K_GRANT:
    case ETCD_K_KEEPALIVE:
        if (get_int(d, top, "ID", &r->lease_id) != HKV_OK ||
            get_int(d, top, "TTL", &r->ttl_s) != HKV_OK)
            return HKV_EPROTO;
        if (kind == ETCD_K_GRANT) {
            const char *err;
            if (get_str(d, top, "error", 0, &err) != HKV_OK)
                return HKV_EPROTO;
            if (err[0] != '\0') { /* LeaseGrantResponse has an error field */
                r->message = err;
                return HKV_EINVAL;
            }
            if (r->lease_id == 0 || r->ttl_s <= 0)
                return HKV_EPROTO;
        }
        return r->lease_id != 0 ? HKV_OK : HKV_EPROTO;
    case ETCD_K_AUTH:
        return get_str(d, top, "token", 1, &a->token) == HKV_OK && a->token[0] != '\0'
                   ? HKV_OK
                   : HKV_EPROTO;
    default:
        return HKV_OK; /* put, revoke: the header is all */
    }
}

/* {"error":"...","code":N,"message":"..."}; an {"error":{...}} of a stream. */
static int decode_error(struct dec *d, struct etcd_answer *a)
{
    int obj = 0;
    if (d->t[0].type != JSON_OBJECT)
        return HKV_EPROTO;
    int e = json_member(d->js, d->t, 0, "error");
    if (e >= 0 && d->t[e].type == JSON_OBJECT)
        obj = e;
    if (alloc_block(d, 0, 1, d->t[0].len) == NULL)
        return HKV_EIO;
    int64_t code = -1;
    if (get_int(d, obj, obj == 0 ? "code" : "grpc_code", &code) != HKV_OK || code <= 0 ||
        code > 16)
        return HKV_EPROTO;
    a->r.code = (int)code;
    if (get_str(d, obj, "message", 0, &a->r.message) != HKV_OK)
        return HKV_EPROTO;
    if (a->r.message[0] == '\0' && obj == 0 &&
        get_str(d, obj, "error", 0, &a->r.message) != HKV_OK)
        return HKV_EPROTO;
    return HKV_EINVAL;
}

int etcd_msg_decode(enum etcd_kind kind, int http_status, const char *body, size_t len,
                    struct etcd_answer *a)
{
    memset(a, 0, sizeof(*a));
    struct dec d = {0};
    int rc = tokenize(&d, body, len);
    if (rc == HKV_OK && http_status == 200 && kind == ETCD_K_KEEPALIVE &&
        json_member(body, d.t, 0, "error") >= 0)
        rc = decode_error(&d, a); /* a stream's error comes with status 200 */
    else if (rc == HKV_OK)
        rc = http_status == 200 ? decode_ok(&d, kind, a) : decode_error(&d, a);
    free(d.t);
    a->mem = d.mem;
    if (rc == HKV_EPROTO) {
        static char why[64];
        snprintf(why, sizeof(why), "an answer etcd does not give (HTTP %d)", http_status);
        a->r.message = why;
        a->r.code = 0;
    }
    if (rc == HKV_EIO)
        a->r.message = "out of memory";
    if (rc != HKV_OK && rc != HKV_EINVAL) {
        /* nothing of a refused answer is shown */
        a->r.kvs = NULL;
        a->r.nkvs = 0;
    }
    a->r.status = rc;
    return rc;
}

void etcd_answer_free(struct etcd_answer *a)
{
    free(a->mem);
    a->mem = NULL;
}

static int decode_watch(struct dec *d, struct etcd_wanswer *w)
{
    struct etcd_watch_msg *m = &w->m;
    if (d->t[0].type != JSON_OBJECT)
        return HKV_EPROTO;
    int res = json_member(d->js, d->t, 0, "result");
    if (res < 0) {
        struct etcd_answer a;
        memset(&a, 0, sizeof(a));
        int rc = decode_error(d, &a);
        w->reason = a.r.message;
        return rc == HKV_EINVAL ? HKV_EINVAL : HKV_EPROTO;
    }
    if (d->t[res].type != JSON_OBJECT)
        return HKV_EPROTO;
    int evs;
    if (get_array(d, res, "events", &evs) != HKV_OK)
        return HKV_EPROTO;
    size_t n = evs >= 0 ? d->t[evs].size : 0;
    struct etcd_event *ev = alloc_block(d, n, sizeof(*ev), d->t[0].len);
    if (ev == NULL)
        return HKV_EIO;
    int created, canceled;
    if (header_revision(d, res, &m->revision) != HKV_OK ||
        get_bool(d, res, "created", &created) != HKV_OK ||
        get_bool(d, res, "canceled", &canceled) != HKV_OK ||
        get_int(d, res, "compact_revision", &m->compact_revision) != HKV_OK ||
        get_str(d, res, "cancel_reason", 0, &w->reason) != HKV_OK)
        return HKV_EPROTO;
    if (canceled) {
        if (m->compact_revision > 0) {
            m->kind = ETCD_W_CANCELED;
            return HKV_OK;
        }
        return HKV_EINVAL;
    }
    if (created) {
        m->kind = ETCD_W_CREATED;
        return n == 0 ? HKV_OK : HKV_EPROTO;
    }
    if (n == 0) {
        m->kind = ETCD_W_PROGRESS;
        return HKV_OK;
    }
    m->kind = ETCD_W_EVENTS;
    m->events = ev;
    m->nevents = n;
    uint32_t i = (uint32_t)evs + 1;
    int64_t last = 0;
    for (size_t k = 0; k < n; k++, i = d->t[i].next) {
        const char *type;
        if (d->t[i].type != JSON_OBJECT || get_str(d, (int)i, "type", 0, &type) != HKV_OK)
            return HKV_EPROTO;
        if (strcmp(type, "DELETE") == 0)
            ev[k].type = ETCD_EV_DELETE;
        else if (type[0] == '\0' || strcmp(type, "PUT") == 0)
            ev[k].type = ETCD_EV_PUT; /* PUT is the default: omitted */
        else
            return HKV_EPROTO;
        if (get_kv(d, json_member(d->js, d->t, (int)i, "kv"), &ev[k].kv) != HKV_OK)
            return HKV_EPROTO;
        /* revisions only go forward inside a stream */
        if (ev[k].kv.mod_revision <= 0 || ev[k].kv.mod_revision < last)
            return HKV_EPROTO;
        last = ev[k].kv.mod_revision;
    }
    return HKV_OK;
}

int etcd_msg_decode_watch(const char *line, size_t len, struct etcd_wanswer *w)
{
    memset(w, 0, sizeof(*w));
    w->reason = "";
    struct dec d = {0};
    int rc = tokenize(&d, line, len);
    if (rc == HKV_OK)
        rc = decode_watch(&d, w);
    free(d.t);
    w->mem = d.mem;
    if (rc != HKV_OK) {
        w->m.kind = ETCD_W_BROKEN;
        w->m.status = rc;
        w->m.events = NULL;
        w->m.nevents = 0;
        if (rc == HKV_EPROTO)
            w->reason = "a watch answer etcd does not give";
        else if (rc == HKV_EIO)
            w->reason = "out of memory";
        return rc == HKV_EINVAL ? HKV_OK : rc;
    }
    return HKV_OK;
}

void etcd_wanswer_free(struct etcd_wanswer *w)
{
    free(w->mem);
    w->mem = NULL;
}

void etcd_lines_init(struct etcd_lines *l, size_t max)
{
    memset(l, 0, sizeof(*l));
    l->max = max;
}

void etcd_lines_deinit(struct etcd_lines *l)
{
    buf_deinit(&l->buf);
}

int etcd_lines_next(struct etcd_lines *l, const char *p, size_t n, size_t *used,
                    const char **line, size_t *llen)
{
    if (l->held) {
        buf_reset(&l->buf);
        l->held = 0;
    }
    const char *nl = memchr(p, '\n', n);
    size_t take = nl != NULL ? (size_t)(nl - p) : n;
    size_t have = buf_unread(&l->buf);
    if (have + take > l->max)
        return HKV_ETOOBIG;
    *used = nl != NULL ? take + 1 : n;
    if (nl == NULL) {
        if (take > 0 && buf_append(&l->buf, p, take) != HKV_OK)
            return HKV_ENOMEM;
        return 0;
    }
    if (have == 0) {
        *line = p; /* the whole line is in this piece: no copy */
        *llen = take;
    } else {
        if (take > 0 && buf_append(&l->buf, p, take) != HKV_OK)
            return HKV_ENOMEM;
        l->held = 1;
        *line = buf_head(&l->buf);
        *llen = buf_unread(&l->buf);
    }
    if (*llen > 0 && (*line)[*llen - 1] == '\r')
        (*llen)--;
    return 1;
}

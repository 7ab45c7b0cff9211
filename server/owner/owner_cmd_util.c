/*
 * owner_cmd_util.c - what the owner's Redis command handlers share
 * (owner_cmd.h): the context, the ledger calls that note each change with
 * its new version, the reply encoders and Redis's argument rules.
 *
 * Every write goes through one helper here, so "a key changed" is decided
 * in one place: a helper notes the key exactly when the ledger issued it a
 * new version.  The class tag a write stores is the key's durability under
 * the live config (owner_key_tag), as for every other owner write.  Reply
 * helpers keep the first allocation failure in c->status instead of making
 * every handler test every append.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/strops.h"
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_int.h"

void ocmd_init(struct ocmd *c, struct owner *o, int proto, struct hkv_buf *out)
{
    *c = (struct ocmd){.o = o, .ledger = o->ledger, .now = owner_clock(), .proto = proto,
                       .out = out, .work = HKV_BUF_INIT, .status = HKV_OK};
    c->max_len = o->opts.proto_max_bulk_len > 0 ? o->opts.proto_max_bulk_len
                                                : STROPS_MAX_LEN_DEFAULT;
    /* half a frame: the other half is for the change list and the frame */
    c->max_reply = o->opts.wire_max_frame / 2;
}

void ocmd_deinit(struct ocmd *c)
{
    buf_deinit(&c->work);
    free(c->changes);
    c->changes = NULL;
    c->nchanges = c->cap = 0;
}

static int note(struct ocmd *c, struct wire_slice key, hkv_stamp version)
{
    c->o->st.owner_writes++;
    if (c->nchanges == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 8;
        struct wire_watch *n = realloc(c->changes, cap * sizeof(*n));
        if (n == NULL) {
            c->status = HKV_ENOMEM;
            return HKV_ENOMEM;
        }
        c->changes = n;
        c->cap = cap;
    }
    c->changes[c->nchanges++] = (struct wire_watch){.key = key, .version = version};
    return HKV_OK;
}

void ocmd_set_enc(struct ocmd *c, struct wire_slice key, int enc)
{
    ledger_set_enc(c->ledger, key.p, key.len, enc, c->now);
}

int ocmd_flush(struct ocmd *c)
{
    hkv_stamp v;
    int rc = ledger_flush(c->ledger, c->now, &v);
    if (rc != HKV_OK)
        return rc;
    c->o->st.owner_writes++;
    c->flushed = v;
    owner_persist_flush(c->o, v);
    return HKV_OK;
}

/* Key order, then newest version first. */
static int change_cmp(const void *a, const void *b)
{
    const struct wire_watch *x = a, *y = b;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int d = n ? memcmp(x->key.p, y->key.p, n) : 0;
    if (d != 0)
        return d;
    if (x->key.len != y->key.len)
        return x->key.len < y->key.len ? -1 : 1;
    return x->version > y->version ? -1 : x->version < y->version;
}

void ocmd_changes_final(struct ocmd *c)
{
    if (c->nchanges < 2)
        return;
    qsort(c->changes, c->nchanges, sizeof(*c->changes), change_cmp);
    uint32_t w = 1;
    for (uint32_t i = 1; i < c->nchanges; i++) {
        const struct wire_watch *p = &c->changes[w - 1], *x = &c->changes[i];
        if (ocmd_same(x->key, p->key))
            continue; /* an older version of the same key */
        c->changes[w++] = *x;
    }
    c->nchanges = w;
}

int ocmd_same(struct wire_slice a, struct wire_slice b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static int not_resident(struct ocmd *c, struct wire_slice key)
{
    c->missing = key;
    return HKV_EAGAIN;
}

int ocmd_get(struct ocmd *c, struct wire_slice key, struct ledger_view *v)
{
    int rc = ledger_get(c->ledger, key.p, key.len, c->now, v);
    return rc == HKV_EAGAIN ? not_resident(c, key) : rc;
}

int ocmd_set(struct ocmd *c, struct wire_slice key, struct wire_slice val, unsigned flags,
             struct ledger_expiry exp, struct ledger_view *old, int *applied)
{
    hkv_stamp v = 0;
    *applied = 0;
    int rc = ledger_set(c->ledger, key.p, key.len, val.p, val.len, owner_key_tag(c->o, key),
                        flags, exp, c->now, old, &v);
    switch (rc) {
    case HKV_OK:
        *applied = 1;
        return note(c, key, v);
    case HKV_EEXIST:
    case HKV_ENOENT:
        return HKV_OK;
    case HKV_EAGAIN:
        return not_resident(c, key);
    default:
        return rc;
    }
}

int ocmd_del(struct ocmd *c, struct wire_slice key, int *existed, struct ledger_view *old)
{
    struct ledger_view v;
    *existed = 0;
    int rc = ocmd_get(c, key, &v);
    if (rc != HKV_OK)
        return rc == HKV_ENOENT ? HKV_OK : rc;
    hkv_stamp ver = 0;
    rc = ledger_del(c->ledger, key.p, key.len, owner_key_tag(c->o, key), c->now, existed, old,
                    &ver);
    if (rc == HKV_EAGAIN)
        return not_resident(c, key);
    return rc == HKV_OK ? note(c, key, ver) : rc;
}

int ocmd_expire_at(struct ocmd *c, struct wire_slice key, int64_t when, int *applied)
{
    hkv_stamp v = 0;
    *applied = 0;
    struct ledger_expiry e = {LEDGER_EXP_ABS, when};
    int rc = ledger_expire(c->ledger, key.p, key.len, e, c->now, NULL, &v);
    if (rc == HKV_ENOENT)
        return HKV_OK;
    if (rc == HKV_EAGAIN)
        return not_resident(c, key);
    if (rc != HKV_OK)
        return rc;
    *applied = 1;
    return note(c, key, v);
}

int ocmd_persist(struct ocmd *c, struct wire_slice key, int *changed)
{
    hkv_stamp v = 0;
    *changed = 0;
    int rc = ledger_persist(c->ledger, key.p, key.len, c->now, changed, &v);
    if (rc == HKV_ENOENT)
        return HKV_OK;
    if (rc == HKV_EAGAIN)
        return not_resident(c, key);
    if (rc != HKV_OK || !*changed)
        return rc;
    return note(c, key, v);
}

int ocmd_incrby(struct ocmd *c, struct wire_slice key, int64_t delta, int64_t *result)
{
    hkv_stamp v = 0;
    int rc = ledger_incrby(c->ledger, key.p, key.len, delta, owner_key_tag(c->o, key), c->now,
                           result, &v);
    if (rc == HKV_EAGAIN)
        return not_resident(c, key);
    return rc == HKV_OK ? note(c, key, v) : rc;
}

int ocmd_rmw(struct ocmd *c, struct wire_slice key, ledger_rmw_fn fn, void *arg, int *changed)
{
    hkv_stamp v = 0;
    int rc = ledger_rmw(c->ledger, key.p, key.len, owner_key_tag(c->o, key), fn, arg, c->now,
                        changed, &v);
    if (rc == HKV_EAGAIN)
        return not_resident(c, key);
    if (rc != HKV_OK || !*changed)
        return rc;
    return note(c, key, v);
}

int ocmd_move(struct ocmd *c, struct wire_slice src, struct wire_slice dst, unsigned flags,
              int *applied)
{
    hkv_stamp vs = 0, vd = 0;
    int rc = ledger_move(c->ledger, src.p, src.len, dst.p, dst.len, owner_key_tag(c->o, dst),
                         flags, c->now, applied, &vs, &vd);
    if (rc == HKV_EAGAIN) {
        struct ledger_view v;
        return ocmd_get(c, src, &v) == HKV_EAGAIN ? HKV_EAGAIN : not_resident(c, dst);
    }
    if (rc != HKV_OK || !*applied || ocmd_same(src, dst))
        return rc; /* RENAME k k applies and changes nothing */
    if (!(flags & LEDGER_MOVE_COPY) && note(c, src, vs) != HKV_OK)
        return HKV_ENOMEM;
    return note(c, dst, vd);
}

/* ---- replies ---- */

static void keep(struct ocmd *c, hkv_status st)
{
    if (st != HKV_OK && c->status == HKV_OK)
        c->status = st;
}

void ocmd_ok(struct ocmd *c) { keep(c, resp_add_simple(c->out, "OK")); }
void ocmd_simple(struct ocmd *c, const char *s) { keep(c, resp_add_simple(c->out, s)); }
void ocmd_error(struct ocmd *c, const char *text) { keep(c, resp_add_error(c->out, text)); }
void ocmd_int(struct ocmd *c, int64_t v) { keep(c, resp_add_int(c->out, v)); }
void ocmd_bulk(struct ocmd *c, const void *p, size_t n)
{
    if (c->max_reply != 0 && buf_unread(c->out) + n > c->max_reply)
        keep(c, HKV_ETOOBIG); /* checked before the copy: MGET of many big values */
    else
        keep(c, resp_add_bulk(c->out, p, n));
}
void ocmd_null(struct ocmd *c) { keep(c, resp_add_null(c->out, c->proto)); }
void ocmd_array(struct ocmd *c, int64_t n) { keep(c, resp_add_array(c->out, n)); }

void ocmd_errorf(struct ocmd *c, const char *fmt, ...)
{
    /* sized first: an error may quote a client's argument whole, as Redis's */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text == NULL) {
        keep(c, HKV_ENOMEM);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ocmd_error(c, text);
    free(text);
}

void ocmd_error_expire(struct ocmd *c, const struct cmd_def *d)
{
    ocmd_errorf(c, "ERR invalid expire time in '%s' command", d->name);
}

/* ---- arguments ---- */

const char *ocmd_incr_refusal(const struct ledger_view *v)
{
    int64_t cur;
    /* a NUL inside ("3\0") is not a number: Redis reads the whole value */
    int isnum = v == NULL || strops_parse_ll(v->val, v->vlen, &cur);
    return isnum ? "ERR increment or decrement would overflow" : OCMD_ERR_INT;
}

int ocmd_ll(struct wire_slice s, int64_t *out)
{
    return strops_parse_ll(s.p, s.len, out);
}

int ocmd_is(struct wire_slice s, const char *word)
{
    size_t n = s.len ? strnlen(s.p, s.len) : 0; /* Redis compares the C string: up to a NUL */
    return n == strlen(word) && strncasecmp(s.p, word, n) == 0;
}

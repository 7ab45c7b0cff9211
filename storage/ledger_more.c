/*
 * ledger_more.c - the ledger's computed and two-key commands: a
 * read-modify-write of one value (APPEND, SETRANGE, SETBIT, INCRBYFLOAT: the
 * computing is the caller's, proto/strops.h) and RENAME/COPY.
 *
 * Like every ledger write they look keys up first and answer HKV_EAGAIN,
 * changing nothing, when a key is not resident in an incomplete ledger, so
 * a two-key command either applies to both keys or to neither.  Values keep
 * their deadline (Redis keeps the TTL across APPEND, SETRANGE, SETBIT,
 * INCRBYFLOAT, RENAME and COPY), and RENAME and COPY keep how the value was
 * made (ledger_enc); also FLUSHALL, and setting that (ledger_set_enc).
 */
#include <string.h>

#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

static int lookup(struct ledger *l, const char *key, size_t klen, uint64_t *h,
                  struct lentry **ep)
{
    *h = ledger_hash(l, key, klen);
    *ep = ledger_find(l, *h, key, klen);
    return *ep == NULL && !l->complete ? HKV_EAGAIN : HKV_OK;
}

int ledger_rmw(struct ledger *l, const char *key, size_t klen, uint16_t class_id,
               ledger_rmw_fn fn, void *arg, struct ledger_clock now, int *changed,
               hkv_stamp *version)
{
    uint64_t h;
    struct lentry *e;
    *changed = 0;
    ledger_release_held(l);
    int rc = lookup(l, key, klen, &h, &e);
    if (version != NULL)
        *version = e != NULL ? e->stamp : 0;
    if (rc != HKV_OK)
        return rc;
    int live = e != NULL && entry_live(e, now.mono_ms);
    const char *val = NULL;
    size_t vlen = 0;
    rc = fn(arg, live ? entry_val(e) : NULL, live ? entry_vlen(e) : 0, live, &val, &vlen);
    if (rc <= 0)
        return rc; /* 0: nothing to store; < 0: the command's error */
    struct ledger_put_args a = {.val = val, .vlen = vlen, .class_id = class_id, .dirty = 1};
    if (live) {
        a.expire_mono = entry_expire_mono(e);
        a.expire_wall = entry_expire_wall(e);
    }
    a.stamp = ledger_next_version(l, e, now);
    rc = ledger_put(l, e, h, key, klen, &a, now.mono_ms);
    if (rc != HKV_OK)
        return rc;
    *changed = 1;
    if (version != NULL)
        *version = a.stamp;
    ledger_after_write(l);
    return HKV_OK;
}

int ledger_move(struct ledger *l, const char *src, size_t slen, const char *dst, size_t dlen,
                uint16_t dst_class, unsigned flags, struct ledger_clock now, int *applied,
                hkv_stamp *src_version, hkv_stamp *dst_version)
{
    uint64_t hs, hd;
    struct lentry *es, *ed;
    *applied = 0;
    *src_version = *dst_version = 0;
    ledger_release_held(l);
    if (lookup(l, src, slen, &hs, &es) != HKV_OK || lookup(l, dst, dlen, &hd, &ed) != HKV_OK)
        return HKV_EAGAIN;
    if (es == NULL || !entry_live(es, now.mono_ms))
        return HKV_ENOENT;
    *src_version = es->stamp;
    if (ed != NULL)
        *dst_version = ed->stamp;
    int dst_live = ed != NULL && entry_live(ed, now.mono_ms);
    if (slen == dlen && memcmp(src, dst, slen) == 0) {
        /* RENAME k k is OK and changes nothing; RENAMENX k k and COPY k k do nothing */
        *applied = !(flags & (LEDGER_MOVE_NX | LEDGER_MOVE_COPY));
        return (flags & LEDGER_MOVE_COPY) ? HKV_EINVAL : HKV_OK;
    }
    if (dst_live && (flags & LEDGER_MOVE_NX))
        return HKV_OK;
    int enc = (es->flags & E_ENC_MASK) >> E_ENC_SHIFT;
    if ((flags & LEDGER_MOVE_COPY) && enc == LEDGER_ENC_AUTO)
        enc = LEDGER_ENC_UNSHARED; /* Redis's COPY duplicates the object: never shared */
    struct ledger_put_args a = {.val = entry_val(es), .vlen = entry_vlen(es),
                                .class_id = dst_class, .dirty = 1,
                                .expire_mono = entry_expire_mono(es),
                                .expire_wall = entry_expire_wall(es), .enc = enc};
    a.stamp = ledger_next_version(l, ed, now);
    int rc = ledger_put(l, ed, hd, dst, dlen, &a, now.mono_ms);
    if (rc != HKV_OK)
        return rc;
    *dst_version = a.stamp;
    *applied = 1;
    if (!(flags & LEDGER_MOVE_COPY)) {
        /* ledger_put may have made a new dst entry, never moved or freed es */
        struct ledger_put_args t = {.tomb = 1, .class_id = es->class_id, .dirty = 1};
        t.stamp = ledger_next_version(l, es, now);
        rc = ledger_put(l, es, hs, src, slen, &t, now.mono_ms);
        if (rc != HKV_OK)
            return rc; /* a tombstone never allocates a value: not reached */
        *src_version = t.stamp;
    }
    ledger_after_write(l);
    return HKV_OK;
}

int ledger_set_enc(struct ledger *l, const char *key, size_t klen, int enc,
                   struct ledger_clock now)
{
    struct lentry *e = ledger_find(l, ledger_hash(l, key, klen), key, klen);
    if (e == NULL || !entry_live(e, now.mono_ms))
        return HKV_ENOENT;
    e->flags = (uint8_t)((e->flags & ~E_ENC_MASK) | (((unsigned)enc << E_ENC_SHIFT) & E_ENC_MASK));
    return HKV_OK;
}

int ledger_flush(struct ledger *l, struct ledger_clock now, hkv_stamp *version)
{
    ledger_release_held(l);
    hkv_stamp v = ledger_next_version(l, NULL, now);
    for (int ti = 0; ti < 2; ti++) {
        struct ltable *t = &l->t[ti];
        for (size_t i = 0; i < t->size; i++)
            while (t->b[i] != NULL)
                ledger_drop(l, t, &t->b[i]);
    }
    if (v > l->floor)
        l->floor = v;
    if (v > l->flush_floor)
        l->flush_floor = v;
    /* Complete again, even if keys had been evicted to disk only: every row
     * the file holds is older than the flush (a deleted key, once loaded),
     * and every key written from now on is resident until evicted. */
    l->complete = 1;
    l->evicted_ever = 0;
    l->st.writes++;
    *version = v;
    return HKV_OK;
}

void ledger_set_flush_floor(struct ledger *l, hkv_stamp floor)
{
    hlc_observe(&l->clock, floor); /* a file emptied by the flush holds no newer row */
    if (floor > l->flush_floor)
        l->flush_floor = floor;
    if (floor > l->floor)
        l->floor = floor;
}

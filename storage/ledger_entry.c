/*
 * ledger_entry.c - an entry's bytes (the layout in ledger_int.h: header,
 * key, value in place or a block with the value and its deadline) and the
 * two changes every write is made of: ledger_put() (a value or a tombstone
 * under a new version) and ledger_make_tomb() (an expiry or EXPIRE in the
 * past), with the accounting every change is bracketed by.
 *
 * Where a new value goes is decided on every put: in place when the key has
 * no deadline and the value fits what malloc gave the entry, else in a new
 * block; the old block (if any) is freed after the copy, because the new
 * value may be a slice of the old one (APPEND, SETRANGE, RENAME's source
 * read back).  A value a reply still reads (SET GET, GETDEL: until the next
 * mutating call) is kept in l->held: its block as it is, or, when it was in
 * place and a new value is about to go over it, a copy.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

/* ---- accounting --------------------------------------------------------- */

/* The bytes e holds: header, key, value and NUL, and a deadline's 16 when
 * it has one.  Whether a value without one sits in place or in a block
 * (malloc's rounding decides) does not change the figure. */
static size_t entry_size(const struct lentry *e)
{
    size_t sz = LENTRY_HDR + e->klen;
    if (e->flags & E_TOMB)
        return sz;
    sz += e->vlen + 1;
    if (entry_expire_mono(e) != 0 || entry_expire_wall(e) != 0)
        sz += sizeof(struct lext);
    return sz;
}

void ledger_acct_add(struct ledger *l, const struct lentry *e)
{
    size_t sz = entry_size(e);
    ledger_xnote_add(l, e);
    l->st.memory_bytes += sz;
    if (e->flags & E_TOMB)
        l->st.tombstones++;
    else
        l->st.keys++, l->st.sys_keys += syskey_is(e->key, e->klen);
    if (entry_dirty(e)) {
        l->st.dirty_keys++;
        l->st.dirty_bytes += sz;
    }
}

void ledger_acct_sub(struct ledger *l, const struct lentry *e)
{
    size_t sz = entry_size(e);
    ledger_xnote_sub(l, e);
    l->st.memory_bytes -= sz;
    if (e->flags & E_TOMB)
        l->st.tombstones--;
    else
        l->st.keys--, l->st.sys_keys -= syskey_is(e->key, e->klen);
    if (entry_dirty(e)) {
        l->st.dirty_keys--;
        l->st.dirty_bytes -= sz;
    }
}

/* ---- entry changes ------------------------------------------------------ */

void ledger_entry_free(struct lentry *e)
{
    if (entry_has_ext(e))
        free(entry_ext(e));
    free(e);
}

void ledger_release_held(struct ledger *l)
{
    free(l->held);
    l->held = NULL;
}

/* 1 if a value of vlen bytes (and its NUL) fits what malloc gave e. */
static int fits_inline(const struct lentry *e, size_t vlen)
{
    size_t usable = malloc_usable_size((void *)e);
    return usable >= LENTRY_HDR + e->klen && vlen < usable - LENTRY_HDR - e->klen;
}

int ledger_put(struct ledger *l, struct lentry *e, uint64_t h, const char *key, size_t klen,
               const struct ledger_put_args *a, uint64_t now_mono)
{
    if (!a->tomb && a->vlen >= UINT32_MAX)
        return HKV_EINVAL;
    int fresh = e == NULL;
    if (a->dirty && (fresh || e->state == D_CLEAN) && ledger_dirty_reserve(l) != HKV_OK)
        return HKV_ENOMEM;
    if (fresh) {
        if (klen > UINT32_MAX)
            return HKV_EINVAL;
        size_t inl = a->tomb ? 0 : a->vlen + 1;
        e = calloc(1, LENTRY_HDR + klen + (inl > LENTRY_INL_MIN ? inl : LENTRY_INL_MIN));
        if (e == NULL)
            return HKV_ENOMEM;
        memcpy(e->key, key, klen);
        e->klen = (uint32_t)klen;
        e->flags = E_TOMB; /* nothing to free or hold until it is filled */
    }
    struct lext *ox = entry_has_ext(e) ? entry_ext(e) : NULL;
    /* a held value in place that the new one may go over: copied out first */
    char *copy = NULL;
    if (a->hold != NULL && !a->tomb && !(e->flags & (E_TOMB | E_EXT))) {
        copy = malloc((size_t)e->vlen + 1);
        if (copy == NULL)
            return HKV_ENOMEM; /* not fresh: an in-place value is an old one */
        memcpy(copy, entry_inl(e), (size_t)e->vlen + 1);
    }
    struct lext *nx = NULL;
    char *nv = NULL;
    if (!a->tomb) {
        int deadline = a->expire_mono != 0 || a->expire_wall != 0;
        if (!deadline && fits_inline(e, a->vlen)) {
            nv = entry_inl(e);
        } else {
            nx = malloc(sizeof(*nx) + a->vlen + 1);
            if (nx == NULL) {
                free(copy);
                if (fresh)
                    free(e);
                return HKV_ENOMEM;
            }
            nx->expire_mono = a->expire_mono;
            nx->expire_wall = a->expire_wall;
            nv = nx->val;
        }
    }
    if (fresh && ledger_order_add(l, e) != HKV_OK) {
        free(nx);
        free(e);
        return HKV_ENOMEM;
    }
    if (!fresh)
        ledger_acct_sub(l, e);
    /* Copied before the old value goes: a->val may point into it (memmove:
     * into the very bytes it is copied to, when both are in place; ox was
     * read before, as these bytes may be where its address was). */
    if (nv != NULL) {
        if (a->vlen)
            memmove(nv, a->val, a->vlen);
        nv[a->vlen] = '\0';
    }
    if (a->hold != NULL) {
        ledger_release_held(l);
        if (copy != NULL) {
            l->held = copy;
            a->hold->val = copy;
        } else if (ox != NULL) {
            l->held = ox; /* the view points into it already */
            ox = NULL;
        } /* else: in place and not written over (a tombstone leaves it) */
    }
    free(ox);
    if (fresh)
        ledger_insert(l, e, h);
    e->stamp = a->stamp;
    e->class_id = a->class_id;
    e->flags = (uint8_t)((a->tomb ? E_TOMB : 0) | E_REF | (nx != NULL ? E_EXT : 0) |
                         (((unsigned)a->enc << E_ENC_SHIFT) & E_ENC_MASK));
    if (a->tomb) {
        e->tomb_mono = now_mono;
    } else {
        e->vlen = (uint32_t)a->vlen;
        if (nx != NULL)
            memcpy(entry_inl(e), &nx, sizeof(nx));
    }
    ledger_set_state(l, e, a->dirty ? D_PENDING : D_CLEAN);
    ledger_acct_add(l, e);
    if (a->dirty)
        l->st.writes++;
    return HKV_OK;
}

int ledger_make_tomb(struct ledger *l, struct lentry *e, hkv_stamp stamp, uint64_t now_mono)
{
    if (e->state == D_CLEAN && ledger_dirty_reserve(l) != HKV_OK)
        return HKV_ENOMEM;
    ledger_acct_sub(l, e);
    if (entry_has_ext(e))
        free(entry_ext(e));
    e->flags = (uint8_t)((e->flags | E_TOMB) & ~E_EXT);
    e->stamp = stamp;
    e->tomb_mono = now_mono; /* shares the word of vlen */
    ledger_set_state(l, e, D_PENDING);
    ledger_acct_add(l, e);
    return HKV_OK;
}

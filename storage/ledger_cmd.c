/*
 * ledger_cmd.c - the ledger's commands: GET, SET (NX/XX/GET/KEEPTTL), DEL,
 * INCRBY, EXPIRE, PERSIST, PTTL.
 *
 * Every write starts with write_lookup(): it finds the key and answers
 * HKV_EAGAIN for a key that is not resident in an incomplete ledger.  A
 * command then looks at the key's state (live, expired, tombstone) for its
 * own conditions, and, if it applies, takes the key's next version
 * (ledger_next_version) and changes the entry through ledger_put() or the
 * small helpers in ledger.c, which keep the counters and the dirty lists
 * right.  Nothing here compares a caller's stamp: the order of the calls is
 * the order of the writes.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/num.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

/* HKV_OK with *ep = the resident entry or NULL (missing, ledger complete:
 * the caller may create it); HKV_EAGAIN when the key is not resident. */
static int write_lookup(struct ledger *l, const char *key, size_t klen, uint64_t *h,
                        struct lentry **ep, hkv_stamp *version)
{
    ledger_release_held(l);
    *h = ledger_hash(l, key, klen);
    struct lentry *e = ledger_find(l, *h, key, klen);
    *ep = e;
    if (version != NULL)
        *version = e != NULL ? e->stamp : 0;
    if (e == NULL)
        return l->complete ? HKV_OK : HKV_EAGAIN;
    return HKV_OK;
}

static void fill_view(const struct lentry *e, uint64_t now_mono, struct ledger_view *v)
{
    v->found = 1;
    uint64_t deadline = entry_expire_mono(e);
    v->val = entry_val(e);
    v->vlen = entry_vlen(e);
    v->stamp = e->stamp;
    v->ttl_ms = deadline ? (int64_t)(deadline - now_mono) : -1;
    v->expire_at_ms = entry_expire_wall(e);
    v->class_id = e->class_id;
    v->dirty = entry_dirty(e);
    v->enc = (e->flags & E_ENC_MASK) >> E_ENC_SHIFT;
}

static void clear_view(struct ledger_view *v)
{
    if (v != NULL)
        memset(v, 0, sizeof(*v));
}

/* ---- operations --------------------------------------------------------- */

int ledger_get(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
               struct ledger_view *out)
{
    l->st.reads++;
    struct lentry *e = ledger_find(l, ledger_hash(l, key, klen), key, klen);
    clear_view(out);
    if (e == NULL) {
        out->stamp = l->floor; /* absent as of the floor: see ledger_set_floor */
        return l->complete ? HKV_ENOENT : HKV_EAGAIN;
    }
    e->flags |= E_REF;
    if (!entry_live(e, now.mono_ms)) {
        out->stamp = e->stamp; /* the delete or expired write behind the absence */
        out->class_id = e->class_id;
        out->dirty = entry_dirty(e);
        return HKV_ENOENT;
    }
    fill_view(e, now.mono_ms, out);
    return HKV_OK;
}

int ledger_set(struct ledger *l, const char *key, size_t klen, const char *val, size_t vlen,
               uint16_t class_id, unsigned flags, struct ledger_expiry exp,
               struct ledger_clock now, struct ledger_view *old, hkv_stamp *version)
{
    if (version != NULL)
        *version = 0;
    uint64_t h;
    struct lentry *e;
    clear_view(old);
    if ((flags & LEDGER_NX) && (flags & LEDGER_XX))
        return HKV_EINVAL;
    if ((exp.kind == LEDGER_EXP_REL || exp.kind == LEDGER_EXP_ABS) && exp.ms <= 0)
        return HKV_EINVAL;
    int rc = write_lookup(l, key, klen, &h, &e, version);
    if (rc != HKV_OK)
        return rc;
    int live = e != NULL && entry_live(e, now.mono_ms);
    if ((flags & LEDGER_GET) && live && old != NULL)
        fill_view(e, now.mono_ms, old);
    if ((flags & LEDGER_NX) && live)
        return HKV_EEXIST;
    if ((flags & LEDGER_XX) && !live)
        return HKV_ENOENT;

    struct ledger_put_args a = {.val = val, .vlen = vlen, .class_id = class_id, .dirty = 1,
                                .hold = (flags & LEDGER_GET) && live ? old : NULL};
    if (exp.kind == LEDGER_EXP_KEEP) {
        if (live) {
            a.expire_mono = entry_expire_mono(e);
            a.expire_wall = entry_expire_wall(e);
        }
    } else if (exp.kind != LEDGER_EXP_NONE) {
        a.tomb = ledger_deadline(exp, now, &a.expire_mono, &a.expire_wall);
    }
    a.stamp = ledger_next_version(l, e, now);
    rc = ledger_put(l, e, h, key, klen, &a, now.mono_ms);
    if (rc == HKV_OK) {
        if (version != NULL)
            *version = a.stamp;
        ledger_after_write(l);
    }
    return rc;
}

int ledger_del(struct ledger *l, const char *key, size_t klen, uint16_t class_id,
               struct ledger_clock now, int *existed, struct ledger_view *old,
               hkv_stamp *version)
{
    uint64_t h;
    struct lentry *e;
    if (existed != NULL)
        *existed = 0;
    clear_view(old);
    int rc = write_lookup(l, key, klen, &h, &e, version);
    if (rc != HKV_OK)
        return rc;
    int live = e != NULL && entry_live(e, now.mono_ms);
    if (existed != NULL)
        *existed = live;
    if (live && old != NULL)
        fill_view(e, now.mono_ms, old);
    struct ledger_put_args a = {.tomb = 1, .class_id = class_id, .dirty = 1,
                                .hold = live ? old : NULL};
    a.stamp = ledger_next_version(l, e, now);
    rc = ledger_put(l, e, h, key, klen, &a, now.mono_ms);
    if (rc == HKV_OK) {
        if (version != NULL)
            *version = a.stamp;
        ledger_after_write(l);
    }
    return rc;
}


int ledger_incrby(struct ledger *l, const char *key, size_t klen, int64_t delta,
                  uint16_t class_id, struct ledger_clock now, int64_t *result,
                  hkv_stamp *version)
{
    uint64_t h;
    struct lentry *e;
    int rc = write_lookup(l, key, klen, &h, &e, version);
    if (rc != HKV_OK)
        return rc;
    int live = e != NULL && entry_live(e, now.mono_ms);
    int64_t cur = 0, sum;
    if (live && !num_parse_ll(entry_val(e), entry_vlen(e), &cur))
        return HKV_EINVAL;
    if (__builtin_add_overflow(cur, delta, &sum))
        return HKV_EINVAL;
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%lld", (long long)sum);
    struct ledger_put_args a = {.val = buf, .vlen = (size_t)n, .class_id = class_id, .dirty = 1};
    if (live) {
        a.expire_mono = entry_expire_mono(e);
        a.expire_wall = entry_expire_wall(e);
    }
    a.stamp = ledger_next_version(l, e, now);
    rc = ledger_put(l, e, h, key, klen, &a, now.mono_ms);
    if (rc != HKV_OK)
        return rc;
    if (result != NULL)
        *result = sum;
    if (version != NULL)
        *version = a.stamp;
    ledger_after_write(l);
    return HKV_OK;
}

/* Changes a live entry's expiry under a new stamp.  HKV_OK or HKV_ENOMEM
 * (nothing changed).  A key that has a block and keeps a deadline changes
 * it in place; else the value moves (into a block for a first deadline,
 * back in place when the last one goes), which ledger_put does. */
static int set_expiry(struct ledger *l, struct lentry *e, uint64_t h, hkv_stamp stamp,
                      uint64_t mono, int64_t wall, uint64_t now_mono)
{
    if (!entry_has_ext(e) || (mono == 0 && wall == 0)) {
        struct ledger_put_args a = {.val = entry_val(e), .vlen = entry_vlen(e),
                                    .stamp = stamp, .class_id = e->class_id,
                                    .expire_mono = mono, .expire_wall = wall, .dirty = 1,
                                    .enc = (e->flags & E_ENC_MASK) >> E_ENC_SHIFT};
        return ledger_put(l, e, h, e->key, e->klen, &a, now_mono);
    }
    if (e->state == D_CLEAN && ledger_dirty_reserve(l) != HKV_OK)
        return HKV_ENOMEM;
    ledger_acct_sub(l, e);
    e->stamp = stamp;
    entry_ext(e)->expire_mono = mono;
    entry_ext(e)->expire_wall = wall;
    e->flags |= E_REF;
    ledger_set_state(l, e, D_PENDING);
    ledger_acct_add(l, e);
    l->st.writes++;
    return HKV_OK;
}

int ledger_expire(struct ledger *l, const char *key, size_t klen, struct ledger_expiry exp,
                  struct ledger_clock now, int *deleted, hkv_stamp *version)
{
    if (version != NULL)
        *version = 0;
    uint64_t h;
    struct lentry *e;
    if (deleted != NULL)
        *deleted = 0;
    if (exp.kind != LEDGER_EXP_REL && exp.kind != LEDGER_EXP_ABS)
        return HKV_EINVAL;
    int rc = write_lookup(l, key, klen, &h, &e, version);
    if (rc != HKV_OK)
        return rc;
    if (e == NULL || !entry_live(e, now.mono_ms))
        return HKV_ENOENT;
    uint64_t mono = 0;
    int64_t wall = 0;
    hkv_stamp v = ledger_next_version(l, e, now);
    if (ledger_deadline(exp, now, &mono, &wall)) {
        if (ledger_make_tomb(l, e, v, now.mono_ms) != HKV_OK)
            return HKV_ENOMEM;
        l->st.writes++;
        if (deleted != NULL)
            *deleted = 1;
    } else if (set_expiry(l, e, h, v, mono, wall, now.mono_ms) != HKV_OK) {
        return HKV_ENOMEM;
    }
    if (version != NULL)
        *version = v;
    return HKV_OK;
}

int ledger_persist(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
                   int *changed, hkv_stamp *version)
{
    uint64_t h;
    struct lentry *e;
    if (changed != NULL)
        *changed = 0;
    int rc = write_lookup(l, key, klen, &h, &e, version);
    if (rc != HKV_OK)
        return rc;
    if (e == NULL || !entry_live(e, now.mono_ms))
        return HKV_ENOENT;
    if (entry_expire_mono(e) == 0)
        return HKV_OK;
    hkv_stamp v = ledger_next_version(l, e, now);
    if (set_expiry(l, e, h, v, 0, 0, now.mono_ms) != HKV_OK)
        return HKV_ENOMEM;
    if (changed != NULL)
        *changed = 1;
    if (version != NULL)
        *version = v;
    return HKV_OK;
}

int ledger_ttl(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
               int64_t *ttl_ms)
{
    l->st.reads++;
    struct lentry *e = ledger_find(l, ledger_hash(l, key, klen), key, klen);
    *ttl_ms = -2;
    if (e == NULL)
        return l->complete ? HKV_OK : HKV_EAGAIN;
    e->flags |= E_REF;
    if (entry_live(e, now.mono_ms)) {
        uint64_t deadline = entry_expire_mono(e);
        *ttl_ms = deadline ? (int64_t)(deadline - now.mono_ms) : -1;
    }
    return HKV_OK;
}


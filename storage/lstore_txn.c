/*
 * lstore_txn.c - the local store's calls on its engine (lstore.h): txns (put
 * and delete are txns of one op), ranges now or at an older revision,
 * leases; and a change set made a revision.
 *
 * A txn runs on the table at once, op after op (a later op sees an earlier
 * one), into a batch of changes; if an op fails half-way the batch is undone
 * on the table, so a txn is all or nothing.  The batch then becomes one
 * revision (lstore_commit): kept in the history (for watches and older
 * ranges, trimmed by whole revisions) and handed to the log writer as a
 * record, with a new snapshot now and then.  Each call fills an answer; when
 * it may be delivered (once the file holds its revision) is the caller's
 * business (server/agent/etcd_local*.c).
 */
#include "storage/lstore.h"

#include <stdlib.h>
#include <string.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"

/* ---- answers ---- */

static void ans_error(struct lstore_ans *a, int code, const char *msg)
{
    a->r.status = HKV_EINVAL;
    a->r.code = code;
    a->r.message = msg;
}

/* Copies kvs [from, to) of t into a (at most limit; 0 = all). */
static int ans_take(struct lstore_ans *a, const struct lkv *v, size_t n, int64_t limit)
{
    a->r.count = (int64_t)n;
    if (limit > 0 && (size_t)limit < n) {
        a->r.more = 1;
        n = (size_t)limit;
    }
    if (n == 0)
        return HKV_OK;
    a->kvs = calloc(n, sizeof(*a->kvs));
    a->ekvs = calloc(n, sizeof(*a->ekvs));
    if (a->kvs == NULL || a->ekvs == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (lstore_kv_copy(&a->kvs[i], &v[i]) != HKV_OK)
            return HKV_ENOMEM;
        a->nkvs = i + 1;
        struct lkv *k = &a->kvs[i];
        a->ekvs[i] = (struct etcd_kv){k->key, k->klen, k->val, k->vlen, k->create, k->mod,
                                      k->version, k->lease};
    }
    a->r.kvs = a->ekvs;
    a->r.nkvs = n;
    return HKV_OK;
}

void lstore_ans_free(struct lstore_ans *a)
{
    for (size_t i = 0; i < a->nkvs; i++)
        lstore_kv_free(&a->kvs[i]);
    free(a->kvs);
    free(a->ekvs);
    *a = (struct lstore_ans){0};
}

/* ---- changes: table, history, file ---- */

static void trim_history(struct lstore *l)
{
    if (l->nhist <= LSTORE_HISTORY)
        return;
    size_t drop = l->nhist / 2;
    while (drop < l->nhist && l->hist[drop].rev == l->hist[drop - 1].rev)
        drop++; /* whole revisions only */
    l->hist_base = l->hist[drop - 1].rev;
    for (size_t i = 0; i < drop; i++)
        lstore_change_free(&l->hist[i].c);
    memmove(l->hist, l->hist + drop, (l->nhist - drop) * sizeof(*l->hist));
    l->nhist -= drop;
}

/* The writer has written nothing for a while past the snapshot: hand it a
 * new one when the file is several snapshots long. */
static void maybe_snapshot(struct lstore *l)
{
    int failed;
    size_t since, snap;
    lstore_log_durable(l->w, &failed, &since, &snap);
    if (l->snapshot_pending && l->durable >= l->snapshot_rev)
        l->snapshot_pending = 0;
    if (failed || l->snapshot_pending || since < (1u << 20) || since < 4 * snap)
        return;
    struct hkv_buf b = HKV_BUF_INIT;
    if (lstore_rec_snapshot(&b, &l->t) != HKV_OK) {
        buf_deinit(&b);
        return; /* the log goes on growing: correct, only longer */
    }
    l->snapshot_pending = 1;
    l->snapshot_rev = l->t.rev;
    lstore_log_post(l->w, &b, l->t.rev, 1);
}

/* Changes c[0..n), already applied to the table, become revision t.rev + 1:
 * kept and logged (the history takes c's contents).  HKV_OK or HKV_ENOMEM
 * (the store is then poisoned). */
static int lstore_commit(struct lstore *l, struct lchange *c, size_t n)
{
    if (n == 0)
        return HKV_OK;
    int64_t rev = l->t.rev + 1;
    struct hkv_buf b = HKV_BUF_INIT;
    int rc = HKV_OK;
    if (l->nhist + n > l->caphist) {
        size_t cap = (l->nhist + n) * 2;
        struct lstore_hev *h = realloc(l->hist, cap * sizeof(*h));
        if (h == NULL)
            rc = HKV_ENOMEM;
        else {
            l->hist = h;
            l->caphist = cap;
        }
    }
    if (rc == HKV_OK)
        rc = lstore_rec_changes(&b, rev, c, n);
    if (rc != HKV_OK) {
        buf_deinit(&b);
        l->failed = 1;
        for (size_t i = 0; i < n; i++)
            lstore_change_free(&c[i]);
        return rc;
    }
    l->t.rev = rev;
    for (size_t i = 0; i < n; i++)
        l->hist[l->nhist++] = (struct lstore_hev){rev, c[i]};
    lstore_log_post(l->w, &b, rev, 0);
    trim_history(l);
    maybe_snapshot(l);
    return HKV_OK;
}

/* ---- a txn's pieces ---- */

struct batch {
    struct lchange c[2 * ETCD_MAX_OPS + 16];
    size_t n;
    int64_t rev;                  /* the revision they will take */
};

static const struct lkv *find(const struct lstore *l, const char *key, size_t klen)
{
    int found;
    size_t i = lstore_find(&l->t, key, klen, &found);
    return found ? &l->t.v[i] : NULL;
}

static const struct lstore_lease *lease_find(const struct lstore *l, int64_t id)
{
    for (size_t i = 0; i < l->nleases; i++)
        if (l->leases[i].id == id)
            return &l->leases[i];
    return NULL;
}

static int cmp_true(const struct lstore *l, const struct etcd_cmp *c)
{
    const struct lkv *kv = find(l, c->key, c->klen);
    int d;
    if (c->target == ETCD_VALUE) {
        if (kv == NULL)
            return 0; /* etcd: a value compare on an absent key fails */
        d = lstore_key_cmp(kv->val, kv->vlen, c->value != NULL ? c->value : "", c->vlen);
    } else {
        int64_t have = kv == NULL ? 0 : c->target == ETCD_MOD ? kv->mod
                                      : c->target == ETCD_CREATE ? kv->create : kv->version;
        d = have < c->n ? -1 : have > c->n;
    }
    switch (c->result) {
    case ETCD_EQUAL: return d == 0;
    case ETCD_GREATER: return d > 0;
    case ETCD_LESS: return d < 0;
    case ETCD_NOT_EQUAL: return d != 0;
    }
    return 0;
}

/* A key written twice in one branch (etcd's code 3). */
static int duplicate(const struct etcd_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (ops[i].kind != ETCD_OP_RANGE && ops[j].kind != ETCD_OP_RANGE &&
                lstore_key_cmp(ops[i].key, ops[i].klen, ops[j].key, ops[j].klen) == 0)
                return 1;
    return 0;
}

static int batch_put(struct lstore *l, struct batch *b, const struct etcd_op *op)
{
    const struct lkv *old = find(l, op->key, op->klen);
    struct lchange *c = &b->c[b->n];
    memset(c, 0, sizeof(*c));
    struct lkv kv = {(char *)op->key, op->value != NULL ? (char *)op->value : "", op->klen,
                     op->vlen, old != NULL ? old->create : b->rev, b->rev,
                     old != NULL ? old->version + 1 : 1, op->lease};
    if (lstore_kv_copy(&c->kv, &kv) != HKV_OK)
        return HKV_ENOMEM;
    if (old != NULL) {
        c->had_prev = 1;
        if (lstore_kv_copy(&c->prev, old) != HKV_OK) {
            lstore_kv_free(&c->kv);
            return HKV_ENOMEM;
        }
    }
    b->n++;
    return lstore_apply(&l->t, c) == HKV_OK ? HKV_OK : HKV_ENOMEM;
}

/* Deletes the keys of [key, end) (applied to the table as it goes, so a
 * later op of the txn sees it); how many. */
static int batch_delete(struct lstore *l, struct batch *b, const char *key, size_t klen,
                        const char *end, size_t elen, int64_t *deleted)
{
    size_t from, to;
    lstore_span(&l->t, key, klen, end, elen, &from, &to);
    *deleted += (int64_t)(to - from);
    while (to > from) {
        if (b->n == sizeof(b->c) / sizeof(b->c[0]))
            return HKV_EFULL;
        struct lchange *c = &b->c[b->n];
        memset(c, 0, sizeof(*c));
        struct lkv *old = &l->t.v[from];
        struct lkv k = {old->key, "", old->klen, 0, 0, b->rev, 0, 0};
        if (lstore_kv_copy(&c->kv, &k) != HKV_OK || lstore_kv_copy(&c->prev, old) != HKV_OK) {
            lstore_change_free(c);
            return HKV_ENOMEM;
        }
        c->del = c->had_prev = 1;
        b->n++;
        lstore_apply(&l->t, c);
        to--;
    }
    return HKV_OK;
}

/* Undoes b on the table (a txn that failed half-way). */
static void batch_undo(struct lstore *l, struct batch *b)
{
    for (size_t i = b->n; i-- > 0;) {
        struct lchange u = {.del = !b->c[i].had_prev, .kv = b->c[i].had_prev ? b->c[i].prev
                                                                              : b->c[i].kv};
        lstore_apply(&l->t, &u);
        lstore_change_free(&b->c[i]);
    }
    b->n = 0;
}

static int batch_commit(struct lstore *l, struct batch *b)
{
    return lstore_commit(l, b->c, b->n);
}

/* ---- calls ---- */

static int range_into(struct lstore *l, struct lstore_ans *a, const char *key, size_t klen,
                      const char *end, size_t elen, int64_t revision, int64_t limit);

static int run_ops(struct lstore *l, struct lstore_ans *a, struct batch *b,
                   const struct etcd_op *ops, size_t n)
{
    int ranged = 0;
    for (size_t i = 0; i < n; i++) {
        const struct etcd_op *op = &ops[i];
        int rc = HKV_OK;
        if (op->kind == ETCD_OP_PUT) {
            rc = batch_put(l, b, op);
        } else if (op->kind == ETCD_OP_DELETE) {
            rc = batch_delete(l, b, op->key, op->klen, op->end, op->elen, &a->r.deleted);
        } else if (!ranged) {
            ranged = 1;
            rc = range_into(l, a, op->key, op->klen, op->end, op->elen, 0, 0);
        }
        if (rc != HKV_OK)
            return rc;
    }
    return HKV_OK;
}

int lstore_txn(struct lstore *l, const struct etcd_cmp *cmp, size_t ncmp,
               const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail,
               struct lstore_ans *a)
{
    struct batch *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return HKV_ENOMEM;
    b->rev = l->t.rev + 1;
    if (l->failed) {
        a->r.status = HKV_EIO;
        a->r.message = "the local store could not write its file";
    } else if (nok > ETCD_MAX_OPS || nfail > ETCD_MAX_OPS || ncmp > ETCD_MAX_OPS) {
        ans_error(a, 3, "etcdserver: too many operations in txn request");
    } else if (duplicate(ok, nok) || duplicate(fail, nfail)) {
        ans_error(a, 3, "etcdserver: duplicate key given in txn request");
    } else {
        int yes = 1;
        for (size_t i = 0; i < ncmp && yes; i++)
            yes = cmp_true(l, &cmp[i]);
        const struct etcd_op *ops = yes ? ok : fail;
        size_t n = yes ? nok : nfail;
        int nolease = 0;
        for (size_t i = 0; i < n; i++)
            if (ops[i].kind == ETCD_OP_PUT && ops[i].lease != 0 &&
                lease_find(l, ops[i].lease) == NULL)
                nolease = 1;
        a->r.succeeded = yes;
        if (nolease) {
            ans_error(a, 5, "etcdserver: requested lease not found");
        } else {
            int rc = run_ops(l, a, b, ops, n);
            if (rc != HKV_OK) {
                batch_undo(l, b);
                a->r.status = HKV_EIO;
                a->r.message = rc == HKV_EFULL ? "too many keys deleted in one txn"
                                               : "out of memory";
            } else if (batch_commit(l, b) != HKV_OK) {
                a->r.status = HKV_EIO;
                a->r.message = "out of memory";
            }
        }
    }
    free(b);
    return HKV_OK;
}


/* The keys of the range as they were at revision (0: now) into a. */
static int range_into(struct lstore *l, struct lstore_ans *a, const char *key, size_t klen,
                      const char *end, size_t elen, int64_t revision, int64_t limit)
{
    size_t from, to;
    if (revision <= 0 || revision == l->t.rev) {
        lstore_span(&l->t, key, klen, end, elen, &from, &to);
        return ans_take(a, l->t.v + from, to - from, limit);
    }
    if (revision > l->t.rev) {
        ans_error(a, 11, "etcdserver: mvcc: required revision is a future revision");
        return HKV_OK;
    }
    if (revision < l->hist_base) {
        ans_error(a, 11, "etcdserver: mvcc: required revision has been compacted");
        return HKV_OK;
    }
    /* the range now, then the history undone back to revision */
    struct ltable old = {0};
    int rc = HKV_OK;
    lstore_span(&l->t, key, klen, end, elen, &from, &to);
    for (size_t i = from; i < to && rc == HKV_OK; i++) {
        struct lchange u = {.kv = l->t.v[i]};
        rc = lstore_apply(&old, &u);
    }
    for (size_t i = l->nhist; i-- > 0 && rc == HKV_OK && l->hist[i].rev > revision;) {
        const struct lchange *c = &l->hist[i].c;
        if (!lstore_in_range(c->kv.key, c->kv.klen, key, klen, end, elen))
            continue;
        struct lchange u = {.del = !c->had_prev, .kv = c->had_prev ? c->prev : c->kv};
        rc = lstore_apply(&old, &u);
    }
    if (rc == HKV_OK)
        rc = ans_take(a, old.v, old.n, limit);
    lstore_table_free(&old);
    return rc;
}

void lstore_range(struct lstore *l, const char *key, size_t klen, const char *end, size_t elen,
                  int64_t revision, int64_t limit, struct lstore_ans *a)
{
    if (l->failed) {
        a->r.status = HKV_EIO;
        a->r.message = "the local store could not write its file";
    } else if (range_into(l, a, key, klen, end, elen, revision, limit) != HKV_OK) {
        a->r.status = HKV_EIO;
        a->r.message = "out of memory";
    }
}


int lstore_poisoned(const struct lstore *l, struct lstore_ans *a)
{
    if (!l->failed)
        return 0;
    a->r.status = HKV_EIO;
    a->r.message = "the local store could not write its file";
    return 1;
}

int lstore_lease_grant(struct lstore *l, int64_t ttl_s, struct lstore_ans *a)
{
    if (l->nleases == l->capleases) {
        size_t cap = l->capleases ? l->capleases * 2 : 8;
        struct lstore_lease *v = realloc(l->leases, cap * sizeof(*v));
        if (v == NULL)
            return HKV_ENOMEM;
        l->leases = v;
        l->capleases = cap;
    }
    int64_t ttl = ttl_s < 2 ? 2 : ttl_s;
    l->leases[l->nleases++] = (struct lstore_lease){l->next_lease, ttl};
    a->r.lease_id = l->next_lease++;
    a->r.ttl_s = ttl;
    return HKV_OK;
}

void lstore_lease_keepalive(const struct lstore *l, int64_t id, struct lstore_ans *a)
{
    const struct lstore_lease *le = lease_find(l, id);
    a->r.lease_id = id;
    a->r.ttl_s = le != NULL ? le->ttl : 0; /* 0: gone, as etcd says it */
}


int lstore_drop_leased(struct lstore *l, int64_t id)
{
    struct batch *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return HKV_ENOMEM;
    int rc = HKV_OK;
    for (;;) {
        b->rev = l->t.rev + 1;
        int64_t n = 0;
        for (size_t i = 0; i < l->t.n && rc == HKV_OK;) {
            struct lkv *kv = &l->t.v[i];
            if (kv->lease == 0 || (id != 0 && kv->lease != id)) {
                i++;
                continue;
            }
            if (b->n == sizeof(b->c) / sizeof(b->c[0]))
                break;
            rc = batch_delete(l, b, kv->key, kv->klen, NULL, 0, &n);
        }
        if (rc != HKV_OK) {
            batch_undo(l, b);
            break;
        }
        int more = b->n == sizeof(b->c) / sizeof(b->c[0]);
        rc = batch_commit(l, b);
        memset(b, 0, sizeof(*b));
        if (rc != HKV_OK || !more)
            break;
    }
    free(b);
    return rc;
}

void lstore_lease_revoke(struct lstore *l, int64_t id, struct lstore_ans *a)
{
    size_t i = 0;
    while (i < l->nleases && l->leases[i].id != id)
        i++;
    if (i == l->nleases) {
        ans_error(a, 5, "etcdserver: requested lease not found");
    } else {
        l->leases[i] = l->leases[--l->nleases];
        if (lstore_drop_leased(l, id) != HKV_OK) {
            a->r.status = HKV_EIO;
            a->r.message = "out of memory";
        }
    }
}

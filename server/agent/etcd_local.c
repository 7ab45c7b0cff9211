/*
 * etcd_local.c - the local store's loop side (etcd_local.h): calls, txns,
 * leases, watches.
 *
 * A call is applied to the table at once (so the next call sees it, as
 * etcd's linearizable answers would), and its answer is built at once and
 * queued with the revision it depends on (the table's revision when it
 * ran: a read may have seen a change not yet on disk).  Answers leave the
 * queue in order, from a libevent event, once the writer says the file
 * holds that revision; watch events likewise stop at the durable revision.
 * Every change is also kept in a history (with the value it replaced), for
 * watches that start in the past and ranges at an older revision.
 *
 * A callback may call the store again, cancel any watch or destroy the
 * client: the `dead` flags below are how the loops notice.  Watches are
 * etcd_local_watch.c.
 */
#include "server/agent/etcd_local.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"
#include "server/agent/etcd_msg.h"


static void pump(struct etcd_local *l);

/* ---- answers ---- */

static void ans_free(struct lans *a)
{
    for (size_t i = 0; i < a->nkvs; i++)
        lkv_free(&a->kvs[i]);
    free(a->kvs);
    free(a->ekvs);
    free(a);
}

static struct lans *ans_new(etcd_cb cb, void *arg)
{
    struct lans *a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->cb = cb;
        a->arg = arg;
    }
    return a;
}

/* Queues a (its need and revision: the table's now) and schedules the pump. */
static void ans_queue(struct etcd_local *l, struct lans *a)
{
    a->need = l->t.rev;
    if (a->r.status == HKV_OK || a->r.status == HKV_EINVAL)
        a->r.revision = l->t.rev;
    *l->tail = a;
    l->tail = &a->next;
    event_active(l->kick, EV_TIMEOUT, 1);
}

static void ans_error(struct lans *a, int code, const char *msg)
{
    a->r.status = HKV_EINVAL;
    a->r.code = code;
    a->r.message = msg;
}

/* Copies kvs [from, to) of t into a (at most limit; 0 = all). */
static int ans_take(struct lans *a, const struct lkv *v, size_t n, int64_t limit)
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
        if (lkv_copy(&a->kvs[i], &v[i]) != HKV_OK)
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

/* ---- changes: table, history, file ---- */

static void trim_history(struct etcd_local *l)
{
    if (l->nhist <= ETCD_LOCAL_HISTORY)
        return;
    size_t drop = l->nhist / 2;
    while (drop < l->nhist && l->hist[drop].rev == l->hist[drop - 1].rev)
        drop++; /* whole revisions only */
    l->hist_base = l->hist[drop - 1].rev;
    for (size_t i = 0; i < drop; i++)
        lchange_free(&l->hist[i].c);
    memmove(l->hist, l->hist + drop, (l->nhist - drop) * sizeof(*l->hist));
    l->nhist -= drop;
}

/* The writer has written nothing for a while past the snapshot: hand it a
 * new one when the file is several snapshots long. */
static void maybe_snapshot(struct etcd_local *l)
{
    int failed;
    size_t since, snap;
    lw_durable(l->w, &failed, &since, &snap);
    if (l->snapshot_pending && l->durable >= l->snapshot_rev)
        l->snapshot_pending = 0;
    if (failed || l->snapshot_pending || since < (1u << 20) || since < 4 * snap)
        return;
    struct hkv_buf b = HKV_BUF_INIT;
    if (lrec_encode_snapshot(&b, &l->t) != HKV_OK) {
        buf_deinit(&b);
        return; /* the log goes on growing: correct, only longer */
    }
    l->snapshot_pending = 1;
    l->snapshot_rev = l->t.rev;
    lw_post(l->w, &b, l->t.rev, 1);
}

/* Changes c[0..n), already applied to the table, become revision t.rev + 1:
 * kept and logged (the history takes c's contents).  HKV_OK or HKV_ENOMEM (the store is then
 * poisoned). */
static int commit(struct etcd_local *l, struct lchange *c, size_t n)
{
    if (n == 0)
        return HKV_OK;
    int64_t rev = l->t.rev + 1;
    struct hkv_buf b = HKV_BUF_INIT;
    int rc = HKV_OK;
    if (l->nhist + n > l->caphist) {
        size_t cap = (l->nhist + n) * 2;
        struct hev *h = realloc(l->hist, cap * sizeof(*h));
        if (h == NULL)
            rc = HKV_ENOMEM;
        else {
            l->hist = h;
            l->caphist = cap;
        }
    }
    if (rc == HKV_OK)
        rc = lrec_encode_changes(&b, rev, c, n);
    if (rc != HKV_OK) {
        buf_deinit(&b);
        l->failed = 1;
        for (size_t i = 0; i < n; i++)
            lchange_free(&c[i]);
        return rc;
    }
    l->t.rev = rev;
    for (size_t i = 0; i < n; i++)
        l->hist[l->nhist++] = (struct hev){rev, c[i]};
    lw_post(l->w, &b, rev, 0);
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

static const struct lkv *find(const struct etcd_local *l, const char *key, size_t klen)
{
    int found;
    size_t i = lt_find(&l->t, key, klen, &found);
    return found ? &l->t.v[i] : NULL;
}

static const struct lease *lease_find(const struct etcd_local *l, int64_t id)
{
    for (size_t i = 0; i < l->nleases; i++)
        if (l->leases[i].id == id)
            return &l->leases[i];
    return NULL;
}

static int cmp_true(const struct etcd_local *l, const struct etcd_cmp *c)
{
    const struct lkv *kv = find(l, c->key, c->klen);
    int d;
    if (c->target == ETCD_VALUE) {
        if (kv == NULL)
            return 0; /* etcd: a value compare on an absent key fails */
        d = lkv_cmp_key(kv->val, kv->vlen, c->value != NULL ? c->value : "", c->vlen);
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
                lkv_cmp_key(ops[i].key, ops[i].klen, ops[j].key, ops[j].klen) == 0)
                return 1;
    return 0;
}

static int batch_put(struct etcd_local *l, struct batch *b, const struct etcd_op *op)
{
    const struct lkv *old = find(l, op->key, op->klen);
    struct lchange *c = &b->c[b->n];
    memset(c, 0, sizeof(*c));
    struct lkv kv = {(char *)op->key, op->value != NULL ? (char *)op->value : "", op->klen,
                     op->vlen, old != NULL ? old->create : b->rev, b->rev,
                     old != NULL ? old->version + 1 : 1, op->lease};
    if (lkv_copy(&c->kv, &kv) != HKV_OK)
        return HKV_ENOMEM;
    if (old != NULL) {
        c->had_prev = 1;
        if (lkv_copy(&c->prev, old) != HKV_OK) {
            lkv_free(&c->kv);
            return HKV_ENOMEM;
        }
    }
    b->n++;
    return lt_apply(&l->t, c) == HKV_OK ? HKV_OK : HKV_ENOMEM;
}

/* Deletes the keys of [key, end) (applied to the table as it goes, so a
 * later op of the txn sees it); how many. */
static int batch_delete(struct etcd_local *l, struct batch *b, const char *key, size_t klen,
                        const char *end, size_t elen, int64_t *deleted)
{
    size_t from, to;
    lt_span(&l->t, key, klen, end, elen, &from, &to);
    *deleted += (int64_t)(to - from);
    while (to > from) {
        if (b->n == sizeof(b->c) / sizeof(b->c[0]))
            return HKV_EFULL;
        struct lchange *c = &b->c[b->n];
        memset(c, 0, sizeof(*c));
        struct lkv *old = &l->t.v[from];
        struct lkv k = {old->key, "", old->klen, 0, 0, b->rev, 0, 0};
        if (lkv_copy(&c->kv, &k) != HKV_OK || lkv_copy(&c->prev, old) != HKV_OK) {
            lchange_free(c);
            return HKV_ENOMEM;
        }
        c->del = c->had_prev = 1;
        b->n++;
        lt_apply(&l->t, c);
        to--;
    }
    return HKV_OK;
}

/* Undoes b on the table (a txn that failed half-way). */
static void batch_undo(struct etcd_local *l, struct batch *b)
{
    for (size_t i = b->n; i-- > 0;) {
        struct lchange u = {.del = !b->c[i].had_prev, .kv = b->c[i].had_prev ? b->c[i].prev
                                                                              : b->c[i].kv};
        lt_apply(&l->t, &u);
        lchange_free(&b->c[i]);
    }
    b->n = 0;
}

static int batch_commit(struct etcd_local *l, struct batch *b)
{
    return commit(l, b->c, b->n);
}

/* ---- calls ---- */

static int range_into(struct etcd_local *l, struct lans *a, const char *key, size_t klen,
                      const char *end, size_t elen, int64_t revision, int64_t limit);

static int run_ops(struct etcd_local *l, struct lans *a, struct batch *b,
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

int etcd_local_txn(struct etcd_local *l, const struct etcd_cmp *cmp, size_t ncmp,
                   const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail,
                   etcd_cb cb, void *arg)
{
    if (cb == NULL || (ncmp > 0 && cmp == NULL) || (nok > 0 && ok == NULL) ||
        (nfail > 0 && fail == NULL))
        return HKV_EINVAL;
    struct lans *a = ans_new(cb, arg);
    struct batch *b = calloc(1, sizeof(*b));
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return HKV_ENOMEM;
    }
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
    ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_put(struct etcd_local *l, const char *key, size_t klen, const char *val,
                   size_t vlen, int64_t lease, etcd_cb cb, void *arg)
{
    if (key == NULL || klen == 0)
        return HKV_EINVAL;
    struct etcd_op op = {.kind = ETCD_OP_PUT, .key = key, .klen = klen, .value = val,
                         .vlen = vlen, .lease = lease};
    return etcd_local_txn(l, NULL, 0, &op, 1, NULL, 0, cb, arg);
}

int etcd_local_delete(struct etcd_local *l, const char *key, size_t klen, const char *end,
                      size_t elen, etcd_cb cb, void *arg)
{
    if (key == NULL || klen == 0)
        return HKV_EINVAL;
    struct etcd_op op = {.kind = ETCD_OP_DELETE, .key = key, .klen = klen, .end = end,
                         .elen = elen};
    return etcd_local_txn(l, NULL, 0, &op, 1, NULL, 0, cb, arg);
}

/* The keys of the range as they were at revision (0: now) into a. */
static int range_into(struct etcd_local *l, struct lans *a, const char *key, size_t klen,
                      const char *end, size_t elen, int64_t revision, int64_t limit)
{
    size_t from, to;
    if (revision <= 0 || revision == l->t.rev) {
        lt_span(&l->t, key, klen, end, elen, &from, &to);
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
    lt_span(&l->t, key, klen, end, elen, &from, &to);
    for (size_t i = from; i < to && rc == HKV_OK; i++) {
        struct lchange u = {.kv = l->t.v[i]};
        rc = lt_apply(&old, &u);
    }
    for (size_t i = l->nhist; i-- > 0 && rc == HKV_OK && l->hist[i].rev > revision;) {
        const struct lchange *c = &l->hist[i].c;
        if (!lt_in_range(c->kv.key, c->kv.klen, key, klen, end, elen))
            continue;
        struct lchange u = {.del = !c->had_prev, .kv = c->had_prev ? c->prev : c->kv};
        rc = lt_apply(&old, &u);
    }
    if (rc == HKV_OK)
        rc = ans_take(a, old.v, old.n, limit);
    lt_free(&old);
    return rc;
}

int etcd_local_range(struct etcd_local *l, const char *key, size_t klen, const char *end,
                     size_t elen, int64_t revision, int64_t limit, etcd_cb cb, void *arg)
{
    if (key == NULL || cb == NULL)
        return HKV_EINVAL;
    struct lans *a = ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    if (l->failed) {
        a->r.status = HKV_EIO;
        a->r.message = "the local store could not write its file";
    } else if (range_into(l, a, key, klen, end, elen, revision, limit) != HKV_OK) {
        a->r.status = HKV_EIO;
        a->r.message = "out of memory";
    }
    ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_lease_grant(struct etcd_local *l, int64_t ttl_s, etcd_cb cb, void *arg)
{
    if (ttl_s <= 0 || cb == NULL)
        return HKV_EINVAL;
    struct lans *a = ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    if (l->nleases == l->capleases) {
        size_t cap = l->capleases ? l->capleases * 2 : 8;
        struct lease *v = realloc(l->leases, cap * sizeof(*v));
        if (v == NULL) {
            free(a);
            return HKV_ENOMEM;
        }
        l->leases = v;
        l->capleases = cap;
    }
    int64_t ttl = ttl_s < 2 ? 2 : ttl_s;
    l->leases[l->nleases++] = (struct lease){l->next_lease, ttl};
    a->r.lease_id = l->next_lease++;
    a->r.ttl_s = ttl;
    ans_queue(l, a);
    return HKV_OK;
}

int etcd_local_lease_keepalive(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg)
{
    if (id <= 0 || cb == NULL)
        return HKV_EINVAL;
    struct lans *a = ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    const struct lease *le = lease_find(l, id);
    a->r.lease_id = id;
    a->r.ttl_s = le != NULL ? le->ttl : 0; /* 0: gone, as etcd says it */
    ans_queue(l, a);
    return HKV_OK;
}

/* Deletes every key under lease id (0: under any lease); HKV_OK or the
 * failure. */
static int drop_leased(struct etcd_local *l, int64_t id)
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

int etcd_local_lease_revoke(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg)
{
    if (id <= 0 || cb == NULL)
        return HKV_EINVAL;
    struct lans *a = ans_new(cb, arg);
    if (a == NULL)
        return HKV_ENOMEM;
    size_t i = 0;
    while (i < l->nleases && l->leases[i].id != id)
        i++;
    if (i == l->nleases) {
        ans_error(a, 5, "etcdserver: requested lease not found");
    } else {
        l->leases[i] = l->leases[--l->nleases];
        if (drop_leased(l, id) != HKV_OK) {
            a->r.status = HKV_EIO;
            a->r.message = "out of memory";
        }
    }
    ans_queue(l, a);
    return HKV_OK;
}

/* ---- the pump ---- */

/* Answers a (out of the queue) and frees it; 1 if the store was destroyed
 * by the callback. */
static int answer(struct etcd_local *l, struct lans *a)
{
    int dead = 0;
    int *outer = l->dead;
    l->dead = &dead;
    a->cb(a->arg, &a->r);
    ans_free(a);
    if (dead) {
        if (outer != NULL)
            *outer = 1;
        return 1;
    }
    l->dead = outer;
    return 0;
}

static void pump_progress(struct etcd_local *l, int progress)
{
    int failed;
    size_t since, snap;
    int64_t d = lw_durable(l->w, &failed, &since, &snap);
    if (d > l->durable)
        l->durable = d;
    if (failed)
        l->failed = 1;
    while (l->head != NULL && (l->head->need <= l->durable || l->failed)) {
        struct lans *a = l->head;
        l->head = a->next;
        if (l->head == NULL)
            l->tail = &l->head;
        if (a->need > l->durable) {
            memset(&a->r, 0, sizeof(a->r));
            a->r.status = HKV_EIO;
            a->r.message = "the local store could not write its file";
        }
        if (answer(l, a))
            return;
    }
    etcd_lw_pump(l, progress);
}

static void pump(struct etcd_local *l)
{
    pump_progress(l, 0);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    pump(arg);
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: another read took it; the state is read below anyway */
    }
    pump(arg);
}

static void on_progress(evutil_socket_t fd, short what, void *arg)
{
    struct etcd_local *l = arg;
    pump_progress(l, 1);
}

void etcd_local_set_progress_ms(struct etcd_local *l, int64_t ms)
{
    l->progress_ms = ms > 0 ? ms : ETCD_LOCAL_PROGRESS_MS;
    struct timeval tv = {l->progress_ms / 1000, (l->progress_ms % 1000) * 1000};
    event_add(l->progress, &tv);
}

int64_t etcd_local_revision(const struct etcd_local *l)
{
    return l->durable;
}

/* ---- create / destroy ---- */

static int load(struct etcd_local *l, char *err, size_t errlen)
{
    size_t cut, size;
    int rc = lfile_load(l->path, &l->t, &cut, &size);
    if (rc == HKV_ENOENT) {
        l->t.rev = 1; /* etcd's first revision */
        rc = lfile_write_snapshot(l->path, &l->t);
        if (rc != HKV_OK) {
            snprintf(err, errlen, "cannot create %s: %s", l->path, hkv_strstatus(rc));
            return rc;
        }
        rc = lfile_load(l->path, &l->t, &cut, &size);
    }
    if (rc != HKV_OK) {
        snprintf(err, errlen, "%s: %s", l->path,
                 rc == HKV_ECORRUPT ? "not a hotkvd leaf map store" : hkv_strstatus(rc));
        return rc;
    }
    if (cut > 0 && truncate(l->path, (off_t)size) != 0) {
        snprintf(err, errlen, "%s: cannot cut its torn tail of %zu bytes", l->path, cut);
        return HKV_EIO;
    }
    l->durable = l->hist_base = l->t.rev;
    l->w = lw_start(l->path, size, l->efd);
    if (l->w == NULL) {
        snprintf(err, errlen, "%s: cannot start its writer", l->path);
        return HKV_EIO;
    }
    return HKV_OK;
}

struct etcd_local *etcd_local_create(struct event_base *base, const char *path, char *err,
                                     size_t errlen)
{
    struct etcd_local *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->base = base;
    l->tail = &l->head;
    l->watches.next = l->watches.prev = &l->watches;
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l->path = strdup(path);
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
        r = (uint64_t)getpid() << 20;
    l->next_lease = (int64_t)((r >> 2) | 1); /* a new process never reuses an old one's ids */
    snprintf(err, errlen, "out of memory");
    if (l->efd < 0 || l->path == NULL)
        goto fail;
    l->kick = event_new(base, -1, 0, on_kick, l);
    l->ev_notify = event_new(base, l->efd, EV_READ | EV_PERSIST, on_notify, l);
    l->progress = event_new(base, -1, EV_PERSIST, on_progress, l);
    if (l->kick == NULL || l->ev_notify == NULL || l->progress == NULL)
        goto fail;
    if (load(l, err, errlen) != HKV_OK)
        goto fail;
    event_add(l->ev_notify, NULL);
    etcd_local_set_progress_ms(l, ETCD_LOCAL_PROGRESS_MS);
    /* leases did not outlive the process that granted them */
    if (drop_leased(l, 0) != HKV_OK) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return l;
fail:
    etcd_local_destroy(&l);
    return NULL;
}

void etcd_local_destroy(struct etcd_local **lp)
{
    struct etcd_local *l = *lp;
    if (l == NULL)
        return;
    *lp = NULL;
    if (l->dead != NULL)
        *l->dead = 1;
    while (l->watches.next != &l->watches) {
        struct etcd_lwatch *w = l->watches.next;
        etcd_lw_unlink(w);
        w->l = NULL;
    }
    lw_stop(&l->w);
    while (l->head != NULL) {
        struct lans *a = l->head;
        l->head = a->next;
        ans_free(a);
    }
    for (size_t i = 0; i < l->nhist; i++)
        lchange_free(&l->hist[i].c);
    free(l->hist);
    free(l->leases);
    lt_free(&l->t);
    if (l->kick != NULL)
        event_free(l->kick);
    if (l->ev_notify != NULL)
        event_free(l->ev_notify);
    if (l->progress != NULL)
        event_free(l->progress);
    if (l->efd >= 0)
        close(l->efd);
    free(l->path);
    free(l);
}

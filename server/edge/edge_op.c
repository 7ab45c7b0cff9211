/*
 * edge_op.c - the life of an op (edge_op.h): taken from the freelist with
 * its reply slot, filled with copies of its keys, split into one owner
 * request per owner (or per key), answered into its slot, released.
 *
 * Everything an op carries for one request lies in one block at the end of
 * struct op (from `c` on, the family's args included), which op_new zeroes
 * in one memset: a new field needs no reset here and no free in teardown.
 * The arrays before it grow and are kept, so a steady pipeline allocates
 * nothing.  Sending and answers are edge_op_send.c's.
 */
#include "server/edge/edge_op.h"


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/topo.h"
#include "server/core/clock.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_stats.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_op_int.h"

struct op *op_new(struct conn *c, const struct op_family *fam, const char *label)
{
    struct edge *e = c->e;
    struct op *op = e->ops->free;
    if (op != NULL) {
        e->ops->free = op->next;
    } else {
        op = calloc(1, sizeof(*op));
        if (op == NULL) {
            reply_error(c, "ERR out of memory");
            return NULL;
        }
        op->e = e;
        op->all_next = e->ops->all;
        e->ops->all = op;
    }
    memset(&op->c, 0, sizeof(*op) - offsetof(struct op, c));
    buf_reset(&op->store);
    buf_reset(&op->res);
    buf_reset(&op->errbuf);
    op->slot = slot_defer(c);
    if (op->slot == NULL) {
        op->next = e->ops->free;
        e->ops->free = op;
        reply_error(c, "ERR out of memory");
        return NULL;
    }
    op->fam = fam;
    op->label = label;
    op->c = c;
    op->stat = sess_of(c)->cur_stat; /* the op counts the request when it answers */
    op->t0_ns = sess_of(c)->cur_t0_ns;
    sess_of(c)->stat_taken = 1;
    op->cnext = sess_of(c)->ops;
    if (sess_of(c)->ops)
        sess_of(c)->ops->cprev = op;
    sess_of(c)->ops = op;
    if (fam->flags & OP_F_WRITE) {
        op->is_write = 1;
        e->ops->nwriting++;
        sess_of(c)->writes_inflight++;
    }
    return op;
}

static void op_unlink(struct op *op)
{
    struct conn *c = op->c;
    if (c == NULL)
        return;
    if (op->is_write)
        sess_of(c)->writes_inflight--;
    if (op->is_write && op->nkeys > 0 && !op->err) {
        struct route rt;
        if (edge_owner_of(op->e, op->keys[0].p, op->keys[0].len, &rt) != NULL) {
            sess_of(c)->last_write_place = rt.place;
            sess_of(c)->last_write_pool = (uint8_t)rt.pool;
            sess_of(c)->wrote = 1;
        }
    }
    c->req_held -= op->args_held;
    op->args_held = 0;
    if (op->cprev)
        op->cprev->cnext = op->cnext;
    else
        sess_of(c)->ops = op->cnext;
    if (op->cnext)
        op->cnext->cprev = op->cprev;
    op->c = NULL;
}

static void op_release(struct op *op)
{
    struct edge *e = op->e;
    if (op->fam->end != NULL)
        op->fam->end(op);
    op_unlink(op);
    if (op->timer_on)
        evtimer_del(&op->timer);
    op->timer_on = 0;
    if (op->is_write)
        e->ops->nwriting--;
    op->is_write = 0;
    /* Its arguments and results are done with: emptied, so a large request
     * (a MULTI/EXEC of megabytes) does not stay pinned in the freelist. */
    buf_reset(&op->store);
    buf_shrink(&op->store, 4096);
    buf_reset(&op->res);
    buf_shrink(&op->res, 4096);
    op->next = e->ops->free;
    e->ops->free = op;
}

void op_conn_gone(struct conn *c)
{
    struct op *op = sess_of(c)->ops;
    sess_of(c)->ops = NULL;
    while (op != NULL) {
        struct op *next = op->cnext;
        op->c = NULL;
        op->slot = NULL;
        op->cprev = op->cnext = NULL;
        if (op->fam->cancel != NULL)
            op->fam->cancel(op);
        op = next;
    }
}

struct hkv_buf *op_out(struct op *op)
{
    struct hkv_buf *out = op->c != NULL ? slot_out(op->c, op->slot) : NULL;
    if (out != NULL && op->out_buf == NULL) {
        op->out_buf = out;
        op->out_mark = buf_unread(out);
    }
    return out;
}

int64_t op_answer_ms(const struct op *op)
{
    return op->answer_ns != 0 ? op->answer_ns / 1000000 : clock_mono_ms();
}

void op_finish(struct op *op)
{
    struct conn *c = op->c;
    struct rslot *s = op->slot;
    if (op->stat != STATS_NONE) {
        struct hkv_buf *o = c != NULL ? op->out_buf : NULL;
        size_t n = o != NULL && buf_unread(o) > op->out_mark ? buf_unread(o) - op->out_mark : 0;
        /* The answer's batch time when there is one: a clock read per
         * op was 1.7% of the edge's cycles on SET -P16. */
        int64_t end = op->answer_ns != 0 ? op->answer_ns : clock_mono_ns();
        stats_call_key(op->e, op->stat, end - op->t0_ns,
                       n > 0 ? buf_head(o) + op->out_mark : NULL, n,
                       op->nkeys > 0 ? op->keys[0].p : NULL, op->nkeys > 0 ? op->keys[0].len : 0);
    }
    op_release(op);
    if (c != NULL)
        conn_slot_done(c, s); /* may close c */
}

void op_finish_error(struct op *op)
{
    if (op->fail != NULL && op->c != NULL) {
        op->fail(op);
        return;
    }
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        buf_append(out, "-", 1);
        buf_append(out, buf_head(&op->errbuf), buf_unread(&op->errbuf));
        buf_append(out, "\r\n", 2);
    }
    op_finish(op);
}

void op_error(struct op *op, const char *fmt, ...)
{
    if (op->err)
        return;
    op->err = 1;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(text))
        n = sizeof(text) - 1;
    for (int i = 0; i < n; i++)
        if (text[i] == '\r' || text[i] == '\n')
            text[i] = ' ';
    buf_reset(&op->errbuf);
    buf_append(&op->errbuf, text, (size_t)n);
}

/* opts with a copy of its backoff, into m->opts; 0, or -1 (no memory). */
static int take_opts(struct edge_ops *m, const struct op_opts *opts)
{
    int64_t *b = malloc((opts->nbackoff ? opts->nbackoff : 1) * sizeof(*b));
    if (b == NULL)
        return -1;
    if (opts->nbackoff > 0)
        memcpy(b, opts->backoff_ms, opts->nbackoff * sizeof(*b));
    free((void *)m->opts.backoff_ms);
    m->opts = *opts;
    m->opts.backoff_ms = b;
    return 0;
}

int op_setup(struct edge *e, const struct op_opts *opts)
{
    e->ops = calloc(1, sizeof(*e->ops));
    return e->ops != NULL && take_opts(e->ops, opts) == 0 ? 0 : -1;
}

int op_take_opts(struct edge_ops *m, const struct op_opts *opts)
{
    return take_opts(m, opts);
}

uint64_t op_writing(const struct edge *e)
{
    return e->ops != NULL ? e->ops->nwriting : 0;
}

void op_teardown(struct edge_ops **mp)
{
    struct edge_ops *m = *mp;
    if (m == NULL)
        return;
    if (m->reroute != NULL)
        event_free(m->reroute);
    while (m->all != NULL) {
        struct op *op = m->all;
        m->all = op->all_next;
        if (op->timer_on)
            evtimer_del(&op->timer);
        buf_deinit(&op->store);
        buf_deinit(&op->res);
        buf_deinit(&op->errbuf);
        free(op->keys);
        free(op->vals);
        free(op->khash);
        free(op->kidx);
        free(op->reqs);
        free(op->items);
        free(op);
    }
    free(m->owner_req);
    free(m->keys);
    free((void *)m->opts.backoff_ms);
    free(m);
    *mp = NULL;
}

/* ---- arguments ------------------------------------------------------------------ */

int op_reserve(struct op *op, uint32_t n)
{
    if (n <= op->cap)
        return 0;
    uint32_t cap = n < 16 ? 16 : n;
    struct wire_slice *k = realloc(op->keys, cap * sizeof(*k));
    if (k != NULL)
        op->keys = k;
    struct wire_slice *v = k != NULL ? realloc(op->vals, cap * sizeof(*v)) : NULL;
    if (v != NULL)
        op->vals = v;
    uint64_t *h = v != NULL ? realloc(op->khash, cap * sizeof(*h)) : NULL;
    if (h != NULL)
        op->khash = h;
    uint32_t *x = h != NULL ? realloc(op->kidx, cap * sizeof(*x)) : NULL;
    if (x != NULL)
        op->kidx = x;
    struct oreq *r = x != NULL ? realloc(op->reqs, cap * sizeof(*r)) : NULL;
    if (r == NULL) {
        op_error(op, "ERR out of memory");
        return -1;
    }
    op->reqs = r;
    op->cap = cap;
    return 0;
}

int op_copy_keys(struct op *op, int n, const struct resp_slice *argv, int step,
                 const struct resp_slice *value)
{
    size_t total = value != NULL ? value->len : 0;
    for (int i = 0; i < n; i++) {
        total += argv[i * step].len;
        if (step == 2)
            total += argv[i * step + 1].len;
    }
    if (op_reserve(op, (uint32_t)n) != 0)
        return -1;
    if (buf_reserve(&op->store, total + 1, 0) != HKV_OK) {
        op_error(op, "ERR out of memory");
        return -1;
    }
    /* The store never grows past this reservation, so slices stay valid. */
    for (int i = 0; i < n; i++) {
        const struct resp_slice *k = &argv[i * step];
        op->keys[i] = wire_slice(buf_tail(&op->store), k->len);
        buf_append(&op->store, k->p, k->len);
        if (step == 2) {
            const struct resp_slice *v = &argv[i * step + 1];
            op->vals[i] = wire_slice(buf_tail(&op->store), v->len);
            buf_append(&op->store, v->p, v->len);
        }
    }
    if (value != NULL) {
        op->value = wire_slice(buf_tail(&op->store), value->len);
        buf_append(&op->store, value->p, value->len);
    }
    op->nkeys = (uint32_t)n;
    if (op->c != NULL) { /* the client's input is not read while too much is kept */
        op->args_held = total;
        op->c->req_held += total;
    }
    return 0;
}

struct op_item *op_items(struct op *op, uint32_t n)
{
    if (op->items_cap < n) {
        struct op_item *x = realloc(op->items, (size_t)n * sizeof(*x));
        if (x == NULL) {
            op_error(op, "ERR out of memory");
            return NULL;
        }
        op->items = x;
        op->items_cap = n;
    }
    memset(op->items, 0, (size_t)n * sizeof(*op->items));
    return op->items;
}

/* ---- owner requests --------------------------------------------------------------- */

static void oreq_init(struct op *op, struct oreq *r, struct owner_ref *o, uint8_t type,
                      uint8_t role)
{
    memset(r, 0, sizeof(*r));
    r->op = op;
    r->owner = o;
    r->type = type;
    r->role = role;
}

int op_to_owner(struct op *op, struct owner_ref *o, uint8_t type, uint8_t role)
{
    if (op_reserve(op, op->nreqs + 1) != 0)
        return -1;
    oreq_init(op, &op->reqs[op->nreqs], o, type, role);
    op->nreqs++;
    if (op->nreqs == 1)
        op->one = op->reqs[0];
    return 0;
}

struct oreq *op_single(struct op *op, uint8_t type, uint8_t role)
{
    struct route rt;
    struct owner_ref *o = edge_owner_of(op->e, op->keys[0].p, op->keys[0].len, &rt);
    if (o == NULL) {
        op_error(op, "ERR no owner serves the '%s' pool", topo_pool_name(rt.pool));
        return NULL;
    }
    if (op_reserve(op, 1) != 0)
        return NULL;
    op->kidx[0] = 0;
    op->khash[0] = rt.hash;
    oreq_init(op, &op->one, o, type, role);
    op->one.nk = 1;
    op->nreqs = 1;
    return &op->one;
}

/* 1 (error recorded) if the keys one request of op would carry pass
 * wire-max-frame (9 bytes of msgpack per key and 64 for the frame are more
 * than the encoder uses). */
static int too_big_for_a_frame(struct op *op, const uint32_t *owner_of, const int *owner_req)
{
    uint64_t max = (uint64_t)op->e->ops->opts.max_frame, small[16];
    uint64_t *bytes = op->nreqs <= 16 ? small : calloc(op->nreqs, sizeof(*bytes));
    if (bytes == NULL) {
        op_error(op, "ERR out of memory");
        return 1;
    }
    memset(bytes, 0, (op->nreqs <= 16 ? 16 : op->nreqs) * sizeof(*bytes));
    for (uint32_t k = 0; k < op->nkeys; k++)
        bytes[owner_req[owner_of[k]]] += op->keys[k].len + 9;
    int bad = -1;
    for (uint32_t i = 0; i < op->nreqs && bad < 0; i++)
        if (bytes[i] + 64 > max)
            bad = (int)i;
    if (bytes != small)
        free(bytes);
    if (bad < 0)
        return 0;
    op_error(op, "ERR the keys of this command on owner %s/%d make a request larger than "
             "wire-max-frame; not applied", topo_pool_name(op->reqs[bad].owner->pool),
             op->reqs[bad].owner->index);
    return 1;
}

int op_split(struct op *op, uint8_t type, uint8_t role, int per_key)
{
    struct edge *e = op->e;
    if (e->ops->owner_req == NULL) {
        e->ops->owner_req = malloc((size_t)(e->owners->n > 0 ? e->owners->n : 1) * sizeof(int));
        if (e->ops->owner_req == NULL) {
            op_error(op, "ERR out of memory");
            return -1;
        }
    }
    int *owner_req = e->ops->owner_req; /* owner number -> request number */
    for (int i = 0; i < e->owners->n; i++)
        owner_req[i] = -1;
    /* Pass 1: the owner of each key, and one request per owner (or key). */
    uint32_t *owner_of = op->kidx; /* reused: filled with owner numbers first */
    op->nreqs = 0;
    for (uint32_t k = 0; k < op->nkeys; k++) {
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, op->keys[k].p, op->keys[k].len, &rt);
        if (o == NULL) {
            op_error(op, "ERR no owner serves the '%s' pool", topo_pool_name(rt.pool));
            return -1;
        }
        int g = (int)(o - e->owners->ref);
        owner_of[k] = (uint32_t)g;
        op->khash[k] = rt.hash;
        if (per_key || owner_req[g] < 0) {
            if (!per_key)
                owner_req[g] = (int)op->nreqs;
            oreq_init(op, &op->reqs[op->nreqs], o, type, role);
            op->nreqs++;
        }
    }
    if (per_key) {
        for (uint32_t k = 0; k < op->nkeys; k++) {
            op->kidx[k] = k;
            op->reqs[k].k0 = k;
            op->reqs[k].nk = 1;
        }
    } else {
        /* Pass 2: counting sort of key indexes by request, key order kept. */
        for (uint32_t k = 0; k < op->nkeys; k++)
            op->reqs[owner_req[owner_of[k]]].nk++;
        /* An owner refuses a message with more keys than this by closing the
         * link (failing everything else on it): refuse the command, unsent. */
        for (uint32_t i = 0; i < op->nreqs; i++) {
            if (op->reqs[i].nk > WIRE_MAX_ITEMS_DEFAULT) {
                op_error(op, "ERR more than %u keys of this command live on owner %s/%d, which "
                         "takes at most that many in one request; not applied",
                         (unsigned)WIRE_MAX_ITEMS_DEFAULT, topo_pool_name(op->reqs[i].owner->pool),
                         op->reqs[i].owner->index);
                return -1;
            }
        }
        /* The same for bytes: one request too large for a frame would be
         * refused when it is sent, after the others went out (then the
         * command is half applied).  Checked before anything is sent. */
        if (too_big_for_a_frame(op, owner_of, owner_req) != 0)
            return -1;
        uint32_t off = 0;
        for (uint32_t i = 0; i < op->nreqs; i++) {
            op->reqs[i].k0 = off;
            off += op->reqs[i].nk;
            op->reqs[i].nk = 0;
        }
        /* owner_of aliases kidx: take the request numbers out first. */
        int reqno_small[64];
        int *reqno = op->nkeys <= 64 ? reqno_small : malloc(op->nkeys * sizeof(int));
        if (reqno == NULL) {
            op_error(op, "ERR out of memory");
            return -1;
        }
        for (uint32_t k = 0; k < op->nkeys; k++)
            reqno[k] = owner_req[owner_of[k]];
        for (uint32_t k = 0; k < op->nkeys; k++) {
            struct oreq *r = &op->reqs[reqno[k]];
            op->kidx[r->k0 + r->nk++] = k;
        }
        if (reqno != reqno_small)
            free(reqno);
    }
    if (op->nreqs == 1)
        op->one = op->reqs[0];
    return 0;
}

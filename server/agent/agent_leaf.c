/*
 * agent_leaf.c - the leaf txns the agent runs for its owners (a move's,
 * a split's, the in-sync set's), and the operators' move requests it hands
 * them (agent_leaf_orders.c); see agent_leaf.h.
 *
 * One request at a time: a request is a chain of at most three etcd calls
 * (the leaf's value at the epoch asked when the map here does not hold it,
 * a read that finds the slot or the move, then the txn), and the next
 * request starts when the chain has answered.  Requests are rare (a
 * move is four of them), so a queue in arrival order is all the
 * concurrency needed, and a txn never races another of this host's own.
 * Whatever the answer, the reply says what etcd knows of the leaf now (the
 * txn's failure branch reads it), so an owner that lost a race learns the
 * truth in the same round trip.
 */
#include "server/agent/agent_leaf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/agent_handover.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_leaf_orders.h"
#include "server/agent/agent_promote.h"
#include "server/agent/agent_txn.h"
#include "server/core/clock.h"
#include "server/core/log.h"

struct lreq {
    int pool, index;
    struct hand_msg m;        /* a leaf request: no slices */
    uint64_t cookie;
    unsigned from;            /* the asking owner's number */
    struct agent_leaf_v now;  /* the leaf's value at the request's epoch (leaf_now) */
    unsigned to;              /* ABORT: the move's target (moves/L) */
    int slot;                 /* and its slot; -1 none */
    struct lreq *next;
};

struct agent_leaf {
    struct agent *a;
    agent_leaf_reply_fn reply;
    agent_leaf_order_fn order;
    void *arg;
    struct lreq *head, *tail;
    int n, busy;
    struct agent_txn txn;
    struct cmap_table *t;     /* the map as this host holds it, for owner ids */
    struct agent_orders *orders;
    void (*now_then)(struct agent_leaf *l); /* where the chain goes once the value is known */
};

struct agent_leaf *agent_leaf_create(struct agent *a, agent_leaf_reply_fn reply,
                                     agent_leaf_order_fn order, void *arg)
{
    struct agent_leaf *l = calloc(1, sizeof(*l));
    if (l == NULL || (l->t = calloc(1, sizeof(*l->t))) == NULL ||
        (l->orders = agent_orders_create(a, order, arg)) == NULL) {
        if (l != NULL)
            free(l->t);
        free(l);
        return NULL;
    }
    l->a = a;
    l->reply = reply;
    l->order = order;
    l->arg = arg;
    return l;
}

void agent_leaf_destroy(struct agent_leaf **lp)
{
    struct agent_leaf *l = *lp;
    if (l == NULL)
        return;
    while (l->head != NULL) {
        struct lreq *r = l->head;
        l->head = r->next;
        free(r);
    }
    agent_orders_destroy(&l->orders);
    free(l->t);
    free(l);
    *lp = NULL;
}

/* ---- replies ------------------------------------------------------------------ */

static void truth_of(struct hand_msg *m, const struct etcd_kv *kv)
{
    struct agent_leaf_v v;
    if (kv == NULL || agent_parse_leaf(kv->value, kv->value_len, &v) != HKV_OK)
        return;
    m->u.reply.exists = true;
    m->u.reply.owner = v.owner;
    m->u.reply.state = (uint8_t)v.state;
    m->u.reply.to = v.to;
    m->u.reply.at = kv->mod_revision;
}

static void run_next(struct agent_leaf *l);

/* Answers the head request and starts the next one. */
static void finish(struct agent_leaf *l, struct hand_msg *m)
{
    struct lreq *r = l->head;
    l->head = r->next;
    if (l->head == NULL)
        l->tail = NULL;
    l->n--;
    l->busy = 0;
    m->type = LEAF_REPLY;
    m->id = r->m.id;
    if (m->u.reply.status != LEAF_ST_OK)
        log_verbose("leaf request %s of owner %u: %s%s%.*s", hand_type_name(r->m.type), r->from,
                    m->u.reply.status == LEAF_ST_LOST ? "lost"
                    : m->u.reply.status == LEAF_ST_UNKNOWN ? "outcome unknown" : "refused",
                    m->u.reply.text.len ? ": " : "", (int)m->u.reply.text.len, m->u.reply.text.p);
    l->reply(l->arg, r->cookie, m);
    free(r);
    run_next(l);
}

static void refuse(struct agent_leaf *l, const char *why)
{
    struct hand_msg m = {.u.reply = {.status = LEAF_ST_REFUSED, .text = wire_cstr(why)}};
    finish(l, &m);
}

/* A failed etcd call: etcd said no (refused) or did not answer (unknown). */
static void failed(struct agent_leaf *l, const struct etcd_result *r, const char *what)
{
    agent_etcd_failed(l->a, what, r);
    struct hand_msg m = {.u.reply = {.status = r->status == HKV_EINVAL ? LEAF_ST_REFUSED
                                                                      : LEAF_ST_UNKNOWN,
                                     .text = wire_cstr(r->message != NULL ? r->message
                                                                           : hkv_strstatus(r->status))}};
    finish(l, &m);
}

/* An etcd answer: 1 (etcd answered; noted), or 0 (the request failed, and
 * its owner was told: failed()). */
static int answered(struct agent_leaf *l, const struct etcd_result *r, const char *what)
{
    if (r->status != HKV_OK) {
        failed(l, r, what);
        return 0;
    }
    agent_etcd_ok(l->a);
    return 1;
}

static void on_txn(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (!answered(l, r, "a leaf txn"))
        return;
    struct hand_msg m = {.u.reply = {.status = r->succeeded ? LEAF_ST_OK : LEAF_ST_LOST}};
    if (!r->succeeded) {
        truth_of(&m, r->nkvs > 0 ? &r->kvs[0] : NULL);
        m.u.reply.text = wire_cstr(m.u.reply.exists ? "the leaf changed" : "no such leaf");
        finish(l, &m);
        return;
    }
    m.u.reply.epoch = r->revision;
    m.u.reply.at = r->revision;
    m.u.reply.exists = q->m.type != LEAF_SPLIT;
    switch (q->m.type) {
    case LEAF_INTENT:
        m.u.reply.owner = q->from;
        m.u.reply.state = CMAP_MOVING;
        m.u.reply.to = q->m.u.leaf.to;
        break;
    case LEAF_COMMIT:
    case LEAF_HANDOVER:
        m.u.reply.owner = q->m.u.leaf.to;
        break;
    case LEAF_ISR_ADD:
    case LEAF_ISR_DEL:
        m.u.reply.owner = q->now.owner;
        m.u.reply.state = (uint8_t)q->now.state;
        m.u.reply.to = q->now.to;
        if (q->m.type == LEAF_ISR_ADD)
            l->a->h.repl_isr_adds++;
        else
            l->a->h.repl_isr_removals++;
        agent_health_push(l->a);
        break;
    default: /* ABORT */
        m.u.reply.owner = q->from;
        break;
    }
    log_notice("leaf %s %u-%08x: %s by owner %u applied at revision %lld",
               topo_pool_name((enum cfg_pool)q->m.u.leaf.leaf.pool), q->m.u.leaf.leaf.bits,
               q->m.u.leaf.leaf.bits ? q->m.u.leaf.leaf.start >> (32 - q->m.u.leaf.leaf.bits) : 0,
               hand_type_name(q->m.type), q->from, (long long)r->revision);
    finish(l, &m);
}

static void send_txn(struct agent_leaf *l, int rc)
{
    if (rc != HKV_OK) {
        refuse(l, "malformed leaf or owner");
        return;
    }
    if (etcd_txn(l->a->etcd, l->txn.cmp, l->txn.ncmp, l->txn.ok, l->txn.nok, l->txn.fail,
                 l->txn.nfail, on_txn, l) != HKV_OK)
        refuse(l, "out of memory");
}

/* ---- the chains ----------------------------------------------------------------- */

static const struct hand_leaf *leaf_of(const struct lreq *q) { return &q->m.u.leaf.leaf; }

/* Owner n's id, if it is an owner of the request's pool. */
static const char *owner_id(struct agent_leaf *l, unsigned n)
{
    const struct cmap_owner *o = cmap_owner(l->t, n);
    return o != NULL && o->pool == l->head->m.u.leaf.leaf.pool ? o->id : NULL;
}

/* ---- the leaf's value at the request's epoch ------------------------------------ */

/* A txn that rewrites a leaf's value keeps what it does not change (its
 * in-sync followers), so it needs the value the compared epoch holds.  The
 * map this host holds has it when its epoch is the one asked for (one
 * mod_revision, one value); else it is read, and a leaf that has moved on
 * is LOST at once with the truth. */
typedef void (*then_fn)(struct agent_leaf *l);

static void now_of(struct agent_leaf_v *v, const struct cmap_leaf *c)
{
    *v = (struct agent_leaf_v){.owner = c->owner, .state = c->state, .to = c->to,
                               .nisr = c->nisr <= CMAP_MAX_ISR ? c->nisr : 0};
    memcpy(v->isr, c->isr, sizeof(v->isr));
}

static void on_now(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (!answered(l, r, "reading a leaf"))
        return;
    const struct etcd_kv *kv = r->nkvs > 0 ? &r->kvs[0] : NULL;
    if (kv == NULL || kv->mod_revision != q->m.u.leaf.epoch ||
        agent_parse_leaf(kv->value, kv->value_len, &q->now) != HKV_OK) {
        struct hand_msg m = {.u.reply = {.status = LEAF_ST_LOST}};
        truth_of(&m, kv);
        m.u.reply.text = wire_cstr(m.u.reply.exists ? "the leaf changed" : "no such leaf");
        finish(l, &m);
        return;
    }
    l->now_then(l);
}

static void leaf_now(struct agent_leaf *l, then_fn then)
{
    struct lreq *q = l->head;
    const struct hand_leaf *lf = &q->m.u.leaf.leaf;
    const struct cmap_leaf *c = cmap_lookup(l->t, (enum cfg_pool)lf->pool, (uint64_t)lf->start << 32);
    if (c != NULL && c->start == lf->start && c->bits == lf->bits && c->epoch == q->m.u.leaf.epoch) {
        now_of(&q->now, c);
        then(l);
        return;
    }
    char key[AGENT_KEY_MAX];
    int klen = agent_leaf_key(key, sizeof(key), l->a->opt.cluster, "map", lf->pool, lf->start,
                              lf->bits);
    l->now_then = then; /* one chain at a time: see the top of the file */
    if (klen < 0 || etcd_range(l->a->etcd, key, (size_t)klen, NULL, 0, 0, 0, on_now, l) != HKV_OK)
        refuse(l, "malformed leaf");
}

static void on_read(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (!answered(l, r, "reading a leaf"))
        return;
    const struct hand_leaf *lf = leaf_of(q);
    struct hand_msg m = {.u.reply = {.status = LEAF_ST_OK}};
    truth_of(&m, r->nkvs > 0 ? &r->kvs[0] : NULL);
    if (q->m.type == LEAF_READ) {
        finish(l, &m);
        return;
    }
    /* SPLIT: a serving leaf at the epoch asked (0: any) */
    if (!m.u.reply.exists || (q->m.u.leaf.epoch != 0 && m.u.reply.at != q->m.u.leaf.epoch)) {
        m.u.reply.status = LEAF_ST_LOST;
        finish(l, &m);
    } else if (m.u.reply.state != CMAP_SERVING) {
        refuse(l, "the leaf is moving");
    } else {
        send_txn(l, agent_txn_split(&l->txn, l->a->opt.cluster, lf->pool, lf->start,
                                    lf->bits, m.u.reply.at, m.u.reply.owner));
    }
}

static void on_slots(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (!answered(l, r, "reading a target's slots"))
        return;
    int used[AGENT_SLOTS] = {0}, slot = -1;
    for (size_t i = 0; i < r->nkvs; i++) {
        const char *k = r->kvs[i].key;
        size_t n = r->kvs[i].key_len;
        if (n >= 2 && k[n - 2] == '/' && k[n - 1] >= '0' && k[n - 1] < '0' + AGENT_SLOTS)
            used[k[n - 1] - '0'] = 1;
    }
    for (int k = 0; k < AGENT_SLOTS && slot < 0; k++)
        if (!used[k])
            slot = k;
    const char *to_id = owner_id(l, q->m.u.leaf.to);
    if (slot < 0 || to_id == NULL) {
        refuse(l, slot < 0 ? "the target owner has no free slot (2 moves in)"
                           : "the target is no owner of the pool");
        return;
    }
    const struct hand_leaf *lf = leaf_of(q);
    send_txn(l, agent_txn_intent(&l->txn, l->a->opt.cluster, lf->pool, lf->start, lf->bits,
                                 q->m.u.leaf.epoch, q->from, q->m.u.leaf.to, to_id, slot,
                                 l->a->h.lease_id, &q->now));
}

static void abort_txn(struct agent_leaf *l);

static void on_moves(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (!answered(l, r, "reading a move"))
        return;
    unsigned from = 0, to = q->m.u.leaf.to;
    int slot = -1;
    if (r->nkvs > 0 &&
        agent_parse_move(r->kvs[0].value, r->kvs[0].value_len, &from, &to, &slot) != HKV_OK)
        slot = -1;
    if (q->m.u.leaf.to != 0 && to != q->m.u.leaf.to)
        slot = -1; /* another move's record: leave its slot alone */
    const char *to_id = to != 0 ? owner_id(l, to) : NULL;
    const struct hand_leaf *lf = leaf_of(q);
    const char *cl = l->a->opt.cluster;
    if (q->m.type == LEAF_COMMIT) {
        if (to_id == NULL) {
            refuse(l, "the target is no owner of the pool");
            return;
        }
        send_txn(l, agent_txn_commit(&l->txn, cl, lf->pool, lf->start, lf->bits,
                                     q->m.u.leaf.epoch, q->m.u.leaf.to, to_id, slot));
    } else {
        q->to = to;
        q->slot = to_id != NULL ? slot : -1;
        leaf_now(l, abort_txn);
    }
}

static void abort_txn(struct agent_leaf *l)
{
    struct lreq *q = l->head;
    const struct hand_leaf *lf = leaf_of(q);
    send_txn(l, agent_txn_abort(&l->txn, l->a->opt.cluster, lf->pool, lf->start, lf->bits,
                                q->m.u.leaf.epoch, q->from, q->to != 0 ? owner_id(l, q->to) : NULL,
                                q->slot, &q->now));
}

static void intent_slots(struct agent_leaf *l)
{
    char key[AGENT_KEY_MAX], end[AGENT_KEY_MAX];
    struct lreq *q = l->head;
    int klen = agent_key(key, sizeof(key), l->a->opt.cluster, "slots/%s/", owner_id(l, q->m.u.leaf.to));
    size_t elen = klen < 0 ? 0 : etcd_prefix_end(key, (size_t)klen, end);
    if (klen < 0 || etcd_range(l->a->etcd, key, (size_t)klen, end, elen, 0, 0, on_slots, l) != HKV_OK)
        refuse(l, "malformed leaf");
}

/* LEAF_ISR_ADD / DEL (CLUSTER.md §7): one CAS on the epoch the owner saw.
 * ADD: the asking owner serves the leaf, `to` is another live owner of the
 * pool (its members/ key is a compare too) not in the set, and not one this
 * host saw die (a restarted process lost what it held in memory: it is
 * seeded again first).  DEL: `to` is in the set. */
static void isr_txn(struct agent_leaf *l)
{
    struct lreq *q = l->head;
    const struct hand_leaf *lf = leaf_of(q);
    unsigned to = q->m.u.leaf.to;
    struct agent_leaf_v v = q->now;
    const char *to_id = owner_id(l, to), *live_id = NULL;
    const struct cmap_owner *o = cmap_owner(l->t, to);
    if (q->m.type == LEAF_ISR_ADD) {
        const char *why = v.state != CMAP_SERVING ? "the leaf is moving"
                          : v.owner != q->from ? "the asking owner is not the leaf's primary"
                          : to_id == NULL || to == v.owner ? "the follower is no other owner of the pool"
                          : !o->live || agent_promote_dead(l->a->promote, to) ? "the follower is not live"
                          : agent_isr_has(&v, to) ? "the follower is in the in-sync set already"
                          : v.nisr >= CMAP_MAX_ISR ? "the in-sync set is full"
                                                   : NULL;
        if (why != NULL) {
            refuse(l, why);
            return;
        }
        agent_isr_with(&v, to);
        live_id = to_id;
    } else {
        if (!agent_isr_has(&v, to)) {
            refuse(l, "the follower is not in the in-sync set");
            return;
        }
        agent_isr_without(&v, to);
    }
    send_txn(l, agent_txn_set(&l->txn, l->a->opt.cluster, lf->pool, lf->start, lf->bits,
                              q->m.u.leaf.epoch, &v, live_id, NULL));
}

/* LEAF_HANDOVER (agent_handover.h): primary := to, isr -= to, on the value
 * the epoch the owner fenced holds. */
static void handover_txn(struct agent_leaf *l)
{
    struct lreq *q = l->head;
    const struct hand_leaf *lf = leaf_of(q);
    unsigned to = q->m.u.leaf.to;
    struct agent_leaf_v v = q->now;
    const struct cmap_owner *o = cmap_owner(l->t, to);
    const char *why = agent_handover_check(v.owner, v.state, v.isr, v.nisr, q->from, to,
                                           o != NULL && o->live && o->pool == lf->pool &&
                                               !agent_promote_dead(l->a->promote, to));
    if (why != NULL) {
        refuse(l, why);
        return;
    }
    agent_isr_without(&v, to);
    v.owner = to;
    send_txn(l, agent_txn_set(&l->txn, l->a->opt.cluster, lf->pool, lf->start, lf->bits,
                              q->m.u.leaf.epoch, &v, o->id, NULL));
}

static void run_next(struct agent_leaf *l)
{
    if (l->busy || l->head == NULL)
        return;
    struct lreq *q = l->head;
    struct agent *a = l->a;
    const struct agent_opts *opt = &a->opt;
    const struct hand_leaf *lf = leaf_of(q);
    char key[AGENT_KEY_MAX];
    l->busy = 1;
    if (cmap_snapshot(a->ctx->cmap, l->t) == 0) {
        refuse(l, "this host has no cluster map yet");
        return;
    }
    q->from = cmap_owner_by_id(l->t, opt->host, (enum cfg_pool)q->pool, q->index);
    if (q->from == 0 || lf->pool != q->pool) {
        refuse(l, "the asking owner is not in the map (or asks for another pool)");
        return;
    }
    int klen, rc = HKV_OK;
    switch (q->m.type) {
    case LEAF_READ:
    case LEAF_SPLIT:
        klen = agent_leaf_key(key, sizeof(key), opt->cluster, "map", lf->pool, lf->start, lf->bits);
        rc = klen < 0 ? HKV_EINVAL
                      : etcd_range(a->etcd, key, (size_t)klen, NULL, 0, 0, 0, on_read, l);
        break;
    case LEAF_INTENT: {
        const char *to_id = owner_id(l, q->m.u.leaf.to);
        if (a->h.lease_id == 0 || to_id == NULL || q->m.u.leaf.to == q->from) {
            refuse(l, a->h.lease_id == 0 ? "this host holds no lease yet"
                                         : "the target is no other owner of the pool");
            return;
        }
        leaf_now(l, intent_slots);
        return;
    }
    case LEAF_ISR_ADD:
    case LEAF_ISR_DEL:
        leaf_now(l, isr_txn);
        return;
    case LEAF_HANDOVER:
        leaf_now(l, handover_txn);
        return;
    default: /* COMMIT, ABORT */
        klen = agent_leaf_key(key, sizeof(key), opt->cluster, "moves", lf->pool, lf->start,
                              lf->bits);
        rc = klen < 0 ? HKV_EINVAL
                      : etcd_range(a->etcd, key, (size_t)klen, NULL, 0, 0, 0, on_moves, l);
        break;
    }
    if (rc != HKV_OK)
        refuse(l, "malformed leaf");
}

void agent_leaf_request(struct agent_leaf *l, int pool, int index, const struct hand_msg *m,
                        uint64_t cookie)
{
    struct lreq *q = l->n < AGENT_LEAF_QUEUE ? calloc(1, sizeof(*q)) : NULL;
    if (q == NULL) {
        struct hand_msg r = {.type = LEAF_REPLY, .id = m->id,
                             .u.reply = {.status = LEAF_ST_REFUSED,
                                         .text = wire_cstr("too many leaf requests queued")}};
        l->reply(l->arg, cookie, &r);
        return;
    }
    q->pool = pool;
    q->index = index;
    q->m = *m;
    q->cookie = cookie;
    if (l->tail != NULL)
        l->tail->next = q;
    else
        l->head = q;
    l->tail = q;
    l->n++;
    run_next(l);
}

/* ---- operators' move requests (agent_leaf_orders.c) ---------------------------- */

void agent_leaf_done(struct agent_leaf *l, uint64_t id, int status)
{
    agent_orders_done(l->orders, id, status);
}

void agent_leaf_tick(struct agent_leaf *l, int64_t now)
{
    agent_orders_tick(l->orders, now);
}

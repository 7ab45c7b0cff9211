/*
 * agent_leaf.c - the leaf txns the agent runs for its owners, and the
 * operators' move requests it hands them; see agent_leaf.h.
 *
 * One request at a time: a request is a chain of at most two etcd calls
 * (a read that finds the slot or checks the leaf, then the txn), and the
 * next request starts when the chain has answered.  Requests are rare (a
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
#include "server/agent/agent_txn.h"
#include "server/core/clock.h"
#include "server/core/log.h"

#define MAX_ORDERS 16

struct lreq {
    int pool, index;
    struct hand_msg m;        /* a leaf request: no slices */
    uint64_t cookie;
    unsigned from;            /* the asking owner's number */
    struct lreq *next;
};

struct order {
    char key[AGENT_KEY_MAX];
    size_t klen;
    uint64_t id;              /* 0 = free */
    int64_t sent_ms;
    int seen;                 /* still in the last poll */
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
    int64_t poll_due;
    int polling;
    struct order orders[MAX_ORDERS];
    uint64_t next_order;
};

struct agent_leaf *agent_leaf_create(struct agent *a, agent_leaf_reply_fn reply,
                                     agent_leaf_order_fn order, void *arg)
{
    struct agent_leaf *l = calloc(1, sizeof(*l));
    if (l == NULL || (l->t = calloc(1, sizeof(*l->t))) == NULL) {
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
    free(l->t);
    free(l);
    *lp = NULL;
}

/* ---- replies ------------------------------------------------------------------ */

static void truth_of(struct hand_msg *m, const struct etcd_kv *kv)
{
    unsigned owner, to;
    int state;
    if (kv == NULL || agent_parse_leaf(kv->value, kv->value_len, &owner, &state, &to) != HKV_OK)
        return;
    m->u.reply.exists = true;
    m->u.reply.owner = owner;
    m->u.reply.state = (uint8_t)state;
    m->u.reply.to = to;
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

static void on_txn(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (r->status != HKV_OK) {
        failed(l, r, "a leaf txn");
        return;
    }
    agent_etcd_ok(l->a);
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

static void on_read(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (r->status != HKV_OK) {
        failed(l, r, "reading a leaf");
        return;
    }
    agent_etcd_ok(l->a);
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
    if (r->status != HKV_OK) {
        failed(l, r, "reading a target's slots");
        return;
    }
    agent_etcd_ok(l->a);
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
                                 l->a->h.lease_id));
}

static void on_moves(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    struct lreq *q = l->head;
    if (r->status != HKV_OK) {
        failed(l, r, "reading a move");
        return;
    }
    agent_etcd_ok(l->a);
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
        send_txn(l, agent_txn_abort(&l->txn, cl, lf->pool, lf->start, lf->bits, q->m.u.leaf.epoch,
                                    q->from, to_id, to_id != NULL ? slot : -1));
    }
}

/* LEAF_HANDOVER (agent_handover.h): decided on this host's map copy of the
 * leaf, which holds its in-sync set, at the epoch the owner fenced; a copy
 * past that epoch is the truth of a lost race. */
static void handover(struct agent_leaf *l)
{
    struct lreq *q = l->head;
    const struct hand_leaf *lf = leaf_of(q);
    unsigned to = q->m.u.leaf.to;
    const struct cmap_leaf *c = cmap_lookup(l->t, (enum cfg_pool)lf->pool,
                                            (uint64_t)lf->start << 32);
    if (c == NULL || c->start != lf->start || c->bits != lf->bits ||
        c->epoch > q->m.u.leaf.epoch) {
        struct hand_msg m = {.u.reply = {.status = LEAF_ST_LOST, .text = wire_cstr("the leaf changed")}};
        if (c != NULL && c->start == lf->start && c->bits == lf->bits) {
            m.u.reply.exists = true;
            m.u.reply.owner = c->owner;
            m.u.reply.state = c->state;
            m.u.reply.to = c->to;
            m.u.reply.at = c->epoch;
        }
        finish(l, &m);
        return;
    }
    if (c->epoch < q->m.u.leaf.epoch) {
        refuse(l, "this host's map has not caught up with the leaf's epoch yet");
        return;
    }
    const struct cmap_owner *t = cmap_owner(l->t, to);
    const char *why = agent_handover_check(c->owner, c->state, c->isr, c->nisr, q->from, to,
                                           t != NULL && t->live && t->pool == lf->pool);
    if (why != NULL) {
        refuse(l, why);
        return;
    }
    uint16_t isr[CMAP_MAX_ISR];
    unsigned n = agent_handover_isr(c->isr, c->nisr, to, isr);
    send_txn(l, agent_txn_handover(&l->txn, l->a->opt.cluster, lf->pool, lf->start, lf->bits,
                                   c->epoch, to, t->id, isr, n));
}

static void run_next(struct agent_leaf *l)
{
    if (l->busy || l->head == NULL)
        return;
    struct lreq *q = l->head;
    struct agent *a = l->a;
    const struct agent_opts *opt = &a->opt;
    const struct hand_leaf *lf = leaf_of(q);
    char key[AGENT_KEY_MAX], end[AGENT_KEY_MAX];
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
        klen = agent_key(key, sizeof(key), opt->cluster, "slots/%s/", to_id);
        size_t elen = klen < 0 ? 0 : etcd_prefix_end(key, (size_t)klen, end);
        rc = klen < 0 ? HKV_EINVAL
                      : etcd_range(a->etcd, key, (size_t)klen, end, elen, 0, 0, on_slots, l);
        break;
    }
    case LEAF_HANDOVER:
        handover(l);
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

/* ---- operators' move requests ----------------------------------------------- */

static void on_deleted(void *arg, const struct etcd_result *r)
{
}

void agent_leaf_done(struct agent_leaf *l, uint64_t id, int status)
{
    for (int i = 0; i < MAX_ORDERS; i++) {
        struct order *o = &l->orders[i];
        if (o->id != id || id == 0)
            continue;
        log_notice("move request %.*s ended (%s)", (int)o->klen, o->key,
                   status == LEAF_ST_OK ? "moved" : "not moved");
        etcd_delete(l->a->etcd, o->key, o->klen, NULL, 0, on_deleted, NULL);
        o->id = 0;
    }
}

/* One requests/move/<pool>/<bits>-<prefix> key: sent to its source owner
 * if that is one of ours (and not sent recently). */
static void one_request(struct agent_leaf *l, const struct etcd_kv *kv, size_t plen, int64_t now)
{
    const struct agent_opts *opt = &l->a->opt;
    char tail[64];
    unsigned to;
    uint32_t start;
    int bits, kind;
    size_t n = kv->key_len - plen;
    if (n >= sizeof(tail) || agent_parse_order(kv->value, kv->value_len, &kind, &to) != HKV_OK)
        return;
    memcpy(tail, kv->key + plen, n);
    tail[n] = '\0';
    char *slash = strchr(tail, '/');
    if (slash == NULL || agent_leaf_parse(slash + 1, &start, &bits) != HKV_OK)
        return;
    *slash = '\0';
    int pool = strcmp(tail, "hot") == 0 ? CFG_POOL_HOT : strcmp(tail, "cold") == 0 ? CFG_POOL_COLD : -1;
    const struct cmap_leaf *lf = pool < 0 ? NULL : cmap_lookup(l->t, (enum cfg_pool)pool,
                                                               (uint64_t)start << 32);
    if (lf == NULL || lf->start != start || lf->bits != bits)
        return; /* split or merged meanwhile: the operator sees it in leaf list */
    const struct cmap_owner *src = cmap_owner(l->t, lf->owner);
    if (src == NULL || strcmp(src->host, opt->host) != 0)
        return; /* another host's owner: its agent hands it over */
    struct order *free_slot = NULL;
    for (int i = 0; i < MAX_ORDERS; i++) {
        struct order *o = &l->orders[i];
        if (o->id != 0 && o->klen == kv->key_len && memcmp(o->key, kv->key, o->klen) == 0) {
            o->seen = 1;
            if (now - o->sent_ms < AGENT_LEAF_ORDER_MS)
                return;
            free_slot = o;
            break;
        }
        if (o->id == 0 && free_slot == NULL)
            free_slot = o;
    }
    if (free_slot == NULL || kv->key_len >= sizeof(free_slot->key))
        return;
    struct hand_msg m = {.type = LEAF_ORDER, .id = ++l->next_order,
                         .u.order = {(uint8_t)kind, {(uint8_t)pool, (uint8_t)bits, start}, to}};
    if (l->order(l->arg, (int)pool, src->index, &m) != 0)
        return;
    memcpy(free_slot->key, kv->key, kv->key_len);
    free_slot->klen = kv->key_len;
    free_slot->id = m.id;
    free_slot->sent_ms = now;
    free_slot->seen = 1;
}

static void on_requests(void *arg, const struct etcd_result *r)
{
    struct agent_leaf *l = arg;
    l->polling = 0;
    if (r->status != HKV_OK || cmap_snapshot(l->a->ctx->cmap, l->t) == 0)
        return;
    char prefix[AGENT_KEY_MAX];
    int plen = agent_key(prefix, sizeof(prefix), l->a->opt.cluster, "requests/move/");
    int64_t now = clock_mono_ms();
    for (int i = 0; i < MAX_ORDERS; i++)
        l->orders[i].seen = 0;
    for (size_t i = 0; plen > 0 && i < r->nkvs; i++)
        if (r->kvs[i].key_len > (size_t)plen)
            one_request(l, &r->kvs[i], (size_t)plen, now);
    for (int i = 0; i < MAX_ORDERS; i++)
        if (!l->orders[i].seen)
            l->orders[i].id = 0; /* its request is gone (deleted by hand) */
}

void agent_leaf_tick(struct agent_leaf *l, int64_t now)
{
    if (l->polling || now < l->poll_due || l->a->stopping)
        return;
    l->poll_due = now + AGENT_LEAF_POLL_MS;
    char key[AGENT_KEY_MAX], end[AGENT_KEY_MAX];
    int klen = agent_key(key, sizeof(key), l->a->opt.cluster, "requests/move/");
    if (klen < 0)
        return;
    size_t elen = etcd_prefix_end(key, (size_t)klen, end);
    if (etcd_range(l->a->etcd, key, (size_t)klen, end, elen, 0, 64, on_requests, l) == HKV_OK)
        l->polling = 1;
}

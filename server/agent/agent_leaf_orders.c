/*
 * agent_leaf_orders.c - the operators' move requests (agent_leaf.h
 * "Orders"): every AGENT_LEAF_POLL_MS the agent reads requests/move/ and
 * hands each request for a leaf one of its owners serves to that owner as
 * a LEAF_ORDER, once, again after AGENT_LEAF_ORDER_MS without a LEAF_DONE,
 * and deletes the request key when LEAF_DONE comes.  agent_leaf.c owns it
 * and forwards its done and tick calls here.
 */
#include "server/agent/agent_leaf_orders.h"

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

struct order {
    char key[AGENT_KEY_MAX];
    size_t klen;
    uint64_t id;              /* 0 = free */
    int64_t sent_ms;
    int seen;                 /* still in the last poll */
};

struct agent_orders {
    struct agent *a;
    agent_leaf_order_fn order;
    void *arg;
    struct cmap_table *t;     /* the map as this host holds it */
    int64_t poll_due;
    int polling;
    struct order orders[MAX_ORDERS];
    uint64_t next_order;
};

struct agent_orders *agent_orders_create(struct agent *a, agent_leaf_order_fn order, void *arg)
{
    struct agent_orders *l = calloc(1, sizeof(*l));
    if (l == NULL || (l->t = calloc(1, sizeof(*l->t))) == NULL) {
        free(l);
        return NULL;
    }
    l->a = a;
    l->order = order;
    l->arg = arg;
    return l;
}

void agent_orders_destroy(struct agent_orders **lp)
{
    struct agent_orders *l = *lp;
    if (l == NULL)
        return;
    free(l->t);
    free(l);
    *lp = NULL;
}

static void on_deleted(void *arg, const struct etcd_result *r)
{
}

void agent_orders_done(struct agent_orders *l, uint64_t id, int status)
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
static void one_request(struct agent_orders *l, const struct etcd_kv *kv, size_t plen, int64_t now)
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
    struct agent_orders *l = arg;
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

void agent_orders_tick(struct agent_orders *l, int64_t now)
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

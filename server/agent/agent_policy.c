/*
 * agent_policy.c - automatic moves: the loads, the decisions, the orders;
 * see agent_policy.h (the rule is in agent_policy_decide.c).
 *
 * State is per owner number (the map's numbers are cluster-wide): the last
 * load known of every owner (local ones from their reports, other hosts'
 * from load/<n> through the watch), and for local owners the order out,
 * the split whose half is still to move, and the owner's cool-down.  Leaf
 * cool-downs are a small table (POL_COOLS, the oldest entry reused).  A
 * decision is made when a local owner's report comes, from that report and
 * the map as this host holds it (a copy refreshed when its revision moves).
 * Nothing here blocks: loads are put one at a time and only while etcd
 * answers (publish_next: a lost one is replaced a window later), an order
 * is one frame to the owner.
 */
#include "server/agent/agent_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent/agent_int.h"
#include "server/agent/agent_txn.h"
#include "server/core/clock.h"
#include "server/core/log.h"

#define POL_COOLS 128
#define POL_PUT_BACKOFF_MS 5000     /* no load is put for this long after a put failed */

struct pown {
    uint8_t known;              /* a load is known */
    uint8_t local;              /* an owner of this host (pool, index) */
    int pool, index;
    uint32_t busy;
    uint64_t backlog, backlog_prev;
    int64_t at_ms;              /* monotonic ms the load came */
    uint64_t order;             /* an order of ours out to it; 0: none */
    int64_t order_ms;
    int split;                  /* the order is a split: `half` moves to `to` after it */
    struct hand_leaf half;
    unsigned to;
    int64_t follow_until;       /* the split applied: the half moves once the map shows it */
    int64_t cool_until;
    uint8_t unpublished;        /* a local load not put to etcd yet */
};

struct lcool {
    struct hand_leaf leaf;
    int64_t until;              /* 0: a free entry */
};

struct agent_policy {
    struct agent *a;
    agent_leaf_order_fn order;
    void *arg;
    struct cmap_table *t;       /* the map as this host holds it */
    int64_t trev;
    struct pown own[CMAP_MAX_OWNERS + 1];
    struct lcool cool[POL_COOLS];
    uint64_t next_order;
    int putting;                /* a put of a load is out (one at a time) */
    int64_t put_after;          /* monotonic ms: no put before (after a failed one) */
};

struct agent_policy *agent_policy_create(struct agent *a, agent_leaf_order_fn order, void *arg)
{
    struct agent_policy *p = calloc(1, sizeof(*p));
    if (p == NULL || (p->t = calloc(1, sizeof(*p->t))) == NULL) {
        free(p);
        return NULL;
    }
    p->a = a;
    p->order = order;
    p->arg = arg;
    return p;
}

void agent_policy_destroy(struct agent_policy **pp)
{
    struct agent_policy *p = *pp;
    if (p == NULL)
        return;
    free(p->t);
    free(p);
    *pp = NULL;
}

static const struct agent_opts *opts_of(const struct agent_policy *p) { return &p->a->opt; }

static const struct cmap_table *map_of(struct agent_policy *p)
{
    int64_t rev = cmap_revision(p->a->ctx->cmap);
    if (rev != p->trev)
        p->trev = cmap_snapshot(p->a->ctx->cmap, p->t);
    return p->trev > 0 ? p->t : NULL;
}

static const char *leaf_name(struct hand_leaf l, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u-%08x", topo_pool_name((enum cfg_pool)l.pool), l.bits,
             l.bits ? l.start >> (32 - l.bits) : 0);
    return buf;
}

static int same_leaf(struct hand_leaf x, struct hand_leaf y)
{
    return x.pool == y.pool && x.bits == y.bits && x.start == y.start;
}

/* ---- leaf cool-downs -------------------------------------------------------- */

static int64_t leaf_cool(const struct agent_policy *p, struct hand_leaf l)
{
    for (int i = 0; i < POL_COOLS; i++)
        if (p->cool[i].until != 0 && same_leaf(p->cool[i].leaf, l))
            return p->cool[i].until;
    return 0;
}

static void cool_leaf(struct agent_policy *p, struct hand_leaf l, int64_t until)
{
    struct lcool *slot = &p->cool[0];
    for (int i = 0; i < POL_COOLS; i++) {
        struct lcool *c = &p->cool[i];
        if (c->until != 0 && same_leaf(c->leaf, l)) {
            slot = c;
            break;
        }
        if (c->until < slot->until)
            slot = c; /* free (0) or the oldest */
    }
    slot->leaf = l;
    slot->until = until;
}

/* ---- loads ------------------------------------------------------------------ */

static void publish_next(struct agent_policy *p);

static void on_put(void *arg, const struct etcd_result *r)
{
    struct agent_policy *p = arg;
    p->putting = 0;
    if (r->status != HKV_OK) {
        p->put_after = clock_mono_ms() + POL_PUT_BACKOFF_MS; /* replaced at a later window */
        return;
    }
    publish_next(p);
}

/* Puts the next local load not yet in etcd.  One put at a time, none while
 * etcd does not answer: the agent's etcd calls wait in one queue, and a put
 * stuck behind an unreachable etcd would hold up the leaf txns of a move for
 * its whole timeout.  A load not put is replaced by the next window's. */
static void publish_next(struct agent_policy *p)
{
    struct agent *a = p->a;
    if (p->putting || a->h.lease_id == 0 || a->etcd == NULL || !a->h.etcd_up ||
        clock_mono_ms() < p->put_after)
        return;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        struct pown *w = &p->own[n];
        if (!w->unpublished)
            continue;
        w->unpublished = 0;
        char key[AGENT_KEY_MAX], val[96];
        int klen = agent_key(key, sizeof(key), opts_of(p)->cluster, "load/%u", n);
        int vlen = snprintf(val, sizeof(val), "%u %llu %llu", w->busy,
                            (unsigned long long)w->backlog, (unsigned long long)w->backlog_prev);
        if (klen > 0 && vlen > 0 &&
            etcd_put(a->etcd, key, (size_t)klen, val, (size_t)vlen, a->h.lease_id, on_put, p) ==
                HKV_OK) {
            p->putting = 1;
            return;
        }
    }
}

void agent_policy_watched(struct agent_policy *p, const char *key, size_t klen, const char *val,
                          size_t vlen)
{
    char pre[AGENT_KEY_MAX], v[96];
    int plen = agent_key(pre, sizeof(pre), opts_of(p)->cluster, "load/");
    if (plen <= 0 || klen <= (size_t)plen || klen - (size_t)plen > 5 ||
        memcmp(key, pre, (size_t)plen) != 0)
        return;
    unsigned n = 0;
    for (size_t i = (size_t)plen; i < klen; i++) {
        if (key[i] < '0' || key[i] > '9')
            return;
        n = n * 10 + (unsigned)(key[i] - '0');
    }
    if (n == 0 || n > CMAP_MAX_OWNERS || p->own[n].local)
        return; /* a local owner's own report is fresher than its echo */
    struct pown *w = &p->own[n];
    if (val == NULL) {
        w->known = 0;
        return;
    }
    unsigned busy;
    unsigned long long backlog, prev;
    if (vlen >= sizeof(v))
        return;
    memcpy(v, val, vlen);
    v[vlen] = '\0';
    if (sscanf(v, "%u %llu %llu", &busy, &backlog, &prev) != 3)
        return;
    w->known = 1;
    w->busy = busy > 1000 ? 1000 : busy;
    w->backlog = backlog;
    w->backlog_prev = prev;
    w->at_ms = clock_mono_ms();
}

/* ---- decisions ------------------------------------------------------------------ */

static uint64_t send_order(struct agent_policy *p, unsigned n, uint8_t kind, struct hand_leaf leaf,
                           unsigned to)
{
    struct pown *w = &p->own[n];
    struct hand_msg m = {.type = LEAF_ORDER, .id = AGENT_POLICY_ORDER_BIT | ++p->next_order,
                         .u.order = {kind, leaf, to}};
    if (p->order(p->arg, w->pool, w->index, &m) != 0)
        return 0;
    w->order = m.id;
    w->order_ms = clock_mono_ms();
    return m.id;
}

static void refused(struct agent_policy *p, unsigned n, const struct hand_load *L,
                    uint64_t share, int64_t now)
{
    struct agent *a = p->a;
    char name[64];
    size_t k = L->key.len < CMAP_KEY_SHOWN ? L->key.len : CMAP_KEY_SHOWN;
    cool_leaf(p, L->leaf, now + opts_of(p)->move_cooldown_leaf_ms);
    a->h.auto_refused++;
    memset(a->h.auto_refused_key, 0, sizeof(a->h.auto_refused_key));
    memcpy(a->h.auto_refused_key, L->key.p, k);
    a->h.auto_refused_key_len = (int64_t)k;
    agent_health_push(a);
    log_notice("leaf %s of busy owner %u neither split nor moved: key '%.*s' carries %llu%% of "
               "its work (a hot key; splitting cannot spread it)",
               leaf_name(L->leaf, name, sizeof(name)), n, (int)k, L->key.p,
               (unsigned long long)share);
}

static void act(struct agent_policy *p, unsigned n, const struct apol_decision *d,
                const struct hand_load *L, int64_t now)
{
    struct agent *a = p->a;
    struct pown *w = &p->own[n];
    char name[64], half[64];
    switch (d->kind) {
    case APOL_NONE:
        return;
    case APOL_REFUSE:
        if (L != NULL)
            refused(p, n, L, d->share_pct, now);
        return;
    case APOL_SPLIT:
        if (send_order(p, n, LEAF_ORDER_SPLIT, d->leaf, 0) == 0)
            return;
        w->split = 1;
        w->half = d->half;
        w->to = d->to;
        cool_leaf(p, d->leaf, now + opts_of(p)->move_cooldown_leaf_ms);
        a->h.auto_splits++;
        agent_health_push(a);
        log_notice("owner %u busy (%u per mille): splitting leaf %s (halves %llu%%+), then moving "
                   "%s to owner %u", n, w->busy, leaf_name(d->leaf, name, sizeof(name)),
                   (unsigned long long)d->share_pct, leaf_name(d->half, half, sizeof(half)), d->to);
        return;
    case APOL_MOVE:
        if (send_order(p, n, LEAF_ORDER_MOVE, d->leaf, d->to) == 0)
            return;
        w->split = 0;
        cool_leaf(p, d->leaf, now + opts_of(p)->move_cooldown_leaf_ms);
        a->h.auto_moves++;
        agent_health_push(a);
        log_notice("owner %u busy (%u per mille, backlog %llu): moving leaf %s to owner %u", n,
                   w->busy, (unsigned long long)w->backlog,
                   leaf_name(d->leaf, name, sizeof(name)), d->to);
        return;
    }
}

static int fresh(const struct agent_policy *p, const struct pown *w, int64_t now)
{
    return w->known && now - w->at_ms <= APOL_FRESH_WINDOWS * opts_of(p)->move_window_ms;
}

static void decide(struct agent_policy *p, const struct cmap_table *t, unsigned n,
                   const struct hand_msg *m, int64_t now)
{
    const struct agent_opts *opt = opts_of(p);
    int pool = p->own[n].pool;
    struct apol_cfg c = {opt->auto_moves, opt->move_busy_threshold, opt->move_split_min_share,
                         opt->move_hot_key_share};
    static struct apol_owner owners[CMAP_MAX_OWNERS];
    struct apol_leaf leaves[HAND_LOAD_MAX];
    static uint8_t incoming[CMAP_MAX_OWNERS + 1];
    size_t no = 0, nl = 0, src = SIZE_MAX;
    memset(incoming, 0, sizeof(incoming));
    for (uint32_t i = 0; i < t->nleaves[pool]; i++) {
        const struct cmap_leaf *l = &t->leaves[pool][i];
        if (l->state == CMAP_MOVING && l->to <= CMAP_MAX_OWNERS && incoming[l->to] < UINT8_MAX)
            incoming[l->to]++;
    }
    for (unsigned k = 1; k <= CMAP_MAX_OWNERS; k++) {
        const struct cmap_owner *o = cmap_owner(t, k);
        if (o == NULL || o->pool != pool)
            continue;
        const struct pown *w = &p->own[k];
        struct apol_owner *x = &owners[no];
        *x = (struct apol_owner){.number = k, .pool = o->pool, .live = o->live,
                                 .fresh = (uint8_t)fresh(p, w, now),
                                 .outgoing = w->order != 0 || w->follow_until != 0,
                                 .busy = w->busy, .backlog = w->backlog,
                                 .backlog_prev = w->backlog_prev, .cool_until = w->cool_until,
                                 .incoming = incoming[k]};
        if (k == n)
            src = no;
        no++;
    }
    for (uint32_t i = 0; i < m->u.load.nleaves && nl < HAND_LOAD_MAX; i++) {
        const struct hand_load *L = &m->u.load.leaves[i];
        const struct cmap_leaf *l = cmap_lookup(t, (enum cfg_pool)pool, (uint64_t)L->leaf.start << 32);
        if (L->leaf.pool != pool || l == NULL || l->start != L->leaf.start ||
            l->bits != L->leaf.bits || l->owner != n || l->state != CMAP_SERVING)
            continue; /* the map moved on since the owner counted */
        leaves[nl++] = (struct apol_leaf){.load = *L, .cool_until = leaf_cool(p, L->leaf)};
    }
    struct apol_decision d;
    apol_decide(&c, owners, no, src, leaves, nl, now, &d);
    if (d.kind == APOL_NONE) {
        if (src != SIZE_MAX && c.on && apol_overloaded(&c, &owners[src]))
            log_verbose("owner %u busy (%u per mille, backlog %llu): no move: %s", n,
                        p->own[n].busy, (unsigned long long)p->own[n].backlog, d.why);
        return;
    }
    const struct hand_load *L = NULL;
    for (size_t i = 0; i < nl && L == NULL; i++)
        if (same_leaf(leaves[i].load.leaf, d.leaf))
            L = &leaves[i].load;
    act(p, n, &d, L, now);
}

void agent_policy_load(struct agent_policy *p, int pool, int index, const struct hand_msg *m)
{
    const struct cmap_table *t = map_of(p);
    if (t == NULL)
        return;
    unsigned n = cmap_owner_by_id(t, opts_of(p)->host, (enum cfg_pool)pool, index);
    if (n == 0)
        return;
    struct pown *w = &p->own[n];
    int64_t now = clock_mono_ms();
    w->known = 1;
    w->local = 1;
    w->pool = pool;
    w->index = index;
    w->busy = m->u.load.busy > 1000 ? 1000 : m->u.load.busy;
    w->backlog = m->u.load.backlog;
    w->backlog_prev = m->u.load.backlog_prev;
    w->at_ms = now;
    w->unpublished = 1;
    publish_next(p);
    decide(p, t, n, m, now);
}

int agent_policy_done(struct agent_policy *p, uint64_t id, int status)
{
    if ((id & AGENT_POLICY_ORDER_BIT) == 0)
        return 0;
    int64_t now = clock_mono_ms();
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        struct pown *w = &p->own[n];
        if (w->order != id)
            continue;
        w->order = 0;
        if (w->split && status == LEAF_ST_OK) {
            w->follow_until = now + APOL_SPLIT_WAIT_MS; /* the half moves once it is mapped */
        } else {
            if (status != LEAF_ST_OK)
                log_notice("automatic %s from owner %u did not happen (status %d)",
                           w->split ? "split" : "move", n, status);
            w->cool_until = now + opts_of(p)->move_cooldown_owner_ms;
        }
        w->split = 0;
        return 1;
    }
    return 1;
}

void agent_policy_tick(struct agent_policy *p, int64_t now)
{
    const struct cmap_table *t = NULL;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        struct pown *w = &p->own[n];
        if (w->order != 0 && now - w->order_ms > APOL_ORDER_MS) {
            log_notice("automatic order to owner %u: no answer in %d s, forgotten", n,
                       APOL_ORDER_MS / 1000);
            w->order = 0;
            w->split = 0;
            w->cool_until = now + opts_of(p)->move_cooldown_owner_ms;
        }
        if (w->follow_until == 0)
            continue;
        if (t == NULL && (t = map_of(p)) == NULL)
            return;
        const struct cmap_leaf *l = cmap_lookup(t, (enum cfg_pool)w->half.pool,
                                                (uint64_t)w->half.start << 32);
        if (l != NULL && l->start == w->half.start && l->bits == w->half.bits && l->owner == n &&
            l->state == CMAP_SERVING && opts_of(p)->auto_moves) {
            w->follow_until = 0;
            char name[64];
            if (send_order(p, n, LEAF_ORDER_MOVE, w->half, w->to) != 0) {
                cool_leaf(p, w->half, now + opts_of(p)->move_cooldown_leaf_ms);
                p->a->h.auto_moves++;
                agent_health_push(p->a);
                log_notice("split applied: moving leaf %s of owner %u to owner %u",
                           leaf_name(w->half, name, sizeof(name)), n, w->to);
            } else {
                w->cool_until = now + opts_of(p)->move_cooldown_owner_ms;
            }
        } else if (now >= w->follow_until || !opts_of(p)->auto_moves) {
            w->follow_until = 0;
            w->cool_until = now + opts_of(p)->move_cooldown_owner_ms;
        }
    }
}

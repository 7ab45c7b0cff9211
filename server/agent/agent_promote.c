/*
 * agent_promote.c - failover CASes; see agent_promote.h (the rule is in
 * agent_promote_pick.c).
 *
 * A scan walks every leaf of the map this host holds and issues, without
 * waiting, one CAS per leaf that needs one: a promotion (its primary is
 * gone and an eligible follower exists) or a removal (a local owner seen
 * dead is still listed as a follower).  The etcd client serialises each
 * call when it is made, so one txn buffer serves them all, and the local
 * store groups what arrives together into one fsync: a dead owner's 500
 * leaves are a few milliseconds, not 500 round trips.  Each CAS out is a
 * slot (APRO_MAX_INFLIGHT) naming its leaf and epoch, so a leaf is never
 * asked twice at once; the scan runs again on a CTL_OWNER_DIED, on every
 * new map revision, and APRO_RETRY_MS after a CAS that did not apply.
 * Against a real etcd each call is a round trip on a client that asks one at
 * a time, so the promotions of another host's dead owners go AGENT_BATCH to
 * a txn (agent_batch_set): 100 leaves were 0.5-1.5 s of one-by-one CASes
 * after the lease expired, and the dead host's writes waited for them.  A
 * batch that does not apply (a race on one leaf) sends the scan back to one
 * CAS per leaf for APRO_SOLO_MS, which reads each leaf's truth back.
 */
#include "server/agent/agent_promote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_sync.h"
#include "server/agent/agent_txn.h"
#include "server/core/clock.h"
#include "server/core/log.h"

struct pcas {
    struct agent_promote *p;
    int used;
    uint8_t pool, bits;
    uint32_t start;
    int64_t epoch;
    unsigned from, to;             /* promotion: old and new primary; removal: to 0 */
    unsigned removed;              /* removal: the dead follower */
    int64_t asked_ms;              /* mono ms, for the log's timing */
};

struct agent_promote {
    struct agent *a;
    struct cmap_table *t;
    int64_t trev;                  /* the revision last scanned */
    int64_t retry_ms;              /* mono ms a scan is due again (0: none) */
    uint8_t dead[CMAP_MAX_OWNERS + 1];      /* local owners seen dead */
    uint8_t restarted[CMAP_MAX_OWNERS + 1]; /* ... that said HELLO since */
    int64_t died_ms[CMAP_MAX_OWNERS + 1];
    int fresh;                     /* a cluster host's first start: its owners are new */
    struct agent_txn txn;
    struct pcas cas[APRO_MAX_INFLIGHT];
    struct agent_batch *batch;     /* the txn being filled (NULL: none could be had) */
    struct pbatch {
        struct agent_promote *p;
        int n;                     /* 0: free */
        struct pcas *c[AGENT_BATCH];
    } pb[APRO_BATCHES], *cur;      /* cur: the one batch filled now */
    int64_t solo_until;            /* mono ms: one CAS per leaf until then */
};

#define APRO_SOLO_MS 2000

struct agent_promote *agent_promote_create(struct agent *a)
{
    struct agent_promote *p = calloc(1, sizeof(*p));
    if (p == NULL || (p->t = calloc(1, sizeof(*p->t))) == NULL) {
        free(p);
        return NULL;
    }
    p->a = a;
    /* no map in the segment yet: the master (and every owner) started anew,
     * not just the agent; a single host clears its sets instead */
    p->fresh = a->fresh_start && !a->opt.local_map;
    for (int i = 0; i < APRO_MAX_INFLIGHT; i++)
        p->cas[i].p = p;
    for (int i = 0; i < APRO_BATCHES; i++)
        p->pb[i].p = p;
    p->batch = malloc(sizeof(*p->batch)); /* none: one CAS per leaf, as before */
    return p;
}

void agent_promote_destroy(struct agent_promote **pp)
{
    struct agent_promote *p = *pp;
    if (p == NULL)
        return;
    free(p->batch);
    free(p->t);
    free(p);
    *pp = NULL;
}

int agent_promote_dead(const struct agent_promote *p, unsigned n)
{
    return p != NULL && n >= 1 && n <= CMAP_MAX_OWNERS && p->dead[n];
}

static const char *leaf_name(const struct pcas *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u-%08x", topo_pool_name((enum cfg_pool)c->pool), c->bits,
             c->bits ? c->start >> (32 - c->bits) : 0);
    return buf;
}

static void promoted(struct pcas *c, int64_t revision)
{
    struct agent_promote *p = c->p;
    char name[48];
    p->a->h.repl_promotions++;
    int64_t since = c->from <= CMAP_MAX_OWNERS && p->died_ms[c->from] != 0
                        ? clock_mono_ms() - p->died_ms[c->from] : -1;
    log_notice("leaf %s: follower %u promoted (primary %u gone) at revision %lld%s%lld%s",
               leaf_name(c, name, sizeof(name)), c->to, c->from, (long long)revision,
               since >= 0 ? ", " : "", (long long)(since >= 0 ? since : 0),
               since >= 0 ? " ms after its death" : "");
}

static void on_batch(void *arg, const struct etcd_result *r)
{
    struct pbatch *b = arg;
    struct agent_promote *p = b->p;
    int ok = r->status == HKV_OK && r->succeeded;
    if (r->status != HKV_OK)
        agent_etcd_failed(p->a, "a failover txn", r);
    else
        agent_etcd_ok(p->a);
    for (int i = 0; i < b->n; i++) {
        if (ok)
            promoted(b->c[i], r->revision);
        b->c[i]->used = 0;
    }
    if (!ok) {
        log_verbose("%d promotions in one txn not applied (%s): one CAS per leaf now", b->n,
                    r->status != HKV_OK ? hkv_strstatus(r->status) : "a leaf changed");
        p->solo_until = clock_mono_ms() + APRO_SOLO_MS;
        p->retry_ms = clock_mono_ms();
    } else {
        agent_health_push(p->a);
    }
    b->n = 0;
}

/* The batch being filled goes to etcd. */
static void flush(struct agent_promote *p)
{
    struct pbatch *b = p->cur;
    p->cur = NULL;
    if (b == NULL || b->n == 0)
        return;
    struct agent_batch *t = p->batch;
    if (etcd_txn(p->a->etcd, t->cmp, t->ncmp, t->ok, t->nok, NULL, 0, on_batch, b) != HKV_OK) {
        for (int i = 0; i < b->n; i++)
            b->c[i]->used = 0;
        b->n = 0;
        p->retry_ms = clock_mono_ms() + APRO_RETRY_MS;
    }
    agent_batch_reset(t);
}

static struct pcas *slot_for(struct agent_promote *p, int pool, const struct cmap_leaf *l);

/* A promotion of leaf l (its primary, gone_id, on another host) into the
 * batch; 0, or -1 when it must go alone (no batch to be had). */
static int batched(struct agent_promote *p, int pool, const struct cmap_leaf *l,
                   const struct agent_leaf_v *v, const char *gone_id)
{
    if (p->batch == NULL || clock_mono_ms() < p->solo_until)
        return -1;
    struct pcas *c = slot_for(p, pool, l);
    if (c == NULL) {
        p->retry_ms = clock_mono_ms() + APRO_RETRY_MS;
        return 0;
    }
    for (int round = 0; round < 2; round++) {
        if (p->cur == NULL) {
            for (int i = 0; i < APRO_BATCHES && p->cur == NULL; i++)
                if (p->pb[i].n == 0)
                    p->cur = &p->pb[i];
            if (p->cur == NULL)
                return -1; /* every batch out: alone */
            agent_batch_reset(p->batch);
        }
        int rc = agent_batch_set(p->batch, p->a->opt.cluster, pool, l->start, l->bits, l->epoch,
                                 v, gone_id);
        if (rc == HKV_EFULL) {
            flush(p);
            continue;
        }
        if (rc != HKV_OK)
            return -1;
        *c = (struct pcas){.p = p, .used = 1, .pool = (uint8_t)pool, .bits = l->bits,
                           .start = l->start, .epoch = l->epoch, .from = l->owner,
                           .to = v->owner, .asked_ms = clock_mono_ms()};
        p->cur->c[p->cur->n++] = c;
        if (p->cur->n == AGENT_BATCH)
            flush(p);
        return 0;
    }
    return -1;
}

static void on_cas(void *arg, const struct etcd_result *r)
{
    struct pcas *c = arg;
    struct agent_promote *p = c->p;
    struct agent *a = p->a;
    char name[48];
    c->used = 0;
    if (r->status != HKV_OK || !r->succeeded) {
        if (r->status != HKV_OK)
            agent_etcd_failed(a, "a failover txn", r);
        else
            agent_etcd_ok(a);
        log_verbose("leaf %s: %s not applied (%s); looked at again", leaf_name(c, name, sizeof(name)),
                    c->to != 0 ? "promotion" : "in-sync removal",
                    r->status != HKV_OK ? hkv_strstatus(r->status) : "the leaf changed");
        p->retry_ms = clock_mono_ms() + APRO_RETRY_MS;
        return;
    }
    agent_etcd_ok(a);
    if (c->to != 0) {
        promoted(c, r->revision);
    } else {
        a->h.repl_isr_removals++;
        log_notice("leaf %s: owner %u, seen dead, left the in-sync set (revision %lld)",
                   leaf_name(c, name, sizeof(name)), c->removed, (long long)r->revision);
    }
    agent_health_push(a);
}

static struct pcas *slot_for(struct agent_promote *p, int pool, const struct cmap_leaf *l)
{
    struct pcas *free_slot = NULL;
    for (int i = 0; i < APRO_MAX_INFLIGHT; i++) {
        struct pcas *c = &p->cas[i];
        if (!c->used) {
            if (free_slot == NULL)
                free_slot = c;
        } else if (c->pool == pool && c->start == l->start && c->bits == l->bits) {
            return NULL; /* one out for it already */
        }
    }
    return free_slot;
}

/* One CAS for leaf l: value v, compares as agent_txn_set takes them. */
static void ask(struct agent_promote *p, int pool, const struct cmap_leaf *l,
                const struct agent_leaf_v *v, const char *live_id, const char *gone_id,
                unsigned removed)
{
    struct agent *a = p->a;
    struct pcas *c = slot_for(p, pool, l);
    if (c == NULL) {
        p->retry_ms = clock_mono_ms() + APRO_RETRY_MS; /* full, or one is out: later */
        return;
    }
    if (agent_txn_set(&p->txn, a->opt.cluster, pool, l->start, l->bits, l->epoch, v, live_id,
                      gone_id) != HKV_OK ||
        etcd_txn(a->etcd, p->txn.cmp, p->txn.ncmp, p->txn.ok, p->txn.nok, p->txn.fail,
                 p->txn.nfail, on_cas, c) != HKV_OK)
        return;
    *c = (struct pcas){.p = p, .used = 1, .pool = (uint8_t)pool, .bits = l->bits,
                       .start = l->start, .epoch = l->epoch, .from = l->owner,
                       .to = removed ? 0 : v->owner, .removed = removed,
                       .asked_ms = clock_mono_ms()};
}

static int local(const struct agent_promote *p, const struct cmap_owner *o)
{
    return o != NULL && strcmp(o->host, p->a->opt.host) == 0;
}

/* Leaf l of pool: promoted, or cleaned of dead local followers, if due. */
static void one_leaf(struct agent_promote *p, int pool, const struct cmap_leaf *l,
                     const uint8_t *eligible)
{
    const struct cmap_table *t = p->t;
    const struct cmap_owner *prim = cmap_owner(t, l->owner);
    if (prim == NULL || l->nisr == 0)
        return;
    int here = local(p, prim);
    int gone = here ? p->dead[l->owner] : !prim->live;
    struct agent_leaf_v v;
    if (gone) {
        if (apro_choose(l, eligible, !here, &v)) {
            const struct cmap_owner *next = cmap_owner(t, v.owner);
            if (here) /* our own dead owner: this agent knows, and acts */
                ask(p, pool, l, &v, next->id, NULL, 0);
            else if (local(p, next) && /* another host's: its registration must be gone */
                     batched(p, pool, l, &v, prim->id) != 0)
                ask(p, pool, l, &v, NULL, prim->id, 0);
            return;
        }
        /* no live in-sync follower: the leaf waits for its primary; once
         * ours runs again, the dead among its followers leave the set (what
         * they held died with them), so it serves again */
        if (!here || !p->restarted[l->owner])
            return;
    }
    for (unsigned i = 0; i < l->nisr; i++) {
        unsigned n = l->isr[i];
        if (n <= CMAP_MAX_OWNERS && p->dead[n]) {
            v = (struct agent_leaf_v){.owner = l->owner, .state = l->state, .to = l->to,
                                      .nisr = l->nisr};
            memcpy(v.isr, l->isr, sizeof(v.isr));
            agent_isr_without(&v, n);
            ask(p, pool, l, &v, NULL, NULL, n);
            return;
        }
    }
}

static void scan(struct agent_promote *p)
{
    static uint8_t eligible[CMAP_MAX_OWNERS + 1];
    static uint8_t listed[CMAP_MAX_OWNERS + 1];
    if (!p->a->have_read)
        return; /* a map from disk: who is live is not known yet */
    int64_t rev = cmap_snapshot(p->a->ctx->cmap, p->t);
    if (rev == 0)
        return;
    p->trev = rev;
    p->retry_ms = 0;
    if (p->fresh) {
        /* A whole cluster host restarted: its owners lost what they held in
         * memory, so a live in-sync follower elsewhere is promoted rather
         * than a restarted primary trusted, and they leave the sets they
         * were in, as after a death the master reported. */
        p->fresh = 0;
        for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
            if (local(p, cmap_owner(p->t, n)))
                p->dead[n] = p->restarted[n] = 1;
    }
    memset(listed, 0, sizeof(listed));
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        const struct cmap_owner *o = cmap_owner(p->t, n);
        eligible[n] = o != NULL && o->live && !p->dead[n];
    }
    for (int pool = 0; pool < CMAP_NPOOLS; pool++)
        for (uint32_t i = 0; i < p->t->nleaves[pool]; i++) {
            const struct cmap_leaf *l = &p->t->leaves[pool][i];
            for (unsigned k = 0; k < l->nisr && k < CMAP_MAX_ISR; k++)
                if (l->isr[k] <= CMAP_MAX_OWNERS)
                    listed[l->isr[k]] = 1;
            one_leaf(p, pool, l, eligible);
        }
    flush(p);
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (p->dead[n] && p->restarted[n] && !listed[n]) {
            p->dead[n] = p->restarted[n] = 0; /* runs again, and follows nothing on old terms */
            p->died_ms[n] = 0;
        }
}

static unsigned number_of(struct agent_promote *p, int pool, int index)
{
    if (cmap_snapshot(p->a->ctx->cmap, p->t) == 0)
        return 0;
    return cmap_owner_by_id(p->t, p->a->opt.host, (enum cfg_pool)pool, index);
}

void agent_promote_owner_died(struct agent_promote *p, int pool, int index)
{
    if (p == NULL)
        return;
    unsigned n = number_of(p, pool, index);
    if (n == 0)
        return;
    p->dead[n] = 1;
    p->restarted[n] = 0;
    p->died_ms[n] = clock_mono_ms();
    log_verbose("owner %u (%s/%d) ended: promoting the followers of its leaves", n,
                topo_pool_name((enum cfg_pool)pool), index);
    scan(p);
}

void agent_promote_owner_hello(struct agent_promote *p, int pool, int index)
{
    if (p == NULL)
        return;
    unsigned n = number_of(p, pool, index);
    if (n != 0 && p->dead[n]) {
        p->restarted[n] = 1;
        p->retry_ms = clock_mono_ms(); /* the next tick scans: it may follow again now */
        scan(p); /* a leaf that waited for it may serve again */
    }
}

void agent_promote_tick(struct agent_promote *p, int64_t now)
{
    if (p == NULL || p->a->stopping)
        return;
    if (cmap_revision(p->a->ctx->cmap) != p->trev || (p->retry_ms != 0 && now >= p->retry_ms))
        scan(p);
}

/* ---- a single host's start ------------------------------------------------------ */

int agent_promote_clear_local(struct agent *a)
{
    char prefix[AGENT_KEY_MAX], pre[AGENT_KEY_MAX];
    int plen = agent_key(prefix, sizeof(prefix), a->opt.cluster, "map/");
    int klen = agent_key(pre, sizeof(pre), a->opt.cluster, "%s", "");
    struct agent_sync *s = agent_sync_wrap(a->base, a->etcd, 10000);
    struct sync_res r = {0};
    struct agent_txn txn;
    int code = -1, cleared = 0;
    if (plen < 0 || klen < 0 || s == NULL ||
        agent_sync_read_all(s, prefix, (size_t)plen, &r) != HKV_OK) {
        log_warning("cannot clear the leaves' in-sync sets in %s: %s", a->store_path,
                    s == NULL ? "out of memory" : agent_sync_why(&r));
        goto out;
    }
    code = 0;
    for (size_t i = 0; i < r.nkvs; i++) {
        const struct sync_kv *kv = &r.kvs[i];
        struct agent_key_info k;
        struct agent_leaf_v v;
        if (agent_key_parse(kv->key, kv->key_len, pre, (size_t)klen, &k) != AGENT_K_LEAF ||
            agent_parse_leaf(kv->value, kv->value_len, &v) != HKV_OK || v.nisr == 0)
            continue;
        uint32_t start = k.bits == 0 ? 0 : k.prefix << (32 - k.bits);
        struct sync_res x = {0};
        v.nisr = 0;
        if (agent_txn_set(&txn, a->opt.cluster, k.pool, start, k.bits,
                          kv->mod_revision, &v, NULL, NULL) != HKV_OK ||
            etcd_txn(agent_sync_etcd(s), txn.cmp, txn.ncmp,
                     txn.ok, txn.nok, txn.fail,
                     txn.nfail, agent_sync_cb, s) != HKV_OK ||
            agent_sync_wait(s, &x) != HKV_OK || !x.succeeded) {
            log_warning("leaf %.*s: in-sync set not cleared at start (%s)", (int)kv->key_len,
                        kv->key, agent_sync_why(&x));
            code = -1;
        } else {
            cleared++;
        }
        agent_sync_free(&x);
    }
    if (cleared > 0)
        log_notice("single host start: the in-sync sets of %d leaves cleared (no follower is "
                   "fresher than its primary's own file after a whole-host restart)", cleared);
out:
    agent_sync_free(&r);
    agent_sync_destroy(&s);
    return code;
}

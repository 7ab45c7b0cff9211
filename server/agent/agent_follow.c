/*
 * agent_follow.c - follow orders to this host's primaries; see
 * agent_follow.h (the choice is agent_follow_pick.c).
 *
 * State: the orders out (AFOL_MAX_OUT slots: leaf, follower, id, when) and
 * a small table of leaves cooling down after a failed order (the oldest
 * entry reused).  The candidates (the owners with their host and zone as
 * small ids) are rebuilt when the map's revision moves; the leaves are
 * walked at every tick while an order slot is free, which is a pass over
 * at most 2 x CMAP_MAX_LEAVES entries of the copy this module holds.
 * Nothing here waits: an order is one frame to an owner.
 */
#include "server/agent/agent_follow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent/agent_int.h"
#include "server/agent/agent_map.h"
#include "server/agent/agent_promote.h"
#include "server/core/clock.h"
#include "server/core/log.h"

#define FOL_COOLS 128

struct fout {
    uint64_t id;                   /* 0 = free */
    struct hand_leaf leaf;
    unsigned to;
    int64_t sent_ms;
};

struct fcool {
    struct hand_leaf leaf;
    int64_t until;                 /* 0 = free */
};

struct agent_follow {
    struct agent *a;
    agent_leaf_order_fn order;
    void *arg;
    struct cmap_table *t;
    int64_t trev;
    struct afol_cand cands[CMAP_MAX_OWNERS];
    size_t ncands;
    struct fout out[AFOL_MAX_OUT];
    struct fcool cool[FOL_COOLS];
    uint64_t next_id;
};

struct agent_follow *agent_follow_create(struct agent *a, agent_leaf_order_fn order, void *arg)
{
    struct agent_follow *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->t = calloc(1, sizeof(*f->t))) == NULL) {
        free(f);
        return NULL;
    }
    f->a = a;
    f->order = order;
    f->arg = arg;
    return f;
}

void agent_follow_destroy(struct agent_follow **fp)
{
    struct agent_follow *f = *fp;
    if (f == NULL)
        return;
    free(f->t);
    free(f);
    *fp = NULL;
}

static int same(struct hand_leaf x, struct hand_leaf y)
{
    return x.pool == y.pool && x.bits == y.bits && x.start == y.start;
}

static const char *name_of(struct hand_leaf l, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u-%08x", topo_pool_name((enum cfg_pool)l.pool), l.bits,
             l.bits ? l.start >> (32 - l.bits) : 0);
    return buf;
}

static int cooling(const struct agent_follow *f, struct hand_leaf l, int64_t now)
{
    for (int i = 0; i < FOL_COOLS; i++)
        if (f->cool[i].until > now && same(f->cool[i].leaf, l))
            return 1;
    return 0;
}

static void cool(struct agent_follow *f, struct hand_leaf l, int64_t until)
{
    struct fcool *slot = &f->cool[0];
    for (int i = 0; i < FOL_COOLS; i++) {
        if (f->cool[i].until != 0 && same(f->cool[i].leaf, l)) {
            slot = &f->cool[i];
            break;
        }
        if (f->cool[i].until < slot->until)
            slot = &f->cool[i];
    }
    slot->leaf = l;
    slot->until = until;
}

/* An order ended: failed (counted, the leaf cools) or not. */
static void end(struct agent_follow *f, struct fout *o, int failed, const char *why)
{
    char name[48];
    if (failed) {
        f->a->h.repl_follow_failed++;
        agent_health_push(f->a);
        cool(f, o->leaf, clock_mono_ms() + AFOL_COOL_MS);
        log_verbose("follow order for leaf %s (follower %u) failed: %s", name_of(o->leaf, name,
                    sizeof(name)), o->to, why);
    }
    o->id = 0;
}

int agent_follow_done(struct agent_follow *f, uint64_t id, int status)
{
    if ((id & AGENT_FOLLOW_ORDER_BIT) == 0)
        return 0;
    for (int i = 0; f != NULL && i < AFOL_MAX_OUT; i++)
        if (f->out[i].id == id) {
            /* done either way; the map may not show the new member yet, so
             * the leaf is not asked about again before it can */
            cool(f, f->out[i].leaf, clock_mono_ms() + AFOL_COOL_MS);
            end(f, &f->out[i], status != LEAF_ST_OK, "the owner says so");
        }
    return 1;
}

static int key_id(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i + 1;
    return 0;
}

/* The candidates of the map now: every owner, with its host and its
 * zone (hosts/<host>, agent_map.h) as small ids. */
static void candidates(struct agent_follow *f)
{
    static const char *hosts[CMAP_MAX_OWNERS], *zones[CMAP_MAX_OWNERS];
    size_t nh = 0, nz = 0;
    f->ncands = 0;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        const struct cmap_owner *o = cmap_owner(f->t, n);
        if (o == NULL)
            continue;
        int h = key_id(hosts, nh, o->host);
        if (h == 0) {
            hosts[nh++] = o->host;
            h = (int)nh;
        }
        const char *zone = f->a->map != NULL ? agent_map_host_zone(f->a->map, o->host) : "";
        int z = zone[0] == '\0' ? 0 : key_id(zones, nz, zone);
        if (zone[0] != '\0' && z == 0) {
            zones[nz++] = zone;
            z = (int)nz;
        }
        f->cands[f->ncands++] = (struct afol_cand){
            .number = n, .pool = o->pool, .host = h, .zone = z,
            .live = o->live && !agent_promote_dead(f->a->promote, n)};
    }
}

/* Followers per candidate: the map's sets and the orders out. */
static void count_following(struct agent_follow *f)
{
    static unsigned per[CMAP_MAX_OWNERS + 1];
    memset(per, 0, sizeof(per));
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < f->t->nleaves[p]; i++)
            for (unsigned k = 0; k < f->t->leaves[p][i].nisr && k < CMAP_MAX_ISR; k++)
                if (f->t->leaves[p][i].isr[k] <= CMAP_MAX_OWNERS)
                    per[f->t->leaves[p][i].isr[k]]++;
    for (int i = 0; i < AFOL_MAX_OUT; i++)
        if (f->out[i].id != 0 && f->out[i].to <= CMAP_MAX_OWNERS)
            per[f->out[i].to]++;
    for (size_t i = 0; i < f->ncands; i++)
        f->cands[i].following = per[f->cands[i].number];
}

/* Orders that ended by the map (their follower is in the set, or the leaf
 * has another primary or is gone) or by silence. */
static void sweep(struct agent_follow *f, int64_t now)
{
    for (int i = 0; i < AFOL_MAX_OUT; i++) {
        struct fout *o = &f->out[i];
        if (o->id == 0)
            continue;
        const struct cmap_leaf *l = cmap_lookup(f->t, (enum cfg_pool)o->leaf.pool,
                                                (uint64_t)o->leaf.start << 32);
        int gone = l == NULL || l->start != o->leaf.start || l->bits != o->leaf.bits;
        int held = 0;
        for (unsigned k = 0; !gone && k < l->nisr && k < CMAP_MAX_ISR; k++)
            held |= l->isr[k] == o->to;
        if (gone || held)
            end(f, o, 0, NULL);
        else if (now - o->sent_ms > AFOL_SILENT_MS)
            end(f, o, 1, "no answer");
    }
}

static int out_for(const struct agent_follow *f, struct hand_leaf l, int *nout)
{
    int hit = 0;
    *nout = 0;
    for (int i = 0; i < AFOL_MAX_OUT; i++)
        if (f->out[i].id != 0) {
            (*nout)++;
            hit |= same(f->out[i].leaf, l);
        }
    return hit;
}

static void send_one(struct agent_follow *f, const struct cmap_owner *prim, struct hand_leaf leaf,
                     unsigned to, int64_t now)
{
    struct fout *slot = NULL;
    for (int i = 0; i < AFOL_MAX_OUT && slot == NULL; i++)
        if (f->out[i].id == 0)
            slot = &f->out[i];
    if (slot == NULL)
        return;
    struct hand_msg m = {.type = LEAF_ORDER, .id = AGENT_FOLLOW_ORDER_BIT | ++f->next_id,
                         .u.order = {LEAF_ORDER_FOLLOW, leaf, to}};
    char name[48];
    f->a->h.repl_follow_sent++;
    *slot = (struct fout){.id = m.id, .leaf = leaf, .to = to, .sent_ms = now};
    if (f->order(f->arg, prim->pool, prim->index, &m) != 0) {
        end(f, slot, 1, "no control channel to the primary");
        return;
    }
    agent_health_push(f->a);
    log_verbose("leaf %s: owner %u asked to seed follower %u", name_of(leaf, name, sizeof(name)),
                prim->number, to);
}

void agent_follow_tick(struct agent_follow *f, int64_t now)
{
    struct agent *a = f != NULL ? f->a : NULL;
    if (a == NULL || a->stopping || a->opt.replicas <= 0 || !a->have_read)
        return;
    int64_t rev = cmap_revision(a->ctx->cmap);
    if (rev == 0)
        return;
    if (rev != f->trev)
        f->trev = cmap_snapshot(a->ctx->cmap, f->t);
    candidates(f); /* each tick: an owner seen dead runs again without a new map */
    sweep(f, now);
    int nout;
    out_for(f, (struct hand_leaf){0}, &nout);
    if (nout >= AFOL_MAX_OUT)
        return;
    count_following(f);
    unsigned want = (unsigned)a->opt.replicas;
    for (int p = 0; p < CMAP_NPOOLS && nout < AFOL_MAX_OUT; p++)
        for (uint32_t i = 0; i < f->t->nleaves[p] && nout < AFOL_MAX_OUT; i++) {
            const struct cmap_leaf *l = &f->t->leaves[p][i];
            const struct cmap_owner *prim = cmap_owner(f->t, l->owner);
            struct hand_leaf leaf = {(uint8_t)p, l->bits, l->start};
            if (l->state != CMAP_SERVING || l->nisr >= want || prim == NULL || !prim->live ||
                strcmp(prim->host, a->opt.host) != 0 || agent_promote_dead(a->promote, l->owner) ||
                out_for(f, leaf, &nout) || cooling(f, leaf, now))
                continue;
            unsigned to = afol_choose(f->cands, f->ncands, p, l);
            if (to == 0)
                continue;
            send_one(f, prim, leaf, to, now);
            for (size_t k = 0; k < f->ncands; k++)
                if (f->cands[k].number == to)
                    f->cands[k].following++;
            out_for(f, leaf, &nout);
        }
}

/*
 * owner_own.c - a cluster owner's number and leaves: which part of the hash
 * space it serves, and the MOVED answer for the rest (../shared/CLUSTER.md
 * §1, §4).  Nothing here runs on a single host (o->own is NULL there and the
 * fixed router maps decide, owner_gate.c).
 *
 * Where the leaves come from.  The cluster map in shared memory (ctx->cmap)
 * is the truth; the owner polls its revision every OWN_POLL_MS and, when it
 * moved, copies the table, finds its own number (cmap_owner_by_id: "<host>/
 * <pool>/<k>") and takes the leaves of its pool that name it (serving, or
 * moving away from it: a source serves until the move ends).  That list is
 * the ownership table: it decides every request (owner_own_ours), and it is
 * kept durable in the owner's SQLite file (storage/persist_own.h), handed
 * to the persister's writer thread in a batch whenever it changes, so the
 * loop never writes.  At start, before the persister's threads run, the
 * stored table is loaded: an owner restarted while the agent has not
 * published a map serves exactly the leaves it served before, and answers
 * TRYAGAIN for everything else until a map arrives.
 *
 * MOVED carries what the map copy says about the key's leaf: its prefix and
 * bits, its epoch (the etcd mod_revision of its map key) and the owner
 * number serving it; an edge follows it only if that epoch is newer than
 * what it holds (server/core/router_map.h).
 *
 * Moves (CLUSTER.md §5) put marks on leaves: a few (OWN_MAX_MARKS) records
 * beside the map-derived list, each with its durable state (HANDING_OFF,
 * RECEIVING, GONE: storage/persist_own.h) and how requests on it wait
 * (block: none, writes, all).  A mark decides before the list does: a GONE
 * leaf is not served (MOVED names the target at the commit's epoch until
 * the map copy says as much), a RECEIVING one is served only once adopted
 * (the commit is known) or once the map gives it to this owner.  The saved
 * table is the list with the marks merged in, so a restart finds them; a
 * mark read back at start is `unresolved`: the move modules settle it from
 * the map before its leaf is served again (step 10).
 */
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/log.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_own_int.h"
#include "storage/persist_own.h"

#define OWN_POLL_MS 20



unsigned owner_own_number(const struct owner *o)
{
    return o->own != NULL ? o->own->number : 0;
}

int64_t owner_own_revision(const struct owner *o)
{
    return o->own != NULL ? o->own->snap->revision : 0;
}

size_t owner_own_leaves(const struct owner *o)
{
    return o->own != NULL ? o->own->serving->n : 0;
}


struct own_mark *owner_own_mark_at(const struct owner *o, uint64_t place)
{
    for (int i = 0; o->own != NULL && i < OWN_MAX_MARKS; i++) {
        struct own_mark *m = &o->own->marks[i];
        if (m->used && covers(m->start, m->bits, place))
            return m;
    }
    return NULL;
}

struct own_mark *owner_own_mark(const struct owner *o, uint32_t start, uint8_t bits)
{
    for (int i = 0; o->own != NULL && i < OWN_MAX_MARKS; i++) {
        struct own_mark *m = &o->own->marks[i];
        if (m->used && m->start == start && m->bits == bits)
            return m;
    }
    return NULL;
}

struct own_mark *owner_own_mark_add(struct owner *o, uint32_t start, uint8_t bits, uint8_t state,
                                    int64_t e1, uint32_t peer)
{
    struct own_mark *m = owner_own_mark(o, start, bits);
    for (int i = 0; m == NULL && o->own != NULL && i < OWN_MAX_MARKS; i++)
        if (!o->own->marks[i].used)
            m = &o->own->marks[i];
    if (m == NULL)
        return NULL;
    *m = (struct own_mark){.used = 1, .start = start, .bits = bits, .state = state, .e1 = e1,
                           .peer = peer};
    owner_own_changed(o);
    return m;
}

void owner_own_mark_del(struct owner *o, struct own_mark *m)
{
    m->used = 0;
    owner_own_changed(o);
}

struct own_mark *owner_own_marks(const struct owner *o)
{
    return o->own != NULL ? o->own->marks : NULL;
}

void owner_own_changed(struct owner *o)
{
    o->own->dirty = 1;
    o->own->gen++;
}

uint64_t owner_own_gen(const struct owner *o) { return o->own != NULL ? o->own->gen : 0; }
uint64_t owner_own_saved_gen(const struct owner *o) { return o->own != NULL ? o->own->gen_saved : 0; }

const struct cmap_table *owner_own_map(const struct owner *o)
{
    return o->own != NULL && o->own->snap->revision != 0 ? o->own->snap : NULL;
}

/* The map copy gives the leaf of place to this owner at an epoch after e. */
static int map_gives(const struct owner *o, uint64_t place, int64_t e)
{
    const struct cmap_leaf *l = owner_own_map(o) != NULL ? cmap_lookup(o->own->snap, o->pool, place)
                                                         : NULL;
    return l != NULL && l->owner == o->own->number && l->state == CMAP_SERVING && l->epoch > e;
}

int owner_own_has(const struct owner *o, uint64_t place)
{
    const struct own_mark *m = owner_own_mark_at(o, place);
    if (m != NULL && m->state == PERSIST_GONE)
        return map_gives(o, place, m->e2);
    if (m != NULL && m->state == PERSIST_RECEIVING)
        return m->adopted || map_gives(o, place, m->e1);
    if (m != NULL) /* HANDING_OFF: the source serves until the move ends */
        return 1;
    const struct persist_own *t = o->own->serving;
    uint32_t h = (uint32_t)(place >> 32);
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* the first leaf starting after h */
        size_t mid = lo + (hi - lo) / 2;
        if (t->leaves[mid].start <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && (uint64_t)h - t->leaves[lo - 1].start < span(t->leaves[lo - 1].bits);
}

int owner_own_leaf(const struct owner *o, uint64_t place, uint32_t *prefix, uint8_t *bits)
{
    const struct persist_own *t = o->own->serving;
    uint32_t h = (uint32_t)(place >> 32);
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* the first leaf starting after h */
        size_t mid = lo + (hi - lo) / 2;
        if (t->leaves[mid].start <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || (uint64_t)h - t->leaves[lo - 1].start >= span(t->leaves[lo - 1].bits))
        return 0;
    *bits = t->leaves[lo - 1].bits;
    *prefix = *bits ? t->leaves[lo - 1].start >> (32 - *bits) : 0;
    return 1;
}

static void poll_map(struct owner *o);

int owner_own_ours(struct owner *o, struct olink *l, uint64_t id, uint64_t place)
{
    if (owner_own_has(o, place))
        return 1;
    /* The edge routed here from the same map, maybe from a newer revision
     * than the last poll took: look again before saying no. */
    owner_own_refresh(o);
    if (owner_own_has(o, place))
        return 1;
    o->st.owner_moved++;
    const struct cmap_leaf *leaf = o->own->snap->revision != 0
                                       ? cmap_lookup(o->own->snap, o->pool, place)
                                       : NULL;
    if (leaf == NULL) {
        wire_put_error(&l->out, id, HKV_EAGAIN,
                       wire_cstr("TRYAGAIN this owner has no cluster map yet and does not serve "
                                 "this key's leaf"));
        return 0;
    }
    const struct own_mark *m = owner_own_mark_at(o, place);
    if (m != NULL && m->state == PERSIST_GONE && m->e2 > leaf->epoch) {
        /* the commit is known here before the map copy shows it */
        uint32_t p = m->bits ? m->start >> (32 - m->bits) : 0;
        wire_put_moved(&l->out, id, p, m->bits, (uint64_t)m->e2, m->peer);
        return 0;
    }
    uint32_t prefix = leaf->bits ? leaf->start >> (32 - leaf->bits) : 0;
    wire_put_moved(&l->out, id, prefix, leaf->bits, (uint64_t)leaf->epoch, leaf->owner);
    return 0;
}

/* The leaves of o's pool that name number in t, as a new table. */
static struct persist_own *derive(const struct owner *o, const struct cmap_table *t,
                                  unsigned number)
{
    uint32_t n = t->nleaves[o->pool], k = 0;
    struct persist_own *d = persist_own_new(number != 0 ? n : 0);
    if (d == NULL)
        return NULL;
    for (uint32_t i = 0; number != 0 && i < n; i++) {
        const struct cmap_leaf *l = &t->leaves[o->pool][i];
        if (l->owner == number)
            d->leaves[k++] = (struct persist_own_leaf){.start = l->start, .bits = l->bits,
                                                       .epoch = l->epoch};
    }
    d->n = k;
    d->number = number;
    d->pool = (uint8_t)o->pool;
    d->revision = t->revision;
    snprintf(d->cluster, sizeof(d->cluster), "%s", o->opts.cluster);
    return d;
}

static int same_leaves(const struct persist_own *a, const struct persist_own *b)
{
    if (a->number != b->number || a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->leaves[i].start != b->leaves[i].start || a->leaves[i].bits != b->leaves[i].bits ||
            a->leaves[i].epoch != b->leaves[i].epoch)
            return 0;
    return 1;
}

static int by_start(const void *a, const void *b)
{
    const struct persist_own_leaf *x = a, *y = b;
    return x->start != y->start ? (x->start < y->start ? -1 : 1) : (int)x->bits - (int)y->bits;
}

/* The table to store: the served leaves with the marks merged in (a mark
 * on a served leaf gives it its state; the others are rows of their own). */
static struct persist_own *to_store(const struct owner_own *w)
{
    struct persist_own *t = persist_own_new(w->serving->n + OWN_MAX_MARKS);
    if (t == NULL)
        return NULL;
    struct persist_own_leaf *l = t->leaves;
    *t = *w->serving;
    t->leaves = l;
    memcpy(l, w->serving->leaves, w->serving->n * sizeof(*l));
    size_t n = w->serving->n;
    for (int i = 0; i < OWN_MAX_MARKS; i++) {
        const struct own_mark *m = &w->marks[i];
        if (!m->used)
            continue;
        size_t k = 0;
        while (k < n && !(l[k].start == m->start && l[k].bits == m->bits))
            k++;
        if (k == n)
            l[n++] = (struct persist_own_leaf){.start = m->start, .bits = m->bits, .epoch = m->e1};
        l[k].state = m->adopted ? PERSIST_OWNED : m->state;
        l[k].e1 = m->e1;
        l[k].e2 = m->e2;
        l[k].peer = m->peer;
    }
    t->n = n;
    qsort(l, n, sizeof(*l), by_start);
    return t;
}

/* Hands a copy of the table to the persister (one save at a time). */
static void save(struct owner *o)
{
    struct owner_own *w = o->own;
    if (!w->dirty || w->saving || o->persister == NULL)
        return;
    struct persist_batch *b = persist_batch_new(0);
    if (b == NULL || (b->own = to_store(w)) == NULL) {
        persist_batch_free(&b);
        return; /* tried again at the next poll */
    }
    if (persister_submit(o->persister, b) != HKV_OK) {
        persist_batch_free(&b);
        return;
    }
    w->saving = 1;
    w->dirty = 0;
    w->gen_saving = w->gen;
}

void owner_own_save_now(struct owner *o)
{
    if (o->own != NULL)
        save(o);
}

void owner_own_saved(struct owner *o, const struct persist_own *t, int status)
{
    if (o->own == NULL)
        return;
    o->own->saving = 0;
    if (status != HKV_OK) {
        log_warning("cannot store the ownership table (%zu leaves, map revision %lld): %s; "
                    "trying again", t->n, (long long)t->revision, hkv_strstatus(status));
        o->own->dirty = 1;
        return;
    }
    o->own->gen_saved = o->own->gen_saving;
    save(o); /* a change made while this one was being written */
}

/* A new map copy is in w->snap: the number and the leaves it gives. */
static void apply_map(struct owner *o)
{
    struct owner_own *w = o->own;
    const struct owner_opts *opts = &o->opts;
    unsigned number = cmap_owner_by_id(w->snap, opts->host, o->pool, o->index);
    if (number != w->number && w->number != 0)
        log_warning("the cluster map names this owner %u, not %u as before", number, w->number);
    struct persist_own *d = derive(o, w->snap, number);
    if (d == NULL)
        return; /* out of memory: the next revision tries again */
    w->number = number;
    if (same_leaves(d, w->serving)) {
        w->serving->revision = d->revision;
        persist_own_free(&d);
        return;
    }
    log_notice("owner %u of cluster %s: %zu leaves of pool %s at map revision %lld (was %zu)",
               number, opts->cluster, d->n, topo_pool_name(o->pool), (long long)d->revision,
               w->serving->n);
    persist_own_free(&w->serving);
    w->serving = d;
    owner_own_changed(o);
}

/* GONE marks the map copy has caught up with go (the move modules settle
 * the others). */
static void forget_gone(struct owner *o)
{
    struct owner_own *w = o->own;
    for (int i = 0; i < OWN_MAX_MARKS; i++) {
        struct own_mark *m = &w->marks[i];
        if (!m->used || m->state != PERSIST_GONE)
            continue;
        const struct cmap_leaf *l = cmap_lookup(w->snap, o->pool, (uint64_t)m->start << 32);
        if (l != NULL && l->epoch >= m->e2)
            owner_own_mark_del(o, m);
    }
}

static void poll_map(struct owner *o)
{
    struct owner_own *w = o->own;
    if (own_check_lease(o) && w->on_map != NULL)
        w->on_map(o); /* requests parked by the fence run again */
    const struct cmap *seg = o->ctx->cmap;
    int64_t rev = seg != NULL ? cmap_revision(seg) : 0;
    if (rev != 0 && rev != w->seen && cmap_snapshot(seg, w->spare) != 0) {
        char why[200];
        w->seen = rev;
        if (cmap_validate(w->spare, why, sizeof(why)) == HKV_OK) {
            struct cmap_table *t = w->snap;
            w->snap = w->spare;
            w->spare = t;
            apply_map(o);
            forget_gone(o);
            own_settle_awaits(o);
            if (w->on_map != NULL)
                w->on_map(o);
        } else {
            log_warning("cluster map revision %lld refused: %s", (long long)rev, why);
        }
    }
    save(o);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    poll_map(arg);
}

void owner_own_on_map(struct owner *o, void (*fn)(struct owner *o))
{
    if (o->own != NULL)
        o->own->on_map = fn;
}

void owner_own_refresh(struct owner *o)
{
    if (o->own != NULL && o->ctx->cmap != NULL && cmap_revision(o->ctx->cmap) != o->own->seen)
        poll_map(o);
}

uint32_t owner_own_writer(const struct owner *o)
{
    const struct owner_opts *opts = &o->opts;
    if (o->ctx->cmap == NULL)
        return owner_writer_id(o);
    struct cmap_table *t = malloc(sizeof(*t));
    unsigned n = 0;
    if (t != NULL && cmap_snapshot(o->ctx->cmap, t) > 0)
        n = cmap_owner_by_id(t, opts->host, o->pool, o->index);
    free(t);
    if (n == 0) {
        /* The master starts owners once the map names them; this is a map
         * being rewritten at that instant.  Above every cluster number. */
        log_warning("no cluster number in the map yet: versions carry writer %u",
                    (unsigned)(CMAP_MAX_OWNERS + 1 + owner_writer_id(o)) & STAMP_WRITER_MAX);
        return (uint32_t)(CMAP_MAX_OWNERS + 1 + owner_writer_id(o)) & STAMP_WRITER_MAX;
    }
    return n;
}

int owner_own_load(struct owner *o)
{
    const struct owner_opts *opts = &o->opts;
    if (opts->cluster[0] == '\0')
        return 0;
    struct owner_own *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -1;
    o->own = w;
    w->snap = calloc(1, sizeof(*w->snap));
    w->spare = calloc(1, sizeof(*w->spare));
    if (w->snap == NULL || w->spare == NULL)
        return -1;
    int rc = persister_own_load(o->persister, (uint8_t)o->pool, &w->serving);
    if (rc != HKV_OK) {
        log_warning("cannot read the ownership table: %s", hkv_strstatus(rc));
        return -1;
    }
    if (w->serving->n > 0 && strcmp(w->serving->cluster, opts->cluster) != 0) {
        log_warning("the stored ownership table is of cluster '%s', not '%s': not served",
                    w->serving->cluster, opts->cluster);
        w->serving->n = 0;
        w->serving->number = 0;
    }
    w->number = w->serving->number;
    /* rows with a move state become marks, unresolved until the move
     * modules have read the map (step 10); only OWNED and HANDING_OFF rows
     * are leaves the map gave this owner */
    size_t k = 0;
    for (size_t i = 0; i < w->serving->n; i++) {
        const struct persist_own_leaf *l = &w->serving->leaves[i];
        if (l->state != PERSIST_OWNED) {
            struct own_mark *m = owner_own_mark_add(o, l->start, l->bits, l->state, l->e1, l->peer);
            if (m != NULL) {
                m->e2 = l->e2;
                m->unresolved = l->state != PERSIST_GONE;
                m->block = l->state == PERSIST_HANDING_OFF ? OWN_BLOCK_ALL : OWN_BLOCK_NONE;
                log_notice("leaf %u-%08x was %s (epoch %lld, owner %u) when this owner stopped: "
                           "%s", l->bits, l->bits ? l->start >> (32 - l->bits) : 0,
                           l->state == PERSIST_HANDING_OFF ? "handing off"
                           : l->state == PERSIST_RECEIVING ? "receiving" : "gone",
                           (long long)l->e1, l->peer,
                           m->unresolved ? "not served until the map says how the move ended"
                                         : "not served");
            }
        }
        if (l->state == PERSIST_OWNED || l->state == PERSIST_HANDING_OFF)
            w->serving->leaves[k++] = *l;
    }
    w->serving->n = k;
    w->dirty = 0;
    if (w->serving->n > 0)
        log_notice("owner %u of cluster %s: %zu leaves from the stored ownership table (map "
                   "revision %lld) until the map is read", w->number, opts->cluster,
                   w->serving->n, (long long)w->serving->revision);
    return 0;
}

int owner_own_start(struct owner *o)
{
    if (o->own == NULL)
        return 0;
    poll_map(o); /* the map may be there already */
    o->own->poll = event_new(o->base, -1, EV_PERSIST, on_poll, o);
    if (o->own->poll == NULL)
        return -1;
    struct timeval tv = {0, OWN_POLL_MS * 1000};
    event_add(o->own->poll, &tv);
    return 0;
}

void owner_own_test_stop_poll(struct owner *o)
{
    if (o->own != NULL && o->own->poll != NULL)
        event_del(o->own->poll);
}

void owner_own_teardown(struct owner *o)
{
    struct owner_own *w = o->own;
    if (w == NULL)
        return;
    if (w->poll != NULL)
        event_free(w->poll);
    persist_own_free(&w->serving);
    free(w->snap);
    free(w->spare);
    free(w);
    o->own = NULL;
}

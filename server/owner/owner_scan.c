/*
 * owner_scan.c - SCAN_RANGE: the live keys of a range of positions, in
 * position order (proto/place.h), a page at a time; SCAN's owner side
 * (server/edge/edge_scan.c walks the hash space with it).
 *
 * The range is cut to the leaves this owner serves from its start on (the
 * one that holds it, and the ones after it while it serves them; only the
 * first when the page may wait for the disk): an owner answers only for
 * hash space it serves at the moment it answers (MOVED if it serves none
 * there), so a page is always an authoritative answer for [from, next),
 * whatever moved or split since the edge routed.
 *
 * A complete ledger holds every key: the page comes from its position
 * order (ledger_scan_pos) in this loop turn.  An incomplete one (keys were
 * evicted) holds only part of them, and the rest is read from SQLite by
 * the position index on the persister's reader thread (a job,
 * storage/persister.h), rows [from, upto) with upto where the read
 * stopped; the loop then merges: a resident key is what the ledger says
 * (live, deleted or expired), a key that is not resident is what its row
 * says.  A key present for the whole SCAN is resident or on disk at every
 * moment, so it is in one of the two, except when it was dirty in memory
 * as the row was read and written out and evicted before the merge: that
 * needs an eviction in between, so a merge after one reads the disk again
 * (a few times, then answers an empty page that ends where it began: the
 * edge asks again, no key skipped).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "proto/place.h"
#include "server/core/log.h"
#include "server/owner/owner_int.h"
#include "storage/persist_leaf.h"

#define SCAN_COUNT_MAX 10000     /* keys a page asks for, at most */
#define SCAN_VISITS_MAX 65536    /* entries a page may visit in the ledger */
#define SCAN_DISK_ROWS_MAX 4096  /* rows a page reads from disk */
#define SCAN_TRIES 4             /* disk reads again after an eviction, then an empty page */
#define SCAN_RUN_LEAVES 65536    /* leaves one page may span (a whole pool, split deep) */

/* A page's keys, copied (slices are built when the page is sent). */
struct keys {
    char *arena;
    size_t used, cap;
    size_t *off, *len;
    size_t n, ncap;
};

static void keys_add(const char *key, size_t klen, void *arg)
{
    struct keys *k = arg;
    if (k->ncap == SIZE_MAX || syskey_is(key, klen))
        return; /* failed already; hotkvd's own key (proto/syskey.h) */
    if (k->n == k->ncap) {
        size_t nc = k->ncap ? k->ncap * 2 : 64;
        size_t *o = realloc(k->off, nc * sizeof(*o)), *l = o ? realloc(k->len, nc * sizeof(*l)) : NULL;
        if (o != NULL)
            k->off = o;
        if (o == NULL || l == NULL)
            goto oom;
        k->len = l;
        k->ncap = nc;
    }
    if (k->used + klen > k->cap) {
        size_t c = k->cap ? k->cap : 4096;
        while (c < k->used + klen)
            c *= 2;
        char *a = realloc(k->arena, c);
        if (a == NULL)
            goto oom;
        k->arena = a;
        k->cap = c;
    }
    if (klen > 0) /* the empty key, first in a page, has no arena yet (memcpy of NULL) */
        memcpy(k->arena + k->used, key, klen);
    k->off[k->n] = k->used;
    k->len[k->n++] = klen;
    k->used += klen;
    return;
oom:
    k->ncap = SIZE_MAX; /* marks the page failed: answered ENOMEM */
}

static void keys_free(struct keys *k)
{
    free(k->arena);
    free(k->off);
    free(k->len);
    memset(k, 0, sizeof(*k));
}

/* Sends SCAN_REPLY(next, keys) or, if a key could not be kept, ERROR. */
static void send_page(struct olink *l, uint64_t id, uint64_t next, struct keys *k)
{
    if (k->ncap == SIZE_MAX) {
        wire_put_error(&l->out, id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        return;
    }
    struct wire_slice *s = k->n ? malloc(k->n * sizeof(*s)) : NULL;
    if (k->n && s == NULL) {
        wire_put_error(&l->out, id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        return;
    }
    for (size_t i = 0; i < k->n; i++)
        s[i] = wire_slice(k->arena + k->off[i], k->len[i]);
    wire_put_scan_reply(&l->out, id, next, s, (uint32_t)k->n);
    free(s);
}

/* ---- a page that needs the disk ------------------------------------------------------ */

struct row {
    uint64_t pos;
    char *key;
    size_t klen;
    struct persist_row meta;     /* stamp, expiry, tombstone: key/val unset */
};

struct scan_wait {
    struct persister_job job;     /* first: the job is the wait */
    struct owner *o;
    struct olink *link;           /* NULL once the link went */
    uint64_t id, from, to;        /* to: cut to the leaf */
    uint32_t count;
    char *match;                  /* NULL: none */
    size_t mlen;
    uint64_t evictions;           /* the ledger's count when the read was asked */
    int tries;
    /* filled on the reader thread */
    struct row *rows;
    size_t nrows, cap;
    uint64_t upto;                /* every row of [from, upto) was read */
    struct scan_wait *next;       /* o's list */
};

static int keep_row(void *arg, const struct persist_row *r, uint64_t pos)
{
    struct scan_wait *w = arg;
    if (w->nrows == w->cap) {
        size_t c = w->cap ? w->cap * 2 : 64;
        struct row *n = realloc(w->rows, c * sizeof(*n));
        if (n == NULL)
            return HKV_ENOMEM;
        w->rows = n;
        w->cap = c;
    }
    struct row *x = &w->rows[w->nrows];
    x->key = malloc(r->klen ? r->klen : 1);
    if (x->key == NULL)
        return HKV_ENOMEM;
    memcpy(x->key, r->key, r->klen);
    x->klen = r->klen;
    x->pos = pos;
    x->meta = *r;
    x->meta.key = x->meta.val = NULL;
    w->nrows++;
    return HKV_OK;
}

static void rows_free(struct scan_wait *w)
{
    for (size_t i = 0; i < w->nrows; i++)
        free(w->rows[i].key);
    w->nrows = 0;
}

/* On the reader thread: rows of [from, to) in position order, as many as
 * the page may read; upto is where every row below was read, never inside
 * a position (the rows of the last position read may go on: they are
 * dropped, unless they are all there is, then that position is read to its
 * end). */
static int run_read(struct persister_job *j, struct pdb *db)
{
    struct scan_wait *w = (struct scan_wait *)j;
    struct persist_leaf_cursor c = {0};
    size_t want = (size_t)w->count * 2 + 16;
    if (want > SCAN_DISK_ROWS_MAX)
        want = SCAN_DISK_ROWS_MAX;
    int rc = persist_leaf_page(db, w->from, w->to, &c, want, keep_row, w);
    w->upto = w->to;
    if (rc == HKV_OK && !c.done) {
        uint64_t last = c.pos;
        size_t first_last = w->nrows;
        while (first_last > 0 && w->rows[first_last - 1].pos == last)
            first_last--;
        if (first_last > 0) { /* drop the last position's rows: read again next page */
            for (size_t i = first_last; i < w->nrows; i++)
                free(w->rows[i].key);
            w->nrows = first_last;
            w->upto = last;
        } else { /* one position, many keys (a 63-bit collision): all of it */
            for (int pages = 0; rc == HKV_OK && !c.done && c.pos == last && pages < 64; pages++)
                rc = persist_leaf_page(db, w->from, w->to, &c, 256, keep_row, w);
            while (w->nrows > 0 && w->rows[w->nrows - 1].pos != last) {
                free(w->rows[w->nrows - 1].key);
                w->nrows--;
            }
            w->upto = last + 1;
        }
    }
    persist_leaf_cursor_free(&c);
    return rc;
}

static void wait_free(struct scan_wait *w)
{
    struct scan_wait **pp = &w->o->scan_waits;
    while (*pp != NULL && *pp != w)
        pp = &(*pp)->next;
    if (*pp == w)
        *pp = w->next;
    rows_free(w);
    free(w->rows);
    free(w->match);
    free(w);
}

static void read_done(struct persister_job *j);

static int ask_disk(struct scan_wait *w)
{
    struct ledger_stats ls;
    ledger_stats(w->o->ledger, &ls);
    w->evictions = ls.evictions;
    rows_free(w);
    w->job = (struct persister_job){.run = run_read, .done = read_done, .writer = 0};
    return persister_job_submit(w->o->persister, &w->job);
}

/* On the loop: the rows are read; merge them with the ledger and answer. */
static void read_done(struct persister_job *j)
{
    struct scan_wait *w = (struct scan_wait *)j;
    struct owner *o = w->o;
    if (w->link == NULL || j->status == HKV_EINVAL) { /* the edge went, or the persister */
        wait_free(w);
        return;
    }
    struct olink *l = w->link;
    if (j->status != HKV_OK) {
        wire_put_error(&l->out, w->id, HKV_EIO, wire_cstr("IOERR reading keys from disk failed"));
        olink_flush(l);
        wait_free(w);
        return;
    }
    struct ledger_stats ls;
    ledger_stats(o->ledger, &ls);
    struct keys k = {0};
    uint64_t next = w->from;
    if (ls.evictions != w->evictions) { /* a key may have left memory after its row was read */
        if (++w->tries < SCAN_TRIES && ask_disk(w) == HKV_OK)
            return;
    } else {
        struct ledger_clock now = owner_clock();
        uint64_t visits = (uint64_t)w->count * 10 > SCAN_VISITS_MAX ? SCAN_VISITS_MAX
                                                                     : (uint64_t)w->count * 10;
        next = ledger_scan_pos(o->ledger, w->from, w->upto, w->count, visits, w->match, w->mlen,
                               now, keys_add, &k);
        for (size_t i = 0; i < w->nrows && w->rows[i].pos < next; i++) {
            struct row *r = &w->rows[i];
            if (!ledger_resident(o->ledger, r->key, r->klen) &&
                ledger_row_live(o->ledger, &r->meta, now.wall_ms) &&
                (w->match == NULL || ledger_match(w->match, w->mlen, r->key, r->klen)))
                keys_add(r->key, r->klen, &k);
        }
        o->st.owner_disk_reads++;
    }
    send_page(l, w->id, next, &k);
    olink_flush(l);
    keys_free(&k);
    wait_free(w);
}

/* ---- the request -------------------------------------------------------------------------- */

/* How far the leaves from `end` on that this owner serves now reach, up to
 * `to`: a range over several of them is as authoritative as one leaf (the
 * owner serves all of it at the moment it answers), and an owner with the
 * whole pool answers an almost empty keyspace in one page instead of one
 * page per leaf. */
static uint64_t run_end(struct owner *o, uint64_t end, uint64_t to)
{
    for (uint32_t n = 0; n < SCAN_RUN_LEAVES && end < to && end < PLACE_POS_END; n++) {
        uint64_t place = place_pos_hash(end);
        int serves = o->own != NULL ? owner_own_has(o, place)
                                    : router_owner(o->router, o->pool, place) == o->index;
        if (!serves)
            break;
        uint32_t prefix;
        uint8_t bits;
        owner_leaf_of(o, place, &prefix, &bits);
        uint64_t next = place_leaf_end(bits, prefix);
        if (next <= end)
            break;
        end = next;
    }
    return end;
}

void owner_op_scan_range(struct owner *o, struct olink *l, const struct wire_msg *m)
{
    uint64_t from = m->u.scan_range.from, to = m->u.scan_range.to;
    if (to > PLACE_POS_END)
        to = PLACE_POS_END;
    if (from >= to) {
        wire_put_scan_reply(&l->out, m->id, to, NULL, 0);
        return;
    }
    uint64_t place = place_pos_hash(from);
    if (!owner_ours_place(o, l, m->id, place))
        return; /* MOVED (or TRYAGAIN) is in l->out */
    uint32_t prefix;
    uint8_t bits;
    owner_leaf_of(o, place, &prefix, &bits);
    uint64_t end = place_leaf_end(bits, prefix);
    if (ledger_is_complete(o->ledger))
        end = run_end(o, end, to); /* answered in this loop turn: every leaf is checked now */
    if (end < to)
        to = end;
    uint32_t count = m->u.scan_range.count ? m->u.scan_range.count : 10;
    if (count > SCAN_COUNT_MAX)
        count = SCAN_COUNT_MAX;
    const char *match = m->u.scan_range.has_match ? m->u.scan_range.match.p : NULL;
    size_t mlen = m->u.scan_range.has_match ? m->u.scan_range.match.len : 0;
    o->st.owner_reads++;

    if (ledger_is_complete(o->ledger)) {
        struct keys k = {0};
        uint64_t visits = (uint64_t)count * 10 > SCAN_VISITS_MAX ? SCAN_VISITS_MAX
                                                                 : (uint64_t)count * 10;
        uint64_t next = ledger_scan_pos(o->ledger, from, to, count, visits, match, mlen,
                                        owner_clock(), keys_add, &k);
        send_page(l, m->id, next, &k);
        keys_free(&k);
        return;
    }
    struct scan_wait *w = calloc(1, sizeof(*w));
    if (w == NULL || (mlen > 0 && (w->match = malloc(mlen)) == NULL)) {
        free(w);
        wire_put_error(&l->out, m->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        return;
    }
    if (match != NULL) {
        if (mlen > 0)
            memcpy(w->match, match, mlen);
        else if ((w->match = malloc(1)) == NULL) { /* MATCH "": matches only "" */
            free(w);
            wire_put_error(&l->out, m->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
            return;
        }
    }
    w->o = o;
    w->link = l;
    w->id = m->id;
    w->from = from;
    w->to = to;
    w->count = count;
    w->mlen = mlen;
    w->next = o->scan_waits;
    o->scan_waits = w;
    if (ask_disk(w) != HKV_OK) {
        wire_put_error(&l->out, m->id, HKV_EAGAIN, wire_cstr("TRYAGAIN the owner is stopping"));
        wait_free(w);
    }
}

void owner_scan_forget_link(struct owner *o, struct olink *l)
{
    for (struct scan_wait *w = o->scan_waits; w != NULL; w = w->next)
        if (w->link == l)
            w->link = NULL;
}

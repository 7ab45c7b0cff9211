/*
 * owner_diskwait.c - requests that wait for the disk: a read of a key held
 * on disk only (owner_park: one persister read per key, every request on the
 * key behind it) and a read of a durable key not committed yet
 * (owner_park_commit: run again after the next durable commit).  A parked
 * request is kept as its frame and run again through the replay callback
 * given to owner_persist_setup, in arrival order; this layer holds requests
 * without knowing what they mean.  owner_persist.c calls in when the
 * persister has answered (owner_diskwait_take_reads) and when a durable
 * batch has committed (owner_diskwait_commit_done).
 */
#include <stdlib.h>
#include <string.h>

#include "server/owner/owner.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_repl.h"

static void replay(struct owner *o, struct parked *p, int status)
{
    if (p->link == NULL)
        return;
    struct wire_msg m;
    const char *why;
    if (status != HKV_OK && status != HKV_ENOENT) {
        if (wire_decode(&o->dec, p->payload, p->plen, &m, &why) == HKV_OK)
            wire_put_error(&p->link->out, m.id, HKV_EIO, wire_cstr("IOERR reading the key from disk failed"));
    } else if (wire_decode(&o->dec, p->payload, p->plen, &m, &why) == HKV_OK) {
        o->replay(o, p->link, &m, p->payload, p->plen);
    }
    olink_flush(p->link);
}

static void parked_free(struct parked *p)
{
    free(p->payload);
    free(p->key);
    free(p);
}

static int same_key(const struct parked *p, const char *key, size_t klen)
{
    return p->klen == klen && (klen == 0 || memcmp(p->key, key, klen) == 0);
}

/* Takes every disk wait on key off the list (keeping arrival order) and
 * replays them; a replay that parks again goes to the tail. */
static void replay_key(struct owner *o, const char *key, size_t klen, int status)
{
    struct parked *run = NULL, **rt = &run;
    struct parked **pp = &o->parked, *prev = NULL;
    while (*pp != NULL) {
        struct parked *p = *pp;
        if (same_key(p, key, klen)) {
            *pp = p->next;
            p->next = NULL;
            *rt = p;
            rt = &p->next;
        } else {
            prev = p;
            pp = &p->next;
        }
    }
    o->parked_tail = prev;
    while (run != NULL) {
        struct parked *next = run->next;
        replay(o, run, status);
        parked_free(run);
        run = next;
    }
}

void owner_diskwait_take_reads(struct owner *o)
{
    struct persister_read *r = persister_take_reads(o->persister);
    struct ledger_clock now = owner_clock();
    while (r != NULL) {
        struct persister_read *next = r->next;
        struct parked *p = r->cookie;
        o->st.owner_disk_reads++;
        if (r->status == HKV_OK) {
            struct persist_row row = {r->key, r->klen, r->val, r->vlen, r->stamp, r->expire_at_ms,
                                      r->class_id, r->tombstone, };
            /* resident now: a leaf being copied sends it (owner_copy.c skips
             * the file rows of resident keys) */
            if (ledger_load(o->ledger, &row, now) == HKV_OK)
                owner_move_applied(o, r->key, r->klen);
        } else if (r->status == HKV_ENOENT) {
            ledger_load_absent(o->ledger, r->key, r->klen, now);
        }
        /* Every request parked on this key, in arrival order, runs now: a
         * key's requests are applied in the order they came, so none may
         * pass one that still waits for this same read. */
        replay_key(o, p->key, p->klen, r->status);
        persister_read_free(&r);
        r = next;
    }
}

/* Runs the reads that waited for a durable commit (they park again if the
 * key is still not committed). */
void owner_diskwait_commit_done(struct owner *o)
{
    struct parked *p = o->commit_parked, *fifo = NULL;
    o->commit_parked = NULL;
    /* Parked newest first: run them in the order they arrived, since the
     * owner orders a key's writes by arrival (a request parked again goes
     * back on the list, still in order). */
    while (p != NULL) {
        struct parked *next = p->next;
        p->next = fifo;
        fifo = p;
        p = next;
    }
    p = fifo;
    while (p != NULL) {
        struct parked *next = p->next;
        replay(o, p, HKV_OK);
        free(p->payload);
        free(p);
        p = next;
    }
}


void owner_park_commit(struct owner *o, struct olink *l, const char *payload, size_t plen)
{
    struct parked *p = calloc(1, sizeof(*p));
    char *copy = malloc(plen ? plen : 1);
    if (p == NULL || copy == NULL) {
        free(p);
        free(copy);
        struct wire_msg m;
        const char *why;
        if (wire_decode(&o->dec, payload, plen, &m, &why) == HKV_OK)
            wire_put_error(&l->out, m.id, HKV_ENOMEM, wire_cstr("OOM cannot wait for a commit"));
        return;
    }
    memcpy(copy, payload, plen);
    p->link = l;
    p->payload = copy;
    p->plen = plen;
    p->next = o->commit_parked;
    o->commit_parked = p;
    /* The key may be dirty with no write waiting for it (a swept expiry, a
     * waiter that gave up): make sure a durable batch is cut. */
    o->durable_orphans = 1;
    if (o->durable_inflight == 0)
        event_active(o->flush_now, EV_TIMEOUT, 0);
}

void owner_park(struct owner *o, struct olink *l, const char *key, size_t klen,
                const char *payload, size_t plen)
{
    struct parked *p = calloc(1, sizeof(*p));
    char *copy = malloc(plen ? plen : 1);
    char *kcopy = malloc(klen ? klen : 1);
    /* One read per key: a request behind another on the same key waits for
     * that read and runs right after it (replay_key). */
    int reading = 0;
    for (struct parked *x = o->parked; x != NULL && !reading; x = x->next)
        reading = x->reading && same_key(x, key, klen);
    if (p == NULL || copy == NULL || kcopy == NULL ||
        (!reading && persister_read_async(o->persister, key, klen, p) != HKV_OK)) {
        free(p);
        free(copy);
        free(kcopy);
        struct wire_msg m;
        const char *why;
        if (wire_decode(&o->dec, payload, plen, &m, &why) == HKV_OK)
            wire_put_error(&l->out, m.id, HKV_ENOMEM, wire_cstr("OOM cannot queue a disk read"));
        return;
    }
    memcpy(copy, payload, plen);
    memcpy(kcopy, key, klen);
    p->link = l;
    p->payload = copy;
    p->plen = plen;
    p->key = kcopy;
    p->klen = klen;
    p->reading = !reading;
    if (o->parked_tail != NULL)
        o->parked_tail->next = p;
    else
        o->parked = p;
    o->parked_tail = p;
}

void owner_forget_link(struct owner *o, struct olink *l)
{
    owner_tickets_forget_link(o, l);
    owner_repl_forget_link(o, l);
    for (struct parked *p = o->parked; p != NULL; p = p->next)
        if (p->link == l)
            p->link = NULL;
    for (struct parked *p = o->commit_parked; p != NULL; p = p->next)
        if (p->link == l)
            p->link = NULL;
    owner_park_forget_link(o, l);
}

void owner_diskwait_free(struct owner *o)
{
    struct parked **lists[] = {&o->parked, &o->commit_parked};
    for (size_t i = 0; i < 2; i++)
        while (*lists[i] != NULL) {
            struct parked *p = *lists[i];
            *lists[i] = p->next;
            parked_free(p);
        }
    o->parked_tail = NULL;
}

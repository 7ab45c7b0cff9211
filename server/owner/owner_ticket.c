/*
 * owner_ticket.c - commit tickets: the replies of durable writes held until
 * every durable key the write changed is in a committed durable batch
 * (owner_int.h struct ticket).  A ticket is made when the write applies; the
 * original request and any retry of it (owner_rifl.h names the ticket) wait
 * on it; a waiter that passes durable-timeout, or whose commit failed, is
 * answered "outcome unknown" and leaves while the ticket stays until its
 * keys are committed.  When a ticket completes, its keys are pushed to the
 * colos: nobody sees a durable write before its commit.
 *
 * FLUSHALL's ticket names no key: it waits for the flush batch (a durable
 * batch with flush_below) to commit.  That commit also completes every key
 * of any ticket written below the flush's version: such a key may never be
 * in a batch again (the flush dropped it from the ledger before a batch
 * took it), and the flush, now on disk, is what a crash would recover.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/owner/owner.h"
#include "server/owner/owner_int.h"

static int64_t mono_ms(void)
{
    return (int64_t)owner_clock().mono_ms;
}

static void free_waiter(struct dwait *w)
{
    buf_deinit(&w->reply);
    free(w);
}

static void fail_waiters(struct ticket *t, int code, const char *text)
{
    while (t->waiters != NULL) {
        struct dwait *w = t->waiters;
        t->waiters = w->next;
        if (w->link != NULL) {
            wire_put_error(&w->link->out, w->id, code, wire_cstr(text));
            olink_flush(w->link);
        }
        free_waiter(w);
    }
}

static void free_ticket(struct ticket *t)
{
    while (t->waiters != NULL) {
        struct dwait *w = t->waiters;
        t->waiters = w->next;
        free_waiter(w);
    }
    for (size_t i = 0; i < t->nkeys; i++)
        free(t->keys[i].key);
    free(t->keys);
    free(t);
}

/* A flush batch finished: see owner_tickets_settle.  Returns 1 if it
 * touched t. */
static int settle_flush(struct ticket *t, const struct persist_batch *b)
{
    int touched = t->flush != 0 && t->flush <= b->flush_below;
    if (b->status != HKV_OK)
        return touched;
    if (touched)
        t->flush = 0;
    for (size_t k = 0; k < t->nkeys; k++) {
        struct tkey *tk = &t->keys[k];
        if (!tk->done && tk->version < b->flush_below) {
            tk->done = 1;
            t->left--;
            touched = 1;
        }
    }
    return touched;
}

void owner_tickets_settle(struct owner *o, const struct persist_batch *b)
{
    uint64_t *h = malloc((b->n ? b->n : 1) * sizeof(uint64_t));
    if (h == NULL)
        return; /* the waiters time out explicitly; the keys stay dirty */
    for (size_t i = 0; i < b->n; i++)
        h[i] = router_hash(b->rows[i].key, b->rows[i].klen);
    struct ticket **pp = &o->tickets;
    while (*pp != NULL) {
        struct ticket *t = *pp;
        int touched = b->flush_below != 0 && settle_flush(t, b);
        for (size_t k = 0; k < t->nkeys; k++) {
            struct tkey *tk = &t->keys[k];
            if (tk->done)
                continue;
            for (size_t i = 0; i < b->n; i++)
                if (h[i] == tk->khash && b->rows[i].klen == tk->klen &&
                    memcmp(b->rows[i].key, tk->key, tk->klen) == 0 &&
                    b->rows[i].stamp >= tk->version) {
                    touched = 1;
                    if (b->status == HKV_OK) {
                        tk->done = 1;
                        t->left--;
                    }
                    break;
                }
        }
        if (touched && b->status == HKV_EFULL)
            fail_waiters(t, HKV_EFULL, "MISCONF disk full: the durable write is applied in memory "
                                       "but not committed (outcome unknown)");
        else if (touched && b->status != HKV_OK)
            fail_waiters(t, HKV_EIO, "IOERR the durable write is applied in memory but its "
                                     "commit failed (outcome unknown)");
        if (t->left == 0 && t->flush == 0) {
            for (size_t k = 0; k < t->nkeys; k++) /* now the colos may see it */
                owner_push(o, t->keys[k].key, t->keys[k].klen, t->keys[k].version);
            for (struct dwait *w = t->waiters; w != NULL; w = w->next)
                if (w->link != NULL) {
                    buf_append(&w->link->out, buf_head(&w->reply), buf_unread(&w->reply));
                    olink_flush(w->link);
                }
            *pp = t->next;
            free_ticket(t);
        } else {
            pp = &t->next;
        }
    }
    free(h);
}

void owner_tickets_expire(struct owner *o)
{
    int64_t now = mono_ms();
    for (struct ticket *t = o->tickets; t != NULL; t = t->next) {
        struct dwait **pp = &t->waiters;
        while (*pp != NULL) {
            struct dwait *w = *pp;
            if (w->deadline_ms > now) {
                pp = &w->next;
                continue;
            }
            *pp = w->next;
            o->st.owner_durable_timeouts++;
            o->durable_orphans = 1; /* still dirty: the tick commits it later */
            if (w->link != NULL) {
                wire_put_error(&w->link->out, w->id, HKV_ETIMEDOUT,
                               wire_cstr("TIMEOUT the durable write is applied in memory but was "
                                         "not committed within durable-timeout (outcome unknown)"));
                olink_flush(w->link);
            }
            free_waiter(w);
        }
    }
}

uint64_t owner_ticket_flush(struct owner *o, hkv_stamp floor)
{
    struct ticket *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return 0;
    t->flush = floor;
    t->id = ++o->next_ticket;
    t->next = o->tickets;
    o->tickets = t;
    return t->id;
}

uint64_t owner_ticket_new(struct owner *o, const struct wire_slice *keys, size_t n,
                          hkv_stamp version)
{
    struct ticket *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->keys = calloc(n ? n : 1, sizeof(*t->keys))) == NULL) {
        free(t);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        struct tkey *tk = &t->keys[i];
        tk->key = malloc(keys[i].len ? keys[i].len : 1);
        if (tk->key == NULL) {
            free_ticket(t);
            return 0;
        }
        memcpy(tk->key, keys[i].p, keys[i].len);
        tk->klen = keys[i].len;
        tk->khash = router_hash(keys[i].p, keys[i].len);
        tk->version = version;
        t->nkeys++;
    }
    t->left = t->nkeys;
    t->id = ++o->next_ticket;
    t->next = o->tickets;
    o->tickets = t;
    event_active(o->flush_now, EV_TIMEOUT, 0);
    return t->id;
}

int owner_ticket_wait(struct owner *o, uint64_t id, struct olink *l, uint64_t req,
                      struct hkv_buf *reply)
{
    struct ticket *t = o->tickets;
    while (t != NULL && t->id != id)
        t = t->next;
    if (t == NULL)
        return -1;
    struct dwait *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        buf_deinit(reply);
        wire_put_error(&l->out, req, HKV_ENOMEM,
                       wire_cstr("OOM owner out of memory (outcome unknown)"));
        return 0;
    }
    w->link = l;
    w->id = req;
    w->deadline_ms = mono_ms() + o->opts.durable_timeout_ms;
    w->reply = *reply;
    *reply = (struct hkv_buf)HKV_BUF_INIT;
    w->next = t->waiters;
    t->waiters = w;
    event_active(o->flush_now, EV_TIMEOUT, 0);
    return 0;
}


void owner_tickets_forget_link(struct owner *o, struct olink *l)
{
    for (struct ticket *t = o->tickets; t != NULL; t = t->next)
        for (struct dwait *w = t->waiters; w != NULL; w = w->next)
            if (w->link == l)
                w->link = NULL;
}

size_t owner_tickets_waiting(const struct owner *o)
{
    size_t n = 0;
    for (const struct ticket *t = o->tickets; t != NULL; t = t->next)
        for (const struct dwait *w = t->waiters; w != NULL; w = w->next)
            n++;
    return n;
}

void owner_tickets_free(struct owner *o)
{
    while (o->tickets != NULL) {
        struct ticket *t = o->tickets;
        o->tickets = t->next;
        free_ticket(t);
    }
}

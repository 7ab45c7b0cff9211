/*
 * edge_reply.c - reply slots: replies leave in request order although owners
 * answer later and out of order (edge_reply.h).
 *
 * A connection keeps a FIFO of slots only while some reply is owed.  With the
 * FIFO empty (the common case: one request at a time), a handler writes
 * straight into c->out and nothing here costs anything.  Once a request
 * waits for an owner (slot_defer), every later request gets a slot of its
 * own: a handler that answers at once fills it at once, an owner's answer
 * fills its slot when it comes.  The head slot's answer is written straight
 * into c->out (no copy); the others are copied when they reach the head.
 *
 * This module only moves bytes between buffers; whether to write to the
 * socket or read more is the connection layer's decision (conn_slot_done),
 * which keeps it below edge_conn.c.  A client that goes away frees its slots
 * at once; its ops are told by the connection's closing hook and drop their
 * answers, so nothing ever points at a freed slot.
 */
#include "server/edge/edge_reply.h"

#include "server/edge/edge_conn_int.h"

#include <stdlib.h>

#define SLOT_KEEP 4096

static struct rslot *slot_new(struct edge *e)
{
    struct rslot *s = conns_st(e)->free_slots;
    if (s != NULL) {
        conns_st(e)->free_slots = s->next;
    } else {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return NULL;
    }
    s->next = NULL;
    s->ready = 0;
    s->partial = 0;
    s->mute = 0;
    s->counted = 0;
    return s;
}

static void slot_free(struct edge *e, struct rslot *s)
{
    buf_reset(&s->buf);
    buf_shrink(&s->buf, SLOT_KEEP);
    s->next = conns_st(e)->free_slots;
    conns_st(e)->free_slots = s;
}

struct rslot *slot_push(struct conn *c)
{
    struct rslot *s = slot_new(c->e);
    if (s == NULL)
        return NULL;
    if (c->sq_tail != NULL)
        c->sq_tail->next = s;
    else
        c->sq_head = s;
    c->sq_tail = s;
    c->nslots++;
    return s;
}

struct rslot *slot_defer(struct conn *c)
{
    if (c->cur == NULL) {
        /* Nothing was owed: this request's slot is the head. */
        c->cur = slot_push(c);
        if (c->cur == NULL)
            return NULL;
    }
    c->cur_deferred = 1;
    return c->cur;
}

struct hkv_buf *slot_out(struct conn *c, struct rslot *s)
{
    /* During dispatch c->out is the current slot's buffer (or the real
     * output when it is the head); the head's answer goes straight out. */
    if (s == c->cur || (s == c->sq_head && !s->mute))
        return &c->out;
    return &s->buf;
}

void slot_note(struct conn *c, struct rslot *s)
{
    /* During its dispatch s->buf holds the real output (edge_conn.c's
     * swap): the dispatch's end measures it. */
    if (s == c->cur)
        return;
    size_t n = buf_unread(&s->buf);
    c->held = c->held - s->counted + n;
    s->counted = n;
}

struct hkv_buf *slot_tail_out(struct conn *c, struct rslot **sp)
{
    struct rslot *t = c->sq_tail;
    *sp = NULL;
    if (t == NULL)
        return &c->out;
    if (t == c->cur) {
        /* c is being dispatched: the bytes precede the reply it computes
         * (they were due before it ran), so they go just before its slot. */
        struct rslot *n = slot_new(c->e), **pp = &c->sq_head;
        if (n == NULL)
            return NULL;
        while (*pp != t)
            pp = &(*pp)->next;
        n->next = t;
        *pp = n;
        c->nslots++;
        n->ready = 1;
        t = n;
    } else if (!t->ready || t->partial || t->mute) {
        if ((t = slot_push(c)) == NULL)
            return NULL;
        t->ready = 1;
    }
    *sp = t;
    return &t->buf;
}

/* Moves every finished reply at the head into c->out. */
static void pump(struct conn *c)
{
    struct rslot *s;
    while ((s = c->sq_head) != NULL && s->ready && s != c->cur) {
        if (buf_unread(&s->buf) > 0 && !s->mute)
            buf_append(&c->out, buf_head(&s->buf), buf_unread(&s->buf));
        c->held -= s->counted;
        c->sq_head = s->next;
        if (c->sq_head == NULL)
            c->sq_tail = NULL;
        c->nslots--;
        slot_free(c->e, s);
    }
    /* A stream now at the head: what it wrote behind the others goes first. */
    if (s != NULL && s->partial && !s->ready && s != c->cur && buf_unread(&s->buf) > 0) {
        buf_append(&c->out, buf_head(&s->buf), buf_unread(&s->buf));
        buf_reset(&s->buf);
        c->held -= s->counted;
        s->counted = 0;
    }
}

int slot_ready(struct conn *c, struct rslot *s)
{
    s->ready = 1;
    if (s == c->cur) {
        c->cur_deferred = 0; /* answered before its handler returned */
        return 0;
    }
    slot_note(c, s);
    pump(c);
    return 1;
}

void slots_after_dispatch(struct conn *c, struct rslot *s)
{
    c->cur = NULL;
    if (!c->cur_deferred)
        s->ready = 1;
    c->cur_deferred = 0;
    slot_note(c, s);
    pump(c);
}

void slots_release(struct conn *c)
{
    struct rslot *s = c->sq_head;
    while (s != NULL) {
        struct rslot *next = s->next;
        slot_free(c->e, s);
        s = next;
    }
    c->sq_head = c->sq_tail = NULL;
    c->nslots = 0;
    c->held = 0; /* the layers above forgot theirs in the closing hook */
}

void slots_teardown(struct conns_state *st)
{
    while (st->free_slots != NULL) {
        struct rslot *s = st->free_slots;
        st->free_slots = s->next;
        buf_deinit(&s->buf);
        free(s);
    }
}

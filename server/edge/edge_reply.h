/*
 * edge_reply.h - reply slots: replies leave in request order although owners
 * answer later and out of order.  Below the connection layer: it moves
 * finished replies into c->out and never writes to the socket (the caller,
 * edge_conn.c, decides when to flush or resume).
 *
 * While nothing is owed a request writes straight into c->out and slots cost
 * nothing.  Once one request waits (slot_defer), every later one gets a slot
 * of its own; dispatch points c->out at the current slot's buffer while the
 * request runs, so handlers never need to know.  Slots come from a per-edge
 * freelist and keep a little storage.  A streaming reply (partial) never
 * becomes ready until it ends; what it wrote while it waited behind earlier
 * replies goes out the moment it reaches the head, and from then on
 * slot_out gives it c->out itself.
 *
 * Accounting.  The bytes in slots' own buffers are in c->held, so the
 * output limits see them (edge_conn.h): measured when a dispatch ends,
 * when a slot is answered, and by slot_note for a writer that adds to a
 * slot without answering it (a stream behind other replies).
 */
#ifndef HKV_EDGE_REPLY_H
#define HKV_EDGE_REPLY_H

#include <stdint.h>

#include "proto/buf.h"
#include "server/edge/edge_conn.h"

struct rslot {
    struct rslot *next;
    struct hkv_buf buf;
    size_t counted;               /* bytes of buf in c->held (slot_note) */
    uint8_t ready;
    uint8_t partial;              /* a stream: its bytes leave as soon as it is the head,
                                   * before it is ready (an HTTP watch, edge_http_watch.c) */
    uint8_t mute;                 /* CLIENT REPLY OFF or SKIP: its bytes never leave */
};

/* A new slot at the tail of c's queue; NULL on allocation failure.  A muted
 * request always gets one (edge_conn.c), so even an answer written while
 * it is the head lands in its own buffer and is dropped there. */
struct rslot *slot_push(struct conn *c);
/* The slot of the request being dispatched, kept for a later answer (made
 * now if nothing was owed); NULL on allocation failure. */
struct rslot *slot_defer(struct conn *c);
/* Where s's answer is written: c->out for the head (no copy), else its own
 * buffer. */
struct hkv_buf *slot_out(struct conn *c, struct rslot *s);
/* Bytes were written into slot_out(c, s) without answering s (a stream):
 * c->held is brought up to date. */
void slot_note(struct conn *c, struct rslot *s);
/* Where bytes that must follow every reply owed now go (MONITOR's lines,
 * invalidations): c->out when none is owed, else the last slot when it is
 * answered already, else a new answered slot at the tail; while c itself
 * is being dispatched, a new answered slot just before the one of the
 * request being run (its reply is computed after the bytes were due).  *sp is that slot (NULL:
 * c->out), for slot_note once written; NULL on allocation failure. */
struct hkv_buf *slot_tail_out(struct conn *c, struct rslot **sp);
/* s is answered: finished replies at the head move to c->out.  Returns 0
 * when s is the request being dispatched (its dispatch ends it), 1 when the
 * caller should now flush. */
int slot_ready(struct conn *c, struct rslot *s);
/* Ends the dispatch of the request whose slot is s (edge_conn.c). */
void slots_after_dispatch(struct conn *c, struct rslot *s);
/* Frees every slot of c (it is closing). */
void slots_release(struct conn *c);
/* Frees the connection layer's slot freelist (conns_teardown). */
struct conns_state;
void slots_teardown(struct conns_state *st);

#endif

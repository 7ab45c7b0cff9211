/*
 * edge_pubsub_deliver.c - pub/sub's messages on an edge (edge_pubsub.h):
 * reading the colo's bus while this edge holds subscribers, writing each
 * record to the subscribers it reaches in their protocol's framing, and
 * pubsub_send_to_client.
 *
 * A message is written after every reply the subscriber is owed
 * (slot_tail_out, as MONITOR's lines), and the subscribers written to are
 * flushed at the end of each read: past client-output-buffer-limit pubsub
 * the flush closes them, so a subscriber that does not read holds at most
 * its limit plus one read's worth (a bus, at most) of the edge's memory.
 *
 * Lost records (the bus lapped this edge, or a writer died inside a record
 * and PENDING_MAX_MS passed): every subscriber of this edge may have missed
 * a message, and each is closed (counted: pubsub_bus_losses,
 * pubsub_lost_closed), as Redis closes a subscriber rather than drop
 * a message silently.
 */
#include <stdlib.h>
#include <string.h>

#include "server/colo/bus.h"
#include "server/colo/segment.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_pubsub_int.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

#define PENDING_MAX_MS 50

uint64_t ps_hash(const char *p, size_t n)
{
    return seg_sum_bytes(0x7073, p, n);
}

struct ps_entry *ps_channel(struct edge_pubsub *ps, const char *p, size_t n)
{
    uint64_t h = ps_hash(p, n);
    for (struct ps_entry *x = ps->chans[h % PS_BUCKETS]; x != NULL; x = x->next)
        if (x->hash == h && x->len == n && memcmp(x->name, p, n) == 0)
            return x;
    return NULL;
}

int pubsub_active(const struct conn *c)
{
    const struct pubsub_sess *p = sess_of(c)->pubsub;
    return p != NULL && p->nch + p->npat > 0;
}

void ps_write_message(struct conn *c, const char *pat, size_t plen, const char *ch, size_t clen,
                      const char *msg, size_t mlen, int raw)
{
    struct rslot *s = NULL;
    struct hkv_buf *o = slot_tail_out(c, &s);
    if (o == NULL)
        return;
    int proto = sess_of(c)->proto;
    buf_printf(o, "%c%d\r\n", proto == 3 ? '>' : '*', pat != NULL ? 4 : 3);
    if (pat != NULL) {
        resp_add_bulk(o, "pmessage", 8);
        resp_add_bulk(o, pat, plen);
    } else {
        resp_add_bulk(o, "message", 7);
    }
    resp_add_bulk(o, ch, clen);
    if (raw)
        buf_append(o, msg, mlen);
    else
        resp_add_bulk(o, msg, mlen);
    if (s != NULL)
        slot_note(c, s);
    board_add(&c->e->stats->pubsub_messages_delivered, 1);
}

void ps_deliver(struct edge *e, const char *ch, size_t clen, const char *msg, size_t mlen)
{
    struct edge_pubsub *ps = e->pubsub;
    struct ps_entry *x = ps_channel(ps, ch, clen);
    for (size_t i = 0; x != NULL && i < x->nsubs; i++)
        ps_write_message(x->subs[i], NULL, 0, ch, clen, msg, mlen, 0);
    for (struct ps_entry *p = ps->pats; p != NULL; p = p->next)
        if (bus_glob_match(p->name, p->len, ch, clen))
            for (size_t i = 0; i < p->nsubs; i++)
                ps_write_message(p->subs[i], p->name, p->len, ch, clen, msg, mlen, 0);
}

static struct conn *local_client(struct edge *e, uint64_t id)
{
    for (struct conn *c = e->conns->list; c != NULL; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

/* Sends what the reads wrote: a subscriber over its limit is closed here. */
static void flush_subscribers(struct edge *e)
{
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (c->pubsub_limits && conn_held(c) > 0)
            conn_flush(c);
        c = next;
    }
}

static void close_subscribers(struct edge *e, const char *why)
{
    board_add(&e->stats->pubsub_bus_losses, 1);
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (pubsub_active(c)) {
            log_verbose("client %s: subscriber closed: %s", c->addr, why);
            board_add(&e->stats->pubsub_lost_closed, 1);
            conn_close(c); /* its closing hook calls pubsub_conn_gone */
        }
        c = next;
    }
}

static void on_record(void *arg, const struct bus_msg *m)
{
    struct edge *e = arg;
    if (m->target != 0) {
        struct conn *c = local_client(e, m->target);
        /* Redis's RESP2 redirect reaches a client in subscribed mode only */
        if (c != NULL && (pubsub_active(c) || sess_of(c)->proto == 3))
            ps_write_message(c, NULL, 0, m->channel, m->clen, m->msg, m->mlen,
                             (m->flags & BUS_F_RAW) != 0);
        return;
    }
    ps_deliver(e, m->channel, m->clen, m->msg, m->mlen);
}

static void scan(struct edge *e)
{
    struct edge_pubsub *ps = e->pubsub;
    for (int round = 0; round < 4 && ps->armed; round++) {
        int rc = bus_read(ps->bus, &ps->cursor, on_record, e);
        if (rc == BUS_OK) {
            ps->pending_since = 0;
            break;
        }
        if (rc == BUS_LOST) {
            close_subscribers(e, "the pub/sub bus lost messages (this edge fell a whole "
                                 "pubsub-bus-size behind)");
            continue;
        }
        int64_t now = clock_mono_ms();
        if (ps->pending_since == 0 || ps->pending_at != ps->cursor) {
            ps->pending_at = ps->cursor;
            ps->pending_since = now;
        } else if (now - ps->pending_since >= PENDING_MAX_MS) {
            bus_skip(ps->bus, &ps->cursor); /* its writer died inside it */
            ps->pending_since = 0;
            close_subscribers(e, "a pub/sub bus record was never finished");
            continue;
        }
        struct timeval tv = {0, 1000};
        evtimer_add(ps->retry, &tv);
        break;
    }
    flush_subscribers(e);
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    bus_ack(e->pubsub->bus);
    if (e->pubsub->armed)
        scan(e);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    if (e->pubsub->armed)
        scan(e);
}

void ps_arm(struct edge *e, int on)
{
    struct edge_pubsub *ps = e->pubsub;
    if (ps->signal == NULL)
        return; /* no bus: PUBLISH writes to this edge's subscribers itself */
    if (on && !ps->armed) {
        /* from the head: a subscriber gets what is published after it subscribed */
        ps->cursor = bus_arm(ps->bus, 1);
        ps->armed = 1;
        ps->pending_since = 0;
    } else if (!on && ps->armed) {
        bus_arm(ps->bus, 0);
        ps->armed = 0;
    }
}

int ps_bus_setup(struct edge *e)
{
    struct edge_pubsub *ps = e->pubsub;
    int fd = bus_fd(ps->bus);
    if (fd < 0)
        return 0;
    ps->retry = evtimer_new(e->base, on_retry, e);
    ps->signal = event_new(e->base, fd, EV_READ | EV_PERSIST, on_signal, e);
    if (ps->retry == NULL || ps->signal == NULL || event_add(ps->signal, NULL) != 0)
        return -1;
    return 0;
}

void ps_bus_teardown(struct edge *e)
{
    struct edge_pubsub *ps = e->pubsub;
    if (ps->signal != NULL)
        event_free(ps->signal);
    if (ps->retry != NULL)
        event_free(ps->retry);
    ps->signal = ps->retry = NULL;
    if (ps->armed)
        bus_arm(ps->bus, 0);
    ps->armed = 0;
}

int pubsub_send_to_client(struct edge *e, uint64_t client_id, const char *channel, size_t clen,
                          const char *raw_resp, size_t rlen)
{
    struct conn *c = local_client(e, client_id);
    if (c != NULL) {
        ps_write_message(c, NULL, 0, channel, clen, raw_resp, rlen, 1);
        conn_flush(c); /* over its output limit it is closed */
        return HKV_OK;
    }
    struct bus *bus = e->pubsub != NULL ? e->pubsub->bus : NULL;
    if (bus == NULL || e->ctx == NULL)
        return HKV_ENOENT;
    int rc = bus_publish(bus, client_id, BUS_F_RAW, channel, clen, raw_resp, rlen);
    return rc == HKV_ETOOBIG ? HKV_EFULL : rc == HKV_OK ? HKV_OK : HKV_ENOENT;
}

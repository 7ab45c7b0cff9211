/*
 * edge_monitor.c - MONITOR (edge_monitor.h): this edge's writer side of its
 * ring, and the reader that feeds this edge's MONITOR clients.
 */
#include "server/edge/edge_monitor.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

#define POLL_MS 10
#define LINE_MAX_BYTES (64u * 1024)

/* Redis's sdscatrepr. */
static void repr(struct hkv_buf *b, const char *p, size_t n)
{
    buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        switch (ch) {
        case '\\': buf_append(b, "\\\\", 2); break;
        case '"': buf_append(b, "\\\"", 2); break;
        case '\n': buf_append(b, "\\n", 2); break;
        case '\r': buf_append(b, "\\r", 2); break;
        case '\t': buf_append(b, "\\t", 2); break;
        case '\a': buf_append(b, "\\a", 2); break;
        case '\b': buf_append(b, "\\b", 2); break;
        default:
            if (isprint(ch))
                buf_append(b, p + i, 1);
            else
                buf_printf(b, "\\x%02x", ch);
        }
    }
    buf_append(b, "\"", 1);
}

static void ring_write(struct board_ring *r, uint64_t head, const void *p, size_t n)
{
    size_t at = (size_t)(head % BOARD_RING);
    size_t first = n < BOARD_RING - at ? n : BOARD_RING - at;
    memcpy(r->data + at, p, first);
    memcpy(r->data, (const char *)p + first, n - first);
}

static void ring_read(const struct board_ring *r, uint64_t from, void *p, size_t n)
{
    size_t at = (size_t)(from % BOARD_RING);
    size_t first = n < BOARD_RING - at ? n : BOARD_RING - at;
    memcpy(p, r->data + at, first);
    memcpy((char *)p + first, r->data, n - first);
}

/* This edge's MONITOR state (e->monitor), made the first time a line is
 * fed or a client asks. */
struct edge_monitor {
    int n;                        /* this edge's MONITOR clients */
    struct event *timer;          /* reads the rings while n > 0 */
    uint64_t *pos;                /* per slot: the ring position read up to */
    struct hkv_buf line;          /* the line being written */
    struct hkv_buf in;            /* lines being read */
};

static struct edge_monitor *mon_of(struct edge *e)
{
    if (e->monitor == NULL)
        e->monitor = calloc(1, sizeof(*e->monitor));
    return e->monitor;
}

void monitor_feed(struct conn *c, int argc, const struct resp_slice *argv, int admin)
{
    struct edge *e = c->e;
    if (admin || mon_of(e) == NULL)
        return;
    struct hkv_buf *b = &e->monitor->line;
    buf_reset(b);
    int64_t us = clock_unix_us();
    buf_printf(b, "+%lld.%06lld [0 %s]", (long long)(us / 1000000), (long long)(us % 1000000),
               c->addr);
    /* AUTH's arguments, and the two after HELLO's AUTH, are credentials */
    int auth = edge_arg_is(&argv[0], "auth"), r1 = -1;
    for (int j = 2; edge_arg_is(&argv[0], "hello") && j + 2 < argc && r1 < 0; j++)
        if (edge_arg_is(&argv[j], "auth"))
            r1 = j + 1;
    for (int i = 0; i < argc; i++) {
        buf_append(b, " ", 1);
        if (i > 0 && (auth || i == r1 || i == r1 + 1))
            repr(b, "(redacted)", 10);
        else
            repr(b, argv[i].p, argv[i].len);
        if (buf_unread(b) > LINE_MAX_BYTES) {
            b->len = b->off + LINE_MAX_BYTES;
            buf_append(b, " ...", 4);
            break;
        }
    }
    buf_append(b, "\r\n", 2);
    struct board_ring *r = board_ring(e->ctx->board, (uint32_t)e->ctx->slot);
    uint32_t n = (uint32_t)buf_unread(b);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    ring_write(r, head, &n, sizeof(n));
    ring_write(r, head + sizeof(n), buf_head(b), n);
    atomic_store_explicit(&r->head, head + sizeof(n) + n, memory_order_release);
}

/* ---- the reader ---------------------------------------------------------------- */

/* Every local MONITOR client gets bytes p[0..n), after the replies it is
 * owed (a MONITOR pipelined behind a slow read: the lines must not overtake
 * its answer), counted against its output limits wherever they wait. */
static void deliver(struct edge *e, const char *p, size_t n)
{
    for (struct conn *c = e->conns->list; c != NULL; c = c->next) {
        struct rslot *s;
        struct hkv_buf *o = sess_of(c)->monitor ? slot_tail_out(c, &s) : NULL;
        if (o == NULL)
            continue;
        buf_append(o, p, n);
        if (s != NULL)
            slot_note(c, s);
    }
}

/* Every local MONITOR client is closed (this edge lost lines of a ring). */
static void close_monitors(struct edge *e, const char *why)
{
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (sess_of(c)->monitor) {
            log_verbose("client %s: MONITOR closed: %s", c->addr, why);
            conn_close(c); /* its closing hook calls monitor_stop */
        }
        c = next;
    }
}

/* New records of slot s's ring since the last look.  0, or -1 (lapped). */
static int read_ring(struct edge *e, uint32_t s)
{
    struct board_ring *r = board_ring(e->ctx->board, s);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t pos = e->monitor->pos[s];
    if (head <= pos) {
        e->monitor->pos[s] = head;
        return 0;
    }
    if (head - pos > BOARD_RING)
        return -1;
    size_t n = (size_t)(head - pos);
    struct hkv_buf *b = &e->monitor->in;
    buf_reset(b);
    if (buf_reserve(b, n, 0) != HKV_OK)
        return -1;
    ring_read(r, pos, buf_tail(b), n);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&r->head, memory_order_relaxed) - pos > BOARD_RING)
        return -1; /* written over while it was copied */
    b->len += n;
    e->monitor->pos[s] = head;
    const char *p = buf_head(b);
    while (n >= sizeof(uint32_t)) {
        uint32_t len;
        memcpy(&len, p, sizeof(len));
        if (len > n - sizeof(len))
            return -1; /* not a record: treat as lost */
        deliver(e, p + sizeof(len), len);
        p += sizeof(len) + len;
        n -= sizeof(len) + len;
    }
    return 0;
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    struct board *b = e->ctx->board;
    for (uint32_t s = 0; s < b->nslots; s++) {
        if (atomic_load_explicit(&b->slots[s].role, memory_order_relaxed) != BOARD_EDGE)
            continue;
        if (read_ring(e, s) != 0) {
            e->monitor->pos[s] =
                atomic_load_explicit(&board_ring(b, s)->head, memory_order_acquire);
            close_monitors(e, "it fell a whole ring behind the host's commands");
            return;
        }
    }
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (sess_of(c)->monitor && conn_held(c) > 0)
            conn_flush(c); /* past client-output-buffer-limit it is closed */
        c = next;
    }
}

void edge_cmd_monitor(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    struct board *b = e->ctx->board;
    if (sess_of(c)->monitor) {
        resp_add_simple(&c->out, "OK");
        return;
    }
    if (mon_of(e) == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    if (e->monitor->pos == NULL &&
        (e->monitor->pos = calloc(b->nslots, sizeof(*e->monitor->pos))) == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    if (e->monitor->timer == NULL &&
        (e->monitor->timer = event_new(e->base, -1, EV_PERSIST, on_poll, e)) == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    if (e->monitor->n == 0) { /* the stream starts now */
        for (uint32_t s = 0; s < b->nslots; s++)
            e->monitor->pos[s] =
                atomic_load_explicit(&board_ring(b, s)->head, memory_order_acquire);
        struct timeval tv = {0, POLL_MS * 1000};
        event_add(e->monitor->timer, &tv);
    }
    sess_of(c)->monitor = 1;
    e->monitor->n++;
    atomic_fetch_add_explicit(&b->monitors, 1, memory_order_relaxed);
    clients_publish(c); /* flags=O, for every edge's CLIENT LIST */
    resp_add_simple(&c->out, "OK");
}

void monitor_stop(struct conn *c)
{
    struct edge *e = c->e;
    if (!sess_of(c)->monitor)
        return;
    sess_of(c)->monitor = 0;
    e->monitor->n--;
    atomic_fetch_sub_explicit(&e->ctx->board->monitors, 1, memory_order_relaxed);
    if (e->monitor->n == 0 && e->monitor->timer != NULL)
        event_del(e->monitor->timer);
    clients_publish(c);
}

void monitor_teardown(struct edge_monitor **mp)
{
    struct edge_monitor *m = *mp;
    if (m == NULL)
        return;
    if (m->timer != NULL)
        event_free(m->timer);
    free(m->pos);
    buf_deinit(&m->line);
    buf_deinit(&m->in);
    free(m);
    *mp = NULL;
}

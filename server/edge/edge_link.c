/*
 * edge_link.c - one edge -> owner link; see edge_link.h.
 *
 * Plain events and our own buffers (as the client side does): the request is
 * encoded straight into the link's output buffer by wire_put_*, with no
 * intermediate copy.  The bytes travel over a Unix socket or, to an owner of
 * another host, TCP with mutual TLS (edge_link_io.c): a TLS link has one
 * more state, HANDSHAKE, between CONNECTING and UP, and connecting plus the
 * handshake are bounded by the link's timeout (the reconnect timer doubles
 * as that deadline while the link is not up).  The pending table is a power-of-two ring indexed by
 * request id; ids [lo, next) may be pending, a free entry has cb == NULL.  A
 * request that blocks `lo` (an owner that never answers it) only grows the
 * ring until its timeout, which the single per-link timer enforces.
 */
#include "edge_link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/core/board.h"
#include "server/core/log.h"
#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_link_int.h"
#include "server/edge/edge_link_io.h"

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_flush(evutil_socket_t fd, short what, void *arg);
static void link_connect(struct elink *l);

/* Arms ev for the clock_mono_ms reading `deadline` (now if it passed). */
static void arm_timer_ev(struct event *ev, int64_t deadline)
{
    int64_t ms = deadline - clock_mono_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

static void arm_timer(struct elink *l, int64_t deadline)
{
    arm_timer_ev(l->timer, deadline);
    l->timer_on = 1;
}

static void advance_lo(struct elink *l)
{
    while (l->lo < l->next &&
           (l->ring[l->lo & l->mask].cb == NULL || l->ring[l->lo & l->mask].id != l->lo))
        l->lo++;
}

/* Takes the pending entry of id out of the ring; 0 if it is not pending. */
static int take(struct elink *l, uint64_t id, struct pend *out)
{
    if (id < l->lo || id >= l->next)
        return 0;
    struct pend *p = &l->ring[id & l->mask];
    if (p->id != id || p->cb == NULL)
        return 0;
    *out = *p;
    p->cb = NULL;
    l->npending--;
    advance_lo(l);
    return 1;
}

static int grow(struct elink *l)
{
    uint64_t cap = (l->mask + 1) * 2;
    struct pend *r = calloc(cap, sizeof(*r));
    if (r == NULL)
        return -1;
    for (uint64_t id = l->lo; id < l->next; id++)
        r[id & (cap - 1)] = l->ring[id & l->mask];
    free(l->ring);
    l->ring = r;
    l->mask = cap - 1;
    return 0;
}

/* The requests of a loop turn leave in one write, from l->flush: an event
 * at the loop's lowest priority, the client connections' (edge.c), so
 * activated while their reads run it runs in the same pass, after every
 * client read that was ready.  Activating the write event (the owner
 * answers' priority) made it wait for the next pass, one more epoll_wait
 * per batch (on SET -P1, 1.9 epoll_wait per request at the edge). */
static void schedule_write(struct elink *l)
{
    if (l->state == LINK_UP && !l->write_scheduled) {
        l->write_scheduled = 1;
        event_active(l->flush, 0, 1);
    }
}

static void hello_cb(void *arg, int status, const struct wire_msg *m)
{
    struct elink *l = arg;
    if (status != HKV_OK)
        return;
    if (m->type == WIRE_HELLO_OK) {
        /* Replies arrive on the connection that carried the HELLO, the
         * current one. */
        l->owners[l->conn % 8].conn = l->conn;
        l->owners[l->conn % 8].inc = m->u.hello_ok.incarnation;
        l->backoff_ms = ELINK_BACKOFF_MIN_MS;
        if (l->gap != NULL)
            l->gap(l->push_arg); /* writes made while no connection carried pushes */
        if (l->logged_down)
            log_notice("owner link %s is up again", l->name);
        l->logged_down = 0;
    } else if (m->type == WIRE_ERROR) {
        /* The owner read nothing after a HELLO it refused (it closes the
         * link): no request of this connection was applied, so a retry of
         * one is a first attempt (incarnation 0 below: rid.prev 0). */
        l->owners[l->conn % 8].conn = l->conn;
        l->owners[l->conn % 8].inc = 0;
        log_warning("owner link %s: HELLO refused: %.*s", l->name, (int)m->u.error.text.len,
                    m->u.error.text.p);
    }
}

/* Appends HELLO as the first request of a new connection. */
static void put_hello(struct elink *l)
{
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    struct wire_hello_cluster cl = {wire_cstr(l->cluster), l->want_owner, wire_cstr(l->host)};
    if (wire_put_hello_cluster(b, id, WIRE_VERSION, l->edge_id, wire_cstr(l->colo), l->role,
                               l->incarnation, &cl) == HKV_OK)
        elink_commit(l, id, hello_cb, l);
}

/* Fails every request in [lo, end) with status. */
static void fail_range(struct elink *l, uint64_t end, int status)
{
    while (l->lo < end) {
        uint64_t id = l->lo;
        struct pend p;
        if (take(l, id, &p))
            p.cb(p.arg, status, NULL);
        else if (l->lo == id)
            l->lo++;
    }
}

static void link_break(struct elink *l, const char *why)
{
    if (l->state == LINK_UP && l->gap != NULL)
        l->gap(l->push_arg); /* pushes in flight are lost with the connection */
    if (l->state != LINK_DOWN) {
        if (!l->logged_down)
            log_warning("owner link %s broken: %s; reconnecting", l->name, why);
        l->logged_down = 1;
    }
    if (l->rev) {
        event_free(l->rev);
        l->rev = NULL;
    }
    if (l->wev) {
        event_free(l->wev);
        l->wev = NULL;
    }
    SSL_free(l->ssl);
    l->ssl = NULL;
    l->want = 0;
    l->read_wants_write = 0;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    l->state = LINK_DOWN;
    l->need_hello = 1;
    l->write_scheduled = 0;
    buf_reset(&l->out);
    buf_reset(&l->in);
    int was_congested = l->congested;
    l->congested = 0;
    struct timeval tv = {l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000};
    evtimer_add(l->reconnect, &tv);
    l->backoff_ms = l->backoff_ms * 2 > ELINK_BACKOFF_MAX_MS ? ELINK_BACKOFF_MAX_MS
                                                             : l->backoff_ms * 2;
    /* Callbacks may send again: those requests get ids >= end and wait,
     * behind a fresh HELLO, for the reconnect. */
    fail_range(l, l->next, HKV_EIO);
    if (was_congested && l->drained)
        l->drained(l, l->drained_arg);
}

static void on_reconnect(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    if (l->state == LINK_DOWN)
        link_connect(l);
    else /* the deadline of a connect or a handshake */
        link_break(l, l->state == LINK_HANDSHAKE ? "TLS handshake timed out" : "connect timed out");
}

static void link_up(struct elink *l)
{
    l->state = LINK_UP;
    l->up_conn = l->conn;
    evtimer_del(l->reconnect);
    if (buf_unread(&l->out) > 0)
        schedule_write(l);
    else
        event_del(l->wev);
}

/* Drives the TLS handshake; the link is UP once it is done. */
static void handshake(struct elink *l)
{
    char why[256];
    short want = EV_READ;
    int rc = eio_handshake(l->ssl, &want, why, sizeof(why));
    if (rc < 0) {
        link_break(l, why);
    } else if (rc > 0) {
        link_up(l);
    } else if (want & EV_WRITE) {
        event_add(l->wev, NULL);
    } else {
        event_del(l->wev);
    }
}

/* The socket is connected: UP, or TLS first. */
static void link_connected(struct elink *l)
{
    if (l->addr == NULL || l->tls == NULL) {
        link_up(l);
        return;
    }
    char why[256];
    l->ssl = eio_tls_new(l->tls, l->fd, l->peer_host, why, sizeof(why));
    if (l->ssl == NULL) {
        link_break(l, why);
        return;
    }
    l->state = LINK_HANDSHAKE;
    handshake(l);
}

static void link_connect(struct elink *l)
{
    char why[256];
    int fd, rc = eio_connect(l->path, l->addr, l->port, &fd, why, sizeof(why));
    if (rc < 0) {
        link_break(l, why);
        return;
    }
    l->fd = fd;
    l->conn++;
    if (l->need_hello) {
        l->need_hello = 0;
        put_hello(l);
    }
    l->rev = event_new(l->base, fd, EV_READ | EV_PERSIST, on_read, l);
    l->wev = event_new(l->base, fd, EV_WRITE | EV_PERSIST, on_write, l);
    if (l->rev == NULL || l->wev == NULL) {
        link_break(l, "out of memory");
        return;
    }
    /* Owner answers first: a write's acknowledgment must not wait behind a
     * loop iteration's worth of client reads (priorities: edge.c). */
    event_priority_set(l->rev, 0);
    event_priority_set(l->wev, 0);
    event_add(l->rev, NULL);
    if (l->addr != NULL) { /* a host away may not answer at all */
        struct timeval tv = {l->timeout_ms / 1000, (l->timeout_ms % 1000) * 1000};
        l->connect_ms = clock_mono_ms();
        evtimer_add(l->reconnect, &tv);
    }
    if (rc == 0) {
        link_connected(l);
    } else {
        l->state = LINK_CONNECTING;
        event_add(l->wev, NULL);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    l->timer_on = 0;
    int64_t now = clock_mono_ms();
    while (l->lo < l->next) {
        struct pend *p = &l->ring[l->lo & l->mask];
        if (p->cb == NULL || p->id != l->lo) {
            l->lo++;
            continue;
        }
        if (p->sent_ms + l->timeout_ms > now) {
            arm_timer(l, p->sent_ms + l->timeout_ms);
            return;
        }
        struct pend t;
        if (take(l, p->id, &t))
            t.cb(t.arg, HKV_ETIMEDOUT, NULL);
    }
}

static void dispatch(struct elink *l, const struct wire_msg *m)
{
    if (m->id == 0) {
        if (m->type == WIRE_ERROR)
            log_warning("owner link %s: owner says: %.*s", l->name, (int)m->u.error.text.len,
                        m->u.error.text.p);
        else if (wire_is_push(m->type) && l->push != NULL)
            l->push(l->push_arg, m);
        return;
    }
    struct pend p;
    if (take(l, m->id, &p))
        p.cb(p.arg, HKV_OK, m);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    if (l->state == LINK_HANDSHAKE) {
        handshake(l);
        return;
    }
    if (l->state != LINK_UP)
        return;
    if (l->want == EV_READ) { /* a TLS write was waiting for this */
        l->want = 0;
        schedule_write(l);
    }
    if (buf_reserve(&l->in, READ_CHUNK, 0) != HKV_OK) {
        link_break(l, "out of memory");
        return;
    }
    short want;
    char err[256] = "TLS error";
    ssize_t n = eio_read(fd, l->ssl, buf_tail(&l->in), buf_room(&l->in), &want, err, sizeof(err));
    if (n == 0) {
        link_break(l, "owner closed the connection");
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            link_break(l, errno == EPROTO ? err : strerror(errno));
        else if (want == EV_WRITE) { /* TLS: the read needs the socket writable */
            l->read_wants_write = 1;
            event_add(l->wev, NULL);
        }
        return;
    }
    l->in.len += (size_t)n;
    l->read_ns = clock_mono_ns();
    for (;;) {
        const char *payload;
        size_t plen, used;
        int rc = wire_next_frame(buf_head(&l->in), buf_unread(&l->in), l->max_frame, &payload,
                                 &plen, &used);
        if (rc == HKV_EAGAIN) {
            if (used > l->in.cap - l->in.off && buf_reserve(&l->in, used - buf_unread(&l->in), 0) != HKV_OK) {
                link_break(l, "out of memory");
                return;
            }
            break;
        }
        if (rc != HKV_OK) {
            link_break(l, "frame over wire-max-frame");
            return;
        }
        struct wire_msg m;
        const char *why = NULL;
        rc = wire_decode(&l->dec, payload, plen, &m, &why);
        if (rc != HKV_OK || (!wire_is_reply(m.type) && !wire_is_push(m.type))) {
            char msg[128];
            snprintf(msg, sizeof(msg), "malformed reply: %s", why != NULL ? why : "not a reply");
            link_break(l, msg);
            return;
        }
        dispatch(l, &m);
        if (l->state == LINK_DOWN)
            return; /* a callback broke it; the buffer is gone */
        buf_consume(&l->in, used);
    }
    buf_compact(&l->in);
    buf_shrink(&l->in, IDLE_KEEP);
    if (eio_pending(l->ssl) > 0) /* decrypted bytes the socket will not signal */
        event_active(l->rev, EV_READ, 1);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    if (!l->write_scheduled || l->state != LINK_UP)
        return; /* the link broke (or the write event wrote it) since */
    on_write(l->fd, EV_WRITE, l);
}

void elink_poll(struct elink *l)
{
    if (l->state == LINK_UP && l->npending > 0 && l->fd >= 0)
        on_read(l->fd, EV_READ, l);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    l->write_scheduled = 0;
    if (l->state == LINK_CONNECTING) {
        char why[200];
        if (eio_connected(fd, why, sizeof(why)) != 0)
            link_break(l, why);
        else
            link_connected(l);
        return;
    }
    if (l->state == LINK_HANDSHAKE) {
        handshake(l);
        return;
    }
    if (l->state != LINK_UP)
        return;
    if (l->read_wants_write) { /* a TLS read waited for writable */
        l->read_wants_write = 0;
        event_active(l->rev, EV_READ, 1);
    }
    char why[256] = "TLS error";
    while (buf_unread(&l->out) > 0) {
        short want;
        ssize_t n = eio_write(fd, l->ssl, buf_head(&l->out), buf_unread(&l->out), &want, why,
                              sizeof(why));
        if (n > 0) {
            buf_consume(&l->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (want == EV_READ) { /* TLS: on_read schedules the write again */
                l->want = EV_READ;
                event_del(l->wev);
            } else {
                event_add(l->wev, NULL);
            }
            goto check;
        }
        link_break(l, n < 0 ? (errno == EPROTO ? why : strerror(errno)) : "short write");
        return;
    }
    event_del(l->wev);
    buf_shrink(&l->out, IDLE_KEEP);
check:
    if (l->congested && buf_unread(&l->out) < ELINK_LOW_WATER) {
        l->congested = 0;
        if (l->drained)
            l->drained(l, l->drained_arg);
    }
}

struct hkv_buf *elink_out(struct elink *l, uint64_t *id)
{
    if (l->need_hello) {
        l->need_hello = 0; /* before put_hello, which comes back here */
        put_hello(l);
    }
    if (l->next - l->lo > l->mask)
        (void)grow(l); /* on failure elink_commit reports HKV_ENOMEM */
    *id = l->next++;
    struct pend *p = &l->ring[*id & l->mask];
    if (p->cb == NULL)
        p->id = *id;
    /* Counted from the read offset, so a compaction while encoding does not
     * move the mark. */
    l->frame_at = buf_unread(&l->out);
    return &l->out;
}

int elink_commit(struct elink *l, uint64_t id, elink_cb cb, void *arg)
{
    return elink_commit_at(l, id, cb, arg, clock_mono_ms());
}

int64_t elink_read_ns(const struct elink *l)
{
    return l->read_ns;
}

int elink_commit_at(struct elink *l, uint64_t id, elink_cb cb, void *arg, int64_t now_ms)
{
    size_t max = l->max_frame != 0 ? l->max_frame : WIRE_MAX_FRAME_DEFAULT;
    if (buf_unread(&l->out) - l->frame_at > WIRE_HEADER_LEN + max) {
        /* The owner would close the link on it, failing everything else in
         * flight: drop exactly this frame, unsent, and leave the link be. */
        l->out.len = l->out.off + l->frame_at;
        return HKV_ETOOBIG;
    }
    struct pend *p = &l->ring[id & l->mask];
    if (p->id != id || p->cb != NULL)
        return HKV_ENOMEM; /* the ring could not grow */
    p->cb = cb;
    p->arg = arg;
    p->sent_ms = now_ms;
    l->npending++;
    if (!l->timer_on)
        arm_timer(l, now_ms + l->timeout_ms);
    if (buf_unread(&l->out) > ELINK_HIGH_WATER)
        l->congested = 1;
    schedule_write(l);
    return HKV_OK;
}

/* A reload's timeout applies to the requests in flight too: a deadline is
 * the send time plus the timeout in force, so one lowered from 8 s to 300 ms
 * times out a request sent 1 s ago now, not 7 s later when the timer armed
 * under the old timeout would have fired.  Every request keeps the same
 * timeout, so deadlines stay in send order and one timer still serves the
 * link: lowered, it is re-armed for the oldest request; raised, it fires at
 * the old deadline, finds the request not due and re-arms itself.  A TCP
 * link's connect or handshake deadline moves the same way. */
void elink_set_timeout(struct elink *l, int64_t ms)
{
    ms = ms > 0 ? ms : 1;
    int earlier = ms < l->timeout_ms;
    l->timeout_ms = ms;
    if (!earlier)
        return;
    if (l->timer_on) {
        advance_lo(l);
        if (l->lo < l->next) {
            arm_timer(l, l->ring[l->lo & l->mask].sent_ms + ms);
        } else {
            /* armed for the old, later deadline: the next request's would
             * wait for it (elink_commit arms only an idle timer) */
            evtimer_del(l->timer);
            l->timer_on = 0;
        }
    }
    if (l->addr != NULL && (l->state == LINK_CONNECTING || l->state == LINK_HANDSHAKE))
        arm_timer_ev(l->reconnect, l->connect_ms + ms);
}

void elink_cancel(struct elink *l, uint64_t id)
{
    struct pend p;
    take(l, id, &p);
}

int elink_start(struct elink *l)
{
    l->reconnect = evtimer_new(l->base, on_reconnect, l);
    l->timer = evtimer_new(l->base, on_timer, l);
    l->flush = event_new(l->base, -1, 0, on_flush, l);
    if (l->reconnect == NULL || l->timer == NULL || l->flush == NULL)
        return -1;
    int prios = event_base_get_npriorities(l->base);
    event_priority_set(l->flush, prios > 0 ? prios - 1 : 0);
    put_hello(l);
    link_connect(l);
    return 0;
}

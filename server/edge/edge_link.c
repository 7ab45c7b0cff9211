/*
 * edge_link.c - one edge -> owner link; see edge_link.h.
 *
 * Plain events and our own buffers (as the client side does): the request is
 * encoded straight into the link's output buffer by wire_put_*, with no
 * intermediate copy.  The pending table is a power-of-two ring indexed by
 * request id; ids [lo, next) may be pending, a free entry has cb == NULL.  A
 * request that blocks `lo` (an owner that never answers it) only grows the
 * ring until its timeout, which the single per-link timer enforces.
 */
#include "edge_link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/core/board.h"
#include "server/core/log.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define RING_MIN 256
#define READ_CHUNK (64 * 1024)
#define IDLE_KEEP (64 * 1024)

enum link_state { LINK_DOWN, LINK_CONNECTING, LINK_UP };

struct pend {
    uint64_t id;
    elink_cb cb;
    void *arg;
    int64_t deadline_ms;
};

struct elink {
    struct event_base *base;
    char *path;
    char name[64];
    char colo[TOPO_COLO_NAME_MAX];
    uint32_t edge_id;
    uint64_t incarnation;     /* this edge process, in HELLO */
    uint8_t role;
    int64_t timeout_ms;
    size_t max_frame;
    elink_drained_fn drained;
    void *drained_arg;
    elink_push_fn push;
    void *push_arg;

    enum link_state state;
    int fd;
    struct event *rev, *wev;
    struct event *reconnect;
    struct event *timer;
    int timer_on;
    int write_scheduled;
    int congested;
    int64_t backoff_ms;
    int logged_down;
    int need_hello;           /* the next connection must open with HELLO */
    uint64_t conn;            /* connections made so far (the current one's number) */
    struct { uint64_t conn, inc; } owners[8]; /* owner incarnation per recent connection */

    struct hkv_buf out, in;
    size_t frame_at;          /* unread bytes of out before the frame being encoded */
    struct wire_decoder dec;

    struct pend *ring;
    uint64_t mask;
    uint64_t lo, next;
    uint64_t npending;
};

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void link_connect(struct elink *l);

const char *elink_name(const struct elink *l) { return l->name; }
int elink_congested(const struct elink *l) { return l->congested; }
int elink_is_up(const struct elink *l) { return l->state == LINK_UP; }
uint64_t elink_pending(const struct elink *l) { return l->npending; }
void elink_set_timeout(struct elink *l, int64_t ms) { l->timeout_ms = ms > 0 ? ms : 1; }

static void arm_timer(struct elink *l, int64_t deadline)
{
    int64_t ms = deadline - clock_mono_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(l->timer, &tv);
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

static void schedule_write(struct elink *l)
{
    if (l->state == LINK_UP && !l->write_scheduled) {
        l->write_scheduled = 1;
        event_active(l->wev, EV_WRITE, 1);
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
        if (l->logged_down)
            log_notice("owner link %s is up again", l->name);
        l->logged_down = 0;
    } else if (m->type == WIRE_ERROR) {
        log_warning("owner link %s: HELLO refused: %.*s", l->name, (int)m->u.error.text.len,
                    m->u.error.text.p);
    }
}

/* Appends HELLO as the first request of a new connection. */
static void put_hello(struct elink *l)
{
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    if (wire_put_hello(b, id, WIRE_VERSION, l->edge_id, wire_cstr(l->colo), l->role,
                       l->incarnation) == HKV_OK)
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
    link_connect(arg);
}

static void link_connect(struct elink *l)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof(un.sun_path), "%s", l->path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        link_break(l, strerror(errno));
        return;
    }
    int rc = connect(fd, (struct sockaddr *)&un, sizeof(un));
    if (rc != 0 && errno != EINPROGRESS) {
        char why[128];
        snprintf(why, sizeof(why), "connect %s: %s", l->path, strerror(errno));
        close(fd);
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
    if (rc == 0) {
        l->state = LINK_UP;
        if (buf_unread(&l->out) > 0)
            schedule_write(l);
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
        if (p->deadline_ms > now) {
            arm_timer(l, p->deadline_ms);
            return;
        }
        struct pend t;
        take(l, p->id, &t);
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
    if (buf_reserve(&l->in, READ_CHUNK, 0) != HKV_OK) {
        link_break(l, "out of memory");
        return;
    }
    ssize_t n = read(fd, buf_tail(&l->in), buf_room(&l->in));
    if (n == 0) {
        link_break(l, "owner closed the connection");
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            link_break(l, strerror(errno));
        return;
    }
    l->in.len += (size_t)n;
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
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct elink *l = arg;
    l->write_scheduled = 0;
    if (l->state == LINK_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            link_break(l, strerror(err != 0 ? err : errno));
            return;
        }
        l->state = LINK_UP;
    }
    while (buf_unread(&l->out) > 0) {
        ssize_t n = write(fd, buf_head(&l->out), buf_unread(&l->out));
        if (n > 0) {
            buf_consume(&l->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            event_add(l->wev, NULL);
            goto check;
        }
        link_break(l, n < 0 ? strerror(errno) : "short write");
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
    p->deadline_ms = clock_mono_ms() + l->timeout_ms;
    l->npending++;
    if (!l->timer_on)
        arm_timer(l, p->deadline_ms);
    if (buf_unread(&l->out) > ELINK_HIGH_WATER)
        l->congested = 1;
    schedule_write(l);
    return HKV_OK;
}

void elink_cancel(struct elink *l, uint64_t id)
{
    struct pend p;
    take(l, id, &p);
}

struct elink *elink_create(struct event_base *base, const struct elink_opts *o)
{
    struct elink *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->base = base;
    l->fd = -1;
    l->path = strdup(o->path);
    snprintf(l->name, sizeof(l->name), "%s", o->name);
    snprintf(l->colo, sizeof(l->colo), "%s", o->colo != NULL ? o->colo : "");
    l->edge_id = o->edge_id;
    l->incarnation = o->incarnation;
    l->role = o->role;
    l->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 1;
    l->max_frame = o->max_frame;
    l->drained = o->drained;
    l->drained_arg = o->drained_arg;
    l->push = o->push;
    l->push_arg = o->push_arg;
    l->backoff_ms = ELINK_BACKOFF_MIN_MS;
    l->ring = calloc(RING_MIN, sizeof(*l->ring));
    l->mask = RING_MIN - 1;
    l->lo = l->next = 1; /* id 0 is reserved */
    l->reconnect = evtimer_new(base, on_reconnect, l);
    l->timer = evtimer_new(base, on_timer, l);
    wire_decoder_init(&l->dec, 0);
    if (l->path == NULL || l->ring == NULL || l->reconnect == NULL || l->timer == NULL) {
        elink_destroy(&l);
        return NULL;
    }
    put_hello(l);
    link_connect(l);
    return l;
}

void elink_destroy(struct elink **lp)
{
    struct elink *l = *lp;
    if (l == NULL)
        return;
    if (l->rev)
        event_free(l->rev);
    if (l->wev)
        event_free(l->wev);
    if (l->fd >= 0)
        close(l->fd);
    if (l->reconnect)
        event_free(l->reconnect);
    if (l->timer)
        event_free(l->timer);
    wire_decoder_deinit(&l->dec);
    buf_deinit(&l->out);
    buf_deinit(&l->in);
    free(l->ring);
    free(l->path);
    free(l);
    *lp = NULL;
}

uint64_t elink_next_conn(const struct elink *l)
{
    /* Bytes queued while down go out on the next connection. */
    return l->state == LINK_DOWN ? l->conn + 1 : l->conn;
}

uint64_t elink_owner_of(const struct elink *l, uint64_t conn)
{
    if (conn != 0 && l->owners[conn % 8].conn == conn)
        return l->owners[conn % 8].inc;
    return WIRE_PREV_UNKNOWN;
}

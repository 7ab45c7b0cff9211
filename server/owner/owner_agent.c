/*
 * owner_agent.c - the owner's end of the agent's control channel (see
 * owner_move_int.h, server/agent/agent_ctl.h): owners never talk to etcd,
 * so the compare-and-swaps of a move are asked of the host's agent here.
 *
 * One bufferevent on the agent's Unix socket, connected at start and again
 * every OAGENT_RETRY_MS while it is down (a restarted agent makes its
 * socket anew).  Every request has its own deadline; one timer checks them
 * and answers an overdue one UNKNOWN: the txn may still run in the agent,
 * which is exactly the in-doubt case the move handles by reading the map
 * again (LEAF_READ).  A request made while the channel is down waits in the
 * buffer for the connection, under the same deadline, so a caller never
 * sees anything but a reply or UNKNOWN, and never from inside its call.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/topo.h"
#include "server/owner/owner_move_int.h"

#define OAGENT_MAX_PENDING 64
#define OAGENT_MAX_FRAME (64u * 1024)

struct oreq {
    uint64_t id;
    int64_t deadline_ms;
    oagent_reply_fn cb;
    void *arg;
    struct oreq *next;
};

struct oagent {
    struct owner *o;
    struct bufferevent *bev;
    int up;                   /* connected, HELLO sent */
    struct oreq *pending;
    int npending;
    uint64_t next_id;
    struct event *tick;
    int64_t retry_ms;         /* when to connect again */
    oagent_order_fn on_order;
    struct wire_decoder dec;
    struct hkv_buf out;
    int said_down;
};

static void answer(struct owner *o, struct oreq *q, const struct hand_msg *r)
{
    if (q->cb != NULL)
        q->cb(o, q->arg, r);
    free(q);
}

static void unknown(struct owner *o, struct oreq *q, const char *why)
{
    struct hand_msg r = {.type = LEAF_REPLY, .id = q->id,
                         .u.reply = {.status = LEAF_ST_UNKNOWN, .text = wire_cstr(why)}};
    answer(o, q, &r);
}

static void drop_conn(struct oagent *a)
{
    if (a->bev != NULL)
        bufferevent_free(a->bev);
    a->bev = NULL;
    a->up = 0;
    a->retry_ms = clock_mono_ms() + OAGENT_RETRY_MS;
}

/* Fails every pending request (the channel broke: their txns may still run). */
static void fail_all(struct oagent *a, const char *why)
{
    struct oreq *q = a->pending;
    a->pending = NULL;
    a->npending = 0;
    while (q != NULL) {
        struct oreq *next = q->next;
        unknown(a->o, q, why);
        q = next;
    }
}

static int put(struct oagent *a, const struct hand_msg *m)
{
    buf_reset(&a->out);
    if (a->bev == NULL || hand_put(&a->out, m) != HKV_OK)
        return -1;
    return bufferevent_write(a->bev, buf_head(&a->out), buf_unread(&a->out)) == 0 ? 0 : -1;
}

static void on_frame(struct oagent *a, const struct hand_msg *m)
{
    if (m->type == LEAF_ORDER) {
        if (a->on_order != NULL)
            a->on_order(a->o, m);
        return;
    }
    if (m->type != LEAF_REPLY)
        return;
    for (struct oreq **pp = &a->pending; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->id == m->id) {
            struct oreq *q = *pp;
            *pp = q->next;
            a->npending--;
            answer(a->o, q, m);
            return;
        }
    /* a reply to a request that timed out already, or the HELLO's */
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct oagent *a = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t have = evbuffer_get_length(in), used, plen;
        const char *payload;
        if (have < WIRE_HEADER_LEN)
            return;
        const char *p = (const char *)evbuffer_pullup(in, WIRE_HEADER_LEN);
        if (wire_next_frame(p, WIRE_HEADER_LEN, OAGENT_MAX_FRAME, &payload, &plen, &used) ==
            HKV_ETOOBIG)
            break;
        if (used > have)
            return;
        p = (const char *)evbuffer_pullup(in, (ssize_t)used);
        struct hand_msg m;
        if (wire_next_frame(p, used, OAGENT_MAX_FRAME, &payload, &plen, &used) != HKV_OK ||
            hand_decode(&a->dec, payload, plen, &m, NULL) != HKV_OK)
            break;
        on_frame(a, &m); /* a reply's text is used during the call only */
        evbuffer_drain(in, used);
        if (a->bev != bev)
            return; /* a callback stopped the channel */
    }
    log_warning("agent control channel: a bad frame from the agent; reconnecting");
    drop_conn(a);
    fail_all(a, "the control channel broke");
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct oagent *a = arg;
    if (what & BEV_EVENT_CONNECTED) {
        a->up = 1;
        if (a->said_down)
            log_notice("agent control channel up");
        a->said_down = 0;
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (!a->said_down)
            log_verbose("agent control channel %s; retrying", a->up ? "closed" : "not reachable");
        a->said_down = 1;
        drop_conn(a);
        fail_all(a, "the control channel to the agent broke");
    }
}

static void connect_now(struct oagent *a)
{
    struct owner *o = a->o;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    const char *path = o->opts.agent_socket;
    if (strlen(path) >= sizeof(un.sun_path))
        return;
    strcpy(un.sun_path, path);
    a->bev = bufferevent_socket_new(o->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (a->bev == NULL)
        return;
    bufferevent_setcb(a->bev, on_read, NULL, on_event, a);
    bufferevent_enable(a->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(a->bev, (struct sockaddr *)&un, sizeof(un)) != 0) {
        drop_conn(a);
        return;
    }
    /* queued until connected: HELLO first, then whatever waits */
    struct hand_msg hello = {.type = LEAF_HELLO, .id = ++a->next_id,
                             .u.hello = {(uint8_t)o->pool, (uint32_t)o->index}};
    put(a, &hello);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct oagent *a = arg;
    int64_t now = clock_mono_ms();
    for (struct oreq **pp = &a->pending; *pp != NULL;) {
        struct oreq *q = *pp;
        if (now < q->deadline_ms) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        a->npending--;
        unknown(a->o, q, "no answer from the agent in time");
    }
    if (a->bev == NULL && now >= a->retry_ms)
        connect_now(a);
}

int owner_agent_start(struct owner *o, oagent_order_fn on_order)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    struct oagent *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return -1;
    a->o = o;
    a->on_order = on_order;
    wire_decoder_init(&a->dec, 16);
    a->out = (struct hkv_buf)HKV_BUF_INIT;
    a->tick = event_new(o->base, -1, EV_PERSIST, on_tick, a);
    o->agent = a;
    if (a->tick == NULL)
        return -1;
    struct timeval tv = {0, 50 * 1000};
    event_add(a->tick, &tv);
    connect_now(a);
    return 0;
}

void owner_agent_stop(struct owner *o)
{
    struct oagent *a = o->agent;
    if (a == NULL)
        return;
    drop_conn(a);
    fail_all(a, "the owner is stopping");
    if (a->tick != NULL)
        event_free(a->tick);
    wire_decoder_deinit(&a->dec);
    buf_deinit(&a->out);
    free(a);
    o->agent = NULL;
}

int owner_agent_call(struct owner *o, uint8_t type, struct hand_leaf leaf, int64_t epoch,
                     uint32_t to, int64_t timeout_ms, oagent_reply_fn cb, void *arg)
{
    struct oagent *a = o->agent;
    if (a == NULL || a->npending >= OAGENT_MAX_PENDING)
        return -1;
    struct oreq *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return -1;
    q->id = ++a->next_id;
    q->deadline_ms = clock_mono_ms() + timeout_ms;
    q->cb = cb;
    q->arg = arg;
    q->next = a->pending;
    a->pending = q;
    a->npending++;
    struct hand_msg m = {.type = type, .id = q->id, .u.leaf = {leaf, epoch, to}};
    put(a, &m); /* not connected: the tick answers UNKNOWN at the deadline */
    return 0;
}

void owner_agent_done(struct owner *o, uint64_t order, int status, const char *text)
{
    struct oagent *a = o->agent;
    if (a == NULL || order == 0)
        return;
    struct hand_msg m = {.type = LEAF_DONE, .id = ++a->next_id,
                         .u.done = {order, status, wire_cstr(text)}};
    put(a, &m);
}

int owner_agent_up(const struct owner *o)
{
    return o->agent != NULL && o->agent->up;
}

int owner_agent_load(struct owner *o, struct hand_msg *m)
{
    struct oagent *a = o->agent;
    if (a == NULL || !a->up)
        return -1;
    m->type = LEAF_LOAD;
    m->id = ++a->next_id;
    return put(a, m);
}

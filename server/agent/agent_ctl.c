/*
 * agent_ctl.c - the agent's control channel; see agent_ctl.h.
 *
 * Connections are bufferevents on the agent's loop (owner traffic here is a
 * handful of frames per move).  A request carries a cookie naming its
 * connection by a generation number, never a pointer, so a reply that
 * outlives its connection finds nothing and is dropped.  The leaf module
 * (agent_leaf.c) sits below this file and answers through the reply
 * callback handed to it at start; orders go down to owners through the
 * order callback, which finds the owner's connection by its HELLO.
 */
#include "server/agent/agent_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "proto/wire_hand.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_follow.h"
#include "server/agent/agent_leaf.h"
#include "server/agent/agent_policy.h"
#include "server/agent/agent_promote.h"
#include "server/core/listen.h"
#include "server/core/log.h"

struct cconn {
    struct agent_ctl *c;
    struct bufferevent *bev;
    uint64_t gen;            /* cookie of its requests */
    int hello, pool, index;
    int dead;                /* does not read its replies: closed when safe */
    struct cconn *prev, *next;
};

struct agent_ctl {
    struct agent *a;
    struct evconnlistener *lst;
    struct agent_leaf *leaf;
    struct cconn *conns;
    struct cconn *reading;   /* the connection on_read is working on */
    int nconns;
    uint64_t next_gen;
    struct wire_decoder dec;
    struct hkv_buf out;
};

static void conn_close(struct cconn *k)
{
    struct agent_ctl *c = k->c;
    if (k->prev)
        k->prev->next = k->next;
    else
        c->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    c->nconns--;
    bufferevent_free(k->bev);
    free(k);
}

/* Sends m on k; 0, or -1 (k does not read: marked dead, closed by the
 * caller when it is safe). */
static int send_msg(struct cconn *k, const struct hand_msg *m)
{
    struct agent_ctl *c = k->c;
    buf_reset(&c->out);
    if (k->dead || hand_put(&c->out, m) != HKV_OK)
        return k->dead ? -1 : 0;
    struct evbuffer *o = bufferevent_get_output(k->bev);
    if (evbuffer_get_length(o) + buf_unread(&c->out) > AGENT_CTL_MAX_OUT) {
        log_warning("control channel of owner %s/%d does not read its replies: closing it",
                    topo_pool_name((enum cfg_pool)k->pool), k->index);
        k->dead = 1;
        return -1;
    }
    bufferevent_write(k->bev, buf_head(&c->out), buf_unread(&c->out));
    return 0;
}

static void on_reply(void *arg, uint64_t cookie, struct hand_msg *m)
{
    struct agent_ctl *c = arg;
    for (struct cconn *k = c->conns; k != NULL; k = k->next)
        if (k->gen == cookie) {
            if (send_msg(k, m) != 0 && k != c->reading)
                conn_close(k);
            return;
        }
}

static int on_order(void *arg, int pool, int index, const struct hand_msg *m)
{
    struct agent_ctl *c = arg;
    for (struct cconn *k = c->conns; k != NULL; k = k->next)
        if (k->hello && k->pool == pool && k->index == index && !k->dead)
            return send_msg(k, m);
    return -1;
}

/* One decoded frame; 0, or -1 when the connection must close. */
static int handle(struct cconn *k, const struct hand_msg *m)
{
    struct agent_ctl *c = k->c;
    const struct agent_opts *opt = &c->a->opt;
    if (m->type == LEAF_HELLO) {
        int cold = m->u.hello.pool == CFG_POOL_COLD;
        int max = cold ? opt->cold_owners : opt->hot_owners;
        if ((m->u.hello.pool != CFG_POOL_HOT && !cold) || m->u.hello.index >= (uint32_t)max)
            return -1;
        k->hello = 1;
        k->pool = m->u.hello.pool;
        k->index = (int)m->u.hello.index;
        agent_promote_owner_hello(c->a->promote, k->pool, k->index);
        struct hand_msg ok = {.type = LEAF_REPLY, .id = m->id, .u.reply = {.status = LEAF_ST_OK}};
        return send_msg(k, &ok);
    }
    if (!k->hello)
        return -1;
    switch (m->type) {
    case LEAF_HANDOVER:
    case LEAF_INTENT:
    case LEAF_COMMIT:
    case LEAF_ABORT:
    case LEAF_READ:
    case LEAF_SPLIT:
    case LEAF_ISR_ADD:
    case LEAF_ISR_DEL:
        agent_leaf_request(c->leaf, k->pool, k->index, m, k->gen);
        return 0;
    case LEAF_DONE:
        if (!agent_policy_done(c->a->policy, m->u.done.order, m->u.done.status) &&
            !agent_follow_done(c->a->follow, m->u.done.order, m->u.done.status))
            agent_leaf_done(c->leaf, m->u.done.order, m->u.done.status);
        return 0;
    case LEAF_LOAD:
        agent_policy_load(c->a->policy, k->pool, k->index, m);
        return 0;
    default:
        return -1;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct cconn *k = arg;
    struct agent_ctl *c = k->c;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t have = evbuffer_get_length(in), used, plen;
        const char *payload;
        if (have < WIRE_HEADER_LEN)
            return;
        const char *p = (const char *)evbuffer_pullup(in, WIRE_HEADER_LEN);
        int rc = wire_next_frame(p, WIRE_HEADER_LEN, AGENT_CTL_MAX_FRAME, &payload, &plen, &used);
        if (rc == HKV_ETOOBIG)
            goto bad;
        if (used > have)
            return;
        p = (const char *)evbuffer_pullup(in, (ssize_t)used);
        struct hand_msg m;
        const char *why = NULL;
        if (wire_next_frame(p, used, AGENT_CTL_MAX_FRAME, &payload, &plen, &used) != HKV_OK ||
            hand_decode(&c->dec, payload, plen, &m, &why) != HKV_OK)
            goto bad;
        c->reading = k;
        rc = handle(k, &m);
        c->reading = NULL;
        evbuffer_drain(in, used);
        if (rc != 0 || k->dead)
            goto bad;
    }
bad:
    log_verbose("control channel: a bad frame from owner %s/%d: closing it",
                k->hello ? topo_pool_name((enum cfg_pool)k->pool) : "?", k->index);
    conn_close(k);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        conn_close(arg);
}

static void on_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct agent_ctl *c = arg;
    struct cconn *k = c->nconns < AGENT_CTL_MAX_CONNS && !c->a->stopping
                          ? calloc(1, sizeof(*k)) : NULL;
    struct bufferevent *bev = k != NULL ? bufferevent_socket_new(c->a->base, fd,
                                                                 BEV_OPT_CLOSE_ON_FREE) : NULL;
    if (bev == NULL) {
        free(k);
        close(fd);
        return;
    }
    k->c = c;
    k->bev = bev;
    k->gen = ++c->next_gen;
    k->next = c->conns;
    if (c->conns)
        c->conns->prev = k;
    c->conns = k;
    c->nconns++;
    bufferevent_setcb(bev, on_read, NULL, on_event, k);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

struct agent_ctl *agent_ctl_start(struct agent *a)
{
    char path[TOPO_PATH_MAX], err[512];
    struct agent_ctl *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->a = a;
    wire_decoder_init(&c->dec, HAND_LOAD_MAX); /* a LEAF_LOAD holds up to that many leaves */
    c->out = (struct hkv_buf)HKV_BUF_INIT;
    c->leaf = agent_leaf_create(a, on_reply, on_order, c);
    a->policy = c->leaf != NULL ? agent_policy_create(a, on_order, c) : NULL;
    a->follow = c->leaf != NULL ? agent_follow_create(a, on_order, c) : NULL;
    snprintf(path, sizeof(path), "%s", a->opt.ctl_socket);
    int fd = c->leaf != NULL && a->policy != NULL && a->follow != NULL
                 ? listen_unix(path, 64, err, sizeof(err)) : -1;
    if (fd >= 0)
        c->lst = evconnlistener_new(a->base, on_accept, c, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    if (c->lst == NULL) {
        log_warning("agent: no control channel for owners (%s): no leaf can move from or to "
                    "this host", fd < 0 ? err : "out of memory");
        if (fd >= 0)
            close(fd);
        agent_ctl_stop(&c);
        return NULL;
    }
    return c;
}

void agent_ctl_stop(struct agent_ctl **cp)
{
    struct agent_ctl *c = *cp;
    if (c == NULL)
        return;
    while (c->conns != NULL)
        conn_close(c->conns);
    if (c->lst != NULL)
        evconnlistener_free(c->lst);
    agent_leaf_destroy(&c->leaf);
    agent_policy_destroy(&c->a->policy);
    agent_follow_destroy(&c->a->follow);
    wire_decoder_deinit(&c->dec);
    buf_deinit(&c->out);
    free(c);
    *cp = NULL;
}

void agent_ctl_tick(struct agent_ctl *c, int64_t now)
{
    if (c == NULL)
        return;
    agent_leaf_tick(c->leaf, now);
    agent_policy_tick(c->a->policy, now);
    agent_follow_tick(c->a->follow, now);
}

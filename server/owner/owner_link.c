/*
 * owner_link.c - the owner's side of edge links: the bottom of the owner's
 * request path.
 *
 * An edge opens several links (read, write, push) and pipelines requests on
 * each.  This layer knows framing, the HELLO handshake and sending; it does
 * not know what a request means: every decoded request after HELLO goes to
 * the on_request hook, and a link that goes away is reported to on_close
 * (struct olink_hooks, set once at setup), so nothing here calls up into
 * the executor or the persister.  The owner answers every request of one
 * read batch into l->out and hands that to libevent once, so a pipeline of
 * N requests costs one send.  Bufferevents are fine here: owner traffic is a
 * small fraction of client traffic once the colo cache answers reads.
 *
 * Framing errors (a frame over wire-max-frame, an undecodable payload) get
 * an ERROR with id 0 and the link is closed: the stream cannot be trusted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "server/core/log.h"
#include "server/owner/owner_int.h"
#include "server/core/topo.h"

#define LINK_HIGH_WATER (16u << 20) /* stop reading while replies back up */

/* Answers ERROR id 0 and closes once that reply is written: the stream
 * cannot be trusted after a framing error. */
static void link_error_close(struct olink *l, const char *why)
{
    l->o->st.owner_protocol_errors++;
    log_verbose("edge link: %s; closing it", why);
    wire_put_error(&l->out, 0, HKV_EPROTO, wire_cstr(why));
    olink_flush(l);
    l->closing = 1;
    bufferevent_disable(l->bev, EV_READ);
    bufferevent_setwatermark(l->bev, EV_WRITE, 0, 0);
}

void olink_flush(struct olink *l)
{
    if (buf_unread(&l->out) == 0)
        return;
    bufferevent_write(l->bev, buf_head(&l->out), buf_unread(&l->out));
    buf_reset(&l->out);
    buf_shrink(&l->out, 64 * 1024);
    if (evbuffer_get_length(bufferevent_get_output(l->bev)) > LINK_HIGH_WATER)
        bufferevent_disable(l->bev, EV_READ);
}

static void hello(struct olink *l, const struct wire_msg *m)
{
    struct owner *o = l->o;
    if (m->type != WIRE_HELLO) {
        link_error_close(l, "the first frame must be HELLO");
        return;
    }
    if (m->u.hello.version != WIRE_VERSION) {
        link_error_close(l, "unsupported protocol version");
        return;
    }
    l->hello = 1;
    l->role = m->u.hello.role;
    l->edge_id = m->u.hello.edge_id;
    l->edge_inc = m->u.hello.incarnation;
    size_t n = m->u.hello.colo.len < sizeof(l->colo) - 1 ? m->u.hello.colo.len : sizeof(l->colo) - 1;
    memcpy(l->colo, m->u.hello.colo.p, n);
    l->colo[n] = '\0';
    wire_put_hello_ok(&l->out, m->id, WIRE_VERSION, (uint32_t)o->index,
                      wire_cstr(topo_pool_name(o->pool)),
                      router_generation(o->router, o->pool), o->incarnation);
}

/* Decodes and runs every whole frame in the input.  Returns 0 if the link
 * was closed. */
static int process(struct olink *l)
{
    struct owner *o = l->o;
    struct evbuffer *in = bufferevent_get_input(l->bev);
    size_t max = (size_t)o->ctx->cfg->wire_max_frame;
    for (;;) {
        size_t have = evbuffer_get_length(in);
        if (have < WIRE_HEADER_LEN)
            return 1;
        const char *p = (const char *)evbuffer_pullup(in, WIRE_HEADER_LEN);
        const char *payload;
        size_t plen, used;
        int rc = wire_next_frame(p, WIRE_HEADER_LEN, max, &payload, &plen, &used);
        if (rc == HKV_ETOOBIG) {
            link_error_close(l, "frame larger than wire-max-frame");
            return 0;
        }
        if (used > have)
            return 1; /* body not here yet */
        p = (const char *)evbuffer_pullup(in, (ssize_t)used);
        rc = wire_next_frame(p, used, max, &payload, &plen, &used);
        if (rc != HKV_OK) {
            link_error_close(l, "bad frame");
            return 0;
        }
        struct wire_msg m;
        const char *why = NULL;
        rc = wire_decode(&o->dec, payload, plen, &m, &why);
        if (rc != HKV_OK || !wire_is_request(m.type)) {
            link_error_close(l, why != NULL ? why : "not a request");
            return 0;
        }
        if (!l->hello) {
            hello(l, &m);
            if (!l->hello)
                return 0;
        } else {
            o->link_hooks.on_request(o, l, &m, payload, plen);
        }
        evbuffer_drain(in, used);
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct olink *l = arg;
    if (!l->closing && process(l))
        olink_flush(l);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct olink *l = arg;
    if (l->closing) {
        olink_close(l);
        return;
    }
    if (evbuffer_get_length(bufferevent_get_output(bev)) < LINK_HIGH_WATER / 2)
        bufferevent_enable(bev, EV_READ);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        olink_close(arg);
}

void olink_setup(struct owner *o, const struct olink_hooks *hooks)
{
    o->link_hooks = *hooks;
}

struct olink *olink_attach(struct owner *o, struct bufferevent *bev)
{
    struct olink *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->o = o;
    l->bev = bev;
    bufferevent_setcb(l->bev, on_read, on_write, on_event, l);
    bufferevent_setwatermark(l->bev, EV_WRITE, LINK_HIGH_WATER / 2, 0);
    bufferevent_enable(l->bev, EV_READ | EV_WRITE);
    l->next = o->links;
    if (o->links)
        o->links->prev = l;
    o->links = l;
    return l;
}

static void on_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct owner *o = arg;
    if (o->stopping) {
        close(fd);
        return;
    }
    struct bufferevent *bev = bufferevent_socket_new(o->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        close(fd);
        return;
    }
    if (olink_attach(o, bev) == NULL)
        bufferevent_free(bev); /* closes fd */
}

int olink_listen(struct owner *o, int fd)
{
    /* Backlog 0: the master already called listen() on it. */
    o->listener = evconnlistener_new(o->base, on_accept, o, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    return o->listener != NULL ? 0 : -1;
}

void olink_close(struct olink *l)
{
    struct owner *o = l->o;
    if (o->link_hooks.on_close != NULL)
        o->link_hooks.on_close(o, l);
    if (l->prev)
        l->prev->next = l->next;
    else
        o->links = l->next;
    if (l->next)
        l->next->prev = l->prev;
    bufferevent_free(l->bev);
    buf_deinit(&l->out);
    free(l);
}

void owner_push(struct owner *o, const char *key, size_t klen, hkv_stamp stamp)
{
    if (!o->ctx->cfg->owner_push)
        return;
    const char *done[16];
    int ndone = 0;
    struct ledger_view v = {0};
    int have = -1; /* looked up lazily: most owners have no push link yet */
    for (struct olink *l = o->links; l != NULL && ndone < 16; l = l->next) {
        if (l->role != WIRE_ROLE_PUSH || !l->hello || l->closing)
            continue;
        int seen = 0;
        for (int i = 0; i < ndone && !seen; i++)
            seen = strcmp(done[i], l->colo) == 0;
        if (seen)
            continue;
        if (have < 0)
            have = o->pool == CFG_POOL_HOT &&
                   ledger_get(o->ledger, key, klen, owner_clock(), &v) == HKV_OK;
        if (have)
            wire_put_push(&l->out, wire_slice(key, klen), wire_slice(v.val, v.vlen), v.stamp,
                          (uint64_t)v.expire_at_ms);
        else
            wire_put_invalidate(&l->out, wire_slice(key, klen), stamp);
        olink_flush(l);
        done[ndone++] = l->colo;
        o->st.owner_pushes++;
    }
}

void olink_close_all(struct owner *o)
{
    while (o->links != NULL)
        olink_close(o->links);
}

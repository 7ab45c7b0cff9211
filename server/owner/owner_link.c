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
 *
 * HELLO decides whether a link may speak at all: the protocol version, the
 * cluster (this owner's, "" on a single host), the owner number the edge
 * wants (0 on a single host; this owner's number in a cluster: a link meant
 * for another owner is refused, so a stale address never writes to the
 * wrong owner) and, on a TCP link from another host, that the peer's
 * verified certificate names the host the HELLO claims.  A refusal is an
 * ERROR to the HELLO's id with the reason, and the link closes.  A TCP link
 * that has not said HELLO within OLINK_HELLO_TIMEOUT_S is closed.
 *
 * A connection whose first frame is a leaf move's (proto/wire_hand.h kinds)
 * is another owner's hand-off link, not an edge's: it is handed over whole
 * to the on_handoff hook (the same sockets serve both, so a target needs no
 * listener of its own, and over TCP the same mutual TLS covers it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "proto/wire_hand.h"
#include "server/core/log.h"
#include "server/core/tls.h"
#include "server/core/tls_cluster.h"
#include "server/owner/owner_int.h"
#include "server/core/topo.h"

#define LINK_HIGH_WATER (16u << 20) /* stop reading while replies back up */
#define OLINK_HELLO_TIMEOUT_S 10
#define CLOCK_FRAMES 32 /* requests of a batch that share one reading of the clock */

/* Answers ERROR (to id; 0 = about the link) and closes once that reply is
 * written: the stream cannot be trusted after a framing error, nor a link
 * whose HELLO was refused. */
static void link_refuse(struct olink *l, uint64_t id, const char *why)
{
    l->o->st.owner_protocol_errors++;
    log_verbose("edge link: %s; closing it", why);
    wire_put_error(&l->out, id, HKV_EPROTO, wire_cstr(why));
    l->closing = 1; /* before the flush: through the bufferevent, whose write
                     * callback then closes the link */
    olink_flush(l);
    bufferevent_disable(l->bev, EV_READ);
    bufferevent_setwatermark(l->bev, EV_WRITE, 0, 0);
}

static void link_error_close(struct olink *l, const char *why)
{
    link_refuse(l, 0, why);
}

/* Writes what it can of l->out straight to the socket: a Unix-socket link
 * (not TLS, not closing) whose bufferevent holds nothing unsent, so the
 * order of the bytes is kept.  Handing every batch to the bufferevent cost
 * an epoll_ctl to arm its write event and one to disarm it, plus a loop
 * iteration before the writev (on SET -P16: two epoll_ctl per writev,
 * 18% of the owner's cycles with the writev).  What is left (EAGAIN, an
 * error) goes to the bufferevent, which reports a dead peer as before. */
static void write_direct(struct olink *l)
{
    if (l->tls || l->closing || evbuffer_get_length(bufferevent_get_output(l->bev)) > 0)
        return;
    evutil_socket_t fd = bufferevent_getfd(l->bev);
    while (fd >= 0 && buf_unread(&l->out) > 0) {
        ssize_t n = send(fd, buf_head(&l->out), buf_unread(&l->out), MSG_NOSIGNAL);
        if (n > 0)
            buf_consume(&l->out, (size_t)n);
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return;
    }
}

void olink_flush(struct olink *l)
{
    if (buf_unread(&l->out) == 0)
        return;
    write_direct(l);
    if (buf_unread(&l->out) > 0)
        bufferevent_write(l->bev, buf_head(&l->out), buf_unread(&l->out));
    buf_reset(&l->out);
    buf_shrink(&l->out, 64 * 1024);
    if (evbuffer_get_length(bufferevent_get_output(l->bev)) > LINK_HIGH_WATER)
        bufferevent_disable(l->bev, EV_READ);
}

/* Refuses (returns 0, with why) a HELLO not meant for this owner: another
 * cluster, another owner number, or over TLS a peer whose certificate does
 * not name the host it claims. */
static int hello_for_us(struct olink *l, const struct wire_msg *m, char *why, size_t whylen)
{
    struct owner *o = l->o;
    const struct owner_opts *opts = &o->opts;
    const struct wire_slice *cl = &m->u.hello.cluster, *host = &m->u.hello.host;
    if (cl->len != strlen(opts->cluster) || memcmp(cl->p, opts->cluster, cl->len) != 0) {
        snprintf(why, whylen, "HELLO for cluster '%.*s': this owner is in %s%s%s",
                 (int)(cl->len > 64 ? 64 : cl->len), cl->p, opts->cluster[0] ? "cluster '" : "",
                 opts->cluster[0] ? opts->cluster : "no cluster", opts->cluster[0] ? "'" : "");
        return 0;
    }
    uint32_t want = m->u.hello.want_owner;
    if (opts->cluster[0] == '\0') {
        if (want != 0) {
            snprintf(why, whylen, "HELLO wants owner %u: this owner is not in a cluster", want);
            return 0;
        }
        return 1;
    }
    unsigned me = owner_own_number(o);
    if (me == 0 || want != me) {
        owner_own_refresh(o); /* the edge may route from a newer revision */
        me = owner_own_number(o);
    }
    if (me == 0) {
        snprintf(why, whylen, "HELLO wants owner %u: this owner does not know its number yet "
                              "(no cluster map)", want);
        return 0;
    }
    if (want != me) {
        snprintf(why, whylen, "HELLO wants owner %u: this is owner %u", want, me);
        return 0;
    }
    if (l->tls) {
        char name[64], bad[160];
        snprintf(name, sizeof(name), "%.*s", (int)(host->len > 63 ? 63 : host->len), host->p);
        SSL *ssl = bufferevent_openssl_get_ssl(l->bev);
        if (host->len == 0 || host->len > 63 || ssl == NULL ||
            !tls_cluster_peer_is(ssl, name, bad, sizeof(bad))) {
            snprintf(why, whylen, "HELLO from host '%s' refused: %s", name,
                     host->len == 0 ? "no host name" : ssl == NULL ? "not TLS" : bad);
            return 0;
        }
    }
    return 1;
}

static void hello(struct olink *l, const struct wire_msg *m)
{
    struct owner *o = l->o;
    char why[256];
    if (m->type != WIRE_HELLO) {
        link_error_close(l, "the first frame must be HELLO");
        return;
    }
    if (m->u.hello.version != WIRE_VERSION) {
        link_refuse(l, m->id, "unsupported protocol version");
        return;
    }
    if (!hello_for_us(l, m, why, sizeof(why))) {
        log_notice("edge link refused: %s", why);
        link_refuse(l, m->id, why);
        return;
    }
    l->hello = 1;
    l->role = m->u.hello.role;
    l->edge_id = m->u.hello.edge_id;
    l->edge_inc = m->u.hello.incarnation;
    /* Pushes go once per colo; colo names repeat across hosts. */
    const struct wire_slice *c = &m->u.hello.colo, *h = &m->u.hello.host;
    if (h->len > 0)
        snprintf(l->colo, sizeof(l->colo), "%.*s/%.*s", (int)(h->len > 64 ? 64 : h->len), h->p,
                 (int)(c->len > 64 ? 64 : c->len), c->p);
    else
        snprintf(l->colo, sizeof(l->colo), "%.*s", (int)(c->len > 64 ? 64 : c->len), c->p);
    if (l->tls)
        bufferevent_set_timeouts(l->bev, NULL, NULL);
    int cluster = o->own != NULL;
    wire_put_hello_ok(&l->out, m->id, WIRE_VERSION,
                      cluster ? owner_own_number(o) : (uint32_t)o->index,
                      wire_cstr(topo_pool_name(o->pool)),
                      cluster ? (uint64_t)owner_own_revision(o)
                              : router_generation(o->router, o->pool),
                      o->incarnation);
}

/* The link is a leaf move's hand-off link, not an edge's: its connection
 * (the first frame still in the input) goes to the on_handoff hook and
 * this link goes, with no on_close (it carried no request). */
static void handoff(struct olink *l)
{
    struct owner *o = l->o;
    struct bufferevent *bev = l->bev;
    if (l->prev)
        l->prev->next = l->next;
    else
        o->links = l->next;
    if (l->next)
        l->next->prev = l->prev;
    buf_deinit(&l->out);
    int tls = l->tls;
    free(l);
    o->link_hooks.on_handoff(o, bev, tls);
}

/* Decodes and runs one frame (payload) of the link.  Returns 0 if the link
 * was closed or handed over. */
static int run_frame(struct olink *l, const char *payload, size_t plen)
{
    struct owner *o = l->o;
    if (!l->hello && o->link_hooks.on_handoff != NULL &&
        hand_is_kind(hand_peek_type(payload, plen))) {
        handoff(l);
        return 0;
    }
    struct wire_msg m;
    const char *why = NULL;
    int rc = wire_decode(&o->dec, payload, plen, &m, &why);
    if (rc != HKV_OK || !wire_is_request(m.type)) {
        link_error_close(l, why != NULL ? why : "not a request");
        return 0;
    }
    if (!l->hello) {
        hello(l, &m);
        return l->hello;
    }
    o->link_hooks.on_request(o, l, &m, payload, plen);
    return 1;
}

/* Decodes and runs every whole frame in the input.  Returns 0 if the link
 * was closed.  The frames lying whole in the input's first chunk are read in
 * place and drained together (one pullup and one drain per chunk, not per
 * frame); only a frame across chunks is copied into one piece. */
static int process_frames(struct olink *l)
{
    struct owner *o = l->o;
    struct evbuffer *in = bufferevent_get_input(l->bev);
    size_t max = o->opts.wire_max_frame;
    unsigned frames = 0;
    for (;;) {
        size_t have = evbuffer_get_length(in);
        if (have < WIRE_HEADER_LEN)
            return 1;
        size_t avail = evbuffer_get_contiguous_space(in);
        if (avail < WIRE_HEADER_LEN)
            avail = WIRE_HEADER_LEN;
        const char *p = (const char *)evbuffer_pullup(in, (ssize_t)avail);
        const char *payload;
        size_t plen, used;
        int rc = wire_next_frame(p, avail, max, &payload, &plen, &used);
        if (rc == HKV_ETOOBIG) {
            link_error_close(l, "frame larger than wire-max-frame");
            return 0;
        }
        if (used > have)
            return 1; /* body not here yet */
        if (used > avail) { /* across chunks: made one */
            p = (const char *)evbuffer_pullup(in, (ssize_t)used);
            avail = used;
        }
        size_t off = 0;
        while ((rc = wire_next_frame(p + off, avail - off, max, &payload, &plen, &used)) !=
               HKV_EAGAIN) {
            if (rc != HKV_OK) {
                link_error_close(l, rc == HKV_ETOOBIG ? "frame larger than wire-max-frame"
                                                      : "bad frame");
                return 0;
            }
            if (!run_frame(l, payload, plen))
                return 0;
            off += used;
            if (++frames % CLOCK_FRAMES == 0) { /* a long batch reads the clock again */
                owner_clock_release();
                owner_clock_hold();
            }
        }
        evbuffer_drain(in, off);
    }
}

/* process_frames with the clock held (owner_clock.c): one reading of the
 * time for up to CLOCK_FRAMES requests of a batch instead of one per
 * request (4% of the owner's cycles on SET -P16). */
static int process(struct olink *l)
{
    owner_clock_hold();
    int rc = process_frames(l);
    owner_clock_release();
    return rc;
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
    struct olink *l = arg;
    if ((what & BEV_EVENT_ERROR) && l->tls && !l->hello) {
        char why[160];
        tls_error_text(why, sizeof(why), "connection failed");
        log_notice("edge link over TLS failed before HELLO: %s", why);
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        olink_close(l);
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

/* A TCP link from another host: TLS from the first byte, HELLO within
 * OLINK_HELLO_TIMEOUT_S. */
static void on_accept_tls(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                          int salen, void *arg)
{
    struct owner *o = arg;
    SSL *ssl = o->stopping || o->cluster_tls == NULL ? NULL : SSL_new(o->cluster_tls);
    if (ssl == NULL) {
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        o->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        close(fd);
        return;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    struct olink *l = olink_attach(o, bev);
    if (l == NULL) {
        bufferevent_free(bev);
        return;
    }
    l->tls = 1;
    struct timeval tv = {OLINK_HELLO_TIMEOUT_S, 0};
    bufferevent_set_timeouts(bev, &tv, NULL);
}

int olink_listen_tls(struct owner *o, int fd)
{
    o->tcp_listener = evconnlistener_new(o->base, on_accept_tls, o, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    return o->tcp_listener != NULL ? 0 : -1;
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

void olink_close_all(struct owner *o)
{
    while (o->links != NULL)
        olink_close(o->links);
}

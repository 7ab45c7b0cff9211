/*
 * owner_hlink.c - hand-off links: the stream of a leaf move between its
 * source and its target (owner_move_int.h; messages in proto/wire_hand.h).
 *
 * Why a small client of its own rather than the edges' link code
 * (server/edge/edge_link*): rooms of one rank may not call each other, and
 * a hand-off link is a different thing: one stream per move, no request
 * ids, no retries, no pending table, its end is the move's end.  So it is a
 * bufferevent (owner traffic is small beside client traffic; TLS is libevent's
 * openssl bufferevent, as on the owner's accepting side) and the protocol's
 * framing.  Same host: the target owner's own Unix socket.  Another host:
 * TCP to the target's owner port with the cluster's mutual TLS
 * (server/core/tls_cluster.h), the target's certificate checked to name its
 * host during the handshake.  The target's end arrives on its edge listeners:
 * owner_link.c hands over a connection whose first frame is a move message,
 * and on TLS the source's certificate must name the host its
 * HANDOFF_BEGIN claims (owner_hlink_peer_is).
 *
 * A link is closed by its owner module (owner_hlink_close, no callback) or
 * goes away by itself (EOF, error, a bad frame): then its gone callback runs
 * once and the link is freed after it.  Handlers may close links from a
 * message callback: freeing waits until the read loop is done with it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "server/core/log.h"
#include "server/core/tls.h"
#include "server/core/tls_cluster.h"
#include "server/core/topo.h"
#include "server/owner/owner_move_int.h"

struct hlink {
    struct owner *o;
    struct bufferevent *bev;
    int tls, up, dead, in_read, flush_close;
    hlink_msg_fn on_msg;
    hlink_gone_fn on_gone;
    hlink_drained_fn on_drained;
    void *arg;
    struct wire_decoder dec;
    struct hkv_buf out;
    struct hlink *prev, *next;
};

struct ohlinks {
    struct hlink *all;
    hlink_accept_fn on_accept;
};

static void unlink_free(struct hlink *h)
{
    struct ohlinks *s = h->o->hlinks;
    if (h->prev)
        h->prev->next = h->next;
    else if (s != NULL)
        s->all = h->next;
    if (h->next)
        h->next->prev = h->prev;
    if (h->bev != NULL)
        bufferevent_free(h->bev);
    wire_decoder_deinit(&h->dec);
    buf_deinit(&h->out);
    free(h);
}

/* The link went away by itself: its owner hears it once. */
static void gone(struct hlink *h, const char *why)
{
    if (h->dead)
        return;
    h->dead = 1;
    if (h->on_gone != NULL)
        h->on_gone(h->o, h->arg, h, why);
    if (!h->in_read)
        unlink_free(h);
}

static size_t max_frame(const struct hlink *h)
{
    return h->o->opts.wire_max_frame + (64u << 10);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct hlink *h = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    const char *bad = NULL;
    h->in_read = 1;
    while (!h->dead && !h->flush_close) {
        size_t have = evbuffer_get_length(in), used, plen;
        const char *payload;
        if (have < WIRE_HEADER_LEN)
            break;
        const char *p = (const char *)evbuffer_pullup(in, WIRE_HEADER_LEN);
        if (wire_next_frame(p, WIRE_HEADER_LEN, max_frame(h), &payload, &plen, &used) ==
            HKV_ETOOBIG) {
            bad = "a frame over wire-max-frame";
            break;
        }
        if (used > have)
            break;
        p = (const char *)evbuffer_pullup(in, (ssize_t)used);
        struct hand_msg m;
        const char *why = NULL;
        if (wire_next_frame(p, used, max_frame(h), &payload, &plen, &used) != HKV_OK ||
            hand_decode(&h->dec, payload, plen, &m, &why) != HKV_OK) {
            bad = why != NULL ? why : "a bad frame";
            break;
        }
        if (h->on_msg != NULL)
            h->on_msg(h->o, h->arg, h, &m);
        if (!h->dead)
            evbuffer_drain(in, used);
    }
    h->in_read = 0;
    if (bad != NULL && !h->dead && !h->flush_close) {
        log_notice("hand-off link: %s; closing it", bad);
        gone(h, bad);
        return;
    }
    if (h->dead || (h->flush_close && owner_hlink_backlog(h) == 0))
        unlink_free(h);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct hlink *h = arg;
    if (h->flush_close) {
        unlink_free(h);
        return;
    }
    if (h->on_drained != NULL)
        h->on_drained(h->o, h->arg, h);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct hlink *h = arg;
    if (what & BEV_EVENT_CONNECTED) {
        h->up = 1;
        return;
    }
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
        return;
    if (h->flush_close) {
        unlink_free(h);
        return;
    }
    char why[200];
    if (what & BEV_EVENT_EOF)
        snprintf(why, sizeof(why), "the peer closed the hand-off link");
    else if (h->tls)
        tls_error_text(why, sizeof(why), "the hand-off link failed");
    else
        snprintf(why, sizeof(why), "the hand-off link failed: %s", strerror(errno));
    gone(h, why);
}

static struct hlink *attach(struct owner *o, struct bufferevent *bev, int tls)
{
    struct hlink *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->o = o;
    h->bev = bev;
    h->tls = tls;
    wire_decoder_init(&h->dec, 0);
    h->out = (struct hkv_buf)HKV_BUF_INIT;
    bufferevent_setcb(bev, on_read, on_write, on_event, h);
    bufferevent_setwatermark(bev, EV_WRITE, OHLINK_LOW_WATER, 0);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    struct ohlinks *s = o->hlinks;
    h->next = s->all;
    if (s->all)
        s->all->prev = h;
    s->all = h;
    return h;
}

/* The target's end: the first message goes to on_accept, which sets the
 * handlers (or closes the link). */
static void on_first(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *m)
{
    h->on_msg = NULL;
    o->hlinks->on_accept(o, h, m);
}

void owner_hlink_adopt(struct owner *o, struct bufferevent *bev, int tls)
{
    struct hlink *h = o->hlinks != NULL ? attach(o, bev, tls) : NULL;
    if (h == NULL) {
        bufferevent_free(bev);
        return;
    }
    h->up = 1;
    h->on_msg = on_first;
    on_read(bev, h); /* the first frame is in the input already */
}

static int sockaddr_of(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (port <= 0 || port > 65535)
        return -1;
    if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof(*a4);
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*a6);
        return 0;
    }
    return -1;
}

struct hlink *owner_hlink_connect(struct owner *o, const struct cmap_owner *t, hlink_msg_fn on_msg,
                                  hlink_gone_fn on_gone, hlink_drained_fn on_drained, void *arg,
                                  char *why, size_t len)
{
    const struct owner_opts *opts = &o->opts;
    struct sockaddr_storage ss;
    socklen_t slen;
    struct bufferevent *bev = NULL;
    int tls = strcmp(t->host, opts->host) != 0;
    if (o->hlinks == NULL) {
        snprintf(why, len, "not in a cluster");
        return NULL;
    }
    if (!tls) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        memset(&ss, 0, sizeof(ss));
        un->sun_family = AF_UNIX;
        topo_owner_socket_in(opts->dir, (enum cfg_pool)t->pool, t->index, un->sun_path,
                             sizeof(un->sun_path));
        slen = sizeof(*un);
        bev = bufferevent_socket_new(o->base, -1, BEV_OPT_CLOSE_ON_FREE);
    } else {
        char err[512];
        if (sockaddr_of(t->addr, t->port, &ss, &slen) != 0) {
            snprintf(why, len, "owner %u has no reachable address ('%.64s' port %u)", t->number,
                     t->addr, t->port);
            return NULL;
        }
        struct tls_cluster_files files = {opts->tls_cert, opts->tls_key, opts->tls_ca};
        SSL_CTX *ctx = tls_cluster_ctx_from(&files, 0, err, sizeof(err));
        SSL *ssl = ctx != NULL ? SSL_new(ctx) : NULL;
        SSL_CTX_free(ctx); /* the SSL holds its own reference */
        if (ssl == NULL || tls_cluster_expect_host(ssl, t->host) != 0) {
            snprintf(why, len, "cluster TLS: %s", ctx == NULL ? err : "out of memory");
            SSL_free(ssl);
            return NULL;
        }
        bev = bufferevent_openssl_socket_new(o->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE);
        if (bev == NULL)
            SSL_free(ssl);
        else
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    }
    struct hlink *h = bev != NULL ? attach(o, bev, tls) : NULL;
    if (h == NULL) {
        if (bev != NULL)
            bufferevent_free(bev);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    h->on_msg = on_msg;
    h->on_gone = on_gone;
    h->on_drained = on_drained;
    h->arg = arg;
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&ss, (int)slen) != 0) {
        snprintf(why, len, "connect to owner %u: %s", t->number, strerror(errno));
        h->on_gone = NULL;
        unlink_free(h);
        return NULL;
    }
    if (tls) {
        int fd = bufferevent_getfd(bev), one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
    return h;
}

void owner_hlink_set(struct hlink *h, hlink_msg_fn on_msg, hlink_gone_fn on_gone,
                     hlink_drained_fn on_drained, void *arg)
{
    h->on_msg = on_msg;
    h->on_gone = on_gone;
    h->on_drained = on_drained;
    h->arg = arg;
}

int owner_hlink_send(struct hlink *h, const struct hand_msg *m)
{
    if (h == NULL || h->dead || h->flush_close)
        return HKV_EIO;
    buf_reset(&h->out);
    int rc = hand_put(&h->out, m);
    if (rc != HKV_OK)
        return rc;
    if (bufferevent_write(h->bev, buf_head(&h->out), buf_unread(&h->out)) != 0)
        return HKV_ENOMEM;
    buf_shrink(&h->out, 1u << 20);
    return HKV_OK;
}

void owner_hlink_flush_now(struct hlink *h)
{
    if (h == NULL || h->dead || h->tls)
        return;
    /* a socket bufferevent keeps its output's start frozen: write a copy
     * (the caller is about to die, nothing is sent twice) */
    evutil_socket_t fd = bufferevent_getfd(h->bev);
    struct evbuffer *out = bufferevent_get_output(h->bev);
    size_t n = evbuffer_get_length(out), done = 0;
    const char *p = n > 0 ? (const char *)evbuffer_pullup(out, (ssize_t)n) : NULL;
    while (fd >= 0 && p != NULL && done < n) {
        ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
}

void owner_hlink_pause(struct hlink *h, int pause)
{
    if (h == NULL || h->dead || h->flush_close)
        return;
    if (pause)
        bufferevent_disable(h->bev, EV_READ);
    else
        bufferevent_enable(h->bev, EV_READ);
}

size_t owner_hlink_backlog(const struct hlink *h)
{
    return h != NULL && h->bev != NULL ? evbuffer_get_length(bufferevent_get_output(h->bev)) : 0;
}

int owner_hlink_peer_is(struct hlink *h, const char *host, char *why, size_t len)
{
    if (!h->tls)
        return 1; /* this host's own Unix socket */
    SSL *ssl = bufferevent_openssl_get_ssl(h->bev);
    return ssl != NULL && tls_cluster_peer_is(ssl, host, why, len);
}

void owner_hlink_close(struct hlink *h, int flush_first)
{
    if (h == NULL || h->dead)
        return;
    h->on_gone = NULL;
    h->on_msg = NULL;
    h->on_drained = NULL;
    if (flush_first && owner_hlink_backlog(h) > 0) {
        h->flush_close = 1; /* on_write frees it once the output is out */
        bufferevent_disable(h->bev, EV_READ);
        bufferevent_setwatermark(h->bev, EV_WRITE, 0, 0);
        return;
    }
    h->dead = 1;
    if (!h->in_read)
        unlink_free(h);
}

int owner_hlink_setup(struct owner *o, hlink_accept_fn on_accept)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    o->hlinks = calloc(1, sizeof(*o->hlinks));
    if (o->hlinks == NULL)
        return -1;
    o->hlinks->on_accept = on_accept;
    return 0;
}

void owner_hlink_teardown(struct owner *o)
{
    if (o->hlinks == NULL)
        return;
    while (o->hlinks->all != NULL) {
        struct hlink *h = o->hlinks->all;
        h->on_gone = NULL;
        unlink_free(h);
    }
    free(o->hlinks);
    o->hlinks = NULL;
}

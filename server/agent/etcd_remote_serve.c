/*
 * etcd_remote_serve.c - the agent's side of etcd_remote.h: a Unix socket on
 * the agent's loop whose connections each carry one call for the agent's
 * local store.  The call goes through the agent's own etcd client (the
 * store's answer waits for the store's fsync, as the agent's own do); a
 * connection closed before its answer is freed when the answer comes (a
 * call cannot be taken back: it may have been applied).
 */
#include "server/agent/etcd_remote.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "proto/hkv.h"
#include "server/core/listen.h"

#define MAX_CONNS 64

struct rconn {
    struct etcd_rserver *s;
    struct bufferevent *bev;
    int busy;                 /* its call is out */
    int closed;               /* the peer left: free at the answer */
    struct rconn *prev, *next;
};

struct etcd_rserver {
    struct etcd *e;
    struct event_base *base;
    struct evconnlistener *lst;
    struct rconn *conns;
    int nconns;
};

static void conn_free(struct rconn *k)
{
    struct etcd_rserver *s = k->s;
    if (s != NULL) {
        if (k->prev)
            k->prev->next = k->next;
        else
            s->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        s->nconns--;
    }
    if (k->bev != NULL)
        bufferevent_free(k->bev);
    free(k);
}

/* The peer is gone or misbehaved. */
static void conn_close(struct rconn *k)
{
    if (!k->busy) {
        conn_free(k);
        return;
    }
    k->closed = 1;
    if (k->bev != NULL)
        bufferevent_free(k->bev);
    k->bev = NULL;
}

static void on_answer(void *arg, const struct etcd_result *r)
{
    struct rconn *k = arg;
    k->busy = 0;
    if (k->closed || k->s == NULL) {
        conn_free(k);
        return;
    }
    struct hkv_buf b = HKV_BUF_INIT;
    if (buf_append(&b, "\0\0\0\0", 4) != HKV_OK || etcd_remote_ans_encode(&b, r) != HKV_OK) {
        buf_deinit(&b);
        conn_close(k);
        return;
    }
    size_t n = buf_unread(&b) - 4;
    unsigned char *p = (unsigned char *)buf_head(&b);
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(n >> (8 * i));
    bufferevent_write(k->bev, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
    /* the peer closes once it has read the answer (on_event frees k) */
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct rconn *k = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (k->busy)
        return;
    unsigned char len[4];
    if (evbuffer_copyout(in, len, 4) < 4)
        return;
    size_t n = (size_t)len[0] | (size_t)len[1] << 8 | (size_t)len[2] << 16 | (size_t)len[3] << 24;
    if (n > ETCD_REMOTE_MAX) {
        conn_close(k);
        return;
    }
    if (evbuffer_get_length(in) < 4 + n)
        return;
    evbuffer_drain(in, 4);
    char *body = malloc(n + 1);
    struct etcd_rreq q;
    int rc = body == NULL ? HKV_ENOMEM : HKV_OK;
    if (rc == HKV_OK) {
        evbuffer_remove(in, body, n);
        rc = etcd_remote_req_decode(body, n, &q);
    }
    if (rc != HKV_OK) {
        free(body);
        conn_close(k);
        return;
    }
    struct etcd *e = k->s->e;
    switch (q.kind) {
    case ETCD_R_RANGE:
        rc = etcd_range(e, q.key, q.klen, q.end, q.elen, q.revision, q.limit, on_answer, k);
        break;
    case ETCD_R_TXN:
        rc = etcd_txn(e, q.cmp, q.ncmp, q.ok, q.nok, q.fail, q.nfail, on_answer, k);
        break;
    case ETCD_R_GRANT:
        rc = etcd_lease_grant(e, q.n, on_answer, k);
        break;
    case ETCD_R_KEEPALIVE:
        rc = etcd_lease_keepalive(e, q.n, on_answer, k);
        break;
    default:
        rc = etcd_lease_revoke(e, q.n, on_answer, k);
        break;
    }
    etcd_remote_req_free(&q);
    free(body);
    if (rc != HKV_OK) {
        struct etcd_result r;
        memset(&r, 0, sizeof(r));
        r.status = HKV_EINVAL;
        r.code = 3;
        r.message = "a call the local store refuses";
        k->busy = 1;
        on_answer(k, &r);
        return;
    }
    k->busy = 1;
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        conn_close(arg);
}

static void on_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct etcd_rserver *s = arg;
    struct rconn *k = s->nconns < MAX_CONNS ? calloc(1, sizeof(*k)) : NULL;
    struct bufferevent *bev =
        k != NULL ? bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
    if (bev == NULL) {
        free(k);
        close(fd);
        return;
    }
    k->s = s;
    k->bev = bev;
    k->next = s->conns;
    if (s->conns)
        s->conns->prev = k;
    s->conns = k;
    s->nconns++;
    bufferevent_setcb(bev, on_read, NULL, on_event, k);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

struct etcd_rserver *etcd_remote_serve(struct event_base *base, struct etcd *e, const char *path,
                                       char *why, size_t len)
{
    struct etcd_rserver *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    s->e = e;
    s->base = base;
    int fd = listen_unix(path, 16, why, len);
    if (fd >= 0)
        s->lst = evconnlistener_new(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    if (s->lst == NULL) {
        if (fd >= 0) {
            close(fd);
            snprintf(why, len, "out of memory");
        }
        free(s);
        return NULL;
    }
    return s;
}

void etcd_remote_serve_stop(struct etcd_rserver **sp)
{
    struct etcd_rserver *s = *sp;
    if (s == NULL)
        return;
    *sp = NULL;
    evconnlistener_free(s->lst);
    while (s->conns != NULL) {
        struct rconn *k = s->conns;
        s->conns = k->next;
        if (k->busy) { /* its answer may still come (the client outlives us): orphan it */
            k->s = NULL;
            k->closed = 1;
            if (k->bev != NULL)
                bufferevent_free(k->bev);
            k->bev = NULL;
        } else {
            k->s = NULL;
            conn_free(k);
        }
    }
    free(s);
}

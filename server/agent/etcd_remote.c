/*
 * etcd_remote.c - the client side of etcd_remote.h: hotkvd-admin's calls to
 * a single host's agent.  Each call is one connection: connect, send the
 * request, read the answer, with the socket's own send and receive
 * timeouts as the bound.  Blocking is right here: the tool waits for each
 * answer anyway, and the agent answers from memory (and its fsync).
 */
#include "server/agent/etcd_remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/hkv.h"

struct rcall {
    struct rcall *next;
    struct hkv_buf req;
    etcd_cb cb;
    void *arg;
};

struct etcd_remote {
    char *sock;
    int64_t timeout_ms;
    struct event *kick;
    struct rcall *head, **tail;
    int *dead;
    char why[320];
};

static int io_all(int fd, char *p, size_t n, int out)
{
    while (n > 0) {
        ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? HKV_ETIMEDOUT : HKV_EIO;
        p += r;
        n -= (size_t)r;
    }
    return HKV_OK;
}

/* One exchange: the answer's body in *ans (malloc'd), its length in *alen. */
static int exchange(struct etcd_remote *r, const struct hkv_buf *req, char **ans, size_t *alen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(r->sock) >= sizeof(sa.sun_path)) {
        snprintf(r->why, sizeof(r->why), "socket path too long: %s", r->sock);
        return HKV_EIO;
    }
    memcpy(sa.sun_path, r->sock, strlen(r->sock) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(r->why, sizeof(r->why), "socket: %s", strerror(errno));
        return HKV_EIO;
    }
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int rc = HKV_EIO;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(r->why, sizeof(r->why), "connect %s: %s (is hotkvd running with leaf-moves "
                 "yes?)", r->sock, strerror(errno));
        goto out;
    }
    unsigned char len[4];
    size_t n = buf_unread(req);
    for (int i = 0; i < 4; i++)
        len[i] = (unsigned char)(n >> (8 * i));
    rc = io_all(fd, (char *)len, 4, 1);
    rc = rc ? rc : io_all(fd, (char *)buf_head(req), n, 1);
    rc = rc ? rc : io_all(fd, (char *)len, 4, 0);
    if (rc == HKV_OK) {
        n = (size_t)len[0] | (size_t)len[1] << 8 | (size_t)len[2] << 16 | (size_t)len[3] << 24;
        *ans = n > ETCD_REMOTE_MAX ? NULL : malloc(n + 1);
        rc = *ans == NULL ? HKV_EPROTO : io_all(fd, *ans, n, 0);
        *alen = n;
    }
    if (rc != HKV_OK)
        snprintf(r->why, sizeof(r->why), "%s: %s", r->sock,
                 rc == HKV_ETIMEDOUT ? "the agent did not answer in time"
                                     : "the agent closed the connection");
out:
    close(fd);
    return rc;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct etcd_remote *r = arg;
    struct rcall *c = r->head;
    if (c == NULL)
        return;
    r->head = c->next;
    if (r->head == NULL)
        r->tail = &r->head;
    char *ans = NULL;
    size_t alen = 0;
    void *mem = NULL;
    struct etcd_result res;
    memset(&res, 0, sizeof(res));
    res.status = exchange(r, &c->req, &ans, &alen);
    if (res.status == HKV_OK && etcd_remote_ans_decode(ans, alen, &res, &mem) != HKV_OK) {
        memset(&res, 0, sizeof(res));
        res.status = HKV_EPROTO;
        snprintf(r->why, sizeof(r->why), "%s: an answer that does not decode", r->sock);
    }
    if (res.status != HKV_OK && res.status != HKV_EINVAL && res.message == NULL)
        res.message = r->why;
    int dead = 0;
    r->dead = &dead;
    c->cb(c->arg, &res);
    free(mem);
    free(ans);
    buf_deinit(&c->req);
    free(c);
    if (dead)
        return;
    r->dead = NULL;
    if (r->head != NULL)
        event_active(r->kick, EV_TIMEOUT, 1);
}

struct etcd_remote *etcd_remote_create(struct event_base *base, const char *sock,
                                       int64_t timeout_ms)
{
    struct etcd_remote *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->sock = strdup(sock);
    r->timeout_ms = timeout_ms;
    r->tail = &r->head;
    r->kick = event_new(base, -1, 0, on_kick, r);
    if (r->sock == NULL || r->kick == NULL)
        etcd_remote_destroy(&r);
    return r;
}

void etcd_remote_destroy(struct etcd_remote **rp)
{
    struct etcd_remote *r = *rp;
    if (r == NULL)
        return;
    *rp = NULL;
    if (r->dead != NULL)
        *r->dead = 1;
    while (r->head != NULL) {
        struct rcall *c = r->head;
        r->head = c->next;
        buf_deinit(&c->req);
        free(c);
    }
    if (r->kick != NULL)
        event_free(r->kick);
    free(r->sock);
    free(r);
}

int etcd_remote_call(struct etcd_remote *r, struct hkv_buf *req, etcd_cb cb, void *arg)
{
    struct rcall *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return HKV_ENOMEM;
    c->req = *req;
    *req = (struct hkv_buf)HKV_BUF_INIT;
    c->cb = cb;
    c->arg = arg;
    *r->tail = c;
    r->tail = &c->next;
    event_active(r->kick, EV_TIMEOUT, 1);
    return HKV_OK;
}

/*
 * harness_wire.c - the owner's binary protocol from the test side
 * (harness.h, h_wire_*): a client that connects to an owner's Unix socket,
 * completes HELLO as an "edge process" of its own, and waits, bounded, for
 * the reply to one request, for the owner-level suites.
 */
#include "harness.h"

#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int h_wire_open(struct h_wire *w, const struct daemon *d, const char *pool, int index, int role)
{
    memset(w, 0, sizeof(*w));
    wire_decoder_init(&w->dec, 0);
    w->next_id = 1;
    w->writer = 4000;
    if (getrandom(&w->incarnation, sizeof(w->incarnation), 0) != sizeof(w->incarnation) ||
        w->incarnation == 0)
        w->incarnation = (uint64_t)h_now_ms() | 1;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    char path[400];
    snprintf(path, sizeof(path), "%s/owner-%s-%d.sock", d->dir, pool, index);
    if (strlen(path) >= sizeof(un.sun_path))
        return -1;
    memcpy(un.sun_path, path, strlen(path) + 1);
    w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (w->fd < 0 || connect(w->fd, (struct sockaddr *)&un, sizeof(un)) != 0)
        return -1;
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    wire_put_hello(&b, id, WIRE_VERSION, w->writer, wire_cstr("test"), (uint8_t)role,
                   w->incarnation);
    struct wire_msg m;
    int rc = h_wire_call(w, &b, id, 5000, &m);
    buf_deinit(&b);
    if (rc != 0 || m.type != WIRE_HELLO_OK)
        return -1;
    w->owner_inc = m.u.hello_ok.incarnation;
    return 0;
}

void h_wire_close(struct h_wire *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    buf_deinit(&w->in);
    wire_decoder_deinit(&w->dec);
}

uint64_t h_wire_id(struct h_wire *w)
{
    return w->next_id++;
}

int h_wire_call(struct h_wire *w, struct hkv_buf *req, uint64_t id, int timeout_ms,
                struct wire_msg *out)
{
    if (req != NULL && buf_unread(req) > 0 && h_send(w->fd, buf_head(req), buf_unread(req)) != 0)
        return -1;
    int64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        const char *payload;
        size_t plen, used = 0;
        while (buf_unread(&w->in) > 0 &&
               wire_next_frame(buf_head(&w->in), buf_unread(&w->in), 0, &payload, &plen, &used) ==
                   HKV_OK) {
            /* buf_consume only moves the offset: the bytes stay put until the
             * next recv, so the slices in *out stay valid until the next call. */
            const char *why;
            if (wire_decode(&w->dec, payload, plen, out, &why) != HKV_OK)
                return -1;
            buf_consume(&w->in, used);
            if (out->id == id || (out->type == WIRE_ERROR && out->id == 0))
                return 0;
        }
        int64_t left = end - h_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pfd = {w->fd, POLLIN, 0};
        if (poll(&pfd, 1, (int)left) <= 0)
            return -1;
        if (buf_reserve(&w->in, 65536, 0) != HKV_OK)
            return -1;
        ssize_t n = recv(w->fd, buf_tail(&w->in), buf_room(&w->in), 0);
        if (n <= 0)
            return -1;
        w->in.len += (size_t)n;
    }
}

int h_wire_open_wait(struct h_wire *w, const struct daemon *d, int role, int ms)
{
    int64_t end = h_now_ms() + ms;
    for (;;) {
        if (h_wire_open(w, d, "cold", 0, role) == 0)
            return 0;
        h_wire_close(w);
        if (h_now_ms() >= end)
            return -1;
        h_sleep_ms(50);
    }
}

struct wire_rid h_wire_rid(struct h_wire *w)
{
    w->seq++;
    return (struct wire_rid){w->seq, w->seq, 0};
}

int h_wire_set(struct h_wire *w, const char *key, const char *val, int timeout_ms,
               struct wire_msg *out)
{
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    struct wire_expiry e = {WIRE_EXP_NONE, 0};
    wire_put_set(&b, id, wire_cstr(key), wire_cstr(val), h_wire_rid(w), e, 0);
    int rc = h_wire_call(w, &b, id, timeout_ms, out);
    buf_deinit(&b);
    return rc;
}

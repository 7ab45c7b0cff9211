/* fake_owner.h - a scripted shard owner for the edge's unit suites
 * (check_op.c, check_flight.c): it listens on the Unix sockets an edge's
 * owner links connect to, answers HELLO, and hands every other request to
 * the test, which answers at once, later (fo_reply), or never.  It runs on
 * the test's own event loop, so a test drives edge and owner in one thread
 * and every wait is a bounded loop.  Header-only: each suite includes it
 * once. */
#ifndef HKV_TEST_FAKE_OWNER_H
#define HKV_TEST_FAKE_OWNER_H

#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "proto/buf.h"
#include "proto/wire.h"

#define FO_MAX_CONNS 16
#define FO_MAX_HELD 64

struct fo_conn {
    struct fake_owner *fo;
    int fd;
    struct event *ev;
    struct hkv_buf in;
    struct wire_decoder dec;
    int role;                     /* from its HELLO */
};

/* A request the test chose to answer later. */
struct fo_held {
    struct fo_conn *fc;
    uint64_t id;
    uint8_t type;
    char key[64];
};

struct fake_owner;
/* A request (not HELLO) on fc: answer with fo_reply now, hold it (fo_hold)
 * or drop it. */
typedef void (*fo_request_fn)(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m);

struct fake_owner {
    struct event_base *base;
    int index;                    /* which owner of the pool */
    int lfd;
    struct event *lev;
    struct fo_conn conns[FO_MAX_CONNS];
    int nconns;
    fo_request_fn on_request;
    int requests[64];             /* requests seen, by wire type */
    struct fo_held held[FO_MAX_HELD];
    int nheld;
};

static void fo_send(struct fo_conn *fc, struct hkv_buf *b)
{
    size_t off = 0;
    for (int i = 0; i < 10000 && off < buf_unread(b); i++) {
        ssize_t n = write(fc->fd, buf_head(b) + off, buf_unread(b) - off);
        if (n > 0)
            off += (size_t)n;
        else
            usleep(100);
    }
    ck_assert_uint_eq(off, buf_unread(b));
    buf_reset(b);
}

/* Sends the frame(s) in b on fc (b is emptied). */
static inline void fo_reply(struct fo_conn *fc, struct hkv_buf *b)
{
    fo_send(fc, b);
}

static inline void fo_hold(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    ck_assert_int_lt(fo->nheld, FO_MAX_HELD);
    struct fo_held *h = &fo->held[fo->nheld++];
    memset(h, 0, sizeof(*h));
    h->fc = fc;
    h->id = m->id;
    h->type = m->type;
    if (m->type == WIRE_GET && m->u.get.nkeys > 0) {
        size_t n = m->u.get.keys[0].len < sizeof(h->key) - 1 ? m->u.get.keys[0].len : sizeof(h->key) - 1;
        memcpy(h->key, m->u.get.keys[0].p, n);
    }
}

static void fo_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct fo_conn *fc = arg;
    if (buf_reserve(&fc->in, 65536, 0) != HKV_OK)
        return;
    ssize_t n = read(fd, buf_tail(&fc->in), buf_room(&fc->in));
    if (n <= 0) {
        event_del(fc->ev);
        return;
    }
    fc->in.len += (size_t)n;
    const char *payload;
    size_t plen, used;
    while (wire_next_frame(buf_head(&fc->in), buf_unread(&fc->in), 0, &payload, &plen, &used) ==
           HKV_OK) {
        struct wire_msg m;
        const char *why;
        ck_assert_int_eq(wire_decode(&fc->dec, payload, plen, &m, &why), HKV_OK);
        if (m.type == WIRE_HELLO) {
            fc->role = m.u.hello.role;
            struct hkv_buf b = HKV_BUF_INIT;
            wire_put_hello_ok(&b, m.id, WIRE_VERSION, (uint32_t)fc->fo->index, wire_cstr("cold"), 1,
                              1000 + (uint64_t)fc->fo->index);
            fo_send(fc, &b);
            buf_deinit(&b);
        } else {
            if (m.type < 64)
                fc->fo->requests[m.type]++;
            if (fc->fo->on_request != NULL)
                fc->fo->on_request(fc->fo, fc, &m);
        }
        buf_consume(&fc->in, used);
    }
}

static void fo_on_accept(evutil_socket_t fd, short what, void *arg)
{
    struct fake_owner *fo = arg;
    int c = accept(fd, NULL, NULL);
    if (c < 0)
        return;
    ck_assert_int_lt(fo->nconns, FO_MAX_CONNS);
    struct fo_conn *fc = &fo->conns[fo->nconns++];
    memset(fc, 0, sizeof(*fc));
    fc->fo = fo;
    fc->fd = c;
    fc->role = -1;
    fcntl(c, F_SETFL, O_NONBLOCK);
    wire_decoder_init(&fc->dec, 0);
    fc->ev = event_new(fo->base, c, EV_READ | EV_PERSIST, fo_on_read, fc);
    event_add(fc->ev, NULL);
}

/* Listens on path (an owner's socket, server/core/topo.h) on base. */
static inline void fo_start(struct fake_owner *fo, struct event_base *base, const char *path,
                            int index, fo_request_fn on_request)
{
    memset(fo, 0, sizeof(*fo));
    fo->base = base;
    fo->index = index;
    fo->on_request = on_request;
    fo->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fo->lfd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    unlink(path);
    ck_assert_int_eq(bind(fo->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fo->lfd, 16), 0);
    fcntl(fo->lfd, F_SETFL, O_NONBLOCK);
    fo->lev = event_new(base, fo->lfd, EV_READ | EV_PERSIST, fo_on_accept, fo);
    event_add(fo->lev, NULL);
}

/* Closes every link connection (the edge sees its links break). */
static inline void fo_drop_links(struct fake_owner *fo)
{
    for (int i = 0; i < fo->nconns; i++) {
        struct fo_conn *fc = &fo->conns[i];
        if (fc->fd >= 0) {
            event_free(fc->ev);
            close(fc->fd);
            fc->fd = -1;
            buf_deinit(&fc->in);
            wire_decoder_deinit(&fc->dec);
        }
    }
    fo->nheld = 0;
}

static inline void fo_stop(struct fake_owner *fo)
{
    fo_drop_links(fo);
    if (fo->lev != NULL)
        event_free(fo->lev);
    fo->lev = NULL;
    if (fo->lfd >= 0)
        close(fo->lfd);
    fo->lfd = -1;
}

/* Links up: a HELLO answered on every role (3 connections). */
static inline int fo_links_up(const struct fake_owner *fo)
{
    int up = 0;
    for (int i = 0; i < fo->nconns; i++)
        up += fo->conns[i].fd >= 0 && fo->conns[i].role >= 0;
    return up >= 3;
}

#endif

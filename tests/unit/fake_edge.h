/* fake_edge.h - a scripted edge link to a real owner, for the owner's unit
 * suites (check_owner_call, check_owner_exec, check_owner_cluster,
 * check_owner_scan): one end of a bufferevent pair is attached to the owner
 * with olink_attach, the test writes request frames to the other end and
 * decodes the replies.  Everything runs on the owner's own event loop in the
 * test's thread, so every wait is a bounded loop.  Header-only: each suite
 * includes it once. */
#ifndef HKV_TEST_FAKE_EDGE_H
#define HKV_TEST_FAKE_EDGE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proto/buf.h"
#include "proto/wire.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"

struct fake_edge {
    struct bufferevent *edge; /* the test's end */
    struct olink *l;          /* the owner's end */
    uint32_t edge_id;
    uint64_t inc;
    uint64_t id;              /* the last request id used */
    uint64_t seq;             /* the last write seq used */
    struct wire_decoder dec;
    char *payload;            /* the last reply's frame (its message points into it) */
};

static void fe_close(struct fake_edge *f)
{
    if (f->edge != NULL)
        bufferevent_free(f->edge);
    f->edge = NULL;
    free(f->payload);
    f->payload = NULL;
    wire_decoder_deinit(&f->dec);
}

/* A new link to o as edge edge_id (incarnation 1000 + edge_id). */
static void fe_open(struct owner *o, struct fake_edge *f, uint32_t edge_id)
{
    memset(f, 0, sizeof(*f));
    wire_decoder_init(&f->dec, 0);
    struct bufferevent *pair[2];
    ck_assert_int_eq(bufferevent_pair_new(o->base, 0, pair), 0);
    f->l = olink_attach(o, pair[0]);
    ck_assert_ptr_nonnull(f->l);
    f->edge = pair[1];
    bufferevent_enable(f->edge, EV_READ | EV_WRITE);
    f->edge_id = edge_id;
    f->inc = 1000 + edge_id;
}

/* Writes the frame in b to the owner, then empties b. */
static void fe_send(struct fake_edge *f, struct hkv_buf *b)
{
    ck_assert_int_eq(bufferevent_write(f->edge, buf_head(b), buf_unread(b)), 0);
    buf_reset(b);
}

/* 1 and the next reply in m if one is complete in f's input, else 0. */
static int fe_take_reply(struct fake_edge *f, struct wire_msg *m)
{
    struct evbuffer *in = bufferevent_get_input(f->edge);
    size_t have = evbuffer_get_length(in);
    if (have < WIRE_HEADER_LEN)
        return 0;
    const char *p = (const char *)evbuffer_pullup(in, (ssize_t)have);
    const char *payload;
    size_t plen, used;
    if (wire_next_frame(p, have, 0, &payload, &plen, &used) != HKV_OK)
        return 0;
    free(f->payload);
    f->payload = malloc(plen ? plen : 1);
    ck_assert_ptr_nonnull(f->payload);
    memcpy(f->payload, payload, plen);
    evbuffer_drain(in, used);
    const char *why = NULL;
    ck_assert_msg(wire_decode(&f->dec, f->payload, plen, m, &why) == HKV_OK, "bad reply: %s",
                  why ? why : "?");
    return 1;
}

/* The next reply on f, running o's loop until it comes (at most wait_ms). */
static void fe_wait_reply(struct owner *o, struct fake_edge *f, struct wire_msg *m, int wait_ms)
{
    int64_t end = h_now_ms() + wait_ms;
    for (int i = 0; i < 1000000 && !fe_take_reply(f, m); i++) {
        ck_assert_msg(h_now_ms() < end, "no reply within %d ms", wait_ms);
        event_base_loop(o->base, EVLOOP_NONBLOCK);
        if (evbuffer_get_length(bufferevent_get_input(f->edge)) == 0)
            usleep(500);
    }
}

#endif

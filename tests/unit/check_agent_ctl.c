/* check_agent_ctl.c - the agent's control channel for its owners
 * (server/agent/agent_ctl.h) without a daemon: the channel's Unix socket in
 * a temporary dir on a minimal in-process agent (the local etcd store, a
 * real map segment), and test clients that speak the LEAF_* frames of
 * proto/wire_hand.h as owners do.  A connection says LEAF_HELLO first; its
 * requests (HELLO too) are answered LEAF_REPLY with their ids on that
 * connection only;
 * a request before HELLO, or a frame that does not decode, closes it. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/buf.h"
#include "proto/hkv.h"
#include "proto/wire.h"
#include "proto/wire_hand.h"
#include "server/agent/agent_ctl.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_keys.h"
#include "server/core/cmap.h"
#include "server/core/topo.h"
#include "tests/harness.h"
#include "tests/unit/agent_fixture.h"

static struct {
    struct agent_fixture f;
    struct agent_ctl *ctl;
    struct wire_decoder dec;      /* the test owners' replies */
} T;

static void put(const char *tail, const char *val)
{
    af_put(&T.f, tail, val);
}

/* Owner 1 h1/cold/0 serving the one cold leaf; owner 2 h1/hot/0 the hot one. */
static void publish(void)
{
    for (unsigned n = 1; n <= 2; n++) {
        struct cmap_owner *o = &T.f.t->owners[n];
        o->number = (uint16_t)n;
        o->pool = (uint8_t)(n == 1 ? CFG_POOL_COLD : CFG_POOL_HOT);
        o->live = 1;
        o->port = (uint16_t)(7000 + n);
        o->incarnation = 1;
        snprintf(o->host, sizeof(o->host), "h1");
        snprintf(o->id, sizeof(o->id), "h1/%s/0", n == 1 ? "cold" : "hot");
        snprintf(o->addr, sizeof(o->addr), "10.0.0.%u", n);
    }
    T.f.t->revision = 1;
    T.f.t->nleaves[CFG_POOL_COLD] = T.f.t->nleaves[CFG_POOL_HOT] = 1;
    T.f.t->leaves[CFG_POOL_COLD][0].owner = 1;
    T.f.t->leaves[CFG_POOL_HOT][0].owner = 2;
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
    put("map/cold/0-00000000", "{\"owner\":1,\"state\":\"serving\"}");
    put("map/hot/0-00000000", "{\"owner\":2,\"state\":\"serving\"}");
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    af_start(&T.f);
    wire_decoder_init(&T.dec, 0);
    publish();
    T.ctl = agent_ctl_start(&T.f.a);
    ck_assert_ptr_nonnull(T.ctl);
}

static void teardown(void)
{
    agent_ctl_stop(&T.ctl);
    ck_assert_ptr_null(T.ctl);
    wire_decoder_deinit(&T.dec);
    af_stop(&T.f);
}

/* An owner's connection to the channel. */
static int dial(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    topo_agent_socket(T.f.ctx.cfg, sa.sun_path, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 20; i++)
        event_base_loop(T.f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK); /* accepted */
    return fd;
}

static void send_msg(int fd, const struct hand_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(hand_put(&b, m), HKV_OK);
    ck_assert_int_eq(write(fd, buf_head(&b), buf_unread(&b)), (ssize_t)buf_unread(&b));
    buf_deinit(&b);
}

static int next_reply(int fd, struct hand_msg *m, int ms);

/* HELLO, and its own reply (OK, id 1).  One request is out at a time on a
 * test connection, so every read holds at most one frame. */
static void hello(int fd, int pool, uint32_t index)
{
    struct hand_msg m = {.type = LEAF_HELLO, .id = 1};
    m.u.hello.pool = (uint8_t)pool;
    m.u.hello.index = index;
    send_msg(fd, &m);
    ck_assert_int_eq(next_reply(fd, &m, 3000), 1);
    ck_assert_int_eq(m.type, LEAF_REPLY);
    ck_assert_uint_eq(m.id, 1);
    ck_assert_int_eq(m.u.reply.status, LEAF_ST_OK);
}

static void read_leaf(int fd, uint64_t id, int pool)
{
    struct hand_msg m = {.type = LEAF_READ, .id = id};
    m.u.leaf.leaf = (struct hand_leaf){(uint8_t)pool, 0, 0};
    send_msg(fd, &m);
}

/* The next frame on fd (within ms): 1 and *m (decoded into storage that
 * lives until the next call), 0 if none came, -1 if the channel closed.
 * Bytes after the frame are not kept (see hello). */
static int next_reply(int fd, struct hand_msg *m, int ms)
{
    static char in[65536];
    size_t have = 0;
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        event_base_loop(T.f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ssize_t n = read(fd, in + have, sizeof(in) - have);
        if (n == 0)
            return -1;
        if (n > 0)
            have += (size_t)n;
        const char *payload;
        size_t plen, used;
        if (have > 0 && wire_next_frame(in, have, 0, &payload, &plen, &used) == HKV_OK) {
            const char *why = NULL;
            ck_assert_msg(hand_decode(&T.dec, payload, plen, m, &why) == HKV_OK, "%s", why);
            return 1;
        }
        if (n < 0)
            h_sleep_ms(1);
    }
    return 0;
}

START_TEST(a_request_after_hello_is_answered_with_its_id)
{
    int fd = dial();
    hello(fd, CFG_POOL_COLD, 0);
    read_leaf(fd, 77, CFG_POOL_COLD);
    struct hand_msg m;
    ck_assert_int_eq(next_reply(fd, &m, 3000), 1);
    ck_assert_int_eq(m.type, LEAF_REPLY);
    ck_assert_uint_eq(m.id, 77);
    ck_assert_int_eq(m.u.reply.status, LEAF_ST_OK);
    ck_assert(m.u.reply.exists);
    ck_assert_uint_eq(m.u.reply.owner, 1);
    close(fd);
}
END_TEST

START_TEST(each_owner_gets_its_own_replies)
{
    int cold = dial(), hot = dial();
    hello(cold, CFG_POOL_COLD, 0);
    hello(hot, CFG_POOL_HOT, 0);
    read_leaf(hot, 5, CFG_POOL_HOT);
    read_leaf(cold, 6, CFG_POOL_COLD);
    struct hand_msg m;
    ck_assert_int_eq(next_reply(hot, &m, 3000), 1);
    ck_assert_uint_eq(m.id, 5);
    ck_assert_uint_eq(m.u.reply.owner, 2);
    ck_assert_int_eq(next_reply(cold, &m, 3000), 1);
    ck_assert_uint_eq(m.id, 6);
    ck_assert_uint_eq(m.u.reply.owner, 1);
    ck_assert_int_eq(next_reply(hot, &m, 100), 0); /* nothing more for either */
    ck_assert_int_eq(next_reply(cold, &m, 100), 0);
    close(cold);
    close(hot);
}
END_TEST

START_TEST(an_owner_asking_for_another_pool_is_refused)
{
    int fd = dial();
    hello(fd, CFG_POOL_HOT, 0);
    read_leaf(fd, 9, CFG_POOL_COLD);
    struct hand_msg m;
    ck_assert_int_eq(next_reply(fd, &m, 3000), 1);
    ck_assert_uint_eq(m.id, 9);
    ck_assert_int_eq(m.u.reply.status, LEAF_ST_REFUSED);
    close(fd);
}
END_TEST

START_TEST(a_request_before_hello_closes_the_connection)
{
    int fd = dial();
    read_leaf(fd, 3, CFG_POOL_COLD);
    struct hand_msg m;
    ck_assert_int_eq(next_reply(fd, &m, 3000), -1);
    close(fd);
    /* the channel itself goes on */
    fd = dial();
    hello(fd, CFG_POOL_COLD, 0);
    read_leaf(fd, 4, CFG_POOL_COLD);
    ck_assert_int_eq(next_reply(fd, &m, 3000), 1);
    ck_assert_uint_eq(m.id, 4);
    close(fd);
}
END_TEST

START_TEST(a_frame_that_does_not_decode_closes_the_connection)
{
    int fd = dial();
    hello(fd, CFG_POOL_COLD, 0);
    /* a well-framed payload that is no message */
    struct hkv_buf b = HKV_BUF_INIT;
    static const char junk[] = "\x00\x00\x00\x0f" "garbage-garbage"; /* 15 bytes */
    buf_append(&b, junk, sizeof(junk) - 1);
    ck_assert_int_eq(write(fd, buf_head(&b), buf_unread(&b)), (ssize_t)buf_unread(&b));
    buf_deinit(&b);
    struct hand_msg m;
    ck_assert_int_eq(next_reply(fd, &m, 3000), -1);
    close(fd);
}
END_TEST

Suite *agent_ctl_suite(void)
{
    Suite *s = suite_create("agent_ctl");
    TCase *tc = tcase_create("channel");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_request_after_hello_is_answered_with_its_id);
    tcase_add_test(tc, each_owner_gets_its_own_replies);
    tcase_add_test(tc, an_owner_asking_for_another_pool_is_refused);
    tcase_add_test(tc, a_request_before_hello_closes_the_connection);
    tcase_add_test(tc, a_frame_that_does_not_decode_closes_the_connection);
    suite_add_tcase(s, tc);
    return s;
}

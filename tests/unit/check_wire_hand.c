/*
 * check_wire_hand.c - the leaf move's messages (proto/wire_hand.h): every
 * kind round-trips, a frame of one protocol is refused by the other's
 * decoder, and hostile input (a leaf that does not fit its bits, id 0, a
 * wrong field count, trailing bytes, an odd change list) is refused.
 */
#include <check.h>
#include <string.h>

#include "proto/wire.h"
#include "proto/wire_hand.h"

#define S(lit) wire_slice(lit, sizeof(lit) - 1)

static struct wire_decoder dec;
static struct hkv_buf buf;

static void setup(void)
{
    wire_decoder_init(&dec, 0);
    buf = (struct hkv_buf)HKV_BUF_INIT;
}

static void teardown(void)
{
    wire_decoder_deinit(&dec);
    buf_deinit(&buf);
}

/* Encodes m, splits the one frame, decodes it, compares. */
static void roundtrip(const struct hand_msg *m)
{
    const char *p;
    size_t plen, used;
    struct hand_msg out;
    buf_reset(&buf);
    ck_assert_int_eq(hand_put(&buf, m), HKV_OK);
    ck_assert_int_eq(wire_next_frame(buf_head(&buf), buf_unread(&buf), 0, &p, &plen, &used), HKV_OK);
    ck_assert_uint_eq(used, buf_unread(&buf));
    ck_assert_uint_eq(hand_peek_type(p, plen), m->type);
    const char *why = "x";
    ck_assert_int_eq(hand_decode(&dec, p, plen, &out, &why), HKV_OK);
    ck_assert_ptr_null(why);
    ck_assert_msg(hand_msg_equal(m, &out), "%s did not round-trip", hand_type_name(m->type));
    /* and the edge protocol's decoder never takes it */
    struct wire_msg wm;
    ck_assert_int_ne(wire_decode(&dec, p, plen, &wm, NULL), HKV_OK);
}

START_TEST(every_kind_round_trips)
{
    struct hand_leaf leaf = {0, 6, 0x2cu << 26};
    struct hand_row rows[3] = {
        {S("k1"), S("v1"), false, 11, 0, 0},
        {S("k2"), wire_slice(NULL, 0), true, 12, 0, 1},
        {S(""), S(""), false, UINT64_MAX >> 1, -5, 65535},
    };
    struct wire_watch ch[2] = {{S("a"), 7}, {S("b"), 9}};
    struct hand_msg m[] = {
        {.type = HANDOFF_BEGIN, .id = 1, .u.begin = {S("test"), S("h1"), leaf, 42, 1, 2, 77, 0}},
        {.type = HANDOFF_READY, .id = 2, .u.ready = {42}},
        {.type = HANDOFF_ROW, .id = 3, .u.row = {5, rows, 3}},
        {.type = HANDOFF_ROW, .id = 3, .u.row = {6, NULL, 0}},
        {.type = HANDOFF_WRITE, .id = 4, .u.write = {7, {S("k"), S("v"), false, 99, 1700000000000, 0}}},
        {.type = HANDOFF_WRITE, .id = 4, .u.write = {8, {S("k"), {NULL, 0}, true, 100, 0, 1}}},
        {.type = HANDOFF_RECORD, .id = 5,
         .u.record = {9, 4097, 1234567890123ULL, 17, WIRE_RESP, true, false, true, -3, 55,
                      {NULL, 0}, S("+OK\r\n"), ch, 2}},
        {.type = HANDOFF_RECORD, .id = 5,
         .u.record = {10, 1, 2, 3, WIRE_OK, true, true, false, 0, 56, S("old"), {NULL, 0}, NULL, 0}},
        {.type = HANDOFF_FENCE, .id = 6, .u.fence = {42, 10}},
        {.type = HANDOFF_FENCE_ACK, .id = 7, .u.fence = {42, 10}},
        {.type = HANDOFF_FENCE_NACK, .id = 8, .u.why = {42, S("gap at 4")}},
        {.type = HANDOFF_COMMITTED, .id = 9, .u.committed = {42, 43}},
        {.type = HANDOFF_ABORT, .id = 10, .u.why = {42, S("fence deadline")}},
        {.type = HANDOFF_PROGRESS, .id = 10, .u.fence = {42, 9}},
        {.type = LEAF_HELLO, .id = 11, .u.hello = {1, 3}},
        {.type = LEAF_INTENT, .id = 12, .u.leaf = {leaf, 41, 2}},
        {.type = LEAF_COMMIT, .id = 13, .u.leaf = {leaf, 42, 2}},
        {.type = LEAF_ABORT, .id = 14, .u.leaf = {leaf, 42, 2}},
        {.type = LEAF_READ, .id = 15, .u.leaf = {leaf, 0, 0}},
        {.type = LEAF_SPLIT, .id = 16, .u.leaf = {{1, 0, 0}, 3, 0}},
        {.type = LEAF_REPLY, .id = 17, .u.reply = {LEAF_ST_LOST, 0, true, 2, 1, 3, 40, S("moved")}},
        {.type = LEAF_ORDER, .id = 18, .u.order = {LEAF_ORDER_MOVE, leaf, 5}},
        {.type = LEAF_DONE, .id = 19, .u.done = {18, LEAF_ST_OK, S("")}},
        {.type = LEAF_HANDOVER, .id = 22, .u.leaf = {leaf, 42, 3}},
        {.type = LEAF_ORDER, .id = 23, .u.order = {LEAF_ORDER_HANDOVER, leaf, 0}},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        roundtrip(&m[i]);
    ck_assert_str_eq(hand_type_name(HANDOFF_FENCE_NACK), "HANDOFF_FENCE_NACK");
    ck_assert_str_eq(hand_type_name(LEAF_HANDOVER), "LEAF_HANDOVER");
    ck_assert(hand_is_kind(LEAF_HANDOVER));
    ck_assert_ptr_null(hand_type_name(WIRE_SET));
}
END_TEST

START_TEST(an_edge_frame_is_not_a_hand_off_frame)
{
    const char *p;
    size_t plen, used;
    struct hand_msg h;
    const char *why = NULL;
    ck_assert_int_eq(wire_put_ping(&buf, 5), HKV_OK);
    ck_assert_int_eq(wire_next_frame(buf_head(&buf), buf_unread(&buf), 0, &p, &plen, &used), HKV_OK);
    ck_assert_uint_eq(hand_peek_type(p, plen), WIRE_PING);
    ck_assert(!hand_is_kind(hand_peek_type(p, plen)));
    ck_assert_int_eq(hand_decode(&dec, p, plen, &h, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "unknown message kind");
    ck_assert_uint_eq(hand_peek_type("\x01", 1), 0);
}
END_TEST

START_TEST(bad_messages_are_refused_by_the_encoder)
{
    struct hand_msg m = {.type = LEAF_INTENT, .id = 1, .u.leaf = {{0, 6, 1}, 1, 2}};
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL); /* start 1 does not fit 6 bits */
    ck_assert_uint_eq(buf_unread(&buf), 0);
    m.u.leaf.leaf.start = 0;
    m.id = 0;
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    m = (struct hand_msg){.type = 200, .id = 1};
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    m = (struct hand_msg){.type = HANDOFF_ROW, .id = 1, .u.row = {1, NULL, 2}};
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    ck_assert_uint_eq(buf_unread(&buf), 0);
}
END_TEST

/* A payload from raw msgpack bytes. */
static int raw(const char *bytes, size_t n, const char **why)
{
    struct hand_msg h;
    return hand_decode(&dec, bytes, n, &h, why);
}

START_TEST(hostile_payloads_are_refused)
{
    const char *why;
    /* [161, 1, 0, 1, 6, 0, 0]: LEAF_INTENT with start 1 at 6 bits */
    ck_assert_int_eq(raw("\x97\xcc\xa1\x01\x00\x01\x06\x00\x00", 9, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "leaf start does not fit its bits");
    /* [129, 0, 5]: READY with id 0 */
    ck_assert_int_eq(raw("\x93\xcc\x81\x00\x05", 5, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "id 0");
    /* [129, 1]: READY without e1 */
    ck_assert_int_eq(raw("\x92\xcc\x81\x01", 4, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "wrong field count");
    /* [129, 1, 5] + a trailing byte */
    ck_assert_int_eq(raw("\x93\xcc\x81\x01\x05\x00", 6, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "trailing bytes");
    /* [130, 1, 1, [array of 1000 claimed]] */
    ck_assert_int_eq(raw("\x94\xcc\x82\x01\x01\xdc\x03\xe8", 8, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "count larger than frame");
    /* RECORD with an odd change list: [132,1, 1,1,1,1,68,true,0,0,nil,nil,[a]] */
    ck_assert_int_eq(raw("\x9d\xcc\x84\x01\x01\x01\x01\x01\x44\xc3\x00\x00\xc0\xc0\x91\xa1\x61",
                         17, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "a change list holds key, version pairs");
}
END_TEST

START_TEST(a_load_report_round_trips)
{
    struct hand_load L[3] = {
        {{0, 3, 0x20000000u}, 900, 100, 300, 400, 123456, {500, 400}, true, S("user:1"), 450},
        {{0, 4, 0x10000000u}, 5, 1, 2, 3, 0, {0, 0}, false, {NULL, 0}, 0},
        {{1, 0, 0}, UINT64_MAX, 0, 0, 0, 0, {UINT64_MAX, 0}, true, S(""), 1},
    };
    struct hand_msg m[] = {
        {.type = LEAF_LOAD, .id = 20, .u.load = {1000, 812, 5000, 4000, 905, L, 3}},
        {.type = LEAF_LOAD, .id = 21, .u.load = {10000, 0, 0, 0, 0, NULL, 0}},
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        roundtrip(&m[i]);
    ck_assert_str_eq(hand_type_name(LEAF_LOAD), "LEAF_LOAD");
    ck_assert(hand_is_kind(LEAF_LOAD));
}
END_TEST

START_TEST(a_bad_load_report_is_refused_by_the_encoder)
{
    static struct hand_load many[HAND_LOAD_MAX + 1];
    char longkey[HAND_KEY_MAX + 1];
    memset(longkey, 'k', sizeof(longkey));
    struct hand_msg m = {.type = LEAF_LOAD, .id = 1, .u.load = {1000, 1, 0, 0, 0, many,
                                                                 HAND_LOAD_MAX + 1}};
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    struct hand_load one = {{0, 2, 0x40000000u}, 1, 0, 0, 0, 0, {0, 0}, true,
                            wire_slice(longkey, sizeof(longkey)), 1};
    m.u.load.leaves = &one;
    m.u.load.nleaves = 1;
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    one.key.len = HAND_KEY_MAX;
    one.leaf.start = 1; /* does not fit 2 bits */
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    m.u.load.leaves = NULL;
    ck_assert_int_eq(hand_put(&buf, &m), HKV_EINVAL);
    ck_assert_uint_eq(buf_unread(&buf), 0);
}
END_TEST

START_TEST(a_hostile_load_report_is_refused)
{
    const char *why;
    /* [169, 1, 1000, 5, 0, 0, 0, [[0, 0, 0, 1]]]: a leaf's load with 4 fields */
    ck_assert_int_eq(raw("\x98\xcc\xa9\x01\xcd\x03\xe8\x05\x00\x00\x00\x91\x94\x00\x00\x00\x01",
                         17, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "a leaf's load has 12 fields");
    /* [169, 1, 1000, 5, 0, 0, 0, [65 entries claimed]] */
    ck_assert_int_eq(raw("\x98\xcc\xa9\x01\xcd\x03\xe8\x05\x00\x00\x00\xdc\x00\x41", 14, &why),
                     HKV_EPROTO);
    /* [169, 1, 1000, 5, 0, 0] : a field short */
    ck_assert_int_eq(raw("\x97\xcc\xa9\x01\xcd\x03\xe8\x05\x00\x00\x00", 11, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "wrong field count");
    /* a busy figure that is not a u32: [169, 1, 1000, -1, 0, 0, 0, []] */
    ck_assert_int_eq(raw("\x98\xcc\xa9\x01\xcd\x03\xe8\xff\x00\x00\x00\x90", 12, &why),
                     HKV_EPROTO);
    /* a leaf whose start does not fit its bits, and a key over HAND_KEY_MAX */
    struct hand_load one = {{0, 2, 0x40000000u}, 1, 0, 0, 0, 0, {0, 0}, true, S("k"), 1};
    struct hand_msg m = {.type = LEAF_LOAD, .id = 1, .u.load = {1000, 1, 0, 0, 0, &one, 1}};
    ck_assert_int_eq(hand_put(&buf, &m), HKV_OK);
    char *p = (char *)buf_head(&buf) + WIRE_HEADER_LEN;
    size_t plen = buf_unread(&buf) - WIRE_HEADER_LEN;
    char *at = memchr(p, 0x40, plen); /* start 0x40000000 as a u32: ce 40 00 00 00 */
    ck_assert_ptr_nonnull(at);
    at[0] = 0x41;
    ck_assert_int_eq(raw(p, plen, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "leaf start does not fit its bits");
    char longkey[HAND_KEY_MAX + 1];
    memset(longkey, 'k', sizeof(longkey));
    one.key = wire_slice(longkey, HAND_KEY_MAX);
    buf_reset(&buf);
    ck_assert_int_eq(hand_put(&buf, &m), HKV_OK);
    /* grow the key's bin8 length by one, and the frame by one byte */
    struct hkv_buf b2 = HKV_BUF_INIT;
    p = (char *)buf_head(&buf) + WIRE_HEADER_LEN;
    plen = buf_unread(&buf) - WIRE_HEADER_LEN;
    at = memchr(p, 'k', plen);
    ck_assert_ptr_nonnull(at);
    ck_assert_uint_eq((unsigned char)at[-1], HAND_KEY_MAX);
    at[-1] = (char)(HAND_KEY_MAX + 1);
    buf_append(&b2, p, (size_t)(at - p));
    buf_append(&b2, longkey, 1);
    buf_append(&b2, at, plen - (size_t)(at - p));
    ck_assert_int_eq(raw(buf_head(&b2), buf_unread(&b2), &why), HKV_EPROTO);
    ck_assert_str_eq(why, "a top key longer than HAND_KEY_MAX");
    buf_deinit(&b2);
}
END_TEST

Suite *wire_hand_suite(void)
{
    Suite *s = suite_create("wire_hand");
    TCase *tc = tcase_create("messages");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_kind_round_trips);
    tcase_add_test(tc, an_edge_frame_is_not_a_hand_off_frame);
    tcase_add_test(tc, bad_messages_are_refused_by_the_encoder);
    tcase_add_test(tc, hostile_payloads_are_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("load reports");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_load_report_round_trips);
    tcase_add_test(tc, a_bad_load_report_is_refused_by_the_encoder);
    tcase_add_test(tc, a_hostile_load_report_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * check_wire.c - the binary protocol: every message kind round-trips, frames
 * split anywhere reassemble, and each class of hostile input is refused with
 * the right status before it can cost memory.
 */
#include <check.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define S(lit) wire_slice(lit, sizeof(lit) - 1)

/* A write's request id: seq, ack, prev. */
static struct wire_rid rid(uint64_t seq, uint64_t ack, uint64_t prev)
{
    return (struct wire_rid){ seq, ack, prev };
}

static void rid_is(struct wire_rid r, uint64_t seq, uint64_t ack, uint64_t prev)
{
    ck_assert_uint_eq(r.seq, seq);
    ck_assert_uint_eq(r.ack, ack);
    ck_assert_uint_eq(r.prev, prev);
}

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

/* Splits exactly one frame off the buffer and decodes it. */
static int decode_whole(struct wire_msg *m, const char **why)
{
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf_head(&buf), buf_unread(&buf), 0, &p, &plen, &used),
                     HKV_OK);
    ck_assert_uint_eq(used, buf_unread(&buf));
    ck_assert_uint_eq(plen + WIRE_HEADER_LEN, used);
    return wire_decode(&dec, p, plen, m, why);
}

/* Decodes a raw payload (no frame header). */
static int decode_raw(const void *p, size_t n, struct wire_msg *m, const char **why)
{
    return wire_decode(&dec, p, n, m, why);
}

static void slice_is(struct wire_slice s, const char *want, size_t n)
{
    ck_assert_uint_eq(s.len, n);
    if (n > 0)
        ck_assert_mem_eq(s.p, want, n);
}
#define SLICE_IS(s, lit) slice_is((s), (lit), sizeof(lit) - 1)

/* The decoded slice lies inside the frame: zero-copy. */
static void in_buf(struct wire_slice s)
{
    ck_assert(s.p >= buf.data && s.p + s.len <= buf.data + buf.len);
}

/* Re-encodes a decoded message and checks it decodes equal (needs a second
 * decoder: the first one's arrays back `m`). */
static void reencode_equal(const struct wire_msg *m)
{
    struct hkv_buf b2 = HKV_BUF_INIT;
    struct wire_decoder d2;
    struct wire_msg m2;
    const char *p;
    size_t plen, used;
    wire_decoder_init(&d2, 0);
    ck_assert_int_eq(wire_put_msg(&b2, m), HKV_OK);
    ck_assert_int_eq(wire_next_frame(b2.data, b2.len, 0, &p, &plen, &used), HKV_OK);
    ck_assert_int_eq(wire_decode(&d2, p, plen, &m2, NULL), HKV_OK);
    ck_assert(wire_msg_equal(m, &m2));
    wire_decoder_deinit(&d2);
    buf_deinit(&b2);
}

/* ---- round trips ---- */

START_TEST(hello_and_hello_ok_round_trip)
{
    struct wire_msg m;
    ck_assert_int_eq(wire_put_hello(&buf, 1, WIRE_VERSION, 4095, S("colo-a"), WIRE_ROLE_PUSH,
                                    0xfedcba9876543210ULL), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_HELLO);
    ck_assert_uint_eq(m.id, 1);
    ck_assert_uint_eq(m.u.hello.version, WIRE_VERSION);
    ck_assert_uint_eq(m.u.hello.edge_id, 4095);
    SLICE_IS(m.u.hello.colo, "colo-a");
    ck_assert_uint_eq(m.u.hello.role, WIRE_ROLE_PUSH);
    ck_assert_uint_eq(m.u.hello.incarnation, 0xfedcba9876543210ULL);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_hello_ok(&buf, 1, 1, UINT32_MAX, S("hot"), 1ULL << 40, UINT64_MAX),
                     HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    ck_assert_uint_eq(m.u.hello_ok.version, 1);
    ck_assert_uint_eq(m.u.hello_ok.owner_id, UINT32_MAX);
    SLICE_IS(m.u.hello_ok.pool, "hot");
    ck_assert_uint_eq(m.u.hello_ok.map_gen, 1ULL << 40);
    ck_assert_uint_eq(m.u.hello_ok.incarnation, UINT64_MAX);
    reencode_equal(&m);

    /* the smallest incarnation, 1, is a valid one */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_hello(&buf, 2, WIRE_VERSION, 0, S(""), WIRE_ROLE_READ, 1), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.hello.incarnation, 1);
    ck_assert_uint_eq(m.u.hello.colo.len, 0);
    reencode_equal(&m);
}
END_TEST

START_TEST(hello_carries_cluster_wanted_owner_and_host)
{
    struct wire_msg m;
    /* a single host's HELLO: empty cluster and host, any owner */
    ck_assert_int_eq(wire_put_hello(&buf, 1, WIRE_VERSION, 9, S("a"), WIRE_ROLE_READ, 5), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.hello.cluster.len, 0);
    ck_assert_uint_eq(m.u.hello.want_owner, 0);
    ck_assert_uint_eq(m.u.hello.host.len, 0);

    buf_reset(&buf);
    struct wire_hello_cluster cl = {S("prod-eu"), 256, S("h2")};
    ck_assert_int_eq(wire_put_hello_cluster(&buf, 3, WIRE_VERSION, (7u << 12) | 2, S("a"),
                                            WIRE_ROLE_WRITE, 77, &cl), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_HELLO);
    ck_assert_uint_eq(m.u.hello.version, WIRE_VERSION);
    ck_assert_uint_eq(m.u.hello.edge_id, (7u << 12) | 2);
    SLICE_IS(m.u.hello.cluster, "prod-eu");
    ck_assert_uint_eq(m.u.hello.want_owner, 256);
    SLICE_IS(m.u.hello.host, "h2");
    reencode_equal(&m);

    /* MOVED with a cluster epoch (an etcd revision) and owner number */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_moved(&buf, 4, 0x2a, 6, 123456789, 200), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.moved.leaf, 0x2a);
    ck_assert_uint_eq(m.u.moved.leaf_bits, 6);
    ck_assert_uint_eq(m.u.moved.map_gen, 123456789);
    ck_assert_uint_eq(m.u.moved.owner, 200);
    reencode_equal(&m);
}
END_TEST

START_TEST(get_one_and_many_keys_round_trip_in_order)
{
    struct wire_msg m;
    struct wire_slice keys[20];
    char names[20][8];
    for (int i = 0; i < 20; i++) {
        int n = snprintf(names[i], sizeof names[i], "k%d", i);
        keys[i] = wire_slice(names[i], (size_t)n);
    }
    ck_assert_int_eq(wire_put_get(&buf, 7, keys, 1), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_GET);
    ck_assert_uint_eq(m.u.get.nkeys, 1);
    SLICE_IS(m.u.get.keys[0], "k0");
    in_buf(m.u.get.keys[0]);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_get(&buf, UINT64_MAX, keys, 20), HKV_OK);  /* array16 */
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.id, UINT64_MAX);
    ck_assert_uint_eq(m.u.get.nkeys, 20);
    for (int i = 0; i < 20; i++)
        slice_is(m.u.get.keys[i], names[i], strlen(names[i]));
    reencode_equal(&m);
}
END_TEST

START_TEST(set_round_trips_every_expiry_kind_and_flag)
{
    static const struct { struct wire_expiry e; uint32_t flags; struct wire_rid r; } cases[] = {
        { { WIRE_EXP_NONE, 0 }, 0, { 1, 0, 0 } },
        { { WIRE_EXP_REL, 1500 }, WIRE_SET_NX, { 0x123456789abcULL, 0x123456789abbULL, 0 } },
        { { WIRE_EXP_ABS, 1893456000000LL }, WIRE_SET_XX | WIRE_SET_GET,
          { 70000, 65536, WIRE_PREV_UNKNOWN } },
        { { WIRE_EXP_KEEP, 0 }, WIRE_SET_GET, { 5, 5, 0xdeadbeefULL } },
        { { WIRE_EXP_REL, -5 }, 0, { UINT64_MAX, UINT64_MAX, UINT64_MAX } },
        { { WIRE_EXP_ABS, INT64_MAX }, 0, { 2, 1, 1 } },
    };
    struct wire_msg m;
    char big[70000];
    memset(big, 'v', sizeof big);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_slice val = i == 2 ? wire_slice(big, sizeof big) : S("value");
        buf_reset(&buf);
        ck_assert_int_eq(wire_put_set(&buf, 9, S("key"), val, cases[i].r, cases[i].e,
                                      cases[i].flags), HKV_OK);
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_uint_eq(m.type, WIRE_SET);
        SLICE_IS(m.u.set.key, "key");
        slice_is(m.u.set.value, val.p, val.len);
        in_buf(m.u.set.value);
        rid_is(m.u.set.rid, cases[i].r.seq, cases[i].r.ack, cases[i].r.prev);
        ck_assert_uint_eq(m.u.set.exp.kind, cases[i].e.kind);
        ck_assert_int_eq(m.u.set.exp.ms, cases[i].e.ms);
        ck_assert_uint_eq(m.u.set.flags, cases[i].flags);
        reencode_equal(&m);
    }
}
END_TEST

START_TEST(write_requests_round_trip)
{
    struct wire_msg m;
    struct wire_slice keys[3] = { S("a"), S(""), S("ccc") };

    ck_assert_int_eq(wire_put_del(&buf, 2, keys, 3, rid(77, 70, 0)), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_DEL);
    ck_assert_uint_eq(m.u.del.nkeys, 3);
    SLICE_IS(m.u.del.keys[0], "a");
    ck_assert_uint_eq(m.u.del.keys[1].len, 0);
    SLICE_IS(m.u.del.keys[2], "ccc");
    rid_is(m.u.del.rid, 77, 70, 0);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_incrby(&buf, 3, S("ctr"), INT64_MIN, rid(78, 0, WIRE_PREV_UNKNOWN)),
                     HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_INCRBY);
    SLICE_IS(m.u.incrby.key, "ctr");
    ck_assert_int_eq(m.u.incrby.delta, INT64_MIN);
    rid_is(m.u.incrby.rid, 78, 0, WIRE_PREV_UNKNOWN);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_expire(&buf, 4, S("k"), (struct wire_expiry){ WIRE_EXP_ABS, 1234 },
                                     rid(79, 78, 1ULL << 63), WIRE_EXPIRE_XX | WIRE_EXPIRE_GT),
                     HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_EXPIRE);
    SLICE_IS(m.u.expire.key, "k");
    ck_assert_uint_eq(m.u.expire.exp.kind, WIRE_EXP_ABS);
    ck_assert_int_eq(m.u.expire.exp.ms, 1234);
    rid_is(m.u.expire.rid, 79, 78, 1ULL << 63);
    ck_assert_uint_eq(m.u.expire.flags, WIRE_EXPIRE_XX | WIRE_EXPIRE_GT);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_persist(&buf, 5, S("k"), rid(80, 80, 0)), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PERSIST);
    SLICE_IS(m.u.persist.key, "k");
    rid_is(m.u.persist.rid, 80, 80, 0);
    reencode_equal(&m);
}
END_TEST

START_TEST(getdel_round_trips_as_a_write_request)
{
    struct wire_msg m;
    char key[300];
    memset(key, 'g', sizeof key); /* bin16 */
    ck_assert_int_eq(wire_put_getdel(&buf, 6, wire_slice(key, sizeof key),
                                     rid(81, 79, 0x1122334455667788ULL)), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_GETDEL);
    ck_assert_uint_eq(m.id, 6);
    slice_is(m.u.getdel.key, key, sizeof key);
    in_buf(m.u.getdel.key);
    rid_is(m.u.getdel.rid, 81, 79, 0x1122334455667788ULL);
    reencode_equal(&m);

    /* a GETDEL differs from a PERSIST with the same fields */
    struct wire_msg p = m;
    p.type = WIRE_PERSIST;
    p.u.persist.key = m.u.getdel.key;
    p.u.persist.rid = m.u.getdel.rid;
    ck_assert(!wire_msg_equal(&m, &p));
    /* and from a GETDEL with another rid */
    struct wire_msg g = m;
    g.u.getdel.rid.ack++;
    ck_assert(!wire_msg_equal(&m, &g));

    ck_assert_str_eq(wire_type_name(WIRE_GETDEL), "GETDEL");
    ck_assert(wire_is_request(WIRE_GETDEL));
    ck_assert(wire_is_write(WIRE_GETDEL));
    ck_assert(!wire_is_reply(WIRE_GETDEL));
    ck_assert(!wire_is_write(WIRE_GET));
    ck_assert(!wire_is_write(WIRE_TTL));
}
END_TEST

START_TEST(read_and_admin_requests_round_trip)
{
    struct wire_msg m;
    struct wire_slice match = S("user:*");

    ck_assert_int_eq(wire_put_ttl(&buf, 6, S("k")), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_TTL);
    SLICE_IS(m.u.ttl.key, "k");
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_scan(&buf, 7, UINT64_MAX - 1, 100, &match), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_SCAN);
    ck_assert_uint_eq(m.u.scan.cursor, UINT64_MAX - 1);
    ck_assert_uint_eq(m.u.scan.count, 100);
    ck_assert(m.u.scan.has_match);
    SLICE_IS(m.u.scan.match, "user:*");
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_scan_range(&buf, 9, 5, (1ULL << 63), 7, &match), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_SCAN_RANGE);
    ck_assert_uint_eq(m.u.scan_range.from, 5);
    ck_assert_uint_eq(m.u.scan_range.to, 1ULL << 63);
    ck_assert_uint_eq(m.u.scan_range.count, 7);
    ck_assert(m.u.scan_range.has_match);
    SLICE_IS(m.u.scan_range.match, "user:*");
    ck_assert(wire_is_request(m.type) && !wire_is_write(m.type));
    ck_assert_str_eq(wire_type_name(WIRE_SCAN_RANGE), "SCAN_RANGE");
    reencode_equal(&m);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_scan_range(&buf, 10, 0, 1, 1, NULL), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert(!m.u.scan_range.has_match);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_scan(&buf, 8, 0, 10, NULL), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert(!m.u.scan.has_match);
    ck_assert_uint_eq(m.u.scan.count, 10);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_notfound(&buf, 12, 0x1234567), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_NOTFOUND);
    ck_assert_uint_eq(m.u.notfound.stamp, 0x1234567);
    reencode_equal(&m);

    static const unsigned bare[] = { WIRE_PING, WIRE_STATS, WIRE_PONG };
    for (size_t i = 0; i < 3; i++) {
        buf_reset(&buf);
        int rc = bare[i] == WIRE_PING ? wire_put_ping(&buf, 11)
               : bare[i] == WIRE_STATS ? wire_put_stats(&buf, 11)
               : wire_put_pong(&buf, 11);
        ck_assert_int_eq(rc, HKV_OK);
        ck_assert_uint_eq(buf.len, WIRE_HEADER_LEN + 3);  /* [type, id]: 3 bytes */
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_uint_eq(m.type, bare[i]);
        ck_assert_uint_eq(m.id, 11);
        reencode_equal(&m);
    }
}
END_TEST

START_TEST(value_replies_round_trip)
{
    struct wire_msg m;
    ck_assert_int_eq(wire_put_value(&buf, 12, S("v1"), 99, 1893456000000ULL), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    SLICE_IS(m.u.value.value, "v1");
    ck_assert_uint_eq(m.u.value.stamp, 99);
    ck_assert_uint_eq(m.u.value.expire_ms, 1893456000000ULL);
    reencode_equal(&m);

    struct wire_item items[3] = {
        { true, S("one"), 1, 0 },
        { false, S("ignored"), 5, 5 },
        { true, S(""), UINT64_MAX, 42 },
    };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_values(&buf, 13, items, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_VALUES);
    ck_assert_uint_eq(m.u.values.nitems, 3);
    ck_assert(m.u.values.items[0].found);
    SLICE_IS(m.u.values.items[0].value, "one");
    ck_assert_uint_eq(m.u.values.items[0].stamp, 1);
    ck_assert_uint_eq(m.u.values.items[0].expire_ms, 0);
    ck_assert(!m.u.values.items[1].found);
    ck_assert_uint_eq(m.u.values.items[1].value.len, 0);
    ck_assert_uint_eq(m.u.values.items[1].stamp, 0);
    ck_assert(m.u.values.items[2].found);
    ck_assert_uint_eq(m.u.values.items[2].value.len, 0);
    ck_assert_uint_eq(m.u.values.items[2].stamp, UINT64_MAX);
    ck_assert_uint_eq(m.u.values.items[2].expire_ms, 42);
    reencode_equal(&m);

    struct wire_slice old = S("previous");
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_ok(&buf, 14, 555, true, &old), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_OK);
    ck_assert_uint_eq(m.u.ok.stamp, 555);
    ck_assert(m.u.ok.applied);
    ck_assert(m.u.ok.has_old);
    SLICE_IS(m.u.ok.old, "previous");
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_ok(&buf, 15, 556, false, NULL), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert(!m.u.ok.applied);
    ck_assert(!m.u.ok.has_old);
    reencode_equal(&m);
}
END_TEST

START_TEST(int_moved_error_round_trip_with_extreme_values)
{
    static const int64_t ints[] = { 0, 1, -1, -32, -33, 127, 128, -128, -129, 65535, -32768,
                                    -32769, INT32_MIN, (int64_t)INT32_MIN - 1, INT64_MIN,
                                    INT64_MAX, -2 };
    static const hkv_stamp stamps[] = { 0, 1, 0x7f, 0xff, 0x10000, UINT64_MAX };
    struct wire_msg m;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        hkv_stamp st = stamps[i % (sizeof stamps / sizeof stamps[0])];
        buf_reset(&buf);
        ck_assert_int_eq(wire_put_int(&buf, 16, ints[i], st), HKV_OK);
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_uint_eq(m.type, WIRE_INT);
        ck_assert_int_eq(m.u.integer.value, ints[i]);
        ck_assert_uint_eq(m.u.integer.stamp, st);
        reencode_equal(&m);
    }
    /* the stamp is part of the message */
    struct wire_msg other = m;
    other.u.integer.stamp ^= 1;
    ck_assert(!wire_msg_equal(&m, &other));

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_moved(&buf, 17, 0x2a5, 10, 31, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    ck_assert_uint_eq(m.u.moved.leaf, 0x2a5);
    ck_assert_uint_eq(m.u.moved.leaf_bits, 10);
    ck_assert_uint_eq(m.u.moved.map_gen, 31);
    ck_assert_uint_eq(m.u.moved.owner, 3);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_error(&buf, 0, HKV_ETOOBIG, S("frame too big")), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_ERROR);
    ck_assert_uint_eq(m.id, 0);
    ck_assert_int_eq(m.u.error.code, HKV_ETOOBIG);
    SLICE_IS(m.u.error.text, "frame too big");
    reencode_equal(&m);
}
END_TEST

START_TEST(scan_and_stats_replies_round_trip)
{
    struct wire_msg m;
    struct wire_slice keys[2] = { S("x"), S("yy") };
    ck_assert_int_eq(wire_put_scan_reply(&buf, 18, 4242, keys, 2), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.cursor, 4242);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, 2);
    SLICE_IS(m.u.scan_reply.keys[1], "yy");
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_scan_reply(&buf, 19, 0, NULL, 0), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.scan_reply.cursor, 0);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, 0);
    reencode_equal(&m);

    struct wire_stat stats[3] = { { S("keys"), 1000 }, { S("dirty"), 0 }, { S("lag_ms"), -1 } };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_stats_reply(&buf, 20, stats, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_STATS_REPLY);
    ck_assert_uint_eq(m.u.stats_reply.nstats, 3);
    SLICE_IS(m.u.stats_reply.stats[0].name, "keys");
    ck_assert_int_eq(m.u.stats_reply.stats[0].value, 1000);
    SLICE_IS(m.u.stats_reply.stats[2].name, "lag_ms");
    ck_assert_int_eq(m.u.stats_reply.stats[2].value, -1);
    reencode_equal(&m);
}
END_TEST

START_TEST(push_and_invalidate_round_trip_with_id_zero)
{
    struct wire_msg m;
    ck_assert_int_eq(wire_put_push(&buf, S("draw"), S("7 13 21"), 1001, 0), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PUSH);
    ck_assert_uint_eq(m.id, 0);
    SLICE_IS(m.u.push.key, "draw");
    SLICE_IS(m.u.push.value, "7 13 21");
    ck_assert_uint_eq(m.u.push.stamp, 1001);
    ck_assert_uint_eq(m.u.push.expire_ms, 0);
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_invalidate(&buf, S("draw"), 1002), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_INVALIDATE);
    ck_assert_uint_eq(m.id, 0);
    SLICE_IS(m.u.invalidate.key, "draw");
    ck_assert_uint_eq(m.u.invalidate.stamp, 1002);
    reencode_equal(&m);
}
END_TEST

START_TEST(publish_and_pubmsg_round_trip)
{
    struct wire_msg m;
    ck_assert_int_eq(wire_put_publish(&buf, 5, S("news"), S("hello\r\n")), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PUBLISH);
    ck_assert_uint_eq(m.id, 5);
    ck_assert(wire_is_request(m.type) && !wire_is_write(m.type));
    SLICE_IS(m.u.pub.channel, "news");
    SLICE_IS(m.u.pub.msg, "hello\r\n");
    reencode_equal(&m);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_pubmsg(&buf, S("news"), S("")), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PUBMSG);
    ck_assert_uint_eq(m.id, 0);
    ck_assert(wire_is_push(m.type));
    SLICE_IS(m.u.pub.channel, "news");
    ck_assert_uint_eq(m.u.pub.msg.len, 0);
    ck_assert_str_eq(wire_type_name(WIRE_PUBMSG), "PUBMSG");
    reencode_equal(&m);
}
END_TEST

/* ---- framing ---- */

START_TEST(frames_split_at_every_byte_boundary_reassemble)
{
    struct wire_slice keys[2] = { S("alpha"), S("beta") };
    ck_assert_int_eq(wire_put_get(&buf, 1, keys, 2), HKV_OK);
    size_t first = buf.len;
    ck_assert_int_eq(wire_put_set(&buf, 2, S("k"), S("v"), rid(5, 4, 0),
                                  (struct wire_expiry){ 0, 0 }, 0), HKV_OK);
    ck_assert_int_eq(wire_put_ping(&buf, 3), HKV_OK);
    size_t total = buf.len;

    /* Every prefix of the first frame is incomplete, and says how much it needs. */
    for (size_t n = 0; n < first; n++) {
        const char *p = (const char *)1;
        size_t plen, need;
        ck_assert_int_eq(wire_next_frame(buf.data, n, 0, &p, &plen, &need), HKV_EAGAIN);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(need, n < WIRE_HEADER_LEN ? WIRE_HEADER_LEN : first);
        ck_assert_uint_gt(need, n);
    }

    /* Bytes arriving one at a time yield the three frames, in order, each
     * exactly when its last byte arrives. */
    struct hkv_buf in = HKV_BUF_INIT;
    uint64_t ids[3];
    int got = 0;
    for (size_t i = 0; i < total; i++) {
        ck_assert_int_eq(buf_append(&in, buf.data + i, 1), HKV_OK);
        const char *p;
        size_t plen, used;
        int rc;
        while ((rc = wire_next_frame(buf_head(&in), buf_unread(&in), 0, &p, &plen, &used)) ==
               HKV_OK) {
            struct wire_msg m;
            ck_assert_int_eq(wire_decode(&dec, p, plen, &m, NULL), HKV_OK);
            ck_assert_int_lt(got, 3);
            ids[got++] = m.id;
            if (got == 1)
                ck_assert_uint_eq(i + 1, first);
            buf_consume(&in, used);
        }
        ck_assert_int_eq(rc, HKV_EAGAIN);
    }
    ck_assert_int_eq(got, 3);
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[1], 2);
    ck_assert_uint_eq(ids[2], 3);
    ck_assert_uint_eq(buf_unread(&in), 0);
    buf_deinit(&in);
}
END_TEST

START_TEST(encoding_into_a_partly_consumed_buffer_keeps_frames_intact)
{
    /* The buffer compacts while growing: the frame start must follow. */
    struct wire_msg m;
    char big[5000];
    memset(big, 'z', sizeof big);
    ck_assert_int_eq(wire_put_ping(&buf, 1), HKV_OK);
    ck_assert_int_eq(wire_put_ping(&buf, 2), HKV_OK);
    buf_consume(&buf, WIRE_HEADER_LEN + 3);
    ck_assert_int_eq(wire_put_value(&buf, 3, wire_slice(big, sizeof big), 1, 2), HKV_OK);
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf_head(&buf), buf_unread(&buf), 0, &p, &plen, &used),
                     HKV_OK);
    ck_assert_int_eq(wire_decode(&dec, p, plen, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.id, 2);
    buf_consume(&buf, used);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.id, 3);
    slice_is(m.u.value.value, big, sizeof big);
}
END_TEST

/* ---- hostile input ---- */

START_TEST(frame_length_over_max_refused_from_header_alone)
{
    const uint8_t hdr[4] = { 0x00, 0x01, 0x00, 0x01 };  /* 65537 */
    const char *p;
    size_t plen, need;
    ck_assert_int_eq(wire_next_frame((const char *)hdr, 4, 65536, &p, &plen, &need), HKV_ETOOBIG);
    ck_assert_uint_eq(plen, 65537);
    ck_assert_int_eq(wire_next_frame((const char *)hdr, 4, 65537, &p, &plen, &need), HKV_EAGAIN);
    ck_assert_uint_eq(need, 65541);

    /* Default max (64 MiB): the largest u32 header is refused, one at the max waits. */
    const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
    ck_assert_int_eq(wire_next_frame((const char *)huge, 4, 0, &p, &plen, &need), HKV_ETOOBIG);
    ck_assert_uint_eq(plen, 0xffffffffu);
    const uint8_t atmax[4] = { 0x04, 0x00, 0x00, 0x00 };
    ck_assert_int_eq(wire_next_frame((const char *)atmax, 4, 0, &p, &plen, &need), HKV_EAGAIN);
    ck_assert_uint_eq(need, WIRE_MAX_FRAME_DEFAULT + 4);
    const uint8_t over[4] = { 0x04, 0x00, 0x00, 0x01 };
    ck_assert_int_eq(wire_next_frame((const char *)over, 4, 0, &p, &plen, &need), HKV_ETOOBIG);
}
END_TEST

START_TEST(array32_claiming_16m_elements_refused_without_allocation)
{
    struct wire_msg m;
    const char *why;
    /* The frame itself is array32 of 16M elements. */
    const uint8_t top[] = { 0xdd, 0x01, 0x00, 0x00, 0x00, 0x02, 0x01 };
    ck_assert_int_eq(decode_raw(top, sizeof top, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "count larger than frame");
    /* GET whose key array claims 16M keys. */
    const uint8_t get[] = { 0x93, WIRE_GET, 0x05, 0xdd, 0x01, 0x00, 0x00, 0x00, 0xc4, 0x00 };
    ck_assert_int_eq(decode_raw(get, sizeof get, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "count larger than frame");
    ck_assert_uint_eq(m.type, WIRE_GET);
    ck_assert_uint_eq(m.id, 5);
    /* map32 of 16M stats, and VALUES array32. */
    const uint8_t stats[] = { 0x93, WIRE_STATS_REPLY, 0x05, 0xdf, 0x01, 0x00, 0x00, 0x00, 0xa0, 0x00 };
    ck_assert_int_eq(decode_raw(stats, sizeof stats, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "count larger than frame");
    const uint8_t vals[] = { 0x93, WIRE_VALUES, 0x05, 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0 };
    ck_assert_int_eq(decode_raw(vals, sizeof vals, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "count larger than frame");
    /* Nothing was allocated for any of them. */
    ck_assert_ptr_null(dec.arena);
    ck_assert_uint_eq(dec.arena_cap, 0);
}
END_TEST

START_TEST(str32_longer_than_frame_refused)
{
    struct wire_msg m;
    const char *why;
    const uint8_t str[] = { 0x92, WIRE_TTL, 0x01, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'k' };
    const uint8_t ttl[] = { 0x93, WIRE_TTL, 0x01, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'k' };
    ck_assert_int_eq(decode_raw(str, sizeof str, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "missing fields");  /* field count checked first */
    ck_assert_int_eq(decode_raw(ttl, sizeof ttl, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "length larger than frame");
    /* bin32 one byte longer than what is left. */
    const uint8_t bin[] = { 0x93, WIRE_TTL, 0x01, 0xc6, 0x00, 0x00, 0x00, 0x03, 'a', 'b' };
    ck_assert_int_eq(decode_raw(bin, sizeof bin, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "length larger than frame");
    /* Exactly fitting is fine. */
    const uint8_t fit[] = { 0x93, WIRE_TTL, 0x01, 0xc6, 0x00, 0x00, 0x00, 0x02, 'a', 'b' };
    ck_assert_int_eq(decode_raw(fit, sizeof fit, &m, &why), HKV_OK);
    SLICE_IS(m.u.ttl.key, "ab");
}
END_TEST

START_TEST(nesting_deeper_than_bound_refused_without_recursion)
{
    struct wire_msg m;
    const char *why;
    /* 100k nested one-element arrays as the whole payload. */
    size_t n = 100000;
    uint8_t *deep = malloc(n + 1);
    ck_assert_ptr_nonnull(deep);
    memset(deep, 0x91, n);
    deep[n] = 0x00;
    ck_assert_int_eq(decode_raw(deep, n + 1, &m, &why), HKV_EPROTO);
    ck_assert_ptr_nonnull(why);
    /* Nested arrays where a key should be, and inside a VALUES item. */
    memcpy(deep, (const uint8_t[]){ 0x93, WIRE_GET, 0x01, 0x91 }, 4);
    ck_assert_int_eq(decode_raw(deep, n + 1, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "expected bytes");
    const uint8_t item[] = { 0x93, WIRE_VALUES, 0x01, 0x91, 0x93, 0x91, 0x91, 0x91, 0xc0, 0x00, 0x00 };
    ck_assert_int_eq(decode_raw(item, sizeof item, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "expected bytes");
    free(deep);
}
END_TEST

START_TEST(wrong_field_types_refused)
{
    static const struct { uint8_t b[20]; size_t n; const char *why; } cases[] = {
        /* key is an int */
        { { 0x93, WIRE_TTL, 0x01, 0x05 }, 4, "expected bytes" },
        /* type is a string */
        { { 0x92, 0xa1, 'G', 0x01 }, 4, "expected integer" },
        /* id is negative */
        { { 0x92, WIRE_PING, 0xff }, 3, "negative where unsigned expected" },
        /* id is a float */
        { { 0x92, WIRE_PING, 0xca, 0, 0, 0, 0 }, 7, "unsupported msgpack type" },
        /* the frame is a map */
        { { 0x81, 0x01, 0x01 }, 3, "expected array" },
        /* OK applied is an int, not a bool */
        { { 0x95, WIRE_OK, 0x01, 0x01, 0x01, 0xc0 }, 6, "expected bool" },
        /* PERSIST rid seq is a string */
        { { 0x96, WIRE_PERSIST, 0x01, 0xa1, 'k', 0xa1, '1', 0x00, 0x00 }, 9, "expected integer" },
        /* GETDEL rid ack is negative */
        { { 0x96, WIRE_GETDEL, 0x01, 0xa1, 'k', 0x01, 0xff, 0x00 }, 8,
          "negative where unsigned expected" },
        /* DEL rid prev is nil */
        { { 0x96, WIRE_DEL, 0x01, 0x91, 0xa1, 'k', 0x01, 0x00, 0xc0 }, 9, "expected integer" },
        /* HELLO role 3 */
        { { 0x9a, WIRE_HELLO, 0x01, 0x01, 0x01, 0xa0, 0x03, 0x01, 0xa0, 0x00, 0xa0 }, 11,
          "unknown link role" },
        /* HELLO version over u32 */
        { { 0x9a, WIRE_HELLO, 0x01, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, 0x01, 0xa0, 0x00, 0x01, 0xa0,
            0x00, 0xa0 }, 19, "integer out of range" },
        /* HELLO incarnation is a string */
        { { 0x9a, WIRE_HELLO, 0x01, 0x01, 0x01, 0xa0, 0x00, 0xa1, '1', 0xa0, 0x00, 0xa0 }, 12,
          "expected integer" },
        /* HELLO of version 2 (no cluster fields): refused on its field count */
        { { 0x97, WIRE_HELLO, 0x01, 0x02, 0x01, 0xa0, 0x00, 0x01 }, 8, "missing fields" },
        /* HELLO want_owner over u32 */
        { { 0x9a, WIRE_HELLO, 0x01, 0x03, 0x01, 0xa0, 0x00, 0x01, 0xa0, 0xcf, 0, 0, 0, 1, 0, 0,
            0, 0, 0xa0 }, 19, "integer out of range" },
        /* HELLO host is an integer */
        { { 0x9a, WIRE_HELLO, 0x01, 0x03, 0x01, 0xa0, 0x00, 0x01, 0xa0, 0x00, 0x07 }, 11,
          "expected bytes" },
        /* INT stamp is negative */
        { { 0x94, WIRE_INT, 0x01, 0x05, 0xff }, 5, "negative where unsigned expected" },
        /* ERROR code over i32 */
        { { 0x94, WIRE_ERROR, 0x01, 0xce, 0x80, 0, 0, 0, 0xa0 }, 9, "integer out of range" },
        /* SET with NX|XX */
        { { 0x9a, WIRE_SET, 0x01, 0xa1, 'k', 0xa1, 'v', 0x01, 0x00, 0x00, 0x00, 0x00, 0x03 },
          13, "bad SET expiry or flags" },
        /* SET with expiry kind 4 */
        { { 0x9a, WIRE_SET, 0x01, 0xa1, 'k', 0xa1, 'v', 0x01, 0x00, 0x00, 0x04, 0x00, 0x00 },
          13, "bad SET expiry or flags" },
        /* EXPIRE with kind NONE */
        { { 0x99, WIRE_EXPIRE, 0x01, 0xa1, 'k', 0x00, 0x00, 0x01, 0x00, 0x00, 0x00 }, 11,
          "bad EXPIRE expiry or flags" },
        /* MOVED leaf 4 with 2 bits */
        { { 0x96, WIRE_MOVED, 0x01, 0x04, 0x02, 0x01, 0x00 }, 7, "leaf does not fit its bits" },
        /* reserved byte */
        { { 0x92, WIRE_PING, 0xc1 }, 3, "reserved msgpack byte" },
        /* GET with no keys */
        { { 0x93, WIRE_GET, 0x01, 0x90 }, 4, "no keys" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_msg(decode_raw(cases[i].b, cases[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_ptr_nonnull(why);
        ck_assert_msg(strcmp(why, cases[i].why) == 0, "case %zu: %s", i, why);
    }
}
END_TEST

START_TEST(unknown_type_refused_keeping_the_id)
{
    struct wire_msg m;
    const char *why;
    const uint8_t t15[] = { 0x92, WIRE_PUBLISH + 1, 0x2a };  /* the first unused request kind */
    ck_assert_int_eq(decode_raw(t15, sizeof t15, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "unknown message type");
    ck_assert_uint_eq(m.type, 0);
    ck_assert_uint_eq(m.id, 42);  /* the caller can still answer ERROR to 42 */
    const uint8_t t300[] = { 0x92, 0xcd, 0x01, 0x2c, 0x2a };
    ck_assert_int_eq(decode_raw(t300, sizeof t300, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "unknown message type");
    const uint8_t t0[] = { 0x92, 0x00, 0x2a };
    ck_assert_int_eq(decode_raw(t0, sizeof t0, &m, &why), HKV_EPROTO);
    const uint8_t t76[] = { 0x92, WIRE_RESP + 1, 0x2a };  /* the first unused reply kind */
    ck_assert_int_eq(decode_raw(t76, sizeof t76, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "unknown message type");
    ck_assert_ptr_null(wire_type_name(WIRE_PUBLISH + 1));
    ck_assert_ptr_null(wire_type_name(WIRE_RESP + 1));
    ck_assert(!wire_is_request(WIRE_PUBLISH + 1));
    ck_assert(!wire_is_reply(WIRE_RESP + 1));
    ck_assert_str_eq(wire_type_name(WIRE_STATS_REPLY), "STATS_REPLY");
}
END_TEST

START_TEST(id_rules_enforced_both_ways)
{
    struct wire_msg m;
    const char *why;
    const uint8_t ping0[] = { 0x92, WIRE_PING, 0x00 };
    ck_assert_int_eq(decode_raw(ping0, sizeof ping0, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "request id 0");
    const uint8_t inval1[] = { 0x94, WIRE_INVALIDATE, 0x01, 0xa1, 'k', 0x01 };
    ck_assert_int_eq(decode_raw(inval1, sizeof inval1, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "push with request id");
    ck_assert_int_eq(wire_put_ping(&buf, 0), HKV_EINVAL);
    struct wire_msg push = { .type = WIRE_PUSH, .id = 9 };
    ck_assert_int_eq(wire_put_msg(&buf, &push), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, 0);
}
END_TEST

START_TEST(trailing_bytes_and_extra_fields_refused)
{
    struct wire_msg m;
    const char *why;
    const uint8_t trail[] = { 0x92, WIRE_PING, 0x01, 0x00 };
    ck_assert_int_eq(decode_raw(trail, sizeof trail, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "trailing bytes");
    ck_assert_uint_eq(m.type, WIRE_PING);
    const uint8_t extra[] = { 0x93, WIRE_PING, 0x01, 0x00 };
    ck_assert_int_eq(decode_raw(extra, sizeof extra, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "extra fields");
    const uint8_t few[] = { 0x92, WIRE_TTL, 0x01 };
    ck_assert_int_eq(decode_raw(few, sizeof few, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "missing fields");
    const uint8_t noid[] = { 0x91, WIRE_PING };
    ck_assert_int_eq(decode_raw(noid, sizeof noid, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "missing type or id");
}
END_TEST

START_TEST(every_truncation_of_a_valid_payload_refused)
{
    struct wire_item items[2] = { { true, S("val"), 0x1122334455667788ULL, 1 }, { false } };
    struct wire_stat st[1] = { { S("n"), -300 } };
    struct wire_slice old = S("o");
    ck_assert_int_eq(wire_put_set(&buf, 300, S("key"), S("value"), rid(1ULL << 60, 1ULL << 59, 7),
                                  (struct wire_expiry){ WIRE_EXP_REL, -70000 }, WIRE_SET_GET),
                     HKV_OK);
    ck_assert_int_eq(wire_put_values(&buf, 301, items, 2), HKV_OK);
    ck_assert_int_eq(wire_put_stats_reply(&buf, 302, st, 1), HKV_OK);
    ck_assert_int_eq(wire_put_ok(&buf, 303, 1, true, &old), HKV_OK);
    ck_assert_int_eq(wire_put_getdel(&buf, 304, S("gd"), rid(3, 2, WIRE_PREV_UNKNOWN)), HKV_OK);
    ck_assert_int_eq(wire_put_int(&buf, 305, -300, 0x1122334455667788ULL), HKV_OK);
    ck_assert_int_eq(wire_put_hello(&buf, 306, WIRE_VERSION, 9, S("c"), WIRE_ROLE_WRITE,
                                    1ULL << 40), HKV_OK);
    ck_assert_int_eq(wire_put_hello_ok(&buf, 307, WIRE_VERSION, 2, S("p"), 5, 1ULL << 33), HKV_OK);
    const char *at = buf.data, *end = buf.data + buf.len;
    int frames = 0;
    while (at < end) {
        const char *p;
        size_t plen, used;
        ck_assert_int_eq(wire_next_frame(at, (size_t)(end - at), 0, &p, &plen, &used), HKV_OK);
        for (size_t n = 0; n < plen; n++) {
            struct wire_msg m;
            const char *why = NULL;
            ck_assert_int_eq(wire_decode(&dec, p, n, &m, &why), HKV_EPROTO);
            ck_assert_ptr_nonnull(why);
        }
        struct wire_msg m;
        ck_assert_int_eq(wire_decode(&dec, p, plen, &m, NULL), HKV_OK);
        at += used;
        frames++;
    }
    ck_assert_int_eq(frames, 8);
}
END_TEST

START_TEST(empty_frame_refused)
{
    struct wire_msg m;
    const char *why;
    const uint8_t zero[4] = { 0, 0, 0, 0 };
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame((const char *)zero, 4, 0, &p, &plen, &used), HKV_OK);
    ck_assert_uint_eq(plen, 0);
    ck_assert_uint_eq(used, 4);
    ck_assert_int_eq(wire_decode(&dec, p, plen, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "empty frame");
    ck_assert_int_eq(wire_decode(&dec, NULL, 0, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "empty frame");
}
END_TEST

START_TEST(key_count_over_decoder_limit_is_etoobig)
{
    struct wire_decoder small;
    struct wire_msg m;
    const char *why;
    struct wire_slice keys[5] = { S("a"), S("b"), S("c"), S("d"), S("e") };
    wire_decoder_init(&small, 4);
    ck_assert_int_eq(wire_put_get(&buf, 1, keys, 4), HKV_OK);
    size_t first = buf.len;
    ck_assert_int_eq(wire_put_get(&buf, 2, keys, 5), HKV_OK);
    ck_assert_int_eq(wire_decode(&small, buf.data + 4, first - 4, &m, &why), HKV_OK);
    ck_assert_uint_eq(m.u.get.nkeys, 4);
    ck_assert_int_eq(wire_decode(&small, buf.data + first + 4, buf.len - first - 4, &m, &why),
                     HKV_ETOOBIG);
    ck_assert_str_eq(why, "too many keys in one message");
    ck_assert_uint_eq(m.id, 2);
    wire_decoder_deinit(&small);
}
END_TEST

/* ---- request ids, incarnations and field counts ---- */

/* One write request per kind, hand-encoded, with seq at byte `seq_at`. */
static const struct { uint8_t type; uint8_t b[16]; size_t n, seq_at; } rid_frames[] = {
    { WIRE_SET, { 0x9a, WIRE_SET, 0x01, 0xa1, 'k', 0xa1, 'v', 0x01, 0x00, 0x00, 0x00, 0x00, 0x00 },
      13, 7 },
    { WIRE_DEL, { 0x96, WIRE_DEL, 0x01, 0x91, 0xa1, 'k', 0x01, 0x00, 0x00 }, 9, 6 },
    { WIRE_INCRBY, { 0x97, WIRE_INCRBY, 0x01, 0xa1, 'k', 0x01, 0x01, 0x00, 0x00 }, 9, 6 },
    { WIRE_EXPIRE, { 0x99, WIRE_EXPIRE, 0x01, 0xa1, 'k', 0x01, 0x05, 0x01, 0x00, 0x00, 0x00 }, 11,
      7 },
    { WIRE_PERSIST, { 0x96, WIRE_PERSIST, 0x01, 0xa1, 'k', 0x01, 0x00, 0x00 }, 8, 5 },
    { WIRE_GETDEL, { 0x96, WIRE_GETDEL, 0x01, 0xa1, 'k', 0x01, 0x00, 0x00 }, 8, 5 },
    /* CALL: rid, proto 2, ["x"] */
    { WIRE_CALL, { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0xa1, 'x' }, 10, 3 },
    /* EXEC: rid, proto 3, no watch, [["x"]] */
    { WIRE_EXEC, { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x03, 0x90, 0x91, 0x91, 0xa1, 'x' },
      12, 3 },
};

START_TEST(seq_zero_refused_by_decoder_for_every_write)
{
    for (size_t i = 0; i < sizeof rid_frames / sizeof rid_frames[0]; i++) {
        uint8_t f[16];
        struct wire_msg m;
        const char *why = NULL;
        memcpy(f, rid_frames[i].b, sizeof f);
        /* as written (seq 1) the frame is valid ... */
        ck_assert_msg(decode_raw(f, rid_frames[i].n, &m, &why) == HKV_OK, "case %zu: %s", i, why);
        ck_assert_uint_eq(m.type, rid_frames[i].type);
        ck_assert(wire_is_write(m.type));
        /* ... with seq 0 it is refused, keeping the type and id for the ERROR */
        f[rid_frames[i].seq_at] = 0x00;
        ck_assert_msg(decode_raw(f, rid_frames[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_str_eq(why, "rid seq 0");
        ck_assert_uint_eq(m.type, rid_frames[i].type);
        ck_assert_uint_eq(m.id, 1);
        /* ack and prev may be anything, 0 included */
        f[rid_frames[i].seq_at] = 0x05;
        f[rid_frames[i].seq_at + 1] = 0x00;
        f[rid_frames[i].seq_at + 2] = 0x00;
        ck_assert_int_eq(decode_raw(f, rid_frames[i].n, &m, NULL), HKV_OK);
    }
}
END_TEST

START_TEST(seq_zero_refused_by_encoder_for_every_write)
{
    struct wire_slice k = S("k");
    struct wire_rid zero = rid(0, 5, 5);
    struct wire_expiry none = { WIRE_EXP_NONE, 0 }, ten = { WIRE_EXP_REL, 10 };
    ck_assert_int_eq(wire_put_ping(&buf, 1), HKV_OK);
    size_t len = buf.len;
    ck_assert_int_eq(wire_put_set(&buf, 2, k, k, zero, none, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_del(&buf, 2, &k, 1, zero), HKV_EINVAL);
    ck_assert_int_eq(wire_put_incrby(&buf, 2, k, 1, zero), HKV_EINVAL);
    ck_assert_int_eq(wire_put_expire(&buf, 2, k, ten, zero, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_persist(&buf, 2, k, zero), HKV_EINVAL);
    ck_assert_int_eq(wire_put_getdel(&buf, 2, k, zero), HKV_EINVAL);
    ck_assert_int_eq(wire_put_call(&buf, 2, zero, 2, &k, 1), HKV_EINVAL);
    struct wire_cmd cmd = { &k, 1 };
    ck_assert_int_eq(wire_put_exec(&buf, 2, zero, 2, NULL, 0, &cmd, 1), HKV_EINVAL);
    struct wire_msg m = { .type = WIRE_GETDEL, .id = 2 };
    m.u.getdel.key = k;
    m.u.getdel.rid = zero;
    ck_assert_int_eq(wire_put_msg(&buf, &m), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, len); /* nothing half-written */
    /* seq 1 with ack and prev 0 is a valid first attempt */
    m.u.getdel.rid = rid(1, 0, 0);
    ck_assert_int_eq(wire_put_msg(&buf, &m), HKV_OK);
    ck_assert_uint_gt(buf.len, len);
}
END_TEST

START_TEST(incarnation_zero_refused_both_ways)
{
    struct wire_msg m;
    const char *why = NULL;
    uint8_t hello[] = { 0x9a, WIRE_HELLO, 0x01, 0x02, 0x03, 0xa1, 'c', 0x01, 0x01,
                        0xa0, 0x00, 0xa0 };
    uint8_t hello_ok[] = { 0x97, WIRE_HELLO_OK, 0x01, 0x02, 0x03, 0xa1, 'p', 0x04, 0x01 };
    ck_assert_int_eq(decode_raw(hello, sizeof hello, &m, &why), HKV_OK);
    ck_assert_uint_eq(m.u.hello.incarnation, 1);
    ck_assert_int_eq(decode_raw(hello_ok, sizeof hello_ok, &m, &why), HKV_OK);
    ck_assert_uint_eq(m.u.hello_ok.incarnation, 1);
    ck_assert_uint_eq(m.u.hello_ok.map_gen, 4);
    hello[8] = 0x00;
    hello_ok[sizeof hello_ok - 1] = 0x00;
    ck_assert_int_eq(decode_raw(hello, sizeof hello, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "incarnation 0");
    ck_assert_uint_eq(m.type, WIRE_HELLO);
    ck_assert_uint_eq(m.id, 1);
    ck_assert_int_eq(decode_raw(hello_ok, sizeof hello_ok, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "incarnation 0");

    ck_assert_int_eq(wire_put_hello(&buf, 1, WIRE_VERSION, 1, S("c"), WIRE_ROLE_READ, 0),
                     HKV_EINVAL);
    ck_assert_int_eq(wire_put_hello_ok(&buf, 1, WIRE_VERSION, 1, S("p"), 1, 0), HKV_EINVAL);
    struct wire_msg h = { .type = WIRE_HELLO, .id = 1 };
    h.u.hello.version = WIRE_VERSION;
    ck_assert_int_eq(wire_put_msg(&buf, &h), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, 0);
}
END_TEST

START_TEST(old_format_frames_refused_by_field_count)
{
    /* frames of the previous protocol: a stamp where a rid now is, no
     * incarnation, INT without a stamp */
    static const struct { uint8_t b[12]; size_t n; uint8_t type; } old[] = {
        { { 0x96, WIRE_HELLO, 0x01, 0x02, 0x01, 0xa0, 0x00 }, 7, WIRE_HELLO },
        { { 0x96, WIRE_HELLO_OK, 0x01, 0x02, 0x01, 0xa0, 0x07 }, 7, WIRE_HELLO_OK },
        { { 0x99, WIRE_SET, 0x01, 0xa1, 'k', 0xa1, 'v', 0x05, 0x00, 0x00, 0x00, 0x00 }, 12,
          WIRE_SET },
        { { 0x94, WIRE_DEL, 0x01, 0x91, 0xa1, 'k', 0x05 }, 7, WIRE_DEL },
        { { 0x95, WIRE_INCRBY, 0x01, 0xa1, 'k', 0x01, 0x05 }, 7, WIRE_INCRBY },
        { { 0x97, WIRE_EXPIRE, 0x01, 0xa1, 'k', 0x01, 0x05, 0x05, 0x00 }, 9, WIRE_EXPIRE },
        { { 0x94, WIRE_PERSIST, 0x01, 0xa1, 'k', 0x05 }, 6, WIRE_PERSIST },
        { { 0x94, WIRE_GETDEL, 0x01, 0xa1, 'k', 0x05 }, 6, WIRE_GETDEL },
        { { 0x93, WIRE_INT, 0x01, 0x05 }, 4, WIRE_INT },
    };
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_msg(decode_raw(old[i].b, old[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_msg(strcmp(why, "missing fields") == 0, "case %zu: %s", i, why);
        ck_assert_uint_eq(m.type, old[i].type);
        ck_assert_uint_eq(m.id, 1);
    }
}
END_TEST

/* Every kind whose fields changed: one field fewer or more than its schema is
 * refused by count, before any field is read. */
START_TEST(changed_kinds_refuse_one_field_fewer_or_more)
{
    struct wire_slice k = S("key");
    ck_assert_int_eq(wire_put_hello(&buf, 1, WIRE_VERSION, 1, S("colo"), WIRE_ROLE_WRITE, 9),
                     HKV_OK);
    ck_assert_int_eq(wire_put_hello_ok(&buf, 2, WIRE_VERSION, 1, S("pool"), 3, 9), HKV_OK);
    ck_assert_int_eq(wire_put_set(&buf, 3, k, S("val"), rid(1, 0, 0), (struct wire_expiry){ 0, 0 },
                                  0), HKV_OK);
    ck_assert_int_eq(wire_put_del(&buf, 4, &k, 1, rid(1, 0, 0)), HKV_OK);
    ck_assert_int_eq(wire_put_incrby(&buf, 5, k, 1, rid(1, 0, 0)), HKV_OK);
    ck_assert_int_eq(wire_put_expire(&buf, 6, k, (struct wire_expiry){ WIRE_EXP_REL, 1 },
                                     rid(1, 0, 0), 0), HKV_OK);
    ck_assert_int_eq(wire_put_persist(&buf, 7, k, rid(1, 0, 0)), HKV_OK);
    ck_assert_int_eq(wire_put_getdel(&buf, 8, k, rid(1, 0, 0)), HKV_OK);
    ck_assert_int_eq(wire_put_int(&buf, 9, -300, 1), HKV_OK);
    static const int nfields[] = { 8, 5, 8, 4, 5, 7, 4, 4, 2 };  /* after type and id */
    const char *at = buf.data, *end = buf.data + buf.len;
    size_t frames = 0;
    while (at < end) {
        const char *p;
        size_t plen, used;
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_int_eq(wire_next_frame(at, (size_t)(end - at), 0, &p, &plen, &used), HKV_OK);
        ck_assert_uint_lt(frames, sizeof nfields / sizeof nfields[0]);
        uint8_t f[64];
        ck_assert_uint_le(plen, sizeof f);
        memcpy(f, p, plen);
        ck_assert_uint_eq(f[0], 0x90 | (2 + nfields[frames]));  /* fixarray: type, id, fields */
        ck_assert_int_eq(decode_raw(f, plen, &m, NULL), HKV_OK);
        f[0]--;
        ck_assert_int_eq(decode_raw(f, plen, &m, &why), HKV_EPROTO);
        ck_assert_msg(strcmp(why, "missing fields") == 0, "frame %zu: %s", frames, why);
        f[0] += 2;
        ck_assert_int_eq(decode_raw(f, plen, &m, &why), HKV_EPROTO);
        ck_assert_msg(strcmp(why, "extra fields") == 0, "frame %zu: %s", frames, why);
        ck_assert_uint_eq(m.id, frames + 1);
        at += used;
        frames++;
    }
    ck_assert_uint_eq(frames, sizeof nfields / sizeof nfields[0]);
}
END_TEST

/* ---- encoder contract ---- */

START_TEST(encoder_refuses_what_decoder_would_and_leaves_buffer_unchanged)
{
    struct wire_slice k = S("k");
    ck_assert_int_eq(wire_put_ping(&buf, 1), HKV_OK);
    size_t len = buf.len;
    ck_assert_int_eq(wire_put_get(&buf, 2, &k, 0), HKV_EINVAL);
    struct wire_rid r1 = rid(1, 0, 0);
    ck_assert_int_eq(wire_put_del(&buf, 2, &k, 0, r1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_set(&buf, 2, k, k, r1, (struct wire_expiry){ WIRE_EXP_KEEP, 5 },
                                  0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_set(&buf, 2, k, k, r1, (struct wire_expiry){ 0, 0 },
                                  WIRE_SET_NX | WIRE_SET_XX), HKV_EINVAL);
    ck_assert_int_eq(wire_put_expire(&buf, 2, k, (struct wire_expiry){ WIRE_EXP_REL, 5 }, r1,
                                     WIRE_EXPIRE_GT | WIRE_EXPIRE_LT), HKV_EINVAL);
    ck_assert_int_eq(wire_put_expire(&buf, 2, k, (struct wire_expiry){ WIRE_EXP_REL, 5 }, r1,
                                     WIRE_EXPIRE_NX | WIRE_EXPIRE_XX), HKV_EINVAL);
    ck_assert_int_eq(wire_put_hello(&buf, 2, 1, 1, k, 3, 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_moved(&buf, 2, 8, 3, 1, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_moved(&buf, 2, 0, 33, 1, 0), HKV_EINVAL);
    /* A failure half-way through (a NULL key after a good one) rolls back too. */
    struct wire_slice bad[2] = { S("ok"), { NULL, 3 } };
    ck_assert_int_eq(wire_put_get(&buf, 2, bad, 2), HKV_EINVAL);
    struct wire_msg unknown = { .type = 200, .id = 1 };
    ck_assert_int_eq(wire_put_msg(&buf, &unknown), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, len);
    struct wire_msg m;
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PING);
}
END_TEST

START_TEST(decoder_reuses_its_key_array_and_copies_nothing)
{
    struct wire_slice keys[3] = { S("a"), S("b"), S("c") };
    struct wire_msg m;
    ck_assert_int_eq(wire_put_get(&buf, 1, keys, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    void *arena = dec.arena;
    size_t cap = dec.arena_cap;
    ck_assert_ptr_nonnull(arena);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_ptr_eq(dec.arena, arena);
        ck_assert_ptr_eq(m.u.get.keys, arena);
    }
    ck_assert_uint_eq(dec.arena_cap, cap);
    /* Slices point at the key bytes inside the frame. */
    ck_assert_ptr_eq(m.u.get.keys[2].p, buf.data + buf.len - 1);
}
END_TEST

/* ---- interoperability with msgpack-c ---- */

START_TEST(msgpack_c_reads_our_frames_and_we_read_its_output)
{
    /* Ours -> msgpack-c. */
    ck_assert_int_eq(wire_put_set(&buf, 70000, S("key"), S("val"), rid(UINT64_MAX, 1, 0),
                                  (struct wire_expiry){ WIRE_EXP_REL, -1 }, WIRE_SET_XX),
                     HKV_OK);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    ck_assert_int_eq(msgpack_unpack_next(&u, buf.data + 4, buf.len - 4, &off),
                     MSGPACK_UNPACK_SUCCESS);
    ck_assert_uint_eq(off, buf.len - 4);
    msgpack_object o = u.data;
    ck_assert_int_eq(o.type, MSGPACK_OBJECT_ARRAY);
    ck_assert_uint_eq(o.via.array.size, 10);  /* type, id, key, value, seq, ack, prev, kind,
                                                 ms, flags (no class since version 4) */
    ck_assert_uint_eq(o.via.array.ptr[0].via.u64, WIRE_SET);
    ck_assert_uint_eq(o.via.array.ptr[1].via.u64, 70000);
    ck_assert_int_eq(o.via.array.ptr[2].type, MSGPACK_OBJECT_BIN);
    ck_assert_mem_eq(o.via.array.ptr[2].via.bin.ptr, "key", 3);
    ck_assert_uint_eq(o.via.array.ptr[4].via.u64, UINT64_MAX);
    ck_assert_uint_eq(o.via.array.ptr[5].via.u64, 1);
    ck_assert_uint_eq(o.via.array.ptr[6].via.u64, 0);
    ck_assert_uint_eq(o.via.array.ptr[7].via.u64, WIRE_EXP_REL);
    ck_assert_int_eq(o.via.array.ptr[8].type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    ck_assert_int_eq(o.via.array.ptr[8].via.i64, -1);
    ck_assert_uint_eq(o.via.array.ptr[9].via.u64, WIRE_SET_XX);
    msgpack_unpacked_destroy(&u);

    /* msgpack-c -> ours: a HELLO with str colo, and int64-packed fields. */
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 10);
    msgpack_pack_int64(&pk, WIRE_HELLO);
    msgpack_pack_uint64(&pk, 123456789012ULL);
    msgpack_pack_int32(&pk, WIRE_VERSION);
    msgpack_pack_uint16(&pk, 12);
    msgpack_pack_str_with_body(&pk, "colo-b", 6);
    msgpack_pack_uint8(&pk, WIRE_ROLE_WRITE);
    msgpack_pack_int64(&pk, 42);  /* incarnation, packed as a signed int */
    msgpack_pack_str_with_body(&pk, "prod", 4);
    msgpack_pack_uint16(&pk, 7);
    msgpack_pack_str_with_body(&pk, "h1", 2);
    struct wire_msg m;
    ck_assert_int_eq(wire_decode(&dec, sb.data, sb.size, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_HELLO);
    ck_assert_uint_eq(m.id, 123456789012ULL);
    ck_assert_uint_eq(m.u.hello.version, WIRE_VERSION);
    ck_assert_uint_eq(m.u.hello.edge_id, 12);
    SLICE_IS(m.u.hello.colo, "colo-b");
    ck_assert_uint_eq(m.u.hello.role, WIRE_ROLE_WRITE);
    ck_assert_uint_eq(m.u.hello.incarnation, 42);
    SLICE_IS(m.u.hello.cluster, "prod");
    ck_assert_uint_eq(m.u.hello.want_owner, 7);
    SLICE_IS(m.u.hello.host, "h1");
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- the command-carrying kinds: CALL, EXEC, RESP ---- */

/* Copies the payload of the one frame in buf into f (to patch it). */
static size_t payload_copy(uint8_t *f, size_t cap)
{
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf.data, buf.len, 0, &p, &plen, &used), HKV_OK);
    ck_assert_uint_eq(used, buf.len);
    ck_assert_uint_le(plen, cap);
    memcpy(f, p, plen);
    return plen;
}

/* Decodes the one frame in buf with decoder d. */
static int decode_with(struct wire_decoder *d, struct wire_msg *m, const char **why)
{
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf.data, buf.len, 0, &p, &plen, &used), HKV_OK);
    return wire_decode(d, p, plen, m, why);
}

/* The decoder reads the encodings our writer emits inline and every other
 * one msgpack allows through its general reader: a SET packed wide by
 * msgpack-c decodes to the same message, and a value out of its field's
 * range is refused either way. */
START_TEST(set_decodes_alike_in_narrow_and_wide_encodings)
{
    ck_assert_int_eq(wire_put_set(&buf, 300, S("k1"), S("value"), rid(70000, 200, 0),
                                  (struct wire_expiry){ WIRE_EXP_REL, -5 }, WIRE_SET_NX),
                     HKV_OK);
    struct wire_msg narrow, wide;
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf.data, buf.len, 0, &p, &plen, &used), HKV_OK);
    ck_assert_int_eq(wire_decode(&dec, p, plen, &narrow, NULL), HKV_OK);
    for (int bad = 0; bad < 3; bad++) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        char hdr[3] = {(char)0xdc, 0, 10}; /* array16 */
        msgpack_sbuffer_write(&sb, hdr, sizeof hdr);
        msgpack_pack_uint64(&pk, WIRE_SET);
        msgpack_pack_uint64(&pk, 300);
        char key[4] = {(char)0xc5, 0, 2, 0}; /* bin16 "k1" */
        msgpack_sbuffer_write(&sb, key, 3);
        msgpack_sbuffer_write(&sb, "k1", 2);
        msgpack_pack_str(&pk, 5);
        msgpack_pack_str_body(&pk, "value", 5);
        msgpack_pack_uint32(&pk, 70000);
        msgpack_pack_int64(&pk, 200);
        msgpack_pack_uint16(&pk, 0);
        msgpack_pack_uint16(&pk, bad == 1 ? 256 : WIRE_EXP_REL); /* kind is a u8 */
        msgpack_pack_int32(&pk, -5);
        msgpack_pack_uint64(&pk, bad == 2 ? (1ULL << 32) : WIRE_SET_NX); /* flags: u32 */
        const char *why = NULL;
        int rc = wire_decode(&dec, sb.data, sb.size, &wide, &why);
        if (bad == 0) {
            ck_assert_int_eq(rc, HKV_OK);
            ck_assert(wire_msg_equal(&narrow, &wide));
        } else {
            ck_assert_int_eq(rc, HKV_EPROTO);
            ck_assert_str_eq(why, "integer out of range");
        }
        msgpack_sbuffer_destroy(&sb);
    }
    /* a narrow (fixint) kind in the u8 range is read inline, then refused as a kind */
    uint8_t f[64];
    size_t n = payload_copy(f, sizeof f);
    size_t kind_at = n - 3; /* ... kind, ms (fixint -5), flags: one byte each */
    ck_assert_uint_eq(f[kind_at], WIRE_EXP_REL);
    f[kind_at] = 0x7f;
    const char *why = NULL;
    ck_assert_int_eq(wire_decode(&dec, (const char *)f, n, &wide, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "bad SET expiry or flags");
}
END_TEST


START_TEST(call_round_trips_binary_args_for_both_protos)
{
    static const char bin[] = { 'a', '\0', '\r', '\n', (char)0xff, (char)0xc1 };
    struct wire_msg m;
    char *big = malloc(70000);
    ck_assert_ptr_nonnull(big);
    memset(big, 'b', 70000);
    struct wire_slice args[4] = { S("SETRANGE"), wire_slice(bin, sizeof bin), S(""),
                                  wire_slice(big, 70000) };
    for (uint8_t proto = 2; proto <= 3; proto++) {
        buf_reset(&buf);
        ck_assert_int_eq(wire_put_call(&buf, 40 + proto, rid(90, 89, 0), proto, args, 4), HKV_OK);
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_uint_eq(m.type, WIRE_CALL);
        ck_assert_uint_eq(m.id, 40 + proto);
        rid_is(m.u.call.rid, 90, 89, 0);
        ck_assert_uint_eq(m.u.call.proto, proto);
        ck_assert_uint_eq(m.u.call.nargs, 4);
        for (int i = 0; i < 4; i++)
            slice_is(m.u.call.args[i], args[i].p, args[i].len);
        in_buf(m.u.call.args[1]);
        in_buf(m.u.call.args[3]);
        reencode_equal(&m);
    }
    /* the command name alone, and 20 args (array16) */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 1, rid(1, 0, 0), 2, args, 1), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.call.nargs, 1);
    SLICE_IS(m.u.call.args[0], "SETRANGE");
    reencode_equal(&m);
    struct wire_slice many[20];
    for (int i = 0; i < 20; i++)
        many[i] = args[i % 3];
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 2, rid(2, 1, 0), 3, many, 20), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.call.nargs, 20);
    for (int i = 0; i < 20; i++)
        slice_is(m.u.call.args[i], many[i].p, many[i].len);
    reencode_equal(&m);
    /* another proto or another arg is another message */
    struct wire_msg o = m;
    o.u.call.proto = 2;
    ck_assert(!wire_msg_equal(&m, &o));
    o = m;
    o.u.call.nargs = 19;
    ck_assert(!wire_msg_equal(&m, &o));
    free(big);
}
END_TEST

START_TEST(exec_round_trips_with_and_without_watch_and_many_commands)
{
    static const char bin[] = { '\0', (char)0x90, '\r', '\n' };
    struct wire_msg m;

    /* no watch, one command */
    struct wire_slice incr[2] = { S("INCR"), S("ctr") };
    struct wire_cmd one = { incr, 2 };
    ck_assert_int_eq(wire_put_exec(&buf, 50, rid(100, 99, 0), 2, NULL, 0, &one, 1), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_EXEC);
    ck_assert_uint_eq(m.id, 50);
    rid_is(m.u.exec.rid, 100, 99, 0);
    ck_assert_uint_eq(m.u.exec.proto, 2);
    ck_assert_uint_eq(m.u.exec.nwatch, 0);
    ck_assert_uint_eq(m.u.exec.ncmds, 1);
    ck_assert_uint_eq(m.u.exec.cmds[0].nargs, 2);
    SLICE_IS(m.u.exec.cmds[0].args[0], "INCR");
    SLICE_IS(m.u.exec.cmds[0].args[1], "ctr");
    reencode_equal(&m);

    /* three watches (version 0 and the largest), 100 commands of 1..5 args */
    enum { NC = 100, NARGS = 300 };  /* 20 rounds of 1 + 2 + 3 + 4 + 5 */
    struct wire_watch w[3] = { { S("{u}:a"), 0 }, { wire_slice(bin, sizeof bin), UINT64_MAX },
                               { S(""), 12345 } };
    struct wire_slice pool[5] = { S("APPEND"), S("{u}:a"), wire_slice(bin, sizeof bin), S(""),
                                  S("x") };
    struct wire_cmd cmds[NC];
    for (int i = 0; i < NC; i++)
        cmds[i] = (struct wire_cmd){ pool, (uint32_t)(1 + i % 5) };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 51, rid(101, 99, WIRE_PREV_UNKNOWN), 3, w, 3, cmds, NC),
                     HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.proto, 3);
    rid_is(m.u.exec.rid, 101, 99, WIRE_PREV_UNKNOWN);
    ck_assert_uint_eq(m.u.exec.nwatch, 3);
    for (int i = 0; i < 3; i++) {
        slice_is(m.u.exec.watch[i].key, w[i].key.p, w[i].key.len);
        ck_assert_uint_eq(m.u.exec.watch[i].version, w[i].version);
    }
    in_buf(m.u.exec.watch[1].key);
    ck_assert_uint_eq(m.u.exec.ncmds, NC);
    for (int i = 0; i < NC; i++) {
        ck_assert_uint_eq(m.u.exec.cmds[i].nargs, 1 + i % 5);
        for (int j = 0; j < 1 + i % 5; j++)
            slice_is(m.u.exec.cmds[i].args[j], pool[j].p, pool[j].len);
    }
    in_buf(m.u.exec.cmds[NC - 1].args[2]);
    /* the three arrays partition the decoder's one arena, back to back */
    const char *base = dec.arena;
    const char *cmds_at = base + 3 * sizeof(struct wire_watch);
    const char *args_at = cmds_at + NC * sizeof(struct wire_cmd);
    ck_assert_ptr_eq(m.u.exec.watch, base);
    ck_assert_ptr_eq(m.u.exec.cmds, cmds_at);
    ck_assert_ptr_eq(m.u.exec.cmds[0].args, args_at);
    const struct wire_cmd *last = &m.u.exec.cmds[NC - 1];
    ck_assert_ptr_eq(last->args + last->nargs, args_at + NARGS * sizeof(struct wire_slice));
    ck_assert_uint_le(3 * sizeof(struct wire_watch) + NC * sizeof(struct wire_cmd) +
                      NARGS * sizeof(struct wire_slice), dec.arena_cap);
    reencode_equal(&m);

    /* a different version, or one arg of one command, is another message */
    struct wire_watch w2[3];
    memcpy(w2, m.u.exec.watch, sizeof w2);
    w2[2].version++;
    struct wire_msg o = m;
    o.u.exec.watch = w2;
    ck_assert(!wire_msg_equal(&m, &o));
    struct wire_cmd c2[NC];
    memcpy(c2, m.u.exec.cmds, sizeof c2);
    struct wire_slice other[5] = { S("APPEND"), S("{u}:a"), wire_slice(bin, sizeof bin), S(""),
                                   S("y") };
    c2[4].args = other;  /* command 4 has all five args */
    o = m;
    o.u.exec.cmds = c2;
    ck_assert(!wire_msg_equal(&m, &o));
    c2[4].args = pool;
    ck_assert(wire_msg_equal(&m, &o));
}
END_TEST

START_TEST(resp_round_trips_the_reply_and_its_changes)
{
    struct wire_msg m;
    ck_assert_int_eq(wire_put_resp(&buf, 60, S("+OK\r\n"), NULL, 0), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_RESP);
    ck_assert_uint_eq(m.id, 60);
    SLICE_IS(m.u.resp.reply, "+OK\r\n");
    in_buf(m.u.resp.reply);
    ck_assert_uint_eq(m.u.resp.nchanges, 0);
    reencode_equal(&m);

    /* a RESP3 map with a binary bulk, and three changed keys */
    static const char r3[] = "%1\r\n$1\r\nk\r\n$3\r\n\0\xff\n\r\n";
    struct wire_watch ch[3] = { { S("{t}:a"), 1 }, { S("{t}:b"), UINT64_MAX },
                                { S("{t}:c"), 1ULL << 63 } };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 61, wire_slice(r3, sizeof r3 - 1), ch, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    slice_is(m.u.resp.reply, r3, sizeof r3 - 1);
    ck_assert_uint_eq(m.u.resp.nchanges, 3);
    for (int i = 0; i < 3; i++) {
        slice_is(m.u.resp.changes[i].key, ch[i].key.p, ch[i].key.len);
        ck_assert_uint_eq(m.u.resp.changes[i].version, ch[i].version);
        in_buf(m.u.resp.changes[i].key);
    }
    reencode_equal(&m);
    struct wire_msg o = m;
    o.u.resp.nchanges = 2;
    ck_assert(!wire_msg_equal(&m, &o));
    o = m;
    o.u.resp.reply.len--;
    ck_assert(!wire_msg_equal(&m, &o));
}
END_TEST

START_TEST(call_and_exec_are_write_requests_resp_a_reply)
{
    ck_assert_str_eq(wire_type_name(WIRE_CALL), "CALL");
    ck_assert_str_eq(wire_type_name(WIRE_EXEC), "EXEC");
    ck_assert_str_eq(wire_type_name(WIRE_RESP), "RESP");
    static const unsigned writes[] = { WIRE_CALL, WIRE_EXEC };
    for (int i = 0; i < 2; i++) {
        ck_assert(wire_is_request(writes[i]));
        ck_assert(wire_is_write(writes[i]));
        ck_assert(!wire_is_reply(writes[i]));
        ck_assert(!wire_is_push(writes[i]));
    }
    ck_assert(wire_is_reply(WIRE_RESP));
    ck_assert(!wire_is_request(WIRE_RESP));
    ck_assert(!wire_is_write(WIRE_RESP));
    ck_assert(!wire_is_push(WIRE_RESP));
    /* RESP answers a request: id 0 is refused both ways */
    struct wire_msg m;
    const char *why;
    ck_assert_int_eq(wire_put_resp(&buf, 0, S("+OK\r\n"), NULL, 0), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, 0);
    const uint8_t r0[] = { 0x94, WIRE_RESP, 0x00, 0xa1, '+', 0x90 };
    ck_assert_int_eq(decode_raw(r0, sizeof r0, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "request id 0");
    const uint8_t r1[] = { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0x90 };
    ck_assert_int_eq(decode_raw(r1, sizeof r1, &m, &why), HKV_OK);
}
END_TEST

START_TEST(proto_other_than_2_or_3_refused_both_ways)
{
    struct wire_slice k = S("PING");
    struct wire_cmd cmd = { &k, 1 };
    static const uint8_t bad[] = { 0, 1, 4, 0x7f };
    for (int kind = 0; kind < 2; kind++) {
        uint8_t f[64];
        struct wire_msg m;
        const char *why = NULL;
        buf_reset(&buf);
        if (kind == 0)
            ck_assert_int_eq(wire_put_call(&buf, 7, rid(1, 0, 0), 2, &k, 1), HKV_OK);
        else
            ck_assert_int_eq(wire_put_exec(&buf, 7, rid(1, 0, 0), 2, NULL, 0, &cmd, 1), HKV_OK);
        size_t n = payload_copy(f, sizeof f);
        ck_assert_uint_eq(f[6], 2);  /* [array, type, id, seq, ack, prev, proto, ...] */
        for (size_t i = 0; i < sizeof bad; i++) {
            f[6] = bad[i];
            ck_assert_int_eq(decode_raw(f, n, &m, &why), HKV_EPROTO);
            ck_assert_str_eq(why, "proto not 2 or 3");
            ck_assert_uint_eq(m.type, kind == 0 ? WIRE_CALL : WIRE_EXEC);
            ck_assert_uint_eq(m.id, 7);
        }
        f[6] = 3;
        ck_assert_int_eq(decode_raw(f, n, &m, NULL), HKV_OK);
        ck_assert_uint_eq(kind == 0 ? m.u.call.proto : m.u.exec.proto, 3);
    }
    /* over u8, negative; the wider form of 2 is fine */
    struct wire_msg m;
    const char *why;
    const uint8_t wide[] = { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0xcd, 0x01, 0x02, 0x91,
                             0xa1, 'x' };
    ck_assert_int_eq(decode_raw(wide, sizeof wide, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "integer out of range");
    const uint8_t neg[] = { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0xfe, 0x91, 0xa1, 'x' };
    ck_assert_int_eq(decode_raw(neg, sizeof neg, &m, &why), HKV_EPROTO);
    ck_assert_str_eq(why, "negative where unsigned expected");
    const uint8_t u8[] = { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0xcc, 0x02, 0x91, 0xa1, 'x' };
    ck_assert_int_eq(decode_raw(u8, sizeof u8, &m, &why), HKV_OK);
    ck_assert_uint_eq(m.u.call.proto, 2);

    buf_reset(&buf);
    ck_assert_int_eq(wire_put_ping(&buf, 1), HKV_OK);
    size_t len = buf.len;
    static const uint8_t enc_bad[] = { 0, 1, 4, 255 };
    for (size_t i = 0; i < sizeof enc_bad; i++) {
        ck_assert_int_eq(wire_put_call(&buf, 2, rid(1, 0, 0), enc_bad[i], &k, 1), HKV_EINVAL);
        ck_assert_int_eq(wire_put_exec(&buf, 2, rid(1, 0, 0), enc_bad[i], NULL, 0, &cmd, 1),
                         HKV_EINVAL);
    }
    ck_assert_uint_eq(buf.len, len);
}
END_TEST

START_TEST(empty_lists_and_wrong_shapes_refused)
{
    static const struct { uint8_t b[24]; size_t n; const char *why; } cases[] = {
        /* CALL with no args */
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90 }, 8, "no arguments" },
        /* CALL args a string, not an array */
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0xa1, 'x' }, 9, "expected array" },
        /* CALL arg an int, nil, an array */
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x05 }, 9, "expected bytes" },
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x92, 0xa1, 'x', 0xc0 }, 11,
          "expected bytes" },
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x91, 0xa1, 'x' }, 11,
          "expected bytes" },
        /* EXEC with no commands */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x90 }, 9, "no commands" },
        /* EXEC with an empty command, alone or after a good one */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x91, 0x90 }, 10,
          "empty command" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x92, 0x91, 0xa1, 'x', 0x90 }, 13,
          "empty command" },
        /* EXEC watch entry with 3 fields, with 1 */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x93, 0xa1, 'k', 0x01, 0x01, 0x91,
            0x91, 0xa1, 'x' }, 17, "key/version pair: wrong field count" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x91, 0xa1, 'k', 0x91, 0x91, 0xa1,
            'x' }, 15, "key/version pair: wrong field count" },
        /* EXEC watch entry a bare key, not a pair */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0xa1, 'k', 0x91, 0x91, 0xa1, 'x' },
          14, "expected array" },
        /* EXEC watch version negative; watch key an int */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x92, 0xa1, 'k', 0xff, 0x91, 0x91,
            0xa1, 'x' }, 16, "negative where unsigned expected" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x92, 0x01, 0x01, 0x91, 0x91, 0xa1,
            'x' }, 15, "expected bytes" },
        /* EXEC command a bare string, not an argv; cmds a map */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x91, 0xa1, 'x' }, 11,
          "expected array" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x81, 0xa1, 'x', 0xa1, 'y' }, 13,
          "expected array" },
        /* EXEC arg one level deeper than argv */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x91, 0x91, 0x91, 0xa1, 'x' }, 13,
          "expected bytes" },
        /* RESP with an empty reply, a nil reply */
        { { 0x94, WIRE_RESP, 0x01, 0xc4, 0x00, 0x90 }, 6, "empty reply" },
        { { 0x94, WIRE_RESP, 0x01, 0xc0, 0x90 }, 5, "expected bytes" },
        /* RESP change with 3 fields; changes nil; change stamp a string */
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0x91, 0x93, 0xa1, 'k', 0x01, 0x01 }, 11,
          "key/version pair: wrong field count" },
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0xc0 }, 6, "expected array" },
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0x91, 0x92, 0xa1, 'k', 0xa1, '1' }, 11,
          "expected integer" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_msg(decode_raw(cases[i].b, cases[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_ptr_nonnull(why);
        ck_assert_msg(strcmp(why, cases[i].why) == 0, "case %zu: %s", i, why);
        ck_assert_uint_eq(m.type, cases[i].b[1]);
        ck_assert_uint_eq(m.id, 1);
    }
    /* the same shapes made valid decode: the refusals above are the fault */
    const uint8_t ok_exec[] = { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91, 0x92, 0xa1,
                                'k', 0x01, 0x91, 0x91, 0xa1, 'x' };
    const uint8_t ok_resp[] = { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0x91, 0x92, 0xa1, 'k', 0x01 };
    struct wire_msg m;
    ck_assert_int_eq(decode_raw(ok_exec, sizeof ok_exec, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.nwatch, 1);
    ck_assert_uint_eq(m.u.exec.watch[0].version, 1);
    ck_assert_int_eq(decode_raw(ok_resp, sizeof ok_resp, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
}
END_TEST

START_TEST(command_counts_over_max_items_are_etoobig_before_allocation)
{
    struct wire_decoder small;
    struct wire_msg m;
    const char *why;
    struct wire_slice a[5] = { S("SET"), S("a"), S("b"), S("c"), S("d") };
    struct wire_watch w[5] = { { S("a"), 1 }, { S("b"), 2 }, { S("c"), 3 }, { S("d"), 4 },
                               { S("e"), 5 } };
    struct wire_cmd one[5] = { { a, 1 }, { a, 1 }, { a, 1 }, { a, 1 }, { a, 1 } };
    struct wire_cmd three = { a, 3 };
    static const char *const over = "too many watches and arguments in one EXEC";
    wire_decoder_init(&small, 4);

    /* CALL of 5 args */
    ck_assert_int_eq(wire_put_call(&buf, 1, rid(1, 0, 0), 2, a, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, "too many arguments in one message");
    ck_assert_uint_eq(m.type, WIRE_CALL);
    ck_assert_uint_eq(m.id, 1);
    /* EXEC with 5 watches */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 2, rid(1, 0, 0), 2, w, 5, one, 1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    ck_assert_uint_eq(m.id, 2);
    /* EXEC with 5 one-arg commands */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 3, rid(1, 0, 0), 2, NULL, 0, one, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    /* EXEC whose lists are each within the limit but not their sum: 2
     * watches + a command of 3 args, and 1 watch + two commands of 1 and 3 */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 4, rid(1, 0, 0), 2, w, 2, &three, 1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    struct wire_cmd two[2] = { { a, 1 }, { a, 3 } };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 5, rid(1, 0, 0), 2, w, 1, two, 2), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    ck_assert_uint_eq(m.type, WIRE_EXEC);
    ck_assert_uint_eq(m.id, 5);
    /* RESP with 5 changes */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 6, S(":1\r\n"), w, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, "too many changes in one message");
    /* none of them cost an allocation */
    ck_assert_ptr_null(small.arena);

    /* at the limit, each is fine: 4 args, 4 = 2 watches + 2 args, 4 changes */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 7, rid(1, 0, 0), 2, a, 4), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.call.nargs, 4);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 8, rid(1, 0, 0), 2, w, 2, one, 2), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.nwatch, 2);
    ck_assert_uint_eq(m.u.exec.ncmds, 2);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 9, rid(1, 0, 0), 2, NULL, 0, &(struct wire_cmd){ a, 4 },
                                   1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.cmds[0].nargs, 4);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 10, S(":1\r\n"), w, 4), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.resp.nchanges, 4);
    wire_decoder_deinit(&small);
}
END_TEST

START_TEST(lying_command_counts_refused_without_allocation)
{
    static const struct { uint8_t b[24]; size_t n; } cases[] = {
        /* CALL args array32 of 16M */
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0xdd, 0x01, 0x00, 0x00, 0x00, 0xa1,
            'x' }, 14 },
        /* EXEC watch array32 of 16M */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0xdd, 0x01, 0x00, 0x00, 0x00, 0x91,
            0x91, 0xa1, 'x' }, 16 },
        /* EXEC cmds array32 of 4G - 1 */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff,
            0x91, 0xa1, 'x' }, 16 },
        /* EXEC second command's argv array16 of 65535 */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x92, 0x91, 0xa1, 'x', 0xdc, 0xff,
            0xff, 0xa1, 'x' }, 17 },
        /* RESP changes array32 of 16M; reply bin32 longer than the frame */
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0xdd, 0x01, 0x00, 0x00, 0x00, 0x90 }, 11 },
        { { 0x94, WIRE_RESP, 0x01, 0xc6, 0x7f, 0xff, 0xff, 0xff, '+', 0x90 }, 10 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_msg(decode_raw(cases[i].b, cases[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_msg(strcmp(why, "count larger than frame") == 0 ||
                      strcmp(why, "length larger than frame") == 0, "case %zu: %s", i, why);
    }
    ck_assert_ptr_null(dec.arena);
    ck_assert_uint_eq(dec.arena_cap, 0);
}
END_TEST

START_TEST(command_kinds_never_descend_past_argv)
{
    /* 100k nested one-element arrays where an arg, a command or a watch
     * entry starts: refused on the first array the schema did not ask for */
    static const struct { uint8_t pre[8]; size_t n; const char *why; } cases[] = {
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91 }, 8, "expected bytes" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90 }, 8, "expected bytes" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02 }, 7,
          "key/version pair: wrong field count" },
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+' }, 5, "key/version pair: wrong field count" },
    };
    size_t deep = 100000;
    uint8_t *f = malloc(deep + 16);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        memcpy(f, cases[i].pre, cases[i].n);
        memset(f + cases[i].n, 0x91, deep);
        f[cases[i].n + deep] = 0x00;
        ck_assert_msg(decode_raw(f, cases[i].n + deep + 1, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_msg(strcmp(why, cases[i].why) == 0, "case %zu: %s", i, why);
    }
    free(f);
}
END_TEST

/* One frame of each new kind, with every list non-empty. */
static void put_one_of_each_command_kind(void)
{
    static const char bin[] = { 'v', '\0', (char)0xff };
    struct wire_slice argv1[3] = { S("SETRANGE"), S("{k}:a"), wire_slice(bin, sizeof bin) };
    struct wire_slice argv2[2] = { S("INCRBYFLOAT"), S("{k}:b") };
    struct wire_watch w[2] = { { S("{k}:a"), 1ULL << 40 }, { S("{k}:b"), 0 } };
    struct wire_cmd cmds[3] = { { argv1, 3 }, { argv2, 2 }, { argv1, 1 } };
    ck_assert_int_eq(wire_put_call(&buf, 400, rid(1ULL << 33, 7, WIRE_PREV_UNKNOWN), 3, argv1, 3),
                     HKV_OK);
    ck_assert_int_eq(wire_put_exec(&buf, 401, rid(9, 8, 0), 2, w, 2, cmds, 3), HKV_OK);
    ck_assert_int_eq(wire_put_resp(&buf, 402, S("*2\r\n:1\r\n$1\r\nx\r\n"), w, 2), HKV_OK);
}

START_TEST(every_truncation_of_a_command_frame_refused)
{
    put_one_of_each_command_kind();
    const char *at = buf.data, *end = buf.data + buf.len;
    int frames = 0;
    while (at < end) {
        const char *p;
        size_t plen, used;
        ck_assert_int_eq(wire_next_frame(at, (size_t)(end - at), 0, &p, &plen, &used), HKV_OK);
        for (size_t n = 0; n < plen; n++) {
            struct wire_msg m;
            const char *why = NULL;
            ck_assert_msg(wire_decode(&dec, p, n, &m, &why) == HKV_EPROTO, "frame %d at %zu",
                          frames, n);
            ck_assert_ptr_nonnull(why);
        }
        struct wire_msg m;
        ck_assert_int_eq(wire_decode(&dec, p, plen, &m, NULL), HKV_OK);
        ck_assert_uint_eq(m.id, 400 + (unsigned)frames);
        at += used;
        frames++;
    }
    ck_assert_int_eq(frames, 3);
}
END_TEST

START_TEST(command_frames_refuse_trailing_bytes_and_wrong_field_counts)
{
    put_one_of_each_command_kind();
    static const int nfields[] = { 5, 6, 2 };  /* CALL, EXEC, RESP after type and id */
    const char *at = buf.data, *end = buf.data + buf.len;
    size_t frames = 0;
    while (at < end) {
        const char *p;
        size_t plen, used;
        struct wire_msg m;
        const char *why = NULL;
        uint8_t f[128];
        ck_assert_int_eq(wire_next_frame(at, (size_t)(end - at), 0, &p, &plen, &used), HKV_OK);
        ck_assert_uint_lt(frames, 3);
        ck_assert_uint_lt(plen, sizeof f);
        memcpy(f, p, plen);
        f[plen] = 0xc0;  /* one nil more */
        ck_assert_int_eq(decode_raw(f, plen + 1, &m, &why), HKV_EPROTO);
        ck_assert_str_eq(why, "trailing bytes");
        ck_assert_uint_eq(f[0], 0x90 | (2 + nfields[frames]));
        f[0]--;
        ck_assert_int_eq(decode_raw(f, plen, &m, &why), HKV_EPROTO);
        ck_assert_msg(strcmp(why, "missing fields") == 0, "frame %zu: %s", frames, why);
        f[0] += 2;
        ck_assert_int_eq(decode_raw(f, plen + 1, &m, &why), HKV_EPROTO);
        ck_assert_msg(strcmp(why, "extra fields") == 0, "frame %zu: %s", frames, why);
        at += used;
        frames++;
    }
    ck_assert_uint_eq(frames, 3);
}
END_TEST

START_TEST(command_encoders_refuse_bad_arguments_and_leave_buffer_unchanged)
{
    struct wire_slice k[2] = { S("GET"), S("k") };
    struct wire_cmd cmd = { k, 2 };
    struct wire_watch w = { S("k"), 1 };
    struct wire_rid r1 = rid(1, 0, 0);
    ck_assert_int_eq(wire_put_ping(&buf, 1), HKV_OK);
    size_t len = buf.len;
    /* CALL: no args, args NULL, over the limit, id 0, NULL arg mid-way */
    ck_assert_int_eq(wire_put_call(&buf, 2, r1, 2, k, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_call(&buf, 2, r1, 2, NULL, 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_call(&buf, 2, r1, 2, k, WIRE_MAX_ITEMS_DEFAULT + 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_call(&buf, 0, r1, 2, k, 1), HKV_EINVAL);
    struct wire_slice bad[2] = { S("SET"), { NULL, 3 } };
    ck_assert_int_eq(wire_put_call(&buf, 2, r1, 2, bad, 2), HKV_EINVAL);
    /* EXEC: no commands, cmds NULL, an empty command, a command's args NULL,
     * watch NULL with nwatch 1, id 0, a NULL arg in the last command */
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, &cmd, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, NULL, 1), HKV_EINVAL);
    struct wire_cmd empty[2] = { { k, 2 }, { k, 0 } };
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, empty, 2), HKV_EINVAL);
    struct wire_cmd nullargs = { NULL, 1 };
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, &nullargs, 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 1, &cmd, 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_exec(&buf, 0, r1, 2, &w, 1, &cmd, 1), HKV_EINVAL);
    struct wire_cmd badcmds[2] = { { k, 2 }, { bad, 2 } };
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, &w, 1, badcmds, 2), HKV_EINVAL);
    /* EXEC counts: watch over the limit; commands over it, refused before
     * any command is read (the array holds one); each list within it but
     * watch + args over it */
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, &w, WIRE_MAX_ITEMS_DEFAULT + 1, &cmd, 1),
                     HKV_EINVAL);
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, &cmd, UINT32_MAX), HKV_EINVAL);
    struct wire_cmd full = { k, WIRE_MAX_ITEMS_DEFAULT };  /* not read: refused on the count */
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, &w, 1, &full, 1), HKV_EINVAL);
    struct wire_cmd halves[2] = { { k, WIRE_MAX_ITEMS_DEFAULT / 2 },
                                  { k, WIRE_MAX_ITEMS_DEFAULT / 2 + 1 } };
    ck_assert_int_eq(wire_put_exec(&buf, 2, r1, 2, NULL, 0, halves, 2), HKV_EINVAL);
    /* RESP: empty reply, NULL reply bytes, changes NULL, over the limit */
    ck_assert_int_eq(wire_put_resp(&buf, 2, S(""), NULL, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_resp(&buf, 2, wire_slice(NULL, 3), NULL, 0), HKV_EINVAL);
    ck_assert_int_eq(wire_put_resp(&buf, 2, S("+OK\r\n"), NULL, 1), HKV_EINVAL);
    ck_assert_int_eq(wire_put_resp(&buf, 2, S("+OK\r\n"), &w, WIRE_MAX_ITEMS_DEFAULT + 1),
                     HKV_EINVAL);
    struct wire_watch badw[2] = { { S("a"), 1 }, { { NULL, 2 }, 1 } };
    ck_assert_int_eq(wire_put_resp(&buf, 2, S("+OK\r\n"), badw, 2), HKV_EINVAL);
    /* and through wire_put_msg */
    struct wire_msg m = { .type = WIRE_CALL, .id = 2 };
    m.u.call.rid = r1;
    m.u.call.proto = 2;
    m.u.call.args = k;
    m.u.call.nargs = 0;
    ck_assert_int_eq(wire_put_msg(&buf, &m), HKV_EINVAL);
    ck_assert_uint_eq(buf.len, len);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_PING);

    /* the largest of each is accepted: WIRE_MAX_ITEMS_DEFAULT args in all */
    struct wire_slice *many = malloc(WIRE_MAX_ITEMS_DEFAULT * sizeof *many);
    ck_assert_ptr_nonnull(many);
    for (uint32_t i = 0; i < WIRE_MAX_ITEMS_DEFAULT; i++)
        many[i] = S("a");
    struct wire_cmd most = { many, WIRE_MAX_ITEMS_DEFAULT - 1 };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 3, r1, 2, &w, 1, &most, 1), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.cmds[0].nargs, WIRE_MAX_ITEMS_DEFAULT - 1);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 4, r1, 2, many, WIRE_MAX_ITEMS_DEFAULT), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.call.nargs, WIRE_MAX_ITEMS_DEFAULT);
    free(many);
}
END_TEST

START_TEST(exec_and_call_reuse_the_decoder_arena)
{
    struct wire_slice a[3] = { S("SET"), S("k"), S("v") };
    struct wire_watch w[2] = { { S("k"), 1 }, { S("j"), 2 } };
    struct wire_cmd cmds[2] = { { a, 3 }, { a, 2 } };
    struct wire_msg m;
    ck_assert_int_eq(wire_put_exec(&buf, 1, rid(1, 0, 0), 2, w, 2, cmds, 2), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    void *arena = dec.arena;
    size_t cap = dec.arena_cap;
    ck_assert_ptr_nonnull(arena);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
        ck_assert_ptr_eq(m.u.exec.watch, arena);
    }
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 2, rid(2, 0, 0), 2, a, 3), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_ptr_eq(m.u.call.args, arena);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 3, S("+OK\r\n"), w, 2), HKV_OK);
    ck_assert_int_eq(decode_whole(&m, NULL), HKV_OK);
    ck_assert_ptr_eq(m.u.resp.changes, arena);
    ck_assert_ptr_eq(dec.arena, arena);
    ck_assert_uint_eq(dec.arena_cap, cap);
}
END_TEST

START_TEST(msgpack_c_reads_our_exec_and_we_read_its_call)
{
    struct wire_slice a[2] = { S("INCR"), S("n") };
    struct wire_watch w = { S("n"), 77 };
    struct wire_cmd cmds[2] = { { a, 2 }, { a, 1 } };
    ck_assert_int_eq(wire_put_exec(&buf, 5, rid(3, 2, 1), 3, &w, 1, cmds, 2), HKV_OK);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    ck_assert_int_eq(msgpack_unpack_next(&u, buf.data + 4, buf.len - 4, &off),
                     MSGPACK_UNPACK_SUCCESS);
    ck_assert_uint_eq(off, buf.len - 4);
    msgpack_object o = u.data;
    ck_assert_uint_eq(o.via.array.size, 8);  /* type, id, seq, ack, prev, proto, watch, cmds */
    ck_assert_uint_eq(o.via.array.ptr[0].via.u64, WIRE_EXEC);
    ck_assert_uint_eq(o.via.array.ptr[5].via.u64, 3);
    msgpack_object watch = o.via.array.ptr[6], cm = o.via.array.ptr[7];
    ck_assert_uint_eq(watch.via.array.size, 1);
    ck_assert_uint_eq(watch.via.array.ptr[0].via.array.size, 2);
    ck_assert_int_eq(watch.via.array.ptr[0].via.array.ptr[0].type, MSGPACK_OBJECT_BIN);
    ck_assert_uint_eq(watch.via.array.ptr[0].via.array.ptr[1].via.u64, 77);
    ck_assert_uint_eq(cm.via.array.size, 2);
    ck_assert_uint_eq(cm.via.array.ptr[0].via.array.size, 2);
    ck_assert_uint_eq(cm.via.array.ptr[1].via.array.size, 1);
    ck_assert_mem_eq(cm.via.array.ptr[0].via.array.ptr[0].via.bin.ptr, "INCR", 4);
    msgpack_unpacked_destroy(&u);

    /* msgpack-c -> ours: a CALL with str args and int64-packed numbers */
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 7);
    msgpack_pack_int64(&pk, WIRE_CALL);
    msgpack_pack_uint64(&pk, 99);
    msgpack_pack_int64(&pk, 12);
    msgpack_pack_int64(&pk, 11);
    msgpack_pack_int64(&pk, 0);
    msgpack_pack_uint8(&pk, 2);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_str_with_body(&pk, "APPEND", 6);
    msgpack_pack_str_with_body(&pk, "k", 1);
    msgpack_pack_bin_with_body(&pk, "\0v", 2);
    struct wire_msg m;
    ck_assert_int_eq(wire_decode(&dec, sb.data, sb.size, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.type, WIRE_CALL);
    ck_assert_uint_eq(m.id, 99);
    rid_is(m.u.call.rid, 12, 11, 0);
    ck_assert_uint_eq(m.u.call.proto, 2);
    ck_assert_uint_eq(m.u.call.nargs, 3);
    SLICE_IS(m.u.call.args[0], "APPEND");
    slice_is(m.u.call.args[2], "\0v", 2);
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    struct { const char *name; const TTest *tests[12]; } groups[] = {
        { "round_trip",
          { hello_and_hello_ok_round_trip, get_one_and_many_keys_round_trip_in_order,
            set_round_trips_every_expiry_kind_and_flag, write_requests_round_trip,
            getdel_round_trips_as_a_write_request,
            read_and_admin_requests_round_trip, value_replies_round_trip,
            int_moved_error_round_trip_with_extreme_values, scan_and_stats_replies_round_trip,
            push_and_invalidate_round_trip_with_id_zero, publish_and_pubmsg_round_trip } },
        { "framing",
          { frames_split_at_every_byte_boundary_reassemble,
            encoding_into_a_partly_consumed_buffer_keeps_frames_intact } },
        { "oversized_frames", { frame_length_over_max_refused_from_header_alone } },
        { "hello_v3", { hello_carries_cluster_wanted_owner_and_host } },
        { "wide_encodings", { set_decodes_alike_in_narrow_and_wide_encodings } },
        { "lying_counts",
          { array32_claiming_16m_elements_refused_without_allocation,
            str32_longer_than_frame_refused, key_count_over_decoder_limit_is_etoobig } },
        { "deep_nesting", { nesting_deeper_than_bound_refused_without_recursion } },
        { "malformed_fields",
          { wrong_field_types_refused, unknown_type_refused_keeping_the_id,
            id_rules_enforced_both_ways, trailing_bytes_and_extra_fields_refused } },
        { "truncation",
          { every_truncation_of_a_valid_payload_refused, empty_frame_refused } },
        { "request_ids",
          { seq_zero_refused_by_decoder_for_every_write,
            seq_zero_refused_by_encoder_for_every_write, incarnation_zero_refused_both_ways } },
        { "field_counts",
          { old_format_frames_refused_by_field_count,
            changed_kinds_refuse_one_field_fewer_or_more } },
        { "encoder_contract", { encoder_refuses_what_decoder_would_and_leaves_buffer_unchanged } },
        { "zero_copy", { decoder_reuses_its_key_array_and_copies_nothing } },
        { "msgpack_c_interop",
          { msgpack_c_reads_our_frames_and_we_read_its_output,
            msgpack_c_reads_our_exec_and_we_read_its_call } },
        { "command_round_trip",
          { call_round_trips_binary_args_for_both_protos,
            exec_round_trips_with_and_without_watch_and_many_commands,
            resp_round_trips_the_reply_and_its_changes,
            call_and_exec_are_write_requests_resp_a_reply } },
        { "command_malformed",
          { proto_other_than_2_or_3_refused_both_ways, empty_lists_and_wrong_shapes_refused,
            command_frames_refuse_trailing_bytes_and_wrong_field_counts } },
        { "command_limits",
          { command_counts_over_max_items_are_etoobig_before_allocation,
            lying_command_counts_refused_without_allocation,
            command_kinds_never_descend_past_argv } },
        { "command_truncation", { every_truncation_of_a_command_frame_refused } },
        { "command_encoder_contract",
          { command_encoders_refuse_bad_arguments_and_leave_buffer_unchanged } },
        { "command_zero_copy", { exec_and_call_reuse_the_decoder_arena } },
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        for (size_t t = 0; t < 12 && groups[g].tests[t] != NULL; t++)
            tcase_add_test(tc, groups[g].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}

/*
 * check_wire.c - the binary protocol: every message kind round-trips, frames
 * split anywhere reassemble, and each class of hostile input is refused with
 * the right status before it can cost memory.  The command-carrying kinds
 * (CALL, EXEC, RESP) are check_wire_cmd.c's.
 */
#include "tests/unit/wire_fixture.h"

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
        { "hello_v3", { hello_carries_cluster_wanted_owner_and_host } },
        { "encoder_contract", { encoder_refuses_what_decoder_would_and_leaves_buffer_unchanged } },
        { "zero_copy", { decoder_reuses_its_key_array_and_copies_nothing } },
        { "msgpack_c_interop", { msgpack_c_reads_our_frames_and_we_read_its_output } },
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

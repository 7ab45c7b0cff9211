/*
 * check_wire_cmd.c - the binary protocol's command-carrying kinds (CALL,
 * EXEC, RESP): they round-trip binary arguments for both RESP versions,
 * decode alike in narrow and wide encodings, refuse lying counts, deep
 * shapes, truncations and trailing bytes before allocating, and reuse the
 * decoder's arena.
 */
#include "tests/unit/wire_fixture.h"

/* ---- the command-carrying kinds: CALL, EXEC, RESP ---- */

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

Suite *wire_cmd_suite(void)
{
    Suite *s = suite_create("wire_cmd");
    struct { const char *name; const TTest *tests[12]; } groups[] = {
        { "wide_encodings", { set_decodes_alike_in_narrow_and_wide_encodings } },
        { "msgpack_c_interop", { msgpack_c_reads_our_exec_and_we_read_its_call } },
        { "command_round_trip",
          { call_round_trips_binary_args_for_both_protos,
            exec_round_trips_with_and_without_watch_and_many_commands,
            resp_round_trips_the_reply_and_its_changes,
            call_and_exec_are_write_requests_resp_a_reply } },
        { "command_malformed",
          { proto_other_than_2_or_3_refused_both_ways, empty_lists_and_wrong_shapes_refused,
            command_frames_refuse_trailing_bytes_and_wrong_field_counts } },
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

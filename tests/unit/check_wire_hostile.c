/*
 * check_wire_hostile.c - the binary protocol refuses hostile input before it
 * can cost memory: oversized frames, lying counts, deep nesting, malformed
 * fields, truncations, request ids and incarnations of zero, old field counts.
 */
#include "tests/unit/wire_fixture.h"

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

Suite *wire_hostile_suite(void)
{
    Suite *s = suite_create("wire_hostile");
    struct { const char *name; const TTest *tests[12]; } groups[] = {
        { "oversized_frames", { frame_length_over_max_refused_from_header_alone } },
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

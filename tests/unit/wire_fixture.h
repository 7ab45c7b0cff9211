/*
 * wire_fixture.h - what the binary protocol's unit suites share (check_wire.c,
 * check_wire_cmd.c): a decoder and a buffer set up per test, and checks on
 * decoded slices and round trips.  Header-only: each suite includes it once.
 */
#ifndef HKV_WIRE_FIXTURE_H
#define HKV_WIRE_FIXTURE_H

#include <check.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define S(lit) wire_slice(lit, sizeof(lit) - 1)

/* A write's request id: seq, ack, prev. */
static inline struct wire_rid rid(uint64_t seq, uint64_t ack, uint64_t prev)
{
    return (struct wire_rid){ seq, ack, prev };
}

static inline void rid_is(struct wire_rid r, uint64_t seq, uint64_t ack, uint64_t prev)
{
    ck_assert_uint_eq(r.seq, seq);
    ck_assert_uint_eq(r.ack, ack);
    ck_assert_uint_eq(r.prev, prev);
}

static struct wire_decoder dec;
static struct hkv_buf buf;

static inline void setup(void)
{
    wire_decoder_init(&dec, 0);
    buf = (struct hkv_buf)HKV_BUF_INIT;
}

static inline void teardown(void)
{
    wire_decoder_deinit(&dec);
    buf_deinit(&buf);
}

/* Splits exactly one frame off the buffer and decodes it. */
static inline int decode_whole(struct wire_msg *m, const char **why)
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
static inline int decode_raw(const void *p, size_t n, struct wire_msg *m, const char **why)
{
    return wire_decode(&dec, p, n, m, why);
}

static inline void slice_is(struct wire_slice s, const char *want, size_t n)
{
    ck_assert_uint_eq(s.len, n);
    if (n > 0)
        ck_assert_mem_eq(s.p, want, n);
}
#define SLICE_IS(s, lit) slice_is((s), (lit), sizeof(lit) - 1)

/* The decoded slice lies inside the frame: zero-copy. */
static inline void in_buf(struct wire_slice s)
{
    ck_assert(s.p >= buf.data && s.p + s.len <= buf.data + buf.len);
}

/* Re-encodes a decoded message and checks it decodes equal (needs a second
 * decoder: the first one's arrays back `m`). */
static inline void reencode_equal(const struct wire_msg *m)
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


/* Copies the payload of the one frame in buf into f (to patch it). */
static inline size_t payload_copy(uint8_t *f, size_t cap)
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
static inline int decode_with(struct wire_decoder *d, struct wire_msg *m, const char **why)
{
    const char *p;
    size_t plen, used;
    ck_assert_int_eq(wire_next_frame(buf.data, buf.len, 0, &p, &plen, &used), HKV_OK);
    return wire_decode(d, p, plen, m, why);
}


/* One frame of each new kind, with every list non-empty. */
static inline void put_one_of_each_command_kind(void)
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

#endif

/*
 * fuzz_wire.c - libFuzzer target for the binary protocol decoder.
 *
 * The input is tried two ways: as one raw payload for wire_decode(), and as a
 * byte stream split by wire_next_frame() (max frame 1 MiB) with each frame
 * decoded.  Every message the decoder accepts must re-encode (wire_put_msg),
 * split back into exactly one frame, decode to an equal message, and encode
 * again to the same bytes: the encoder and decoder agree on every kind.  An
 * accepted message also keeps the rules the owner relies on: a write request's
 * rid has seq != 0, a HELLO or HELLO_OK has incarnation != 0, the id rule holds,
 * a CALL or EXEC has proto 2 or 3 and no empty argv, EXEC's watch entries + args
 * and RESP's changes stay within max_items, a RESP reply is not empty.  The
 * same payload goes through the move's decoder (proto/wire_hand.h) with the
 * same round-trip rules; a payload both accept is a bug (their kinds are
 * disjoint).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     $(pkg-config --cflags msgpack) tests/fuzz/fuzz_wire.c proto/wire*.c \
 *     proto/buf.c proto/hkv.c $(pkg-config --libs msgpack) -o /tmp/fuzz_wire
 *   /tmp/fuzz_wire -max_total_time=20 tests/fuzz/corpus_wire
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "proto/wire_hand.h"

#define FUZZ_MAX_FRAME (1u << 20)
#define FUZZ_MAX_ITEMS 1024

static struct wire_decoder dec, dec2;
static struct hkv_buf out, out2;

#define CHECK(x)          \
    do {                  \
        if (!(x))         \
            abort();      \
    } while (0)

static void roundtrip(const struct wire_msg *m)
{
    const char *p;
    size_t plen, used;
    struct wire_msg m2;

    buf_reset(&out);
    CHECK(wire_put_msg(&out, m) == HKV_OK);
    CHECK(wire_next_frame(out.data, out.len, 0, &p, &plen, &used) == HKV_OK);
    CHECK(used == out.len);
    CHECK(wire_decode(&dec2, p, plen, &m2, NULL) == HKV_OK);
    CHECK(wire_msg_equal(m, &m2));
    buf_reset(&out2);
    CHECK(wire_put_msg(&out2, &m2) == HKV_OK);
    CHECK(out2.len == out.len && memcmp(out.data, out2.data, out.len) == 0);
}

/* The rid of a write request (m->type must be one). */
static struct wire_rid write_rid(const struct wire_msg *m)
{
    switch (m->type) {
    case WIRE_SET: return m->u.set.rid;
    case WIRE_DEL: return m->u.del.rid;
    case WIRE_INCRBY: return m->u.incrby.rid;
    case WIRE_EXPIRE: return m->u.expire.rid;
    case WIRE_PERSIST: return m->u.persist.rid;
    case WIRE_GETDEL: return m->u.getdel.rid;
    case WIRE_CALL: return m->u.call.rid;
    case WIRE_EXEC: return m->u.exec.rid;
    }
    abort();
}

static void accepted_rules(const struct wire_msg *m)
{
    CHECK(wire_id_valid(m->type, m->id));
    if (wire_is_write(m->type))
        CHECK(write_rid(m).seq != 0);
    if (m->type == WIRE_HELLO)
        CHECK(m->u.hello.incarnation != 0);
    if (m->type == WIRE_HELLO_OK)
        CHECK(m->u.hello_ok.incarnation != 0);
    if (m->type == WIRE_CALL) {
        CHECK(wire_proto_valid(m->u.call.proto));
        CHECK(m->u.call.nargs >= 1 && m->u.call.nargs <= FUZZ_MAX_ITEMS);
    }
    if (m->type == WIRE_EXEC) {
        uint64_t total = m->u.exec.nwatch;
        CHECK(wire_proto_valid(m->u.exec.proto));
        CHECK(m->u.exec.ncmds >= 1);
        for (uint32_t i = 0; i < m->u.exec.ncmds; i++) {
            CHECK(m->u.exec.cmds[i].nargs >= 1);
            total += m->u.exec.cmds[i].nargs;
        }
        CHECK(total <= FUZZ_MAX_ITEMS);
    }
    if (m->type == WIRE_RESP) {
        CHECK(m->u.resp.reply.len > 0);
        CHECK(m->u.resp.nchanges <= FUZZ_MAX_ITEMS);
    }
}

static void hand_roundtrip(const struct hand_msg *m)
{
    const char *p;
    size_t plen, used;
    struct hand_msg m2;

    buf_reset(&out);
    CHECK(hand_put(&out, m) == HKV_OK);
    CHECK(wire_next_frame(out.data, out.len, 0, &p, &plen, &used) == HKV_OK);
    CHECK(used == out.len);
    CHECK(hand_decode(&dec2, p, plen, &m2, NULL) == HKV_OK);
    CHECK(hand_msg_equal(m, &m2));
    buf_reset(&out2);
    CHECK(hand_put(&out2, &m2) == HKV_OK);
    CHECK(out2.len == out.len && memcmp(out.data, out2.data, out.len) == 0);
}

/* The move's decoder on the same payload: disjoint from wire_decode. */
static int hand_one(const char *payload, size_t plen)
{
    struct hand_msg h;
    const char *why = NULL;
    int rc = hand_decode(&dec, payload, plen, &h, &why);
    if (rc == HKV_OK) {
        CHECK(why == NULL && h.id != 0 && hand_type_name(h.type) != NULL);
        CHECK(hand_peek_type(payload, plen) == h.type);
        hand_roundtrip(&h);
        return 1;
    }
    CHECK(rc == HKV_EPROTO || rc == HKV_ETOOBIG);
    CHECK(why != NULL && why[0] != '\0');
    return 0;
}

static void one(const char *payload, size_t plen)
{
    struct wire_msg m;
    const char *why = NULL;
    int hand = hand_one(payload, plen);
    int rc = wire_decode(&dec, payload, plen, &m, &why);
    CHECK(!(hand && rc == HKV_OK));
    if (rc == HKV_OK) {
        CHECK(why == NULL);
        CHECK(wire_type_name(m.type) != NULL);
        accepted_rules(&m);
        roundtrip(&m);
    } else {
        CHECK(rc == HKV_EPROTO || rc == HKV_ETOOBIG);
        CHECK(why != NULL && why[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        wire_decoder_init(&dec, FUZZ_MAX_ITEMS);
        wire_decoder_init(&dec2, FUZZ_MAX_ITEMS);
        ready = 1;
    }
    const char *buf = (const char *)data;

    one(buf, size);

    size_t off = 0;
    while (off < size) {
        const char *p;
        size_t plen, used;
        int rc = wire_next_frame(buf + off, size - off, FUZZ_MAX_FRAME, &p, &plen, &used);
        if (rc == HKV_EAGAIN) {
            CHECK(used > size - off);
            break;
        }
        if (rc == HKV_ETOOBIG) {
            CHECK(plen > FUZZ_MAX_FRAME);
            break;
        }
        CHECK(rc == HKV_OK && used == plen + WIRE_HEADER_LEN && used <= size - off);
        one(p, plen);
        off += used;
    }
    return 0;
}

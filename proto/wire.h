/*
 * wire.h - the binary protocol between edges and shard owners.
 *
 * Framing.  A frame is a 4-byte big-endian payload length followed by the
 * payload: one msgpack array `[type, id, field...]`.  `type` is a WIRE_* kind
 * below, `id` a uint64 request id.  Requests are pipelined and each reply
 * carries the id of its request; replies may come out of order.  Push-link
 * messages (PUSH, INVALIDATE) carry id 0; every other kind needs id != 0,
 * except ERROR, whose id 0 means "about the connection" (HELLO refused, a
 * frame whose id could not be read).  Kinds are numbered by direction:
 * requests 1..63, replies 64..95, push 96..127; a new kind takes the next free
 * number of its range, so the range tests below stay ranges.  Kinds 128.. are
 * the leaf move's (hand-off links and the agent's control channel,
 * proto/wire_hand.h): same framing, a decoder of their own.
 *
 * Handshake.  Every link opens with HELLO (protocol version, edge id, colo,
 * link role, and since version 3 the cluster, the owner number the edge
 * wants and the edge's host) answered by HELLO_OK (version, owner id, pool,
 * leaf-map generation) or ERROR.  Links are single-role: read, write or push.
 * This module does not judge versions, roles or names: an owner that does
 * not speak the edge's version, or is not the owner the HELLO asks for (see
 * HELLO below), answers ERROR (code HKV_EPROTO, id of the HELLO) and closes.
 *
 * Schemas (after type and id; `bytes` is msgpack bin, and str is accepted
 * too; `text` is msgpack str, and bin is accepted too):
 *
 *   requests (edge -> owner)
 *   HELLO       version u32, edge_id u32, colo text, role u8 (WIRE_ROLE_*),
 *               incarnation u64 (this edge process; != 0),
 *               cluster text ("" on a single host), want_owner u32 (the
 *               cluster owner number the edge means to reach; 0 = any, a
 *               single host), host text (the edge's host name; over TCP
 *               the owner checks that the peer's certificate names it)
 *   GET         [key bytes, ...]  (1..max_items keys)
 *   SET         key, value, rid, exp_kind u8, exp_ms i64, flags u32
 *               (no class: the owner decides a key's class, which is
 *               what makes it durable, from its own config; v3 sent the
 *               edge's class id, which the owner never read)
 *   DEL         [key, ...] (1..max_items), rid
 *   INCRBY      key, delta i64, rid            (keeps the key's expiry, as
 *                                               Redis INCR; a new key has none)
 *   EXPIRE      key, exp_kind u8 (REL|ABS), exp_ms i64, rid, flags u32
 *   PERSIST     key, rid
 *   GETDEL      key, rid                       (answered OK: applied = the
 *                                               key existed, old = its value)
 *   TTL         key
 *   SCAN        cursor u64, count u32, match text|nil  (the owner's own walk
 *               of its table, by a cursor only it understands: KEYS, RANDOMKEY)
 *   SCAN_RANGE  from u64, to u64, count u32, match text|nil: the live keys
 *               whose position (proto/place.h place_pos) is in [from, to),
 *               in position order, about count of them; answered
 *               SCAN_REPLY with the position to go on from (to: the range is
 *               done, as far as the owner serves it), or MOVED when the owner
 *               does not serve the leaf that holds `from` (SCAN, edge_scan.c)
 *   PING, STATS (no fields)
 *   CALL        rid, proto u8 (2|3), [arg bytes, ...] (1..max_items args)
 *   EXEC        rid, proto u8 (2|3),
 *               watch [[key bytes, version u64], ...] (0..max_items),
 *               cmds [[arg bytes, ...], ...] (1..max_items commands of
 *               1.. args each); watch entries + all args <= max_items
 *
 *   replies (owner -> edge)
 *   HELLO_OK    version u32, owner_id u32 (the index in its pool; in a
 *               cluster the cluster owner number), pool text, map_gen u64
 *               (in a cluster: the map revision the owner follows),
 *               incarnation u64 (this owner process; != 0)
 *   VALUE       value, stamp, expire_ms u64
 *   VALUES      [nil | [value, stamp, expire_ms], ...] one per GET key, in
 *               request order (the answer to a GET of several keys)
 *   NOTFOUND    stamp u64 (of the delete or the expired write that the key's
 *               absence comes from, 0 if the owner holds nothing: it lets a
 *               cache order a "not found" against the writes it has seen)
 *   OK          stamp, applied bool, old value bytes|nil  (applied false: a
 *               SET whose NX/XX condition failed, which Redis answers nil or,
 *               with GET, the old value; stamp: the one the key now holds)
 *   INT         i64, stamp u64  (DEL count, INCRBY result, TTL: remaining
 *                     ms with Redis PTTL's -1 no expiry / -2 no key, EXPIRE
 *                     1/0 ...; stamp: the version the write gave its keys,
 *                     0 for a read or a write that changed nothing)
 *   MOVED       leaf u32, leaf_bits u8 (<= 32, leaf < 2^bits), map_gen u64,
 *               owner u32 (the owner index in the pool that holds the leaf)
 *               In a cluster map_gen is the leaf's epoch (the etcd
 *               mod_revision of its map key, server/core/cmap.h) and owner
 *               the cluster owner number serving it (0: not known)
 *   ERROR       code i32 (an hkv_status), text
 *   SCAN_REPLY  next cursor u64 (0 = done), [key, ...]
 *   STATS_REPLY {name text: i64, ...}
 *   PONG        (no fields)
 *   RESP        reply bytes (one complete RESP reply, non-empty, already
 *               encoded for the request's proto; the edge writes it to the
 *               client as is), changes [[key bytes, stamp u64], ...]
 *               (0..max_items: the keys the command changed and the version
 *               each holds now, a delete's included, so the edge can order
 *               its colo cache against pushes)
 *
 *   push link (owner -> edge, id 0)
 *   PUSH        key, value, stamp, expire_ms u64
 *   INVALIDATE  key, stamp
 *   PUBMSG      channel, message (a PUBLISH the owner fans out: one per colo)
 *
 *   PUBLISH     channel, message (edge -> the channel's owner, on a write
 *               link, no rid: never stored, never retried; answered PONG
 *               once it is on every push link)
 *
 * Commands.  CALL and EXEC carry Redis commands for the owner to run from its
 * own command table (APPEND, SETRANGE, INCRBYFLOAT, MSETNX, RENAME, COPY ...),
 * so a command needs no wire kind of its own.  args[0] is the command name, as
 * the client sent it; proto is the client's RESP version, which the owner
 * encodes the reply for.  EXEC is a MULTI/EXEC transaction: the owner compares
 * each watched key's version (a stamp it issued, as the edge saw it in a reply
 * or push) with the one the key holds and, if none differs, runs the commands
 * atomically; otherwise its reply is the nil EXEC reply.  Both are writes
 * (rid, write links) and are answered RESP (or MOVED, ERROR).  The SUM of
 * EXEC's watch entries and args is bounded, not each list: the three arrays
 * share the decoder's one arena, and with per-list bounds one frame could hold
 * max_items commands of max_items args each, bounded only by the frame size (a
 * 64 MiB frame of 1-byte args is 1 GiB of slices); the sum keeps the arena
 * under max_items * sizeof(struct wire_item), as for every other kind.
 *
 * Versions and request ids.  The OWNER orders the writes of its keys: it
 * applies them in the order it receives them and gives each applied write a
 * new version (a stamp from the owner's own clock, proto/stamp.h), greater
 * than any version it has issued; every reply and push carries the version,
 * which is what caches order by.  Edges never stamp writes.  A write request
 * carries a request id (rid) instead: the edge process (edge_id and
 * incarnation from HELLO) and a sequence number, so the owner can answer a
 * retry with the original result instead of applying it twice (RIFL):
 *   seq   this edge process's request number, > 0, unique per write request
 *         (a retry reuses it);
 *   ack   every seq of this edge below ack is finished: the owner may forget
 *         their results;
 *   prev  0 on a first attempt; on a retry, the incarnation of the owner the
 *         previous attempt may have reached (WIRE_PREV_UNKNOWN if the edge
 *         cannot tell; WIRE_PREV_SAME when the previous attempt went on
 *         this very connection, so it reached, or will reach first, the
 *         process that reads this one).  An owner that has no result for
 *         the rid and is not that incarnation answers "outcome unknown"
 *         instead of applying it: the previous attempt may have been
 *         applied by a process that is gone, with its memory of the result.
 *         A request that met MOVED is a first attempt at its next owner:
 *         the owner that said MOVED holds no record of it and has forgotten
 *         none, and whatever records it had went with the leaf
 *         (server/owner/owner_rifl.h has the whole rule).
 *
 * Expiry.  Requests carry a struct wire_expiry: a kind (none, relative ms for
 * EX/PX, absolute unix ms for EXAT/PXAT, keep for KEEPTTL) and an int64; the
 * owner turns it into an absolute time.  KEEPTTL is that kind, not a SET flag,
 * so the two cannot disagree.  Replies (VALUE, VALUES, PUSH) carry `expire_ms`
 * as ABSOLUTE unix milliseconds, 0 = no expiry: a value sits in colo caches
 * and in socket buffers for a while, and an absolute time does not decay
 * there, where a remaining-ms count would be stale by the time it is read.
 * This assumes host clocks are NTP-synced (the HLC stamps assume it too);
 * skew shows up as TTL error of the same size, never as a wrong value.
 * The TTL command is the exception: its INT answer is remaining ms, as Redis.
 *
 * Decoding.  wire_next_frame() splits a byte stream into frames; it refuses a
 * frame longer than the caller's max (config `wire-max-frame`) from the
 * 4-byte header alone, before any body is buffered.  wire_decode() parses one
 * payload into a struct wire_msg whose byte strings are SLICES into the
 * payload (zero-copy): they stay valid until the buffer holding the frame is
 * changed (consumed, compacted, grown, freed); code that keeps one copies it.
 * The decoder is written for hostile input and does not use msgpack-c: every
 * count is checked against the bytes left in the frame before anything is
 * allocated (an element takes at least one byte), lengths are checked before
 * a byte is read, nesting is bounded by the schema (at most WIRE_MAX_DEPTH
 * arrays deep; the decoder never descends into a container it did not
 * expect), and unknown kinds, wrong types, missing or extra fields and
 * trailing bytes are refused with a short static reason.  Arrays of keys,
 * items, stats, args, watches and commands live in the decoder's one arena
 * (EXEC's three arrays partition it) and are reused by its next call: no
 * allocation in steady state.
 *
 * Encoding.  The wire_put_* functions append one complete frame (length
 * prefix included) to a struct hkv_buf.  They return HKV_OK, HKV_ENOMEM,
 * HKV_ETOOBIG (payload over 4 GiB - 1; the peer's max is the caller's
 * business) or HKV_EINVAL (arguments the decoder would refuse: a bad enum or
 * flag, a zero-key GET, id 0 where not allowed, rid seq 0, a proto other
 * than 2 or 3, an empty argv, a CALL, EXEC or RESP count over
 * WIRE_MAX_ITEMS_DEFAULT, the max_items edges and owners decode with ...).
 * On any failure the buffer is left exactly as it was: it never holds half a
 * frame.  Whatever wire_decode() accepts (with max_items at most the
 * default) re-encodes to a frame that decodes to an equal message
 * (wire_put_msg + wire_msg_equal).
 */
#ifndef HKV_WIRE_H
#define HKV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/hkv.h"
#include "proto/stamp.h"

#define WIRE_VERSION 4
#define WIRE_HEADER_LEN 4
#define WIRE_MAX_FRAME_DEFAULT (64u * 1024 * 1024)  /* wire-max-frame */
#define WIRE_MAX_ITEMS_DEFAULT 65536                /* keys per message */
#define WIRE_MAX_DEPTH 3  /* frame > VALUES > item, frame > EXEC cmds > argv */

enum wire_type {
    /* requests */
    WIRE_HELLO = 1,
    WIRE_GET = 2,
    WIRE_SET = 3,
    WIRE_DEL = 4,
    WIRE_INCRBY = 5,
    WIRE_EXPIRE = 6,
    WIRE_PERSIST = 7,
    WIRE_TTL = 8,
    WIRE_SCAN = 9,
    WIRE_PING = 10,
    WIRE_STATS = 11,
    WIRE_GETDEL = 12,
    WIRE_CALL = 13,
    WIRE_EXEC = 14,
    WIRE_SCAN_RANGE = 15,
    WIRE_PUBLISH = 16,
    /* replies */
    WIRE_HELLO_OK = 64,
    WIRE_VALUE = 65,
    WIRE_VALUES = 66,
    WIRE_NOTFOUND = 67,
    WIRE_OK = 68,
    WIRE_INT = 69,
    WIRE_MOVED = 70,
    WIRE_ERROR = 71,
    WIRE_SCAN_REPLY = 72,
    WIRE_STATS_REPLY = 73,
    WIRE_PONG = 74,
    WIRE_RESP = 75,
    /* push link, id 0 */
    WIRE_PUSH = 96,
    WIRE_INVALIDATE = 97,
    WIRE_PUBMSG = 98,
};

enum wire_role { WIRE_ROLE_READ = 0, WIRE_ROLE_WRITE = 1, WIRE_ROLE_PUSH = 2 };

enum wire_exp_kind {
    WIRE_EXP_NONE = 0,  /* no expiry (SET without EX...: clears one); ms 0 */
    WIRE_EXP_REL = 1,   /* ms from when the owner applies it (EX, PX) */
    WIRE_EXP_ABS = 2,   /* unix ms (EXAT, PXAT) */
    WIRE_EXP_KEEP = 3,  /* keep the current expiry (KEEPTTL); ms 0 */
};

/* SET flags.  NX and XX exclude each other. */
#define WIRE_SET_NX 0x1u
#define WIRE_SET_XX 0x2u
#define WIRE_SET_GET 0x4u   /* answer OK with the old value */
#define WIRE_SET_FLAGS (WIRE_SET_NX | WIRE_SET_XX | WIRE_SET_GET)
/* EXPIRE flags (Redis 7).  NX excludes the others; GT and LT exclude each other. */
#define WIRE_EXPIRE_NX 0x1u
#define WIRE_EXPIRE_XX 0x2u
#define WIRE_EXPIRE_GT 0x4u
#define WIRE_EXPIRE_LT 0x8u
#define WIRE_EXPIRE_FLAGS (WIRE_EXPIRE_NX | WIRE_EXPIRE_XX | WIRE_EXPIRE_GT | WIRE_EXPIRE_LT)

/* A write's request id (see "Versions and request ids"). */
struct wire_rid {
    uint64_t seq, ack, prev;
};
#define WIRE_PREV_UNKNOWN UINT64_MAX
#define WIRE_PREV_SAME (UINT64_MAX - 1)

/* A byte string: into the frame when decoded, the caller's when encoding. */
struct wire_slice {
    const char *p;
    size_t len;
};

static inline struct wire_slice wire_slice(const void *p, size_t len)
{
    return (struct wire_slice){ (const char *)p, len };
}
struct wire_slice wire_cstr(const char *s);  /* s NULL gives {NULL, 0} */

struct wire_expiry {
    uint8_t kind;   /* enum wire_exp_kind */
    int64_t ms;
};

/* One key's result in VALUES. */
struct wire_item {
    bool found;
    struct wire_slice value;
    hkv_stamp stamp;
    uint64_t expire_ms;
};

/* One STATS_REPLY counter. */
struct wire_stat {
    struct wire_slice name;
    int64_t value;
};

/* An EXEC watch (the version the edge saw) or a RESP change (the version
 * the key holds now). */
struct wire_watch {
    struct wire_slice key;
    uint64_t version;
};

/* One command of an EXEC: argv, nargs >= 1. */
struct wire_cmd {
    const struct wire_slice *args;
    uint32_t nargs;
};

/* One decoded message.  Only the member of `u` named by `type` is filled; the
 * rest of the struct is zero.  Slices point into the payload; keys, items,
 * stats, args, watch, cmds and changes point into the decoder (valid until its
 * next wire_decode/deinit). */
struct wire_msg {
    uint8_t type;  /* enum wire_type */
    uint64_t id;
    union {
        struct {
            uint32_t version, edge_id;
            struct wire_slice colo;
            uint8_t role;
            uint64_t incarnation;
            struct wire_slice cluster;
            uint32_t want_owner;
            struct wire_slice host;
        } hello;
        struct {
            uint32_t version, owner_id;
            struct wire_slice pool;
            uint64_t map_gen, incarnation;
        } hello_ok;
        struct { const struct wire_slice *keys; uint32_t nkeys; } get;
        struct {
            struct wire_slice key, value;
            struct wire_rid rid;
            struct wire_expiry exp;
            uint32_t flags;
        } set;
        struct { const struct wire_slice *keys; uint32_t nkeys; struct wire_rid rid; } del;
        struct { struct wire_slice key; int64_t delta; struct wire_rid rid; } incrby;
        struct { struct wire_slice key; struct wire_expiry exp; struct wire_rid rid; uint32_t flags; } expire;
        struct { struct wire_slice key; struct wire_rid rid; } persist;
        struct { struct wire_slice key; struct wire_rid rid; } getdel;
        struct { struct wire_slice key; } ttl;
        struct { uint64_t cursor; uint32_t count; bool has_match; struct wire_slice match; } scan;
        struct {
            uint64_t from, to;
            uint32_t count;
            bool has_match;
            struct wire_slice match;
        } scan_range;
        struct { struct wire_slice value; hkv_stamp stamp; uint64_t expire_ms; } value;
        struct { hkv_stamp stamp; } notfound;
        struct { const struct wire_item *items; uint32_t nitems; } values;
        struct { hkv_stamp stamp; bool applied, has_old; struct wire_slice old; } ok;
        struct { int64_t value; hkv_stamp stamp; } integer;
        struct { uint32_t leaf; uint8_t leaf_bits; uint64_t map_gen; uint32_t owner; } moved;
        struct { int32_t code; struct wire_slice text; } error;
        struct { uint64_t cursor; const struct wire_slice *keys; uint32_t nkeys; } scan_reply;
        struct { const struct wire_stat *stats; uint32_t nstats; } stats_reply;
        struct { struct wire_slice key, value; hkv_stamp stamp; uint64_t expire_ms; } push;
        struct { struct wire_slice key; hkv_stamp stamp; } invalidate;
        struct { struct wire_slice channel, msg; } pub;    /* PUBLISH, PUBMSG */
        struct {
            struct wire_rid rid;
            uint8_t proto;
            const struct wire_slice *args;
            uint32_t nargs;
        } call;
        struct {
            struct wire_rid rid;
            uint8_t proto;
            const struct wire_watch *watch;
            uint32_t nwatch;
            const struct wire_cmd *cmds;
            uint32_t ncmds;
        } exec;
        struct {
            struct wire_slice reply;
            const struct wire_watch *changes;
            uint32_t nchanges;
        } resp;
    } u;
};

/* Decoder state; embed it and use init/deinit.  Fields are private. */
struct wire_decoder {
    void *arena;         /* the arrays of the last message (keys, items, EXEC ...) */
    size_t arena_cap;    /* bytes */
    uint32_t max_items;
};

/* Which direction a kind travels. */
static inline bool wire_is_request(unsigned t) { return t >= WIRE_HELLO && t <= WIRE_PUBLISH; }
/* The requests that change keys (they carry a rid and go on write links). */
static inline bool wire_is_write(unsigned t)
{
    return t == WIRE_SET || t == WIRE_DEL || t == WIRE_INCRBY || t == WIRE_EXPIRE ||
           t == WIRE_PERSIST || t == WIRE_GETDEL || t == WIRE_CALL || t == WIRE_EXEC;
}
static inline bool wire_is_reply(unsigned t) { return t >= WIRE_HELLO_OK && t <= WIRE_RESP; }
static inline bool wire_is_push(unsigned t)
{
    return t == WIRE_PUSH || t == WIRE_INVALIDATE || t == WIRE_PUBMSG;
}

/* ---- rules shared by the encoder and the decoder ---- */

/* A SET's expiry and flags are acceptable: known kind, ms 0 for NONE/KEEP,
 * known flags, not NX with XX. */
static inline bool wire_set_valid(struct wire_expiry e, uint32_t flags)
{
    if (e.kind > WIRE_EXP_KEEP || ((e.kind == WIRE_EXP_NONE || e.kind == WIRE_EXP_KEEP) && e.ms != 0))
        return false;
    return (flags & ~WIRE_SET_FLAGS) == 0 &&
           (flags & (WIRE_SET_NX | WIRE_SET_XX)) != (WIRE_SET_NX | WIRE_SET_XX);
}
/* An EXPIRE's expiry is REL or ABS, its flags known and compatible. */
static inline bool wire_expire_valid(struct wire_expiry e, uint32_t flags)
{
    if (e.kind != WIRE_EXP_REL && e.kind != WIRE_EXP_ABS)
        return false;
    if ((flags & ~WIRE_EXPIRE_FLAGS) != 0)
        return false;
    if ((flags & WIRE_EXPIRE_NX) && (flags & ~WIRE_EXPIRE_NX))
        return false;
    return (flags & (WIRE_EXPIRE_GT | WIRE_EXPIRE_LT)) != (WIRE_EXPIRE_GT | WIRE_EXPIRE_LT);
}
/* A MOVED leaf fits its bit count. */
static inline bool wire_leaf_valid(uint32_t leaf, uint8_t bits)
{
    return bits <= 32 && ((uint64_t)leaf >> bits) == 0;
}
/* The RESP version of a CALL or EXEC: 2 or 3. */
static inline bool wire_proto_valid(uint8_t proto) { return proto == 2 || proto == 3; }
/* The id rule: 0 on the push link, != 0 elsewhere, anything for ERROR. */
static inline bool wire_id_valid(unsigned type, uint64_t id)
{
    if (type == WIRE_ERROR)
        return true;
    return wire_is_push(type) ? id == 0 : id != 0;
}

/* ---- names ---- */

/* "GET", "HELLO_OK" ...; NULL for an unknown type. */
const char *wire_type_name(unsigned type);

/* ---- framing and decoding ---- */

/* Finds the first frame in buf[0..len).  max_frame bounds the payload length
 * (0 = WIRE_MAX_FRAME_DEFAULT).
 *   HKV_OK      *payload and *plen are the frame's payload (inside buf), *consumed
 *               the whole frame's size (header included): consume that much.
 *   HKV_EAGAIN  incomplete: *consumed is the size the frame needs as far as
 *               known (4 until the header is in, then 4 + length), always
 *               > len, so the caller can reserve it.  Payload is NULL.
 *   HKV_ETOOBIG the header declares more than max_frame (*plen = declared
 *               length, *consumed = 0).  Decided from the header alone, so
 *               nothing of the body needs buffering; the stream cannot
 *               be resynchronised: answer ERROR with id 0 and close.
 * Any out-pointer may be NULL. */
int wire_next_frame(const char *buf, size_t len, size_t max_frame,
                    const char **payload, size_t *plen, size_t *consumed);

/* max_items bounds keys/items/stats/args/changes per message, and EXEC's
 * watch entries + args together (0 = WIRE_MAX_ITEMS_DEFAULT), so the
 * decoder's arena never passes max_items * sizeof(struct wire_item) bytes
 * (2.5 MB at the default) whatever the frame says.  Nothing is
 * allocated until a message needs an array; the array is kept for reuse
 * until deinit. */
void wire_decoder_init(struct wire_decoder *d, uint32_t max_items);
void wire_decoder_deinit(struct wire_decoder *d);

/* Decodes one payload (from wire_next_frame) into *out.
 *   HKV_OK      *out filled (see struct wire_msg for lifetimes); *why NULL.
 *   HKV_EPROTO  malformed: *why is a short static reason ("trailing bytes",
 *               "count larger than frame" ...).
 *   HKV_ETOOBIG more than max_items keys/items/stats/args/changes, or
 *               EXEC watch entries + args; *why says so.
 *   HKV_ENOMEM  the key array could not grow; *why says so.
 * On an error out->type and out->id hold what was read before the fault
 * (0 if not reached): the framing is intact, so the caller may answer ERROR to
 * that id and go on, or close the link.  why may be NULL. */
int wire_decode(struct wire_decoder *d, const char *payload, size_t plen,
                struct wire_msg *out, const char **why);

/* True if a and b are the same message: same fields and byte contents
 * (wherever the slices point). */
bool wire_msg_equal(const struct wire_msg *a, const struct wire_msg *b);

/* ---- encoding: each appends one frame; returns as described at the top ---- */

/* HELLO's cluster fields (version 3). */
struct wire_hello_cluster {
    struct wire_slice cluster;
    uint32_t want_owner;
    struct wire_slice host;
};
/* Any HELLO; cl NULL is a single host's: cluster "", want_owner 0, host "". */
int wire_put_hello_cluster(struct hkv_buf *b, uint64_t id, uint32_t version, uint32_t edge_id,
                           struct wire_slice colo, uint8_t role, uint64_t incarnation,
                           const struct wire_hello_cluster *cl);
/* A single host's HELLO. */
static inline int wire_put_hello(struct hkv_buf *b, uint64_t id, uint32_t version,
                                 uint32_t edge_id, struct wire_slice colo, uint8_t role,
                                 uint64_t incarnation)
{
    return wire_put_hello_cluster(b, id, version, edge_id, colo, role, incarnation, NULL);
}
int wire_put_get(struct hkv_buf *b, uint64_t id, const struct wire_slice *keys, uint32_t nkeys);
int wire_put_set(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_slice value,
                 struct wire_rid rid, struct wire_expiry exp, uint32_t flags);
int wire_put_del(struct hkv_buf *b, uint64_t id, const struct wire_slice *keys, uint32_t nkeys,
                 struct wire_rid rid);
int wire_put_incrby(struct hkv_buf *b, uint64_t id, struct wire_slice key, int64_t delta,
                    struct wire_rid rid);
int wire_put_expire(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_expiry exp,
                    struct wire_rid rid, uint32_t flags);
int wire_put_persist(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_rid rid);
int wire_put_getdel(struct hkv_buf *b, uint64_t id, struct wire_slice key, struct wire_rid rid);
int wire_put_ttl(struct hkv_buf *b, uint64_t id, struct wire_slice key);
/* match NULL = no MATCH pattern. */
int wire_put_scan(struct hkv_buf *b, uint64_t id, uint64_t cursor, uint32_t count,
                  const struct wire_slice *match);
/* match NULL = no MATCH pattern. */
int wire_put_scan_range(struct hkv_buf *b, uint64_t id, uint64_t from, uint64_t to, uint32_t count,
                        const struct wire_slice *match);
int wire_put_ping(struct hkv_buf *b, uint64_t id);
int wire_put_stats(struct hkv_buf *b, uint64_t id);
/* args[0] is the command name; 1 <= nargs <= WIRE_MAX_ITEMS_DEFAULT. */
int wire_put_call(struct hkv_buf *b, uint64_t id, struct wire_rid rid, uint8_t proto,
                  const struct wire_slice *args, uint32_t nargs);
/* 1 <= ncmds, every cmds[i].nargs >= 1, nwatch + all nargs <=
 * WIRE_MAX_ITEMS_DEFAULT; watch may be NULL when nwatch is 0. */
int wire_put_exec(struct hkv_buf *b, uint64_t id, struct wire_rid rid, uint8_t proto,
                  const struct wire_watch *watch, uint32_t nwatch, const struct wire_cmd *cmds,
                  uint32_t ncmds);

int wire_put_hello_ok(struct hkv_buf *b, uint64_t id, uint32_t version, uint32_t owner_id,
                      struct wire_slice pool, uint64_t map_gen, uint64_t incarnation);
int wire_put_value(struct hkv_buf *b, uint64_t id, struct wire_slice value, hkv_stamp stamp,
                   uint64_t expire_ms);
/* items[i].found false encodes as nil (its other fields are ignored). */
int wire_put_values(struct hkv_buf *b, uint64_t id, const struct wire_item *items, uint32_t nitems);
int wire_put_notfound(struct hkv_buf *b, uint64_t id, hkv_stamp stamp);
/* old NULL = no old value (not asked, or there was none). */
int wire_put_ok(struct hkv_buf *b, uint64_t id, hkv_stamp stamp, bool applied,
                const struct wire_slice *old);
int wire_put_int(struct hkv_buf *b, uint64_t id, int64_t value, hkv_stamp stamp);
int wire_put_moved(struct hkv_buf *b, uint64_t id, uint32_t leaf, uint8_t leaf_bits,
                   uint64_t map_gen, uint32_t owner);
int wire_put_error(struct hkv_buf *b, uint64_t id, int32_t code, struct wire_slice text);
int wire_put_scan_reply(struct hkv_buf *b, uint64_t id, uint64_t cursor,
                        const struct wire_slice *keys, uint32_t nkeys);
int wire_put_stats_reply(struct hkv_buf *b, uint64_t id, const struct wire_stat *stats,
                         uint32_t nstats);
int wire_put_pong(struct hkv_buf *b, uint64_t id);
/* reply non-empty; nchanges <= WIRE_MAX_ITEMS_DEFAULT (changes may be NULL
 * when 0). */
int wire_put_resp(struct hkv_buf *b, uint64_t id, struct wire_slice reply,
                  const struct wire_watch *changes, uint32_t nchanges);

int wire_put_push(struct hkv_buf *b, struct wire_slice key, struct wire_slice value,
                  hkv_stamp stamp, uint64_t expire_ms);
int wire_put_invalidate(struct hkv_buf *b, struct wire_slice key, hkv_stamp stamp);
int wire_put_publish(struct hkv_buf *b, uint64_t id, struct wire_slice channel,
                     struct wire_slice msg);
int wire_put_pubmsg(struct hkv_buf *b, struct wire_slice channel, struct wire_slice msg);

/* Encodes any message as its kind's wire_put_* would (m->id included);
 * HKV_EINVAL for an unknown type. */
int wire_put_msg(struct hkv_buf *b, const struct wire_msg *m);

#endif

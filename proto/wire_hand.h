/*
 * wire_hand.h - the messages of a leaf move (../shared/CLUSTER.md §5): the
 * hand-off link between two owners (HANDOFF_*, the names of the Spin model
 * in tests/model/) and the control channel between an owner and its host's
 * agent (LEAF_*), which is how an owner, which never talks to etcd, asks for
 * the compare-and-swaps of a move.
 *
 * Same framing as proto/wire.h (a 4-byte big-endian length, then one
 * msgpack array [type, id, field...]) and the same hostile-input reader, in
 * a range of kinds of its own (128.. ; wire.h's kinds end below it), so a
 * frame of one protocol is never taken for the other: wire_decode refuses
 * these kinds and hand_decode refuses wire.h's.  An owner's listening
 * sockets tell the two apart by the first frame (hand_is_kind).  Every id
 * is != 0.
 *
 * Schemas (after type and id):
 *
 *   hand-off link, source S -> target T (and back where marked)
 *   HANDOFF_BEGIN      cluster text, host text (S's: over TCP, T checks that the
 *                      peer's certificate names it), leaf, e1 i64, from u32,
 *                      to u32 (owner numbers), incarnation u64 (S's process),
                      follow bool (a follower's seeding, CLUSTER.md §7: the
                      stream never ends in FENCE; e1 is the leaf's epoch)
 *   HANDOFF_READY      e1                                        (T -> S)
 *   HANDOFF_ROW        seq u64, [row, ...]     rows of L read by S (ledger, SQLite)
 *   HANDOFF_WRITE      seq u64, row            the result of one write S applied
 *   HANDOFF_RECORD     seq u64, writer u32, inc u64, rseq u64, rtype u8, applied
 *                      bool, value i64, version u64, old bytes|nil, resp
 *                      bytes|nil, changes [key, version, key, version ...]
 *                      (one completion record, server/owner/owner_rifl.h;
 *                      rtype HAND_RECORD_LOST: no record, the writer
 *                      incarnation's lost mark, in rseq)
 *   HANDOFF_FENCE      e1, last seq u64 (on a follow stream: a planned
 *                      hand-over asks the follower to commit every key it
 *                      holds, ACK once that is on disk)
 *   HANDOFF_FENCE_ACK  e1, last seq                              (T -> S)
 *   HANDOFF_FENCE_NACK e1, text                                  (T -> S)
 *   HANDOFF_COMMITTED  e1, e2 i64 (the epoch the commit gave the leaf)
 *   HANDOFF_ABORT      e1, text                 (S -> T; T -> S: BEGIN refused)
 *   HANDOFF_PROGRESS   e1, seq u64: every number up to it is committed at T
 *                      (T -> S; flow control: S fences once T has caught up,
 *                      so the fence waits for a short tail, not a backlog)
 *   where leaf = pool u8, start u32, bits u8 (start fits bits) and
 *   row = [key bytes, value bytes|nil (nil: a tombstone), stamp u64,
 *          expire_ms i64 (unix ms, 0 none), class u16]
 *
 *   control channel, owner -> agent (each answered LEAF_REPLY with its id)
 *   LEAF_HELLO         pool u8, index u32 (the owner's place on its host)
 *   LEAF_INTENT        leaf, epoch (e0), to u32     step 1
 *   LEAF_COMMIT        leaf, epoch (e1), to u32     step 6
 *   LEAF_ABORT         leaf, epoch (e1), to u32     step 9 (to: the target, 0 unknown)
 *   LEAF_READ          leaf, epoch 0, to 0          step 8: the truth
 *   LEAF_SPLIT         leaf, epoch (e0), to 0
 *   LEAF_ISR_ADD       leaf, epoch, to (the follower)   CLUSTER.md §7: `isr` += to
 *   LEAF_ISR_DEL       leaf, epoch, to (the follower)   `isr` -= to (before any
 *                      write is acknowledged without it)
 *   LEAF_HANDOVER      leaf, epoch, to (an in-sync follower)   CLUSTER.md §7, planned
 *                      hand-over: primary := to, `isr` -= to (the asker must be the
 *                      primary, its writes to the leaf fenced and held by `to`)
 *   LEAF_DONE          order id u64, status i32, text   (an order finished)
 *   LEAF_LOAD          window_ms u32, busy u32 (per mille of the window the
 *                      owner's loop thread ran), backlog u64, backlog_prev u64
 *                      (persist backlog now and a window ago), work u64 (the
 *                      owner's whole work in the window), [load, ...] (its
 *                      busiest leaves, at most HAND_LOAD_MAX), not answered;
 *                      load = [leaf, work u64, writes u64, pushes u64,
 *                      misses u64, bytes u64, half0 u64, half1 u64 (the
 *                      work of the leaf's two halves by the next hash bit;
 *                      both 0: not known), topkey bytes|nil, topwork u64
 *                      (the hottest key seen and a lower bound of its work)]
 *   agent -> owner
 *   LEAF_REPLY         status i32 (LEAF_ST_*), epoch i64 (the new one, OK),
 *                      exists bool, owner u32, state u8, to u32, at i64 (the
 *                      leaf's truth: its value and mod_revision), text
 *   LEAF_ORDER         kind u8 (LEAF_ORDER_MOVE/SPLIT/FOLLOW/HANDOVER), leaf, to u32
 *                      (FOLLOW: seed owner `to` as a follower of the leaf;
 *                      HANDOVER: hand the leaf to in-sync follower `to`, 0 any)
 *
 * Decoded byte strings are slices into the payload; rows, changes and loads live
 * in the decoder's arena (struct wire_decoder), valid until its next call.
 */
#ifndef HKV_WIRE_HAND_H
#define HKV_WIRE_HAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/stamp.h"
#include "proto/wire.h"

enum hand_type {
    HANDOFF_BEGIN = 128,
    HANDOFF_READY = 129,
    HANDOFF_ROW = 130,
    HANDOFF_WRITE = 131,
    HANDOFF_RECORD = 132,
    HANDOFF_FENCE = 133,
    HANDOFF_FENCE_ACK = 134,
    HANDOFF_FENCE_NACK = 135,
    HANDOFF_COMMITTED = 136,
    HANDOFF_ABORT = 137,
    HANDOFF_PROGRESS = 138,
    HANDOFF_HELD = 139,
    HANDOFF_EPOCH = 140,
    LEAF_HELLO = 160,
    LEAF_INTENT = 161,
    LEAF_COMMIT = 162,
    LEAF_ABORT = 163,
    LEAF_READ = 164,
    LEAF_SPLIT = 165,
    LEAF_REPLY = 166,
    LEAF_ORDER = 167,
    LEAF_DONE = 168,
    LEAF_LOAD = 169,
    LEAF_ISR_ADD = 170,
    LEAF_ISR_DEL = 171,
    LEAF_HANDOVER = 172,
};

/* LEAF_REPLY status. */
enum leaf_status {
    LEAF_ST_OK = 0,       /* the txn applied (epoch: the leaf's new epoch) */
    LEAF_ST_LOST = 1,     /* its compare failed: the truth is in the reply */
    LEAF_ST_UNKNOWN = 2,  /* no answer from etcd in time: it may or may not have applied */
    LEAF_ST_REFUSED = 3,  /* not tried (bad request, no such owner, no free slot ...) */
};
enum leaf_order_kind {
    LEAF_ORDER_MOVE = 1,
    LEAF_ORDER_SPLIT = 2,
    LEAF_ORDER_FOLLOW = 3,
    LEAF_ORDER_HANDOVER = 4, /* to: the in-sync follower to hand to (0: the owner picks one) */
};

static inline bool hand_is_kind(unsigned t) { return t >= HANDOFF_BEGIN && t <= LEAF_HANDOVER; }

struct hand_leaf {
    uint8_t pool;          /* enum cfg_pool */
    uint8_t bits;
    uint32_t start;        /* prefix << (32 - bits); 0 when bits is 0 */
};

struct hand_row {
    struct wire_slice key, value;
    bool tomb;             /* value is nil */
    hkv_stamp stamp;
    int64_t expire_ms;
    uint16_t class_id;
};

/* One leaf's work in a LEAF_LOAD (units: see server/owner/owner_work.h). */
/* A HANDOFF_RECORD's rtype that carries a lost mark, not a record (no
 * WIRE_* reply kind has this value). */
#define HAND_RECORD_LOST 255
#define HAND_LOAD_MAX 64
#define HAND_KEY_MAX 128           /* a top key longer than this is cut (and said so) */
struct hand_load {
    struct hand_leaf leaf;
    uint64_t work, writes, pushes, misses, bytes;
    uint64_t half[2];
    bool has_key;
    struct wire_slice key;
    uint64_t topwork;
};

struct hand_msg {
    uint8_t type;
    uint64_t id;
    union {
        struct {
            struct wire_slice cluster, host;
            struct hand_leaf leaf;
            int64_t e1;
            uint32_t from, to;
            uint64_t incarnation;
            bool follow;
        } begin;
        struct { int64_t e1; } ready;
        struct { uint64_t seq; const struct hand_row *rows; uint32_t nrows; } row;
        struct { uint64_t seq; struct hand_row r; } write;
        struct {
            uint64_t seq;
            uint32_t writer;
            uint64_t inc, rseq;
            uint8_t rtype;
            bool applied, has_old, has_resp;
            int64_t value;
            hkv_stamp version;
            struct wire_slice old, resp;
            const struct wire_watch *changes;
            uint32_t nchanges;
        } record;
        struct { int64_t e1; uint64_t last; } fence;       /* FENCE, FENCE_ACK, PROGRESS, HELD */
        struct { int64_t e1; struct wire_slice text; } why; /* FENCE_NACK, ABORT */
        struct { int64_t e1, e2; } committed;              /* COMMITTED, EPOCH */
        struct { uint8_t pool; uint32_t index; } hello;
        struct { struct hand_leaf leaf; int64_t epoch; uint32_t to; } leaf;
        struct {
            int32_t status;
            int64_t epoch;
            bool exists;
            uint32_t owner;
            uint8_t state;
            uint32_t to;
            int64_t at;
            struct wire_slice text;
        } reply;
        struct { uint8_t kind; struct hand_leaf leaf; uint32_t to; } order;
        struct { uint64_t order; int32_t status; struct wire_slice text; } done;
        struct {
            uint32_t window_ms, busy;
            uint64_t backlog, backlog_prev, work;
            const struct hand_load *leaves;
            uint32_t nleaves;
        } load;
    } u;
};

/* "HANDOFF_BEGIN", "LEAF_REPLY" ...; NULL for another kind. */
const char *hand_type_name(unsigned type);

/* The kind of the payload of one frame (its first two msgpack headers), or
 * 0 when it does not start like a message: lets a listener tell a hand-off
 * link from an edge link by its first frame without decoding it. */
unsigned hand_peek_type(const char *payload, size_t plen);

/* Decodes one payload (wire_next_frame) of a hand_is_kind() kind.  As
 * wire_decode: HKV_OK, HKV_EPROTO (*why set), HKV_ETOOBIG, HKV_ENOMEM. */
int hand_decode(struct wire_decoder *d, const char *payload, size_t plen, struct hand_msg *out,
                const char **why);

/* Appends one frame for m (its type and id included).  HKV_OK, HKV_ENOMEM,
 * HKV_ETOOBIG, or HKV_EINVAL (an unknown type, id 0, a leaf whose start does
 * not fit its bits, a slice with no bytes and a length); on failure the
 * buffer is left as it was. */
int hand_put(struct hkv_buf *b, const struct hand_msg *m);

/* Same fields and bytes. */
bool hand_msg_equal(const struct hand_msg *a, const struct hand_msg *b);

/* A leaf's start fits its bits (no bit set below the prefix). */
static inline bool hand_leaf_valid(struct hand_leaf l)
{
    return l.bits <= 32 && (l.bits == 32 || ((uint64_t)l.start & ((1ULL << (32 - l.bits)) - 1)) == 0);
}

#endif

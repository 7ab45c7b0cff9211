/*
 * owner_recv_sm.h - what the two files of the target's move module share
 * (owner_recv.c: BEGIN, the stream, the fence's acknowledgment, adopting or
 * dropping; owner_recv_map.c: settling a move from the map, the tick,
 * setup).  Private to them: one module (scripts/check/layers.py GROUPS).
 */
#ifndef HKV_OWNER_RECV_SM_H
#define HKV_OWNER_RECV_SM_H

#include "server/owner/owner_move_int.h"

#define RECV_TICK_MS 20
#define RECV_BEGIN_WAIT_MS 3000   /* a map copy that has not reached e1 yet */
#define RECV_BATCH_ROWS 8192
#define RECV_MAX_OUT_BYTES (32u << 20) /* rows out to the persister before the link is not read */
#define RECV_RING 256
/* Leaves followed at once (CLUSTER.md §7, owner_follow.c): their slots come
 * after the moves' in struct orecv (a batch id keeps the slot in 16 bits);
 * a single host's map has 1024 leaves, half of them another owner's. */
#define OWN_FOLLOW_MAX 2048
#define OWN_RECV_SLOTS (OWN_RECV_MAX + OWN_FOLLOW_MAX)
#define FOLLOW_ORPHAN_MS 30000    /* a follow whose link went, the primary unchanged: kept this
                                   * long for the primary's new BEGIN, unless in the in-sync set */

enum rphase { R_FREE = 0, R_WAIT_MAP, R_PREPARING, R_RECEIVING, R_ACKED, R_DROPPING };

struct rmove {
    enum rphase phase;
    struct hlink *h;              /* NULL once the link is gone */
    struct hand_leaf leaf;
    int64_t e1;
    uint32_t from;
    uint64_t next_seq;            /* the next sequence number expected */
    uint64_t gen;                 /* tags its batches (a slot is reused) */
    int gap, failed;
    int fence_pending;            /* a FENCE waits for commits */
    int fence_dirty;              /* follow: the fence's batch of dirty keys is still to go */
    int fence_spoiled;            /* follow: a batch since the fence failed: NACK */
    uint64_t fence_last;
    uint64_t batches_out;         /* batches submitted, not done */
    uint64_t seq_committed;       /* every seq up to it is in a committed batch */
    uint64_t ring[RECV_RING];     /* each batch out: the last seq it holds (done in order) */
    uint64_t ring_head, ring_tail;
    int paused;                   /* the link is not read: the commits lag */
    uint64_t bytes_out;           /* bytes of the batches out */
    uint64_t ring_bytes[RECV_RING];
    struct persist_batch *cur;    /* rows not submitted yet */
    uint64_t cur_seq;
    uint64_t gen_wait;            /* the own table generation holding RECEIVING */
    int purged;
    int64_t deadline_ms;          /* R_WAIT_MAP */
    int64_t started_ms;
    uint64_t rows, bytes;
    int follow;                   /* a follower's copy (owner_follow.c), never adopted by a fence */
    int held_due;                 /* a HELD is owed (sent once per loop turn) */
    int64_t orphan_ms;            /* follow: when its link went (0: up) */
    struct persist_batch *tail;   /* follow: results of a request whose record has not come */
    uint64_t from_inc;            /* follow: the primary's process (BEGIN) */
};

/* A leaf this owner was promoted to, and the process it followed there
 * (owner_follow.c: ofollow_inherits). */
#define OFOLLOW_HEIRS 1024
struct oheir {
    uint32_t start;
    uint8_t bits;
    uint64_t inc;
    int64_t at_ms;
};

struct orecv {
    struct rmove m[OWN_RECV_SLOTS]; /* [0, OWN_RECV_MAX): moves; the rest: follows */
    struct event *tick, *flush;
    uint64_t next_batch;
    struct orecv_stats st;
    struct ofollow_stats fst;
    struct oheir heirs[OFOLLOW_HEIRS]; /* a ring: the oldest promotion goes first */
    unsigned nheirs;                   /* promotions recorded (next slot: nheirs % size) */
};

/* ---- owner_recv.c ---- */
const char *orecv_leaf_name(const struct hand_leaf *l, char *buf, size_t len);
void orecv_send_why(struct rmove *r, uint8_t type, const char *why);
/* Frees the move's batch and link and runs what waited for the leaf. */
void orecv_release(struct owner *o, struct rmove *r);
/* The copy goes (ABORT, the map shows the leaf elsewhere). */
void orecv_drop(struct owner *o, struct rmove *r, const char *why);
/* The leaf is this owner's from epoch e2. */
void orecv_adopt(struct owner *o, struct rmove *r, int64_t e2);
/* BEGIN's checks a move and a follow share (cluster, peer, target): 1
 * with why set when refused. */
int orecv_begin_refused(struct owner *o, struct hlink *h, const struct hand_msg *m, char *why,
                        size_t len);
/* A new incoming hand-off link (owner_hlink's accept callback). */
void orecv_on_accept(struct owner *o, struct hlink *h, const struct hand_msg *m);
/* Submits the received rows of every move (one batch per loop turn). */
void orecv_on_flush(evutil_socket_t fd, short what, void *arg);
/* BEGIN's map check: 1 moving here at e1, 0 not known yet, -1 no. */
int orecv_map_says_moving(struct owner *o, const struct rmove *r);
/* Step 2 once the map agrees. */
void orecv_prepare(struct owner *o, struct rmove *r);
/* The stream's handlers (a follow uses them too). */
void orecv_on_msg(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *m);
void orecv_on_gone(struct owner *o, void *arg, struct hlink *h, const char *why);
/* A purge of r's leaf ended (R_DROPPING: the slot is freed; else purged). */
void orecv_purge_done(struct owner *o, void *arg, int status, uint64_t entries, uint64_t rows);

/* ---- owner_follow.c ---- */
/* A BEGIN with `follow`: seeding this owner as a follower. */
void ofollow_accept(struct owner *o, struct hlink *h, const struct hand_msg *m);
/* A move of leaf comes here: its follow (if any) ends first, without a
 * purge of its own (the move's purge drops the rows; two purges of one
 * leaf could interleave with the move's copy). */
void ofollow_yield(struct owner *o, struct hand_leaf leaf);
/* The clock: map checks of new follows, READY, orphans. */
void ofollow_tick(struct owner *o);
/* Once a loop turn: HELD for the follows that took frames; a gap or a
 * failure ends the follow (the primary reseeds it). */
void ofollow_flush(struct owner *o);

#endif

/*
 * owner_rifl.h - the owner's completion records: what makes a retried write
 * exactly-once (RIFL: "Implementing Linearizability at Large Scale and Low
 * Latency", SOSP 2015; the Raft thesis §6.3 on client sessions).
 *
 * An edge process (writer id and incarnation, from its HELLO) numbers its
 * write requests (seq, proto/wire.h "Versions and request ids").  When the
 * owner has applied one (or decided it does not apply: NX met, XX not met,
 * not an integer ...) it records the reply under (writer, incarnation, seq);
 * a retry of that request finds the record and gets the same reply, never a
 * second application.
 *
 * The rule: an owner applies a write request only when it can prove the
 * request new, and it can when it holds no record of it AND it cannot have
 * forgotten one:
 *   R1 the request is at or above the writer's ack (below it, the writer
 *      said the request is finished: a copy arriving now is answered
 *      "outcome unknown", never applied);
 *   R2 it is above the writer's lost mark: the highest seq whose record
 *      went while it could still be retried (the per-writer bound, an
 *      allocation failure, or the same mark of an owner whose leaf came
 *      here);
 *   R3 it is a first attempt (prev 0), or its previous attempt reached this
 *      very process (prev = this incarnation): a record held by an owner
 *      process that is gone is gone with it;
 * and these run BEFORE the key's ownership is looked at: a retry finds its
 * record even when the key's leaf has left, and a MOVED answer therefore
 * says "this process holds no record of the request and has forgotten
 * none", which is what lets the edge send it on as a first attempt.
 * Why that is enough, whichever owner a request first went to:
 *   - the writer's ack covers only finished requests of the WHOLE edge (the
 *     lowest unfinished seq of the process, not of one owner): a request in
 *     flight may be re-routed by MOVED to any owner, so an ack per owner
 *     let an owner forget a request before it had seen it (it kept no
 *     record of a moved request below its ack, and each resend applied it
 *     again);
 *   - a record leaves an owner only by R1's ack, by a new incarnation of its
 *     writer (the old process is gone: the master restarts a slot only
 *     after reaping it), or with R2's mark raised;
 *   - a leaf that moves takes every record and every lost mark of its
 *     source with it (owner_copy.c, at the fence, while the leaf's writes
 *     wait), so an owner that applied a request either still holds its
 *     record, or its leaf's new owner does, or one of them has a lost mark
 *     at or above it;
 *   - a record that travels is merged without forgetting any incarnation
 *     that may live (rifl_merge).
 * A retry that fails these gets "outcome unknown" (the client is told the
 * truth), never a second application.
 *
 * A record is forgotten
 *   - when the writer says it will not retry it: every request carries
 *     `ack`, and all of that writer's seqs below ack are finished;
 *   - when a request of a new incarnation of the writer arrives;
 *   - as a last bound, past `max` records of one writer: its oldest (lowest
 *     seq) goes first, counted in `dropped`, and raises the lost mark.
 *     Only a writer with that many requests unfinished at once can get
 *     there, and it only evicts its own records.
 *
 * A durable write's record names the commit ticket that holds its reply
 * (owner_int.h); a retry that finds a ticket still pending waits for that
 * same commit instead of being answered at once.
 *
 * A Redis command run by the owner (CALL, EXEC) is answered RESP: its record
 * holds the encoded reply bytes and the change list ([key, version] of every
 * key it changed), copied, so a retry gets byte for byte what the first
 * attempt got.  Such a record costs its reply's size until the writer acks
 * it, which is what the per-writer bound is for.
 *
 * One table per owner, used from its loop only: nothing locks.
 */
#ifndef HKV_OWNER_RIFL_H
#define HKV_OWNER_RIFL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/stamp.h"
#include "proto/wire.h"

struct rifl;

/* A finished write's reply, as the owner sent it. */
struct rifl_result {
    uint8_t type;          /* WIRE_OK, WIRE_INT or WIRE_RESP */
    uint8_t applied;       /* OK: applied */
    uint8_t has_old;       /* OK: old value present */
    int64_t value;         /* INT: the integer */
    hkv_stamp version;     /* the version the write left on its key(s) */
    const char *old;       /* OK: the old value (rifl_put copies it) */
    size_t oldlen;
    const char *resp;      /* RESP: the reply bytes (rifl_put copies them) */
    size_t resplen;
    const struct wire_watch *changes;  /* RESP: the change list (copied, keys too) */
    uint32_t nchanges;
    uint64_t ticket;       /* durable: the commit ticket holding the reply, 0 = none */
};

struct rifl_stats {
    uint64_t records;      /* held now */
    uint64_t dropped;      /* forgotten by the bound before their writer acked them */
};

/* max: records per writer (>= 1).  HKV_OK or HKV_ENOMEM. */
int rifl_create(size_t max, struct rifl **out);
/* Frees every record; sets *r = NULL.  NULL-safe. */
void rifl_destroy(struct rifl **r);
void rifl_set_max(struct rifl *r, size_t max);

/* A request of (writer, inc) arrived carrying ack: forgets that writer's
 * records below ack, and every record of any other incarnation. */
void rifl_ack(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t ack);
/* The record of a request, or NULL.  Valid until the next rifl_put,
 * rifl_ack or rifl_destroy. */
const struct rifl_result *rifl_get(const struct rifl *r, uint32_t writer, uint64_t inc,
                                   uint64_t seq);
/* 1 when a request of (writer, inc) with no record may have been applied
 * here and its record forgotten (R1, R2 above): it must be answered
 * "outcome unknown", not applied.  0: provably new (as far as records go). */
int rifl_unknown(const struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq);
/* Records a request's result (old, resp and changes copied).  A second put of the same
 * request replaces the first; a request below the writer's ack is not kept (it
 * will not be retried).  HKV_OK or HKV_ENOMEM (nothing recorded, the lost
 * mark raised: the caller still answers; a retry is answered "outcome
 * unknown"). */
int rifl_put(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
             const struct rifl_result *res);
/* A request applied whose record cannot be kept (no memory for its
 * ticket ...): raises the lost mark to seq. */
void rifl_lost(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq);
void rifl_stats(const struct rifl *r, struct rifl_stats *out);

/* Every record, writer by writer in seq order, and after each
 * incarnation's records its lost mark if it has one, as a call with res
 * NULL and seq the mark (a leaf move sends them to its target: requests on
 * the leaf's keys retried there must find them, or find the mark).  fn
 * must not change the table. */
typedef void (*rifl_each_fn)(void *arg, uint32_t writer, uint64_t inc, uint64_t seq,
                             const struct rifl_result *res);
void rifl_each(const struct rifl *r, rifl_each_fn fn, void *arg);
/* Takes a record (or, res NULL, a lost mark) from another owner's table
 * (its ticket dropped: it was committed here).  A record this table has
 * already is kept, and so is nothing below the writer's ack (finished: the
 * ack is the writer's lowest unfinished request, whichever owner it went
 * to).  If this table knows the writer under another incarnation, only one
 * can be the live process: live_inc (the incarnation the writer's write
 * links to this owner name, 0 if none) decides; with no link, neither is
 * forgotten: the sender's is kept beside this table's until a request of
 * one of them arrives.  HKV_OK, HKV_EEXIST (not taken), HKV_ENOMEM. */
int rifl_merge(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
               const struct rifl_result *res, uint64_t live_inc);

#endif

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
 * second application.  A record is forgotten
 *   - when the writer says it will not retry it: every request carries
 *     `ack`, and all of that writer's seqs below ack are finished;
 *   - when a new incarnation of the writer appears (the old process is gone,
 *     the master restarts a slot only after reaping it);
 *   - as a last bound, past `max` records of one writer: its oldest (lowest
 *     seq) goes first and is counted in `dropped` (a retry of it would apply
 *     again).
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
 * records below ack, and every record of an older incarnation. */
void rifl_ack(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t ack);
/* The record of a request, or NULL.  Valid until the next rifl_put,
 * rifl_ack or rifl_destroy. */
const struct rifl_result *rifl_get(const struct rifl *r, uint32_t writer, uint64_t inc,
                                   uint64_t seq);
/* Records a request's result (old, resp and changes copied).  A second put of the same
 * request replaces the first; a request below the writer's ack is not kept (it
 * will not be retried).  HKV_OK or HKV_ENOMEM (nothing recorded: the caller
 * still answers; a retry would apply again). */
int rifl_put(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
             const struct rifl_result *res);
void rifl_stats(const struct rifl *r, struct rifl_stats *out);

/* Every record, writer by writer in seq order (a leaf move sends them
 * to its target: requests on the leaf's keys retried there must find
 * them).  fn must not change the table. */
typedef void (*rifl_each_fn)(void *arg, uint32_t writer, uint64_t inc, uint64_t seq,
                             const struct rifl_result *res);
void rifl_each(const struct rifl *r, rifl_each_fn fn, void *arg);
/* Takes a record from another owner's table (its ticket dropped: it was
 * committed here).  A record this table has already is kept.  If this
 * table knows the writer under another incarnation, only one can be the
 * live process: live_inc (the incarnation the writer's links to this owner
 * name, 0 if none) decides, and with no link the sender's record wins
 * (it served that writer during the move); taking it forgets the other
 * incarnation's records, as any new incarnation does.  HKV_OK, HKV_EEXIST
 * (not taken), HKV_ENOMEM. */
int rifl_merge(struct rifl *r, uint32_t writer, uint64_t inc, uint64_t seq,
               const struct rifl_result *res, uint64_t live_inc);

#endif

/*
 * bus.h - the colo's pub/sub message bus: every message published in a colo
 * (a PUBLISH on any of its edges, or one an owner pushed to it) is appended
 * here once, and every edge of the colo that holds subscribers (an "armed"
 * edge) reads it and writes it to its own subscribers.  Modelled on the
 * change ring (changes.h): a segment the master makes before fork, one
 * eventfd per edge, armed/signalled flags with Dekker fences, signals that
 * coalesce until the edge acknowledges.
 *
 * Records are variable-length (channel, message, a 64-bit target client id:
 * 0 = every subscriber of the channel, else that client only, and flags:
 * BUS_F_RAW = the message is an encoded RESP value to embed as-is) in a byte
 * ring of pubsub-bus-size bytes (a power of two).  Many writers claim space
 * with one fetch_add on the head; each record opens with a tag word (odd
 * while written) and a check word bound to its position and length with a
 * per-boot secret kept outside the segment, so a reader never takes an old
 * record's payload bytes for a header.  The ring is lossy: a reader lapped
 * by the writers, or stuck behind a record whose writer died half-way, is
 * told BUS_LOST and its cursor moves to the head; its edge then closes the
 * subscribers that may have missed a message (Redis never drops a message
 * silently).  A record is at most a quarter of the ring (bus_max_record).
 *
 * The count table.  Each edge keeps, in its own region of the segment, its
 * channels and patterns with their subscriber counts (single writer: the
 * edge; a per-slot seqlock for readers), so any edge answers PUBLISH's
 * count and PUBSUB for the whole colo without asking the others.  A region
 * holds BUS_NAMES names of up to BUS_NAME_MAX bytes; a longer name is kept
 * by hash (counted, not listed by PUBSUB CHANNELS); past BUS_NAMES names an
 * edge's extra ones are counted in its overflow word only.  A restarted
 * edge clears its region (its subscribers went with its predecessor).
 *
 * All functions are safe from any process of the colo; the reader and
 * table-writer functions use this process's edge only.  A NULL bus makes
 * every call a no-op (bus_publish answers HKV_ENOENT).
 */
#ifndef HKV_BUS_H
#define HKV_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define BUS_EDGES_MAX 256
#define BUS_NAMES 1024           /* channels + patterns one edge's region lists */
#define BUS_NAME_MAX 232         /* bytes of a name kept in full */
#define BUS_F_RAW 1u             /* the message is a RESP value, embedded as-is */

struct bus;

enum bus_rc {
    BUS_OK = 0,                  /* read up to the head */
    BUS_PENDING = 1,             /* stopped at a record being written; call again
                                  * (bus_skip past a deadline: its writer died) */
    BUS_LOST = 2,                /* records were lost; the cursor is at the head */
};

struct bus_msg {
    uint64_t target;             /* 0: every subscriber; else that client id */
    uint32_t flags;              /* BUS_F_* */
    const char *channel;
    size_t clen;
    const char *msg;
    size_t mlen;
};

/* Master, before fork: a bus of ring_bytes (rounded up to a power of two,
 * at least 64 KB) for nedges edges. HKV_OK, HKV_EINVAL, HKV_ENOMEM. */
int bus_create(uint32_t nedges, uint64_t ring_bytes, struct bus **out);
/* A child, once after fork: becomes edge `edge` (its region cleared, its
 * flags down).  HKV_OK or HKV_ECORRUPT (then the edge publishes to its own
 * subscribers only). */
int bus_attach(struct bus *b, uint32_t edge);
void bus_destroy(struct bus **b);

/* The largest channel + message a record may carry. */
size_t bus_max_record(const struct bus *b);
/* Appends a message; signals every armed edge (this one included).
 * HKV_OK, HKV_ETOOBIG (over bus_max_record), HKV_ENOENT (no bus). */
int bus_publish(struct bus *b, uint64_t target, uint32_t flags, const char *ch, size_t clen,
                const char *msg, size_t mlen);

/* Reader side (this process's edge). */
int bus_fd(const struct bus *b);
/* on: this edge holds subscribers.  Returns the head when it arms (the
 * cursor to read from), else 0. */
uint64_t bus_arm(struct bus *b, int on);
void bus_ack(struct bus *b);
/* fn(arg, m) for each record from *cursor to the head (m's pointers valid
 * during the call only); see enum bus_rc. */
typedef void (*bus_fn)(void *arg, const struct bus_msg *m);
int bus_read(struct bus *b, uint64_t *cursor, bus_fn fn, void *arg);
/* Past a record whose writer died: the cursor goes to the head. */
void bus_skip(struct bus *b, uint64_t *cursor);

/* The count table: this edge now has `count` subscribers of the channel
 * (pattern 0) or pattern (1) name[0..n); 0 removes it. */
void bus_count_set(struct bus *b, int pattern, const char *name, size_t n, uint32_t count);
/* Subscribers in the colo of exactly this channel (SUBSCRIBE only). */
uint64_t bus_numsub(struct bus *b, const char *ch, size_t n);
/* Subscriptions in the colo that a message on ch reaches: its channel's
 * subscribers plus, for each pattern matching it, that pattern's. */
uint64_t bus_receivers(struct bus *b, const char *ch, size_t n);
/* Distinct patterns in the colo (Redis's NUMPAT). */
uint64_t bus_numpat(struct bus *b);
/* fn(arg, name, n) once for each distinct channel of the colo with a
 * subscriber (names kept in full only). */
typedef void (*bus_name_fn)(void *arg, const char *name, size_t n);
void bus_channels(struct bus *b, bus_name_fn fn, void *arg);

/* Redis's stringmatchlen (glob: * ? [...] [^...] \\x), case-sensitive. */
int bus_glob_match(const char *pat, size_t plen, const char *s, size_t slen);

/* Test hook: claims a record of len bytes and leaves it half-written. */
void bus_test_abandon(struct bus *b, size_t len);

#endif

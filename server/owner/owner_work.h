/*
 * owner_work.h - what an owner measures so that its agent can decide when
 * to move or split its leaves (../shared/CLUSTER.md §5 "When",
 * server/agent/agent_policy.h): over one window (move-window),
 *
 *   - how busy its event loop was: the loop thread's CPU time over the wall
 *     time (clock_gettime(CLOCK_THREAD_CPUTIME_ID) read by the window's timer,
 *     never per request), per mille;
 *   - its persist backlog (dirty keys) now and a window ago;
 *   - per leaf: requests (reads and writes that reached it), writes, pushes
 *     (a write pushed to n colos counts n), bytes pushed, and misses (the
 *     requests that were not writes: reads the colo caches did not absorb);
 *     the leaf's work is requests + pushes + bytes / OWORK_BYTES_PER_UNIT;
 *   - per half of a leaf (the next hash bit), the same work, so "each half
 *     carries >= 25 %" is decidable;
 *   - the hottest key of each leaf and a lower bound of its work.
 *
 * Counting is per bucket, not per leaf: the top OWORK_BITS bits of a key's
 * placement hash index a fixed array, one increment per event and no map
 * lookup on the request path.  A leaf (bits <= OWORK_BITS) is a contiguous
 * run of buckets, and so is each of its halves (bits < OWORK_BITS); a
 * deeper leaf shares its bucket with its neighbours (its work is an upper
 * bound, its halves unknown: reported 0, 0, and it is moved whole, never
 * split).  The hot keys are one space-saving sketch of OWORK_TOP entries
 * for the whole owner (Metwally et al.): a key with more than 1/OWORK_TOP of
 * the owner's work is always in it, and (count - error) never overstates a
 * key's work, so a refusal is never made on a guess.  The busiest leaf of an
 * owner with L leaves carries >= 1/L of its work; a key with half of it has
 * >= 1/(2L), in the sketch for L <= OWORK_TOP / 2.  Keys are told apart by their
 * placement hash: the keys of one hash tag ({tag}) count as one key, which
 * is right for the policy (they cannot be split apart either); the sketch
 * reports the first of them it saw.
 *
 * The module is plain data (unit-tested alone); owner_work_report.c is its
 * owner half: the hooks on the request path, the window timer, the report.
 */
#ifndef HKV_OWNER_WORK_H
#define HKV_OWNER_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire_hand.h"

#define OWORK_BITS 14
#define OWORK_BUCKETS (1u << OWORK_BITS)
#define OWORK_TOP 32
#define OWORK_KEY_MAX 64           /* a hot key's bytes kept (longer: cut) */
#define OWORK_BYTES_PER_UNIT 4096  /* bytes pushed that count as one request of work */

struct owork;

struct owork *owork_create(void);
void owork_destroy(struct owork **w);
/* Starts a new window: every count to 0. */
void owork_reset(struct owork *w);

/* One request for a key of this owner (read or write), by its placement
 * hash (router_place). */
void owork_request(struct owork *w, uint64_t place, const char *key, size_t klen);
/* A write applied to a key. */
void owork_write(struct owork *w, uint64_t place);
/* A write's result pushed to `colos` colos, `bytes` bytes in all. */
void owork_push(struct owork *w, uint64_t place, const char *key, size_t klen, unsigned colos,
                uint64_t bytes);

/* The window's figures of leaf (start, bits) into out (leaf, work, writes,
 * pushes, misses, bytes, half, and the hottest key the sketch holds inside
 * the leaf: out->key points into w, valid until the next call on w). */
void owork_leaf(const struct owork *w, uint32_t start, uint8_t bits, struct hand_load *out);
/* The whole window's work. */
uint64_t owork_total(const struct owork *w);

#endif

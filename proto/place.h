/*
 * place.h - where a key sits in the hash space: the routing hashes (pure).
 *
 * Two stable hashes of a key, SipHash-2-4 under a fixed public key, the
 * same on every process, host and restart:
 *   identity  place_ident: of the whole key (colo cache, tables);
 *   placement place_hash: of the key's hash tag if it has one, else of the
 *             whole key.  Leaves and owners are chosen by it: a leaf is a
 *             prefix of its top bits (server/core/router.h).
 * Hash tags are Redis Cluster's: when a key holds a '{' followed later by a
 * '}' with at least one byte between them, only the bytes between the first
 * '{' and the first '}' after it are hashed for placement.
 *
 * The position.  Walks in hash order (SCAN, a leaf's rows in SQLite) need a
 * total order of keys that follows placement: place_pos is the top 32 bits
 * of the placement hash, then the top 31 bits of the identity hash as the
 * tie-breaker (hash tags put many keys on one placement hash; the identity
 * orders them), a 63-bit number (it fits an SQLite INTEGER and leaves the
 * top bit of a SCAN cursor free).  A leaf of `bits` bits with prefix p is
 * the range [place_leaf_start(bits, p), place_leaf_end(bits, p)) of
 * positions.  Two different keys may share a position (a 63-bit hash
 * collision): a walk must never stop between keys of one position.  The
 * last position, PLACE_POS_END - 1, is never a key's (the tie-breaker is
 * capped below it), so a cursor there is past every key.
 *
 * These functions live here, below storage and server/core, so that the
 * owner's storage (the SQLite position column, the ledger's position index)
 * and the router compute the same numbers.  No state, no allocation.
 */
#ifndef HKV_PLACE_H
#define HKV_PLACE_H

#include <stddef.h>
#include <stdint.h>

#define PLACE_POS_BITS 63
#define PLACE_POS_END (1ULL << PLACE_POS_BITS) /* one past the last position */
#define PLACE_TIE_BITS 31                      /* of the identity hash */

/* The stable hash of a whole key (router_hash). */
uint64_t place_ident(const char *key, size_t len);
/* The placement hash (router_place). */
uint64_t place_hash(const char *key, size_t len);
/* Where the hash tag of key is: sets *off and *n and returns 1, or returns 0
 * when the key has none.  A system key's (proto/syskey.h) is its target's
 * tag, or its whole target: it is placed where the key it serves is. */
int place_tag(const char *key, size_t len, size_t *off, size_t *n);

/* The position of a key: (place_hash >> 32) << 31 | min(place_ident >> 33,
 * 2^31 - 2).  Always < PLACE_POS_END - 1. */
uint64_t place_pos(const char *key, size_t len);

/* The first position whose placement hash has top 32 bits `place32`. */
static inline uint64_t place_pos_of(uint32_t place32)
{
    return (uint64_t)place32 << PLACE_TIE_BITS;
}
/* The top 32 bits of the placement hash of position pos. */
static inline uint32_t place_pos_place32(uint64_t pos)
{
    return (uint32_t)(pos >> PLACE_TIE_BITS);
}
/* The 64-bit placement hash whose top 32 bits are those of pos (low bits
 * 0): what a router looks a position's leaf up by. */
static inline uint64_t place_pos_hash(uint64_t pos)
{
    return (uint64_t)place_pos_place32(pos) << 32;
}
/* The positions of a leaf (bits 0..32, prefix < 2^bits). */
static inline uint64_t place_leaf_start(uint8_t bits, uint32_t prefix)
{
    return bits == 0 ? 0 : place_pos_of(bits >= 32 ? prefix : prefix << (32 - bits));
}
static inline uint64_t place_leaf_end(uint8_t bits, uint32_t prefix)
{
    return place_leaf_start(bits, prefix) + (1ULL << (32 - (bits > 32 ? 32 : bits) + PLACE_TIE_BITS));
}

#endif

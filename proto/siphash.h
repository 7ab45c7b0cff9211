/*
 * siphash.h - SipHash-2-4, a keyed 64-bit hash (Aumasson and Bernstein, 2012).
 *
 * Used wherever a hash table is keyed by bytes an outsider chooses (the
 * ledger): with a secret 128-bit key nobody can precompute keys that collide,
 * so chains stay short whatever clients send.  Pure function, no state.
 */
#ifndef HKV_SIPHASH_H
#define HKV_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

/* SipHash-2-4 of `len` bytes at `data` under the 16-byte `key`.  The key is
 * read as two little-endian 64-bit words (k0 = bytes 0-7, k1 = bytes 8-15)
 * and the result is the 64-bit value whose little-endian encoding is the
 * paper's 8-byte output, so the paper's appendix vector (key 00..0f, message
 * 00..0e) gives 0xa129ca6149be45e5.  `data` may be NULL when len is 0. */
uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len);

#endif

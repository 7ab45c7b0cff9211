/*
 * syskey.h - the keys hotkvd keeps for itself in the keyspace (pure).
 *
 * An HTTP write's Idempotency-Key record (server/owner/owner_idem.c) is a
 * key of the owner's ledger on purpose: it is then persisted with the write
 * it records (one change list, one commit for a durable class), carried by
 * the leaf's moves, streamed to its followers and expired, by the machinery
 * every key already has, and a crash loses the record only with the write.
 * For that it must sit where its write sits, so its placement (place_tag)
 * and its class (cfg_class_for) are its TARGET key's, not its own bytes':
 *
 *   "\xff" "hkv" "\0" 'i' | u32 BE len(target) | target | u8 len(user) | user | idem
 *
 * Clients never name one: the edge refuses any key that begins with
 * SYSKEY_PREFIX (RESP and HTTP), and the owner leaves them out of SCAN,
 * KEYS, RANDOMKEY, DBSIZE, keyspace events and the colo pushes.
 */
#ifndef HKV_SYSKEY_H
#define HKV_SYSKEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SYSKEY_PREFIX "\xff" "hkv"      /* and its NUL: SYSKEY_PREFIX_LEN bytes */
#define SYSKEY_PREFIX_LEN 5
#define SYSKEY_IDEM_MAX 255             /* an Idempotency-Key's bytes */
#define SYSKEY_USER_MAX 255

static inline int syskey_is(const char *key, size_t len)
{
    return len >= SYSKEY_PREFIX_LEN && (unsigned char)key[0] == 0xff &&
           memcmp(key, SYSKEY_PREFIX, SYSKEY_PREFIX_LEN) == 0;
}

/* The target of a well-formed system key: 1 with key[*off, *off + *n), or 0. */
int syskey_target(const char *key, size_t len, size_t *off, size_t *n);

/* The record key of (target, user, idem) into out (cap bytes): its length,
 * or 0 when it does not fit or user / idem is too long. */
size_t syskey_idem(char *out, size_t cap, const char *target, size_t tlen, const char *user,
                   size_t ulen, const char *idem, size_t ilen);

#endif

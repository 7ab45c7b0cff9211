/*
 * place.c - the routing hashes and a key's position (place.h).
 *
 * The SipHash key is fixed and public on purpose: routing must agree on
 * every process and host, and the position is stored (the SQLite position
 * column) and compared across owners (SCAN cursors).  Changing a byte of it
 * moves every key: it is the format, like the schema.
 */
#include "proto/place.h"

#include <string.h>

#include "proto/siphash.h"
#include "proto/syskey.h"

static const uint8_t ROUTE_KEY[SIPHASH_KEY_LEN] = {'h', 'o', 't', 'k', 'v', 'd', '-', 'r',
                                                    'o', 'u', 't', 'e', '-', 'v', '1', 0};

uint64_t place_ident(const char *key, size_t len)
{
    return siphash24(ROUTE_KEY, key, len);
}

/* Redis Cluster's hash tag of key[0, len). */
static int redis_tag(const char *key, size_t len, size_t *off, size_t *n)
{
    const char *open = len ? memchr(key, '{', len) : NULL;
    if (open == NULL)
        return 0;
    size_t start = (size_t)(open - key) + 1;
    const char *close = memchr(key + start, '}', len - start);
    if (close == NULL || close == key + start)
        return 0;   /* no '}', or "{}": Redis hashes the whole key */
    *off = start;
    *n = (size_t)(close - (key + start));
    return 1;
}

int place_tag(const char *key, size_t len, size_t *off, size_t *n)
{
    size_t toff, tlen;
    if (len && (unsigned char)*key == 0xff && syskey_target(key, len, &toff, &tlen)) {
        /* a system key sits where its target sits (proto/syskey.h) */
        if (redis_tag(key + toff, tlen, off, n))
            *off += toff;
        else
            *off = toff, *n = tlen;
        return 1;
    }
    return redis_tag(key, len, off, n);
}

uint64_t place_hash(const char *key, size_t len)
{
    size_t off, n;
    if (place_tag(key, len, &off, &n))
        return place_ident(key + off, n);
    return place_ident(key, len);
}

uint64_t place_pos(const char *key, size_t len)
{
    uint64_t tie = place_ident(key, len) >> (64 - PLACE_TIE_BITS);
    if (tie > (1ULL << PLACE_TIE_BITS) - 2)
        tie = (1ULL << PLACE_TIE_BITS) - 2; /* PLACE_POS_END - 1 is no key's */
    return place_pos_of((uint32_t)(place_hash(key, len) >> 32)) | tie;
}

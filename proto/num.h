/*
 * num.h - Redis's way of reading an integer from bytes, in one place.
 *
 * Clients see the same rules everywhere Redis applies string2ll: a
 * multibulk count, an INCRBY delta, an EXPIRE time, a stored value that
 * INCR reads, a GETRANGE index.  Four copies of it had grown (RESP parser,
 * ledger, edge arguments, string commands); this is the one.
 */
#ifndef HKV_NUM_H
#define HKV_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Redis's string2ll: an optional '-', then decimal digits without a leading
 * zero ("0" alone is fine), no '+', no spaces, no overflow, at most 20
 * bytes.  1 with *out set, or 0 (not such an integer; *out untouched). */
int num_parse_ll(const char *s, size_t n, int64_t *out);

/* The value of one hexadecimal digit (either case), or -1. */
static inline int num_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif

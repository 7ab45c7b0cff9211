/*
 * bitfield.c - see bitfield.h.  Overflow is decided on the exact sum in 128
 * bits, which states Redis's checkSignedBitfieldOverflow and
 * checkUnsignedBitfieldOverflow (limits compared before and after adding)
 * as one comparison and has no overflow of its own.
 */
#include "proto/bitfield.h"

#include <string.h>

int bf_parse_type(const char *p, size_t len, struct bf_type *t)
{
    len = strnlen(p, len);
    if (len < 2 || len > 3 || (p[0] != 'i' && p[0] != 'u'))
        return -1;
    int bits = 0;
    for (size_t i = 1; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || (i == 1 && p[i] == '0'))
            return -1;
        bits = bits * 10 + (p[i] - '0');
    }
    t->sign = p[0] == 'i';
    if (bits < 1 || bits > (t->sign ? 64 : 63))
        return -1;
    t->bits = bits;
    return 0;
}

int64_t bf_read(const unsigned char *p, size_t len, uint64_t offset, struct bf_type t)
{
    uint64_t v = 0;
    for (int i = 0; i < t.bits; i++, offset++) {
        uint64_t byte = offset >> 3;
        v = (v << 1) | (byte < len ? (uint64_t)((p[byte] >> (7 - (offset & 7))) & 1) : 0);
    }
    if (t.sign && t.bits < 64 && (v >> (t.bits - 1)) & 1)
        v |= UINT64_MAX << t.bits;
    return (int64_t)v;
}

void bf_write(unsigned char *p, uint64_t offset, struct bf_type t, int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = t.bits - 1; i >= 0; i--, offset++) {
        unsigned char m = (unsigned char)(0x80u >> (offset & 7));
        if ((u >> i) & 1)
            p[offset >> 3] |= m;
        else
            p[offset >> 3] &= (unsigned char)~m;
    }
}

int bf_add(struct bf_type t, int64_t value, int64_t incr, enum bf_overflow ow, int64_t *out)
{
    __int128 min, max, sum;
    if (t.sign) {
        max = t.bits == 64 ? INT64_MAX : ((int64_t)1 << (t.bits - 1)) - 1;
        min = -max - 1;
        sum = (__int128)value + incr;
    } else {
        max = (int64_t)(((uint64_t)1 << t.bits) - 1);
        min = 0;
        sum = (__int128)(uint64_t)value + incr;
    }
    if (sum >= min && sum <= max) {
        *out = (int64_t)sum;
        return 0;
    }
    if (ow == BF_SAT) {
        *out = (int64_t)(sum > max ? max : min);
    } else if (ow == BF_WRAP) {
        uint64_t c = (uint64_t)value + (uint64_t)incr; /* modulo 2^64, then the field */
        if (t.bits < 64) {
            uint64_t high = UINT64_MAX << t.bits;
            c = t.sign && (c >> (t.bits - 1)) & 1 ? c | high : c & ~high;
        }
        *out = (int64_t)c;
    }
    return 1;
}

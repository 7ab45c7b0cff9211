/*
 * bitfield.h - the arithmetic of Redis's BITFIELD: a field is 1..64 bits
 * (signed, "i64") or 1..63 (unsigned, "u63") at any bit offset of a byte
 * string, most significant bit first, bits past the end reading as 0.
 * SET and INCRBY compute the new field by one rule, value + incr (SET is
 * its value + 0), and an overflow is handled as OVERFLOW says: WRAP
 * (modulo the field), SAT (clamped to the field's range) or FAIL (nothing
 * written, a nil reply).
 *
 * Pure functions over caller-owned bytes, no allocation: the owner's
 * command (server/owner/owner_cmd_bitfield.c) parses, grows and stores.
 */
#ifndef HKV_BITFIELD_H
#define HKV_BITFIELD_H

#include <stddef.h>
#include <stdint.h>

enum bf_overflow { BF_WRAP, BF_SAT, BF_FAIL };

struct bf_type {
    int sign;                    /* 1: two's complement */
    int bits;                    /* 1..64 signed, 1..63 unsigned */
};

/* Redis's type word ("i8", "u63"; case-sensitive, read as a C string, so
 * bytes after a NUL are ignored).  0, or -1 when it is no valid type. */
int bf_parse_type(const char *p, size_t len, struct bf_type *t);

/* The field at bit offset of p[0..len) as t reads it (signed fields
 * sign-extended; an unsigned field always fits an int64). */
int64_t bf_read(const unsigned char *p, size_t len, uint64_t offset, struct bf_type t);

/* Writes the low t.bits of v at bit offset; p must hold the field. */
void bf_write(unsigned char *p, uint64_t offset, struct bf_type t, int64_t v);

/* value + incr in t: 0 with *out the sum when it fits, else 1 with *out the
 * wrapped (WRAP) or clamped (SAT) result, *out untouched under FAIL.  value
 * is what t read, or SET's argument (any int64; for an unsigned field taken
 * as its 64-bit pattern, so -1 is above every field's maximum). */
int bf_add(struct bf_type t, int64_t value, int64_t incr, enum bf_overflow ow, int64_t *out);

#endif

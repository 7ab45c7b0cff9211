/*
 * strops_bits.c - SETBIT, GETBIT, BITCOUNT and BITPOS; see strops.h.
 *
 * Bit 0 is the most significant bit of the first byte, as in Redis.  BITCOUNT
 * and BITPOS first turn their start/end arguments into one inclusive range
 * of bit positions (BYTE ranges cover whole bytes), then count or search
 * that range with masks on its two edge bytes and whole 64-bit words in
 * between.  Stated that way, Redis's rules are short: BITCOUNT counts the
 * set bits of the range; BITPOS answers the first bit of the range equal to
 * the one asked for, else -1 - except that looking for a 0 without an
 * explicit end treats the string as padded with zeros on the right and
 * answers the bit just after its end.
 */
#include "proto/strops_int.h"

#include <string.h>
#include <strings.h>

#define ERR_OFFSET "ERR bit offset is not an integer or out of range"
#define ERR_BIT    "ERR bit is not an integer or out of range"
#define ERR_BITPOS "ERR The bit argument must be 1 or 0."
#define ERR_ARITY  "ERR wrong number of arguments for 'bitpos' command"

/* Redis's getBitOffsetFromArgument: a non-negative integer whose byte is
 * below proto-max-bulk-len. */
static hkv_status parse_offset(const struct strops_env *env, const struct resp_slice *a,
                               uint64_t *out, struct strops_result *res)
{
    int64_t v;
    if (!strops_parse_ll(a->p, a->len, &v) || v < 0)
        return strops_fail(res, HKV_EINVAL, ERR_OFFSET);
    if ((v >> 3) >= env->max_len)
        return strops_fail(res, HKV_ETOOBIG, ERR_OFFSET);
    *out = (uint64_t)v;
    return HKV_OK;
}

static int bit_at(const unsigned char *p, size_t len, uint64_t pos)
{
    uint64_t byte = pos >> 3;
    return byte < len ? (p[byte] >> (7 - (pos & 7))) & 1 : 0;
}

hkv_status strops_setbit(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *offset, const struct resp_slice *bit,
                         struct strops_result *res)
{
    strops_clear(res);
    uint64_t pos;
    hkv_status s = parse_offset(env, offset, &pos, res);
    if (s != HKV_OK)
        return s;
    int64_t on;
    if (!strops_parse_ll(bit->p, bit->len, &on) || (on & ~1) != 0)
        return strops_fail(res, HKV_EINVAL, ERR_BIT);
    size_t curlen = cur != NULL ? cur->len : 0;
    size_t byte = (size_t)(pos >> 3);
    size_t newlen = byte + 1 > curlen ? byte + 1 : curlen;
    int old = cur != NULL ? bit_at((const unsigned char *)cur->p, curlen, pos) : 0;
    /* Stored when Redis signals a change: created, grown, or flipped. */
    if (cur != NULL && newlen == curlen && old == on)
        return strops_int(res, old);
    buf_reset(env->work);
    if (buf_reserve(env->work, newlen, 0) != HKV_OK)
        return strops_fail(res, HKV_ENOMEM, STROPS_ERR_NOMEM);
    unsigned char *p = (unsigned char *)env->work->data;
    if (curlen > 0)
        memcpy(p, cur->p, curlen);
    memset(p + curlen, 0, newlen - curlen);
    unsigned char m = (unsigned char)(0x80u >> (pos & 7));
    p[byte] = (unsigned char)(on ? p[byte] | m : p[byte] & ~m);
    res->store = 1;
    res->value = (const char *)p;
    res->value_len = newlen;
    return strops_int(res, old);
}

hkv_status strops_getbit(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *offset, struct strops_result *res)
{
    strops_clear(res);
    uint64_t pos;
    hkv_status s = parse_offset(env, offset, &pos, res);
    if (s != HKV_OK)
        return s;
    if (cur == NULL)
        return strops_int(res, 0);
    return strops_int(res, bit_at((const unsigned char *)cur->p, cur->len, pos));
}

static int is_word(const struct resp_slice *a, const char *w)
{
    size_t n = strlen(w);
    return a->len == n && strncasecmp(a->p, w, n) == 0;
}

/* BYTE or BIT (any case): 0 or 1 in *isbit, else a syntax error. */
static hkv_status parse_unit(const struct resp_slice *a, int *isbit, struct strops_result *res)
{
    if (is_word(a, "bit"))
        *isbit = 1;
    else if (is_word(a, "byte"))
        *isbit = 0;
    else
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_SYNTAX);
    return HKV_OK;
}

/* Resolves start/end (bytes, or bits when isbit) over a string of len bytes
 * into an inclusive range of bit positions; 0 when the range is empty. */
static int bit_range(size_t len, int isbit, int64_t start, int64_t end,
                     uint64_t *first, uint64_t *last)
{
    int64_t total = isbit ? (int64_t)len * 8 : (int64_t)len;
    strops_range(total, &start, &end);
    if (start > end)
        return 0;
    *first = isbit ? (uint64_t)start : (uint64_t)start * 8;
    *last = isbit ? (uint64_t)end : (uint64_t)end * 8 + 7;
    return 1;
}

/* The bits of byte b that lie in [first, last] (positions within the string). */
static unsigned edge_mask(uint64_t b, uint64_t first, uint64_t last)
{
    unsigned m = 0xff;
    if (first > b * 8)
        m &= 0xffu >> (first - b * 8);
    if (last < b * 8 + 7)
        m &= (0xff00u >> (last - b * 8 + 1)) & 0xff;
    return m;
}

static int64_t count_bits(const unsigned char *p, uint64_t first, uint64_t last)
{
    uint64_t fb = first >> 3, lb = last >> 3;
    if (fb == lb)
        return __builtin_popcount(p[fb] & edge_mask(fb, first, last));
    int64_t n = __builtin_popcount(p[fb] & edge_mask(fb, first, last)) +
                __builtin_popcount(p[lb] & edge_mask(lb, first, last));
    uint64_t i = fb + 1;
    for (; i + 8 <= lb; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        n += __builtin_popcountll(w);
    }
    for (; i < lb; i++)
        n += __builtin_popcount(p[i]);
    return n;
}

hkv_status strops_bitcount(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *args, int nargs,
                           struct strops_result *res)
{
    (void)env;
    strops_clear(res);
    /* An absent key counts 0 before its arguments are looked at. */
    if (cur == NULL)
        return strops_int(res, 0);
    int64_t start = 0, end = -1;
    int isbit = 0;
    if (nargs == 2 || nargs == 3) {
        if (!strops_parse_ll(args[0].p, args[0].len, &start) ||
            !strops_parse_ll(args[1].p, args[1].len, &end))
            return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
        /* Redis answers this empty range before it reads BYTE|BIT. */
        if (start < 0 && end < 0 && start > end)
            return strops_int(res, 0);
        if (nargs == 3) {
            hkv_status s = parse_unit(&args[2], &isbit, res);
            if (s != HKV_OK)
                return s;
        }
    } else if (nargs != 0) {
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_SYNTAX);
    }
    uint64_t first, last;
    if (!bit_range(cur->len, isbit, start, end, &first, &last))
        return strops_int(res, 0);
    return strops_int(res, count_bits((const unsigned char *)cur->p, first, last));
}

/* The first position in [first, last] whose bit is `bit`, or -1. */
static int64_t find_bit(const unsigned char *p, int bit, uint64_t first, uint64_t last)
{
    unsigned flip = bit ? 0 : 0xff;   /* looking for a 0 = a 1 in the flipped byte */
    uint64_t fb = first >> 3, lb = last >> 3;
    unsigned v = (p[fb] ^ flip) & edge_mask(fb, first, last);
    if (v != 0)
        return (int64_t)(fb * 8) + (__builtin_clz(v) - 24);
    if (fb == lb)
        return -1;
    /* Whole bytes between the edges: skip words with nothing to find. */
    uint64_t b = fb + 1, skip = bit ? 0 : UINT64_MAX;
    while (b + 8 <= lb) {
        uint64_t w;
        memcpy(&w, p + b, 8);
        if (w != skip)
            break;
        b += 8;
    }
    for (; b < lb; b++) {
        v = p[b] ^ flip;
        if (v != 0)
            return (int64_t)(b * 8) + (__builtin_clz(v) - 24);
    }
    v = (p[lb] ^ flip) & edge_mask(lb, first, last);
    if (v != 0)
        return (int64_t)(lb * 8) + (__builtin_clz(v) - 24);
    return -1;
}

hkv_status strops_bitpos(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *args, int nargs,
                         struct strops_result *res)
{
    (void)env;
    strops_clear(res);
    if (nargs < 1)
        return strops_fail(res, HKV_EINVAL, ERR_ARITY);
    int64_t bit;
    if (!strops_parse_ll(args[0].p, args[0].len, &bit))
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
    if (bit != 0 && bit != 1)
        return strops_fail(res, HKV_EINVAL, ERR_BITPOS);
    /* An absent key is an endless run of zeros, whatever the range. */
    if (cur == NULL)
        return strops_int(res, bit ? -1 : 0);
    int64_t start = 0, end = -1;
    int isbit = 0, end_given = 0;
    if (nargs >= 2 && nargs <= 4) {
        if (!strops_parse_ll(args[1].p, args[1].len, &start))
            return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
        /* Redis reads BYTE|BIT before end. */
        if (nargs == 4) {
            hkv_status s = parse_unit(&args[3], &isbit, res);
            if (s != HKV_OK)
                return s;
        }
        if (nargs >= 3) {
            if (!strops_parse_ll(args[2].p, args[2].len, &end))
                return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
            end_given = 1;
        }
    } else if (nargs != 1) {
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_SYNTAX);
    }
    uint64_t first, last;
    if (!bit_range(cur->len, isbit, start, end, &first, &last))
        return strops_int(res, -1);
    int64_t pos = find_bit((const unsigned char *)cur->p, (int)bit, first, last);
    if (pos < 0 && bit == 0 && !end_given)
        pos = (int64_t)last + 1;
    return strops_int(res, pos);
}

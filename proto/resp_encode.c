/*
 * resp_encode.c - RESP2/RESP3 reply encoders, see resp.h.
 *
 * Every encoder reserves the bytes it needs once and writes them directly at
 * the buffer's tail; integers are formatted by hand (two digits per step from
 * a table) because `:n` and the `$n`/`*n` headers are on every reply.  The
 * RESP2 forms of RESP3 types are the ones Redis 7.0 emits: a double becomes a
 * bulk string printed with %.17g, a map a flat array of 2n elements, a
 * boolean an integer, a verbatim string a plain bulk.
 */
#include "proto/resp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INT_CHARS 21    /* "-9223372036854775808" plus one */

/* buf_reserve without the call when the room is already there. */
static inline hkv_status reserve(struct hkv_buf *b, size_t n)
{
    return buf_room(b) >= n ? HKV_OK : buf_reserve(b, n, 0);
}

static const char digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Writes v in decimal at dst (room for INT_CHARS); returns the length. */
static size_t fmt_i64(char *dst, int64_t v)
{
    char tmp[INT_CHARS];
    char *e = tmp + sizeof(tmp), *s = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned i = (unsigned)(u % 100) * 2;
        u /= 100;
        *--s = digits2[i + 1];
        *--s = digits2[i];
    }
    if (u >= 10) {
        unsigned i = (unsigned)u * 2;
        *--s = digits2[i + 1];
        *--s = digits2[i];
    } else {
        *--s = (char)('0' + u);
    }
    if (v < 0)
        *--s = '-';
    size_t n = (size_t)(e - s);
    memcpy(dst, s, n);
    return n;
}

/* `<type><v>\r\n`: integers and every aggregate/bulk header. */
static hkv_status add_header(struct hkv_buf *b, char type, int64_t v)
{
    hkv_status s = reserve(b, 1 + INT_CHARS + 2);
    if (s != HKV_OK)
        return s;
    char *t = buf_tail(b);
    t[0] = type;
    size_t n = 1 + fmt_i64(t + 1, v);
    t[n] = '\r';
    t[n + 1] = '\n';
    b->len += n + 2;
    return HKV_OK;
}

/* `<type><payload>\r\n` with the payload copied verbatim. */
static hkv_status add_line(struct hkv_buf *b, char type, const char *p, size_t n)
{
    hkv_status s = reserve(b, n + 3);
    if (s != HKV_OK)
        return s;
    char *t = buf_tail(b);
    t[0] = type;
    memcpy(t + 1, p, n);
    t[n + 1] = '\r';
    t[n + 2] = '\n';
    b->len += n + 3;
    return HKV_OK;
}

/* `$n\r\n<prefix><p>\r\n` where n counts prefix and p. */
static hkv_status add_bulk_prefixed(struct hkv_buf *b, char type, const char *prefix,
                                    size_t plen, const void *p, size_t n)
{
    hkv_status s = reserve(b, 1 + INT_CHARS + 2 + plen + n + 2);
    if (s != HKV_OK)
        return s;
    char *t = buf_tail(b);
    t[0] = type;
    size_t o = 1 + fmt_i64(t + 1, (int64_t)(plen + n));
    t[o++] = '\r';
    t[o++] = '\n';
    if (plen > 0)
        memcpy(t + o, prefix, plen);
    o += plen;
    if (n > 0)
        memcpy(t + o, p, n);
    o += n;
    t[o++] = '\r';
    t[o++] = '\n';
    b->len += o;
    return HKV_OK;
}

static hkv_status add_raw(struct hkv_buf *b, const char *s, size_t n)
{
    return buf_append(b, s, n);
}

hkv_status resp_add_simple(struct hkv_buf *b, const char *s)
{
    return add_line(b, '+', s, strlen(s));
}

/* Replaces CR and LF in t[0..n) by spaces: an error line must stay a line. */
static void flatten(char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i] == '\r' || t[i] == '\n')
            t[i] = ' ';
}

hkv_status resp_add_error(struct hkv_buf *b, const char *s)
{
    size_t n = strlen(s);
    hkv_status st = add_line(b, '-', s, n);
    if (st == HKV_OK)   /* buf_reserve may have compacted: index from the end */
        flatten(b->data + b->len - n - 2, n);
    return st;
}

/* As Redis's addReplyErrorFormat: CR and LF at either end of the formatted
 * text are trimmed, those inside become spaces (so an argument quoted last,
 * "Unsupported option x\r\n", loses its line ending rather than showing it
 * as blanks). */
hkv_status resp_add_errorf(struct hkv_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return HKV_EINVAL;
    char *t = small;
    if ((size_t)n >= sizeof(small)) {
        t = malloc((size_t)n + 1);
        if (t == NULL)
            return HKV_ENOMEM;
        va_start(ap, fmt);
        vsnprintf(t, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    size_t from = 0, to = (size_t)n;
    while (from < to && (t[from] == '\r' || t[from] == '\n'))
        from++;
    while (to > from && (t[to - 1] == '\r' || t[to - 1] == '\n'))
        to--;
    hkv_status st = add_line(b, '-', t + from, to - from);
    if (st == HKV_OK) /* buf_reserve may have compacted: index from the end */
        flatten(b->data + b->len - (to - from) - 2, to - from);
    if (t != small)
        free(t);
    return st;
}

hkv_status resp_add_int(struct hkv_buf *b, int64_t v)
{
    return add_header(b, ':', v);
}

hkv_status resp_add_bulk(struct hkv_buf *b, const void *p, size_t n)
{
    return add_bulk_prefixed(b, '$', NULL, 0, p, n);
}

hkv_status resp_add_bulk_str(struct hkv_buf *b, const char *s)
{
    return add_bulk_prefixed(b, '$', NULL, 0, s, strlen(s));
}

hkv_status resp_add_null(struct hkv_buf *b, int proto)
{
    return proto >= 3 ? add_raw(b, "_\r\n", 3) : add_raw(b, "$-1\r\n", 5);
}

hkv_status resp_add_null_array(struct hkv_buf *b, int proto)
{
    return proto >= 3 ? add_raw(b, "_\r\n", 3) : add_raw(b, "*-1\r\n", 5);
}

hkv_status resp_add_array(struct hkv_buf *b, int64_t n)
{
    return add_header(b, '*', n);
}

hkv_status resp_add_map(struct hkv_buf *b, int proto, int64_t pairs)
{
    return proto >= 3 ? add_header(b, '%', pairs) : add_header(b, '*', pairs * 2);
}

hkv_status resp_add_set(struct hkv_buf *b, int proto, int64_t n)
{
    return add_header(b, proto >= 3 ? '~' : '*', n);
}

hkv_status resp_add_attr(struct hkv_buf *b, int64_t pairs)
{
    return add_header(b, '|', pairs);
}

hkv_status resp_add_double(struct hkv_buf *b, int proto, double v)
{
    char d[64];
    int n;
    if (isinf(v))
        n = snprintf(d, sizeof(d), "%s", v > 0 ? "inf" : "-inf");
    else if (isnan(v))
        n = snprintf(d, sizeof(d), "nan");
    else
        n = snprintf(d, sizeof(d), "%.17g", v);
    if (n < 0 || (size_t)n >= sizeof(d))
        return HKV_EINVAL;
    if (proto >= 3)
        return add_line(b, ',', d, (size_t)n);
    return add_bulk_prefixed(b, '$', NULL, 0, d, (size_t)n);
}

hkv_status resp_add_bool(struct hkv_buf *b, int proto, int v)
{
    if (proto >= 3)
        return add_raw(b, v ? "#t\r\n" : "#f\r\n", 4);
    return add_raw(b, v ? ":1\r\n" : ":0\r\n", 4);
}

hkv_status resp_add_verbatim(struct hkv_buf *b, int proto, const void *p, size_t n)
{
    if (proto >= 3)
        return add_bulk_prefixed(b, '=', "txt:", 4, p, n);
    return add_bulk_prefixed(b, '$', NULL, 0, p, n);
}

/*
 * resp_reply.c - a RESP2/RESP3 reply parser for tests, tools and benchmarks.
 *
 * The server never reads replies, so this favours clarity over speed: a
 * recursive descent over one buffer that must hold the whole reply (an
 * incomplete one is HKV_EAGAIN and is parsed again from the start later).
 * Strings point into the caller's buffer.  Two things keep hostile input
 * cheap: nesting is bounded (RESP_REPLY_MAX_DEPTH), and an aggregate's element
 * array grows as elements actually parse instead of being sized from the
 * declared count; a count that the remaining bytes could not hold (every
 * element takes at least 3 bytes, "_\r\n") is HKV_EAGAIN at once.
 * Consecutive attributes are read in a loop, not by recursion, so a long run
 * of `|0\r\n` cannot exhaust the stack.
 */
#include "proto/resp.h"

#include <stdlib.h>
#include <string.h>

struct reader {
    const char *buf;
    size_t len;
    size_t pos;
};

static int parse_value(struct reader *r, struct resp_value *v, int depth);

/* Frees what v owns (elements, attributes), not v itself. */
static void free_contents(struct resp_value *v)
{
    for (size_t i = 0; i < v->n && v->elems != NULL; i++)
        free_contents(&v->elems[i]);
    free(v->elems);
    v->elems = NULL;
    v->n = 0;
    struct resp_value *a = v->attr;
    while (a != NULL) {
        struct resp_value *next = a->attr;
        a->attr = NULL;
        free_contents(a);
        free(a);
        a = next;
    }
    v->attr = NULL;
}

void resp_value_free(struct resp_value **v)
{
    if (v == NULL || *v == NULL)
        return;
    free_contents(*v);
    free(*v);
    *v = NULL;
}

/* Reads the rest of a line after the type byte, without the CRLF. */
static int read_line(struct reader *r, const char **s, size_t *n)
{
    const char *cr = memchr(r->buf + r->pos, '\r', r->len - r->pos);
    if (cr == NULL)
        return HKV_EAGAIN;
    size_t i = (size_t)(cr - r->buf);
    if (i + 1 >= r->len)
        return HKV_EAGAIN;
    if (r->buf[i + 1] != '\n')
        return HKV_EPROTO;
    *s = r->buf + r->pos;
    *n = i - r->pos;
    r->pos = i + 2;
    return HKV_OK;
}

static int to_i64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return HKV_EPROTO;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return HKV_EPROTO;
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return HKV_EPROTO;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return HKV_OK;
}

static int read_int_line(struct reader *r, int64_t *out)
{
    const char *s;
    size_t n;
    int rc = read_line(r, &s, &n);
    return rc != HKV_OK ? rc : to_i64(s, n, out);
}

static int parse_double(const char *s, size_t n, double *out)
{
    char tmp[128];
    if (n == 0 || n >= sizeof(tmp))
        return HKV_EPROTO;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    *out = strtod(tmp, &end);
    return end == tmp + n ? HKV_OK : HKV_EPROTO;
}

/* `$` `!` `=`: a length line, the bytes, CRLF. */
static int parse_blob(struct reader *r, struct resp_value *v, char type)
{
    int64_t n;
    int rc = read_int_line(r, &n);
    if (rc != HKV_OK)
        return rc;
    if (n == -1 && type == '$') {
        v->type = RESP_NULL;
        return HKV_OK;
    }
    if (n < 0)
        return HKV_EPROTO;
    if ((uint64_t)n > r->len - r->pos || r->len - r->pos - (size_t)n < 2)
        return HKV_EAGAIN;
    const char *p = r->buf + r->pos;
    if (p[n] != '\r' || p[n + 1] != '\n')
        return HKV_EPROTO;
    r->pos += (size_t)n + 2;
    v->str = p;
    v->len = (size_t)n;
    if (type == '$') {
        v->type = RESP_BULK;
    } else if (type == '!') {
        v->type = RESP_ERROR;
    } else {
        if (n < 4 || p[3] != ':')
            return HKV_EPROTO;
        v->type = RESP_VERBATIM;
        v->str = p + 4;
        v->len = (size_t)n - 4;
    }
    return HKV_OK;
}

/* Parses `count` elements into v->elems (v->n counts those parsed). */
static int parse_elems(struct reader *r, struct resp_value *v, uint64_t count, int depth)
{
    if (depth + 1 > RESP_REPLY_MAX_DEPTH)
        return HKV_EPROTO;
    if (count > (r->len - r->pos) / 3)
        return HKV_EAGAIN;
    size_t cap = 0;
    while (v->n < count) {
        if (v->n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            if (ncap > count)
                ncap = (size_t)count;
            struct resp_value *e = realloc(v->elems, ncap * sizeof(*e));
            if (e == NULL)
                return HKV_ENOMEM;
            v->elems = e;
            cap = ncap;
        }
        struct resp_value *e = &v->elems[v->n];
        memset(e, 0, sizeof(*e));
        int rc = parse_value(r, e, depth + 1);
        if (rc != HKV_OK)
            return rc;
        v->n++;
    }
    return HKV_OK;
}

/* `*` `~` `>` `%` `|`: a count line, then the elements. */
static int parse_aggregate(struct reader *r, struct resp_value *v, char type, int depth)
{
    int64_t n;
    int rc = read_int_line(r, &n);
    if (rc != HKV_OK)
        return rc;
    if (n == -1 && type == '*') {
        v->type = RESP_NULL;
        return HKV_OK;
    }
    if (n < 0)
        return HKV_EPROTO;
    uint64_t count = (uint64_t)n;
    switch (type) {
    case '*': v->type = RESP_ARRAY; break;
    case '~': v->type = RESP_SET; break;
    case '>': v->type = RESP_PUSH; break;
    case '%': v->type = RESP_MAP; count *= 2; break;
    default: v->type = RESP_ATTR; count *= 2; break;
    }
    return parse_elems(r, v, count, depth);
}

/* Parses one value with no attribute into v (zeroed by the caller).  On
 * failure v owns nothing the caller must free except through free_contents. */
static int parse_plain(struct reader *r, struct resp_value *v, int depth)
{
    if (r->pos >= r->len)
        return HKV_EAGAIN;
    char type = r->buf[r->pos++];
    const char *s;
    size_t n;
    int rc;

    switch (type) {
    case '+':
    case '-':
    case '(':
        rc = read_line(r, &s, &n);
        if (rc != HKV_OK)
            return rc;
        v->type = type == '+' ? RESP_SIMPLE : type == '-' ? RESP_ERROR : RESP_BIGNUM;
        v->str = s;
        v->len = n;
        return HKV_OK;
    case ':':
        v->type = RESP_INT;
        return read_int_line(r, &v->integer);
    case ',':
        rc = read_line(r, &s, &n);
        if (rc != HKV_OK)
            return rc;
        v->type = RESP_DOUBLE;
        return parse_double(s, n, &v->dbl);
    case '#':
        rc = read_line(r, &s, &n);
        if (rc != HKV_OK)
            return rc;
        if (n != 1 || (s[0] != 't' && s[0] != 'f'))
            return HKV_EPROTO;
        v->type = RESP_BOOL;
        v->integer = s[0] == 't';
        return HKV_OK;
    case '_':
        rc = read_line(r, &s, &n);
        if (rc != HKV_OK)
            return rc;
        v->type = RESP_NULL;
        return n == 0 ? HKV_OK : HKV_EPROTO;
    case '$':
    case '!':
    case '=':
        return parse_blob(r, v, type);
    case '*':
    case '~':
    case '>':
    case '%':
        return parse_aggregate(r, v, type, depth);
    default:
        return HKV_EPROTO;
    }
}

/* Parses one value, with the attributes that precede it, into v (zeroed).
 * On failure everything v came to own is freed. */
static int parse_value(struct reader *r, struct resp_value *v, int depth)
{
    struct resp_value *attrs = NULL;
    int rc = HKV_OK;

    while (r->pos < r->len && r->buf[r->pos] == '|') {
        struct resp_value *a = calloc(1, sizeof(*a));
        if (a == NULL) {
            rc = HKV_ENOMEM;
            goto fail;
        }
        r->pos++;
        rc = parse_aggregate(r, a, '|', depth);
        a->attr = attrs;    /* nearest attribute first */
        attrs = a;
        if (rc != HKV_OK)
            goto fail;
    }
    rc = parse_plain(r, v, depth);
    v->attr = attrs;
    if (rc != HKV_OK) {
        free_contents(v);
        return rc;
    }
    return HKV_OK;

fail:
    v->attr = attrs;
    free_contents(v);
    return rc;
}

int resp_parse_reply(const char *buf, size_t len, size_t *consumed, struct resp_value **out)
{
    *out = NULL;
    *consumed = 0;
    struct resp_value *v = calloc(1, sizeof(*v));
    if (v == NULL)
        return HKV_ENOMEM;
    struct reader r = { buf, len, 0 };
    int rc = parse_value(&r, v, 0);
    if (rc != HKV_OK) {
        resp_value_free(&v);
        return rc;
    }
    *consumed = r.pos;
    *out = v;
    return HKV_OK;
}

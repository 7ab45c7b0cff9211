/*
 * strops.c - the byte-string commands (APPEND, SETRANGE, GETRANGE,
 * INCRBYFLOAT), the integer parser they share with the bit commands, and the
 * reply encoder; see strops.h.  Bits are in strops_bits.c, LCS in
 * strops_lcs.c.
 *
 * A write builds the whole new value in env->work (the ledger stores whole
 * values), except APPEND to an absent key, whose new value is the argument
 * itself.  Reads answer with slices of the current value and never copy.
 * INCRBYFLOAT computes in long double and prints with %.17Lf, trailing
 * zeros removed, as Redis's ld2string(LD_STR_HUMAN) does: the stored string
 * is that text, so a later GET and the reply agree byte for byte.
 */
#include "proto/strops_int.h"
#include "proto/num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's MAX_LONG_DOUBLE_CHARS: the longest float text accepted, and room
 * for any finite long double printed with %.17Lf (LDBL_MAX has 4933 digits). */
#define LD_CHARS (5 * 1024)

#define ERR_OFFSET  "ERR offset is out of range"
#define ERR_TOOLONG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
#define ERR_FLOAT   "ERR value is not a valid float"
#define ERR_NANINF  "ERR increment would produce NaN or Infinity"

int strops_parse_ll(const char *s, size_t n, int64_t *out)
{
    return num_parse_ll(s, n, out);
}

/* Would a value of `len` bytes with `add` more pass proto-max-bulk-len?
 * (Redis's checkStringLength, overflow included.) */
static int too_long(const struct strops_env *env, uint64_t len, uint64_t add)
{
    uint64_t total = len + add;
    return total < len || total > (uint64_t)env->max_len;
}

/* Makes room for an n-byte value at the start of env->work. */
static hkv_status work_take(const struct strops_env *env, size_t n, char **out)
{
    buf_reset(env->work);
    hkv_status s = buf_reserve(env->work, n > 0 ? n : 1, 0);
    if (s != HKV_OK)
        return s;
    *out = env->work->data;
    return HKV_OK;
}

static void stored(struct strops_result *res, const char *p, size_t n)
{
    res->store = 1;
    res->value = n > 0 ? p : "";
    res->value_len = n;
}

hkv_status strops_append(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *value, struct strops_result *res)
{
    strops_clear(res);
    if (cur == NULL) {
        /* Redis adds the argument as the value, unchecked: it came within
         * the protocol's own bulk limit. */
        stored(res, value->p, value->len);
        return strops_int(res, (int64_t)value->len);
    }
    if (too_long(env, cur->len, value->len))
        return strops_fail(res, HKV_ETOOBIG, ERR_TOOLONG);
    char *p;
    if (work_take(env, cur->len + value->len, &p) != HKV_OK)
        return strops_fail(res, HKV_ENOMEM, STROPS_ERR_NOMEM);
    if (cur->len > 0)
        memcpy(p, cur->p, cur->len);
    if (value->len > 0)
        memcpy(p + cur->len, value->p, value->len);
    stored(res, p, cur->len + value->len);
    return strops_int(res, (int64_t)res->value_len);
}

hkv_status strops_setrange(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *offset, const struct resp_slice *value,
                           struct strops_result *res)
{
    strops_clear(res);
    int64_t off;
    if (!strops_parse_ll(offset->p, offset->len, &off))
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
    if (off < 0)
        return strops_fail(res, HKV_EINVAL, ERR_OFFSET);
    /* Setting nothing changes nothing, whatever the offset. */
    if (value->len == 0)
        return strops_int(res, cur != NULL ? (int64_t)cur->len : 0);
    if (too_long(env, (uint64_t)off, value->len))
        return strops_fail(res, HKV_ETOOBIG, ERR_TOOLONG);
    size_t curlen = cur != NULL ? cur->len : 0;
    size_t end = (size_t)off + value->len;
    size_t newlen = end > curlen ? end : curlen;
    char *p;
    if (work_take(env, newlen, &p) != HKV_OK)
        return strops_fail(res, HKV_ENOMEM, STROPS_ERR_NOMEM);
    if (curlen > 0)
        memcpy(p, cur->p, curlen);
    if ((size_t)off > curlen)
        memset(p + curlen, 0, (size_t)off - curlen);
    memcpy(p + off, value->p, value->len);
    stored(res, p, newlen);
    return strops_int(res, (int64_t)newlen);
}

hkv_status strops_getrange(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *start, const struct resp_slice *end,
                           struct strops_result *res)
{
    (void)env;
    strops_clear(res);
    int64_t s, e;
    if (!strops_parse_ll(start->p, start->len, &s) || !strops_parse_ll(end->p, end->len, &e))
        return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
    if (cur == NULL || (s < 0 && e < 0 && s > e))
        return strops_bulk(res, "", 0);
    strops_range((int64_t)cur->len, &s, &e);
    if (s > e)
        return strops_bulk(res, "", 0);
    return strops_bulk(res, cur->p + s, (size_t)(e - s + 1));
}

/* Redis's string2ld: the whole slice must be one strtold number with no
 * leading space; NaN, overflow and underflow to zero are refused (an
 * infinity written as "inf" is not: the sum then fails as NaN/Infinity). */
static int parse_ld(const char *s, size_t n, long double *out)
{
    char buf[LD_CHARS];
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (isspace((unsigned char)buf[0]))
        return 0;
    char *eptr;
    errno = 0;
    long double v = strtold(buf, &eptr);
    if (*eptr != '\0' || (size_t)(eptr - buf) != n)
        return 0;
    if (errno == ERANGE && (isinf(v) || fpclassify(v) == FP_ZERO))
        return 0;
    if (errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

hkv_status strops_incrbyfloat(const struct strops_env *env, const struct resp_slice *cur,
                              const struct resp_slice *incr, struct strops_result *res)
{
    strops_clear(res);
    long double v = 0, d;
    if ((cur != NULL && !parse_ld(cur->p, cur->len, &v)) || !parse_ld(incr->p, incr->len, &d))
        return strops_fail(res, HKV_EINVAL, ERR_FLOAT);
    v += d;
    if (isnan(v) || isinf(v))
        return strops_fail(res, HKV_EINVAL, ERR_NANINF);
    char *p;
    if (work_take(env, LD_CHARS, &p) != HKV_OK)
        return strops_fail(res, HKV_ENOMEM, STROPS_ERR_NOMEM);
    int w = snprintf(p, LD_CHARS, "%.17Lf", v);
    if (w < 0 || w >= LD_CHARS)     /* cannot happen for a finite value */
        return strops_fail(res, HKV_EINVAL, ERR_NANINF);
    size_t n = (size_t)w;
    /* %.17Lf always prints a '.': drop the zeros after it, then the '.'. */
    while (p[n - 1] == '0')
        n--;
    if (p[n - 1] == '.')
        n--;
    if (n == 2 && p[0] == '-' && p[1] == '0') {  /* a negative that rounds to 0 */
        p[0] = '0';
        n = 1;
    }
    stored(res, p, n);
    return strops_bulk(res, p, n);
}

hkv_status strops_reply_encode(struct hkv_buf *out, int proto, const struct strops_reply *r)
{
    hkv_status s;
    switch (r->type) {
    case STROPS_R_INT:
        return resp_add_int(out, r->integer);
    case STROPS_R_BULK:
        return resp_add_bulk(out, r->str, r->len);
    case STROPS_R_ERROR:
        return resp_add_error(out, r->str);
    case STROPS_R_LCS_IDX:
        break;
    }
    if ((s = resp_add_map(out, proto, 2)) != HKV_OK ||
        (s = resp_add_bulk_str(out, "matches")) != HKV_OK ||
        (s = resp_add_array(out, (int64_t)r->nmatches)) != HKV_OK)
        return s;
    for (size_t i = 0; i < r->nmatches; i++) {
        const struct strops_match *m = &r->matches[i];
        if ((s = resp_add_array(out, r->withmatchlen ? 3 : 2)) != HKV_OK ||
            (s = resp_add_array(out, 2)) != HKV_OK ||
            (s = resp_add_int(out, m->a_start)) != HKV_OK ||
            (s = resp_add_int(out, m->a_end)) != HKV_OK ||
            (s = resp_add_array(out, 2)) != HKV_OK ||
            (s = resp_add_int(out, m->b_start)) != HKV_OK ||
            (s = resp_add_int(out, m->b_end)) != HKV_OK)
            return s;
        if (r->withmatchlen && (s = resp_add_int(out, m->len)) != HKV_OK)
            return s;
    }
    if ((s = resp_add_bulk_str(out, "len")) != HKV_OK)
        return s;
    return resp_add_int(out, r->integer);
}

/*
 * http_req_util.c - what the front door asks of a parsed request: decoding a
 * path segment, the query parameters of a long poll, If-None-Match, Basic
 * credentials; see http_req.h.
 *
 * These run on a request the parser accepted, so field lines are known to be
 * well formed; they still refuse anything a client controls (an escape, a
 * tag, base64) strictly, and write only into the caller's buffer.  Base64 is
 * decoded here by a small private decoder rather than a shared module, so
 * this library stands alone (proto/ depends on nothing above it) and takes
 * the strict form only: a credential has one spelling.
 */
#include "http_req.h"

#include <string.h>

#include "proto/num.h"

int http_pct_decode(const char *in, size_t n, char *out, size_t cap, size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%') {
            if (n - i < 3)
                return HKV_EPROTO;
            int h = num_hexval((unsigned char)in[i + 1]),
                l = num_hexval((unsigned char)in[i + 2]);
            if (h < 0 || l < 0)
                return HKV_EPROTO;
            c = (unsigned char)(h << 4 | l);
            i += 2;
        }
        if (o == cap)
            return HKV_ETOOBIG;
        out[o++] = (char)c;
    }
    *outlen = o;
    return HKV_OK;
}

int http_query_get(struct http_slice query, const char *name, struct http_slice *value)
{
    if (query.p == NULL)
        return HKV_ENOENT;
    size_t nn = strlen(name), i = 0;
    int found = 0;
    while (i <= query.len) {
        size_t j = i;
        while (j < query.len && query.p[j] != '&')
            j++;
        size_t eq = i;
        while (eq < j && query.p[eq] != '=')
            eq++;
        if (eq - i == nn && memcmp(query.p + i, name, nn) == 0 && j > i) {
            if (found)
                return HKV_EPROTO;
            found = 1;
            value->p = eq < j ? query.p + eq + 1 : query.p + j;
            value->len = eq < j ? j - eq - 1 : 0;
        }
        i = j + 1;
    }
    return found ? HKV_OK : HKV_ENOENT;
}

int http_parse_u64(struct http_slice s, uint64_t *out)
{
    if (s.p == NULL || s.len == 0 || s.len > 20)
        return HKV_EPROTO;
    uint64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return HKV_EPROTO;
        uint64_t d = (uint64_t)(s.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return HKV_EPROTO;
        v = v * 10 + d;
    }
    *out = v;
    return HKV_OK;
}

int http_parse_wait(struct http_slice s, uint64_t *ms)
{
    if (s.p == NULL)
        return HKV_EPROTO;
    size_t d = 0;
    while (d < s.len && s.p[d] >= '0' && s.p[d] <= '9')
        d++;
    struct http_slice num = { s.p, d };
    uint64_t v;
    if (http_parse_u64(num, &v) != HKV_OK)
        return HKV_EPROTO;
    const char *u = s.p + d;
    size_t un = s.len - d;
    uint64_t mul;
    if (un == 0 || (un == 1 && u[0] == 's'))
        mul = 1000;
    else if (un == 2 && u[0] == 'm' && u[1] == 's')
        mul = 1;
    else if (un == 1 && u[0] == 'm')
        mul = 60000;
    else if (un == 1 && u[0] == 'h')
        mul = 3600000;
    else
        return HKV_EPROTO;
    const uint64_t lim = 1ULL << 53;
    if (v > lim / mul)
        return HKV_EPROTO;
    *ms = v * mul;
    return HKV_OK;
}

int http_req_field_next(const struct http_req *r, size_t *pos, struct http_slice *name,
                        struct http_slice *value)
{
    const char *h = r->headers.p;
    size_t n = r->headers.len, i = *pos;
    if (h == NULL || i >= n)
        return HKV_ENOENT;
    size_t end = i;
    while (end < n && h[end] != '\r')
        end++;
    size_t colon = i;
    while (colon < end && h[colon] != ':')
        colon++;
    size_t a = colon + 1 < end ? colon + 1 : end, b = end;
    while (a < b && (h[a] == ' ' || h[a] == '\t'))
        a++;
    while (b > a && (h[b - 1] == ' ' || h[b - 1] == '\t'))
        b--;
    name->p = h + i;
    name->len = colon - i;
    value->p = h + a;
    value->len = b - a;
    *pos = end + 2 <= n ? end + 2 : n;
    return HKV_OK;
}

static int ieq(const char *s, size_t n, const char *w)
{
    if (n != strlen(w))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)w[i])
            return 0;
    }
    return 1;
}

/* An entity tag's opaque part ("..." with its quotes), W/ dropped; -1 when
 * t[0..n) is not an entity-tag (RFC 9110 8.8.3). */
static int opaque(const char *t, size_t n, const char **o, size_t *on)
{
    if (n >= 2 && t[0] == 'W' && t[1] == '/') {
        t += 2;
        n -= 2;
    }
    if (n < 2 || t[0] != '"' || t[n - 1] != '"')
        return -1;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '"' || c < 0x21 || c == 0x7f)
            return -1;
    }
    *o = t;
    *on = n;
    return 0;
}

int http_req_inm_match(const struct http_req *r, const char *etag, size_t len)
{
    const char *want;
    size_t wn;
    if (opaque(etag, len, &want, &wn) != 0)
        return 0;
    int match = 0;
    size_t pos = 0;
    struct http_slice name, val;
    while (http_req_field_next(r, &pos, &name, &val) == HKV_OK) {
        if (!ieq(name.p, name.len, "if-none-match"))
            continue;
        /* Elements are split at commas outside quotes: etagc excludes '"'
         * but allows ',', so a tag may hold a comma. */
        size_t i = 0;
        while (i < val.len) {
            while (i < val.len && (val.p[i] == ' ' || val.p[i] == '\t' || val.p[i] == ','))
                i++;
            if (i == val.len)
                break;
            size_t j = i;
            if (val.p[j] == '*') {
                j++;
            } else {
                if (j + 1 < val.len && val.p[j] == 'W' && val.p[j + 1] == '/')
                    j += 2;
                if (j >= val.len || val.p[j] != '"')
                    return 0;
                j++;
                while (j < val.len && val.p[j] != '"')
                    j++;
                if (j == val.len)
                    return 0;
                j++;
            }
            const char *o;
            size_t on;
            if (j - i == 1 && val.p[i] == '*')
                match = 1;
            else if (opaque(val.p + i, j - i, &o, &on) != 0)
                return 0;
            else if (on == wn && memcmp(o, want, wn) == 0)
                match = 1;
            while (j < val.len && (val.p[j] == ' ' || val.p[j] == '\t'))
                j++;
            if (j < val.len && val.p[j] != ',')
                return 0;
            i = j;
        }
    }
    return match;
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict base64 (RFC 4648 4) of in[0..n) into out[0..cap). */
static int b64_decode(const char *in, size_t n, char *out, size_t cap, size_t *outlen)
{
    if (n % 4 != 0)
        return HKV_EPROTO;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)in[i + k];
            if (c == '=' && last && k >= 2) {
                pad++;
                v[k] = 0;
                continue;
            }
            if (pad > 0)
                return HKV_EPROTO;            /* data after '=' */
            v[k] = b64val(c);
            if (v[k] < 0)
                return HKV_EPROTO;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if ((pad == 1 && (w & 0xff) != 0) || (pad == 2 && (w & 0xffff) != 0))
            return HKV_EPROTO;                /* unused bits must be zero */
        size_t k = 3 - (size_t)pad;
        if (cap - o < k)
            return HKV_ETOOBIG;
        out[o++] = (char)(w >> 16);
        if (k > 1)
            out[o++] = (char)(w >> 8);
        if (k > 2)
            out[o++] = (char)w;
    }
    *outlen = o;
    return HKV_OK;
}

int http_req_basic(const struct http_req *r, char *out, size_t cap, struct http_slice *user,
                   struct http_slice *pass)
{
    const char *a = r->authorization.p;
    size_t n = r->authorization.len;
    if (a == NULL || n < 6 || !ieq(a, 5, "basic") || a[5] != ' ')
        return HKV_ENOENT;
    size_t i = 5;
    while (i < n && a[i] == ' ')
        i++;
    size_t len;
    int rc = b64_decode(a + i, n - i, out, cap, &len);
    if (rc != HKV_OK)
        return rc;
    char *colon = memchr(out, ':', len);
    if (colon == NULL)
        return HKV_EPROTO;
    user->p = out;
    user->len = (size_t)(colon - out);
    pass->p = colon + 1;
    pass->len = len - user->len - 1;
    return HKV_OK;
}

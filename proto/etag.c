/*
 * etag.c - the versioned commands' reply shapes (etag.h).
 */
#include "proto/etag.h"

#include <string.h>

#include "proto/num.h"

/* The line at p[*at..n) up to CRLF: its start and length; *at moves past
 * it.  0, or -1 when no CRLF ends it. */
static int line(const char *p, size_t n, size_t *at, const char **s, size_t *len)
{
    for (size_t i = *at; i + 1 < n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n') {
            *s = p + *at;
            *len = i - *at;
            *at = i + 2;
            return 0;
        }
    return -1;
}

static int is_nil(const char *s, size_t len)
{
    return (len == 3 && (memcmp(s, "$-1", 3) == 0 || memcmp(s, "*-1", 3) == 0)) ||
           (len == 1 && s[0] == '_');
}

enum etag_reply etag_reply_parse(const char *p, size_t n, int64_t *etag, int *has_value)
{
    size_t at = 0, len;
    const char *s;
    *has_value = 0;
    if (line(p, n, &at, &s, &len) != 0)
        return ETAG_REPLY_BAD;
    if (is_nil(s, len))
        return at == n ? ETAG_REPLY_NIL : ETAG_REPLY_BAD;
    if (len != 2 || memcmp(s, "*2", 2) != 0 || line(p, n, &at, &s, &len) != 0 || len < 2 ||
        s[0] != ':' || !num_parse_ll(s + 1, len - 1, etag) || line(p, n, &at, &s, &len) != 0)
        return ETAG_REPLY_BAD;
    if (is_nil(s, len))
        return at == n ? ETAG_REPLY_PAIR : ETAG_REPLY_BAD;
    int64_t blen;
    if (len < 2 || s[0] != '$' || !num_parse_ll(s + 1, len - 1, &blen) || blen < 0 ||
        (uint64_t)blen > n - at || n - at - (size_t)blen != 2 ||
        memcmp(p + at + blen, "\r\n", 2) != 0)
        return ETAG_REPLY_BAD;
    *has_value = 1;
    return ETAG_REPLY_PAIR;
}

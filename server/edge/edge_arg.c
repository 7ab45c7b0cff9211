/*
 * edge_arg.c - argument helpers shared by the command families (edge_arg.h).
 * They sit at the bottom of server/edge on purpose: before, slice_is lived in
 * the connection layer, so every family that compared a word called up into
 * it.
 */
#include "server/edge/edge_arg.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

int slice_is(const struct resp_slice *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && strncasecmp(s->p, lit, n) == 0;
}

int arg_ll(const struct resp_slice *s, long long *out)
{
    const char *p = s->p;
    size_t n = s->len, i = 0;
    int neg = 0;
    if (n == 0 || n > 20)
        return -1;
    if (n == 1 && p[0] == '0') {
        *out = 0;
        return 0;
    }
    if (p[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return -1;
    }
    if (p[i] < '1' || p[i] > '9')
        return -1;
    unsigned long long v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        if (v > (ULLONG_MAX - (unsigned)(p[i] - '0')) / 10)
            return -1;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return -1;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return -1;
        *out = (long long)v;
    }
    return 0;
}

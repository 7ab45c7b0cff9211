/* num.c - Redis's string2ll (see num.h). */
#include "proto/num.h"

int num_parse_ll(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 20)
        return 0;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    int neg = s[0] == '-';
    if (neg && n == 1)
        return 0;
    size_t i = (size_t)neg;
    if (s[i] < '1' || s[i] > '9')
        return 0;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)v;
    }
    return 1;
}

/*
 * syskey.c - the system keys' layout (syskey.h).
 */
#include "proto/syskey.h"

#define HDR (SYSKEY_PREFIX_LEN + 1 + 4) /* prefix, kind, target length */

int syskey_target(const char *key, size_t len, size_t *off, size_t *n)
{
    if (!syskey_is(key, len) || len < HDR || key[SYSKEY_PREFIX_LEN] != 'i')
        return 0;
    const unsigned char *p = (const unsigned char *)key + SYSKEY_PREFIX_LEN + 1;
    size_t t = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
    if (t > len - HDR)
        return 0;
    *off = HDR;
    *n = t;
    return 1;
}

size_t syskey_idem(char *out, size_t cap, const char *target, size_t tlen, const char *user,
                   size_t ulen, const char *idem, size_t ilen)
{
    if (ulen > SYSKEY_USER_MAX || ilen > SYSKEY_IDEM_MAX || tlen > UINT32_MAX ||
        cap < HDR + 1 || tlen > cap - HDR - 1 || ulen + ilen > cap - HDR - 1 - tlen)
        return 0;
    memcpy(out, SYSKEY_PREFIX, SYSKEY_PREFIX_LEN);
    out[SYSKEY_PREFIX_LEN] = 'i';
    unsigned char *p = (unsigned char *)out + SYSKEY_PREFIX_LEN + 1;
    p[0] = (unsigned char)(tlen >> 24);
    p[1] = (unsigned char)(tlen >> 16);
    p[2] = (unsigned char)(tlen >> 8);
    p[3] = (unsigned char)tlen;
    size_t at = HDR;
    if (tlen > 0)
        memcpy(out + at, target, tlen);
    at += tlen;
    out[at++] = (char)ulen;
    if (ulen > 0)
        memcpy(out + at, user, ulen);
    at += ulen;
    if (ilen > 0)
        memcpy(out + at, idem, ilen);
    return at + ilen;
}

/*
 * b64.c - base64 encode and strict decode (see b64.h).
 *
 * The decoder works a quartet at a time through a 256-entry table where
 * anything outside the alphabet is 0xFF, so a bad character, a '=' in the
 * middle or a quartet cut short are all the same kind of refusal, found
 * before a byte of that quartet is written.
 */
#include "proto/b64.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void b64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = alphabet[(v >> 6) & 63];
        *out++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = '=';
        *out++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = alphabet[(v >> 6) & 63];
        *out++ = '=';
    }
}

static unsigned char value_of(char c)
{
    if (c >= 'A' && c <= 'Z')
        return (unsigned char)(c - 'A');
    if (c >= 'a' && c <= 'z')
        return (unsigned char)(c - 'a' + 26);
    if (c >= '0' && c <= '9')
        return (unsigned char)(c - '0' + 52);
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return 0xFF;
}

int b64_decode(const char *in, size_t n, void *out, size_t cap, size_t *outlen)
{
    unsigned char *o = out;
    size_t w = 0;
    if (n % 4 != 0)
        return HKV_EPROTO;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int pad = 0;
        if (last && in[i + 3] == '=')
            pad = in[i + 2] == '=' ? 2 : 1;
        unsigned char v[4];
        for (int k = 0; k < 4 - pad; k++) {
            v[k] = value_of(in[i + (size_t)k]);
            if (v[k] == 0xFF)
                return HKV_EPROTO;
        }
        uint32_t q = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12;
        if (pad < 2)
            q |= (uint32_t)v[2] << 6;
        if (pad < 1)
            q |= v[3];
        /* the bits after the last byte must be zero (canonical form) */
        if ((pad == 2 && (q & 0xFFFF) != 0) || (pad == 1 && (q & 0xFF) != 0))
            return HKV_EPROTO;
        size_t k = (size_t)(3 - pad);
        if (k > cap - w)
            return HKV_ETOOBIG;
        o[w++] = (unsigned char)(q >> 16);
        if (k > 1)
            o[w++] = (unsigned char)(q >> 8);
        if (k > 2)
            o[w++] = (unsigned char)q;
    }
    *outlen = w;
    return HKV_OK;
}

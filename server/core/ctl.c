/* ctl.c - framing of the master/child control channel; see ctl.h. */
#include "ctl.h"

#include <stdlib.h>
#include <string.h>

void ctl_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

uint64_t ctl_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

hkv_status ctl_put(struct evbuffer *out, uint8_t type, const void *payload, size_t len)
{
    if (len + 1 > CTL_MAX_MSG)
        return HKV_ETOOBIG;
    unsigned char hdr[5];
    uint32_t n = (uint32_t)(len + 1);
    hdr[0] = (unsigned char)(n >> 24);
    hdr[1] = (unsigned char)(n >> 16);
    hdr[2] = (unsigned char)(n >> 8);
    hdr[3] = (unsigned char)n;
    hdr[4] = type;
    if (evbuffer_add(out, hdr, sizeof(hdr)) != 0)
        return HKV_ENOMEM;
    if (len > 0 && evbuffer_add(out, payload, len) != 0)
        return HKV_ENOMEM;
    return HKV_OK;
}

hkv_status ctl_each(struct evbuffer *in, ctl_fn fn, void *arg)
{
    for (;;) {
        uint8_t type;
        char *payload;
        size_t len;
        hkv_status s = ctl_take(in, &type, &payload, &len);
        if (s == HKV_EAGAIN)
            return HKV_OK;
        if (s != HKV_OK)
            return s;
        fn(arg, type, payload, len);
        free(payload);
    }
}

hkv_status ctl_take(struct evbuffer *in, uint8_t *type, char **payload, size_t *len)
{
    unsigned char hdr[5];
    if (evbuffer_copyout(in, hdr, sizeof(hdr)) < (ssize_t)sizeof(hdr))
        return HKV_EAGAIN;
    uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (n == 0 || n > CTL_MAX_MSG)
        return HKV_EPROTO;
    if (evbuffer_get_length(in) < (size_t)n + 4)
        return HKV_EAGAIN;
    char *p = malloc(n); /* n-1 payload bytes + NUL */
    if (p == NULL)
        return HKV_ENOMEM;
    evbuffer_drain(in, sizeof(hdr));
    evbuffer_remove(in, p, n - 1);
    p[n - 1] = '\0';
    *type = hdr[4];
    *payload = p;
    *len = n - 1;
    return HKV_OK;
}

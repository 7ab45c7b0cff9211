/* buf.c - growable byte buffer; see buf.h.  Growth doubles, capped by `max`. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_deinit(struct hkv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->off = b->len = b->cap = 0;
}

hkv_status buf_reserve(struct hkv_buf *b, size_t n, size_t max)
{
    if (b->cap - b->len >= n)
        return HKV_OK;
    /* Reclaim consumed space first: cheaper than growing. */
    if (b->off > 0 && b->cap - (b->len - b->off) >= n) {
        buf_compact(b);
        return HKV_OK;
    }
    size_t need = b->len - b->off + n;
    if (need < n || (max > 0 && need > max))
        return HKV_EFULL;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (max > 0 && cap > max)
        cap = max;
    buf_compact(b);
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return HKV_ENOMEM;
    b->data = p;
    b->cap = cap;
    return HKV_OK;
}

hkv_status buf_append(struct hkv_buf *b, const void *p, size_t n)
{
    hkv_status s = buf_reserve(b, n, 0);
    if (s != HKV_OK)
        return s;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return HKV_OK;
}

hkv_status buf_append_str(struct hkv_buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

hkv_status buf_printf(struct hkv_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return HKV_EINVAL;
    hkv_status s = buf_reserve(b, (size_t)n + 1, 0);
    if (s != HKV_OK)
        return s;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return HKV_OK;
}

void buf_consume(struct hkv_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0;
}

void buf_compact(struct hkv_buf *b)
{
    if (b->off == 0)
        return;
    size_t n = b->len - b->off;
    if (n > 0)
        memmove(b->data, b->data + b->off, n);
    b->off = 0;
    b->len = n;
}

void buf_shrink(struct hkv_buf *b, size_t keep)
{
    if (b->len != b->off || b->cap <= keep)
        return;
    char *p = realloc(b->data, keep);
    if (p == NULL && keep > 0)
        return;
    b->data = p;
    b->cap = keep;
    b->off = b->len = 0;
}

/*
 * lstore_table.c - the local store's table (lstore.h): its keys
 * in byte order in one array, found by binary search.  A store holds one
 * cluster map (a few hundred to a few thousand keys, changed a few times a
 * second at most), so an insert that moves the tail of an array is cheaper
 * than any tree's bookkeeping, and a range is a span of the array.
 */
#include "storage/lstore.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"

int lstore_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

size_t lstore_find(const struct ltable *t, const char *key, size_t klen, int *found)
{
    size_t lo = 0, hi = t->n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = lstore_key_cmp(t->v[mid].key, t->v[mid].klen, key, klen);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int open_end(const char *end, size_t elen)
{
    return elen == 1 && end[0] == '\0';
}

void lstore_span(const struct ltable *t, const char *key, size_t klen, const char *end,
                 size_t elen, size_t *from, size_t *to)
{
    int found;
    *from = lstore_find(t, key, klen, &found);
    if (end == NULL || elen == 0) {
        *to = *from + (size_t)found;
        return;
    }
    if (open_end(end, elen)) {
        *to = t->n;
        return;
    }
    *to = lstore_find(t, end, elen, &found);
    if (*to < *from)
        *to = *from;
}

int lstore_in_range(const char *k, size_t kl, const char *key, size_t klen, const char *end,
                    size_t elen)
{
    int c = lstore_key_cmp(k, kl, key, klen);
    if (end == NULL || elen == 0)
        return c == 0;
    if (c < 0)
        return 0;
    return open_end(end, elen) || lstore_key_cmp(k, kl, end, elen) < 0;
}

char *lstore_bytes_dup(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        if (n > 0)
            memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

int lstore_kv_copy(struct lkv *dst, const struct lkv *src)
{
    *dst = *src;
    dst->key = lstore_bytes_dup(src->key, src->klen);
    dst->val = lstore_bytes_dup(src->val != NULL ? src->val : "", src->vlen);
    if (dst->key == NULL || dst->val == NULL) {
        lstore_kv_free(dst);
        return HKV_ENOMEM;
    }
    return HKV_OK;
}

void lstore_kv_free(struct lkv *kv)
{
    free(kv->key);
    free(kv->val);
    kv->key = kv->val = NULL;
}

void lstore_change_free(struct lchange *c)
{
    lstore_kv_free(&c->kv);
    lstore_kv_free(&c->prev);
}

int lstore_apply(struct ltable *t, const struct lchange *c)
{
    int found;
    size_t i = lstore_find(t, c->kv.key, c->kv.klen, &found);
    if (c->del) {
        if (found) {
            lstore_kv_free(&t->v[i]);
            memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(t->v[0]));
            t->n--;
        }
        return HKV_OK;
    }
    struct lkv kv;
    if (lstore_kv_copy(&kv, &c->kv) != HKV_OK)
        return HKV_ENOMEM;
    if (found) {
        lstore_kv_free(&t->v[i]);
        t->v[i] = kv;
        return HKV_OK;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct lkv *v = realloc(t->v, cap * sizeof(*v));
        if (v == NULL) {
            lstore_kv_free(&kv);
            return HKV_ENOMEM;
        }
        t->v = v;
        t->cap = cap;
    }
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(t->v[0]));
    t->v[i] = kv;
    t->n++;
    return HKV_OK;
}

void lstore_table_free(struct ltable *t)
{
    for (size_t i = 0; i < t->n; i++)
        lstore_kv_free(&t->v[i]);
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

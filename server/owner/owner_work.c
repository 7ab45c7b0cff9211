/*
 * owner_work.c - an owner's work per bucket of the hash space and its hot
 * keys over one window; see owner_work.h.
 *
 * The request path costs one array increment and one pass over the
 * sketch's OWORK_TOP hashes (a cache line or four); a key is copied only
 * when it enters the sketch.  Counts are 32-bit per bucket and saturate
 * (a window is seconds; four billion events in one bucket is not a load an
 * owner serves), bytes 64-bit.
 */
#include "server/owner/owner_work.h"

#include <stdlib.h>
#include <string.h>

struct bucket {
    uint32_t reqs, writes, pushes, pad;
    uint64_t bytes;
};

struct hot {
    uint64_t place;                /* 0 = a free entry (a placement hash of 0 is just missed) */
    uint32_t count, err;           /* space-saving: count overstates by at most err */
    uint16_t klen;
    char key[OWORK_KEY_MAX];
};

struct owork {
    struct bucket b[OWORK_BUCKETS];
    struct hot top[OWORK_TOP];
};

struct owork *owork_create(void)
{
    return calloc(1, sizeof(struct owork));
}

void owork_destroy(struct owork **w)
{
    free(*w);
    *w = NULL;
}

void owork_reset(struct owork *w)
{
    memset(w, 0, sizeof(*w));
}

static inline uint32_t sat_add(uint32_t a, uint32_t b)
{
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

static inline struct bucket *bucket_of(struct owork *w, uint64_t place)
{
    return &w->b[place >> (64 - OWORK_BITS)];
}

static void hot_add(struct owork *w, uint64_t place, const char *key, size_t klen, uint32_t n)
{
    struct hot *min = NULL;
    for (int i = 0; i < OWORK_TOP; i++) {
        struct hot *h = &w->top[i];
        if (h->place == place && h->place != 0) {
            h->count = sat_add(h->count, n);
            return;
        }
        if (min == NULL || h->count < min->count)
            min = h;
    }
    if (place == 0)
        return;
    /* a free entry has count 0, so it is the minimum */
    min->err = min->count;
    min->count = sat_add(min->count, n);
    min->place = place;
    min->klen = (uint16_t)(klen < OWORK_KEY_MAX ? klen : OWORK_KEY_MAX);
    memcpy(min->key, key, min->klen);
}

void owork_request(struct owork *w, uint64_t place, const char *key, size_t klen)
{
    struct bucket *b = bucket_of(w, place);
    b->reqs = sat_add(b->reqs, 1);
    hot_add(w, place, key, klen, 1);
}

void owork_write(struct owork *w, uint64_t place)
{
    struct bucket *b = bucket_of(w, place);
    b->writes = sat_add(b->writes, 1);
}

void owork_push(struct owork *w, uint64_t place, const char *key, size_t klen, unsigned colos,
                uint64_t bytes)
{
    struct bucket *b = bucket_of(w, place);
    b->pushes = sat_add(b->pushes, colos);
    b->bytes += bytes;
    hot_add(w, place, key, klen, colos + (uint32_t)(bytes / OWORK_BYTES_PER_UNIT));
}

static uint64_t work_of(const struct bucket *b)
{
    return (uint64_t)b->reqs + b->pushes + b->bytes / OWORK_BYTES_PER_UNIT;
}

/* Buckets [lo, hi). */
static void sum(const struct owork *w, uint32_t lo, uint32_t hi, struct hand_load *out,
                uint64_t *work)
{
    *work = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const struct bucket *b = &w->b[i];
        if (b->reqs == 0 && b->pushes == 0)
            continue;
        *work += work_of(b);
        out->writes += b->writes;
        out->pushes += b->pushes;
        out->bytes += b->bytes;
        out->misses += b->reqs > b->writes ? b->reqs - b->writes : 0;
    }
}

void owork_leaf(const struct owork *w, uint32_t start, uint8_t bits, struct hand_load *out)
{
    uint8_t pool = out->leaf.pool;
    memset(out, 0, sizeof(*out));
    out->leaf = (struct hand_leaf){.pool = pool, .bits = bits, .start = start};
    uint32_t lo = start >> (32 - OWORK_BITS);
    uint32_t n = bits >= OWORK_BITS ? 1 : 1u << (OWORK_BITS - bits);
    if (n > 1) {
        uint64_t h0, h1;
        sum(w, lo, lo + n / 2, out, &h0);
        sum(w, lo + n / 2, lo + n, out, &h1);
        out->half[0] = h0;
        out->half[1] = h1;
        out->work = h0 + h1;
    } else {
        sum(w, lo, lo + 1, out, &out->work);
    }
    /* the hottest key inside the leaf, by its guaranteed count */
    uint64_t size = bits == 0 ? 1ULL << 32 : 1ULL << (32 - bits);
    const struct hot *best = NULL;
    for (int i = 0; i < OWORK_TOP; i++) {
        const struct hot *h = &w->top[i];
        if (h->place == 0 || (h->place >> 32) - start >= size)
            continue;
        if (best == NULL || h->count - h->err > best->count - best->err)
            best = h;
    }
    if (best != NULL && best->count > best->err) {
        out->has_key = true;
        out->key = wire_slice(best->key, best->klen);
        out->topwork = best->count - best->err;
        if (out->topwork > out->work)
            out->topwork = out->work;
    }
}

uint64_t owork_total(const struct owork *w)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < OWORK_BUCKETS; i++)
        t += work_of(&w->b[i]);
    return t;
}

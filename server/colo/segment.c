/*
 * segment.c - the parts of a colo segment that do not depend on what it
 * stores (segment.h): making and checking the header, the counter rows and
 * the robust stripe locks.
 *
 * The design choice a reader would otherwise reverse-engineer: a child
 * never trusts a header field it could have computed itself.  seg_attach
 * checks the cheap things first (magic, version, size, checksum), then asks
 * the owner's layout to recompute the header from the header's own inputs
 * and compares the two byte for byte; only the fields the master drew at
 * creation (generation, checksum) are taken as read.  So a scribbled offset
 * whose checksum was scribbled to match is still refused, and the owner's
 * code after attach may use every offset without bounds checks.
 */
#include "server/colo/segment.h"

#include <errno.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/core/clock.h"
#include "server/core/shm.h"

#define HDR_SEED 0x736567686b76ULL /* "vkhges" */

_Static_assert(sizeof(struct seg_hdr) == 40, "seg_hdr layout");

/* The header's checksum: every byte of its hdr_size but the sum field. */
static uint64_t hdr_sum(const void *hdr, size_t size)
{
    struct seg_sum st;
    seg_sum_init(&st, HDR_SEED);
    seg_sum_feed(&st, hdr, offsetof(struct seg_hdr, sum));
    if (size > sizeof(struct seg_hdr))
        seg_sum_feed(&st, (const char *)hdr + sizeof(struct seg_hdr),
                     size - sizeof(struct seg_hdr));
    return seg_sum_final(&st);
}

void seg_hdr_seal(void *hdr)
{
    struct seg_hdr *h = hdr;
    h->sum = hdr_sum(hdr, h->hdr_size);
}

int seg_hdr_check(const void *hdr, size_t avail, const struct seg_kind *k)
{
    struct seg_hdr h;
    if (hdr == NULL || avail < sizeof(h) || k->hdr_size < sizeof(h) || avail < k->hdr_size)
        return HKV_ECORRUPT;
    memcpy(&h, hdr, sizeof(h));
    if (h.magic != k->magic || h.version != k->version || h.hdr_size != k->hdr_size ||
        h.sum != hdr_sum(hdr, k->hdr_size))
        return HKV_ECORRUPT;
    return HKV_OK;
}

static uint32_t row_of_this_process(void)
{
    return (uint32_t)(((uint64_t)(uint32_t)getpid() * 0x9e3779b97f4a7c15ULL) >> 60) %
           SEG_CTR_ROWS;
}

static void bind(struct seg *s, const struct seg_kind *k)
{
    s->ctr = (_Atomic uint64_t *)(s->base + seg_align(k->hdr_size, 64));
    s->row = row_of_this_process();
}

int seg_create(struct seg *s, const struct seg_kind *k, void *hdr)
{
    struct seg_hdr *h = hdr;
    memset(s, 0, sizeof(*s));
    if (k->hdr_size < sizeof(*h) || k->hdr_size > SEG_HDR_MAX || k->layout(hdr, hdr) != HKV_OK ||
        h->bytes < seg_first(k->hdr_size)) {
        errno = EINVAL;
        return HKV_EINVAL;
    }
    h->magic = k->magic;
    h->version = k->version;
    h->hdr_size = k->hdr_size;
    h->generation = (uint64_t)clock_unix_ns();
    seg_hdr_seal(hdr);
    errno = 0;
    void *p = shm_map(k->name, h->bytes);
    if (p == NULL) {
        if (errno == 0)
            errno = ENOMEM;
        return HKV_ENOMEM;
    }
    s->base = p;
    s->bytes = h->bytes;
    memcpy(s->base, hdr, k->hdr_size); /* the memfd is zero: every other region starts empty */
    bind(s, k);
    return HKV_OK;
}

int seg_attach(struct seg *s, const struct seg_kind *k)
{
    _Alignas(64) char seen[SEG_HDR_MAX], want[SEG_HDR_MAX];
    if (s == NULL || s->base == NULL || k->hdr_size > SEG_HDR_MAX || s->bytes < k->hdr_size)
        return HKV_ECORRUPT;
    memcpy(seen, s->base, k->hdr_size); /* one copy: the mapping may change under us */
    const struct seg_hdr *sh = (const struct seg_hdr *)seen;
    if (seg_hdr_check(seen, k->hdr_size, k) != HKV_OK || sh->bytes != s->bytes)
        return HKV_ECORRUPT;
    memset(want, 0, k->hdr_size);
    if (k->layout(want, seen) != HKV_OK)
        return HKV_ECORRUPT;
    struct seg_hdr *wh = (struct seg_hdr *)want;
    wh->magic = k->magic;
    wh->version = k->version;
    wh->hdr_size = k->hdr_size;
    wh->generation = sh->generation;
    wh->sum = sh->sum;
    if (memcmp(want, seen, k->hdr_size) != 0)
        return HKV_ECORRUPT;
    bind(s, k);
    return HKV_OK;
}

void seg_destroy(struct seg *s)
{
    if (s == NULL)
        return;
    shm_unmap(s->base, s->bytes);
    memset(s, 0, sizeof(*s));
}

/* ---- counter rows ---- */

void seg_counters(const struct seg *s, uint64_t *out, unsigned n)
{
    if (n > SEG_ROW_U64)
        n = SEG_ROW_U64;
    for (uint32_t r = 0; r < SEG_CTR_ROWS; r++)
        for (unsigned i = 0; i < n; i++)
            out[i] += atomic_load_explicit(&s->ctr[r * SEG_ROW_U64 + i], memory_order_relaxed);
}

void seg_reset_counters(const struct seg *s)
{
    for (uint32_t i = 0; i < SEG_CTR_ROWS * SEG_ROW_U64; i++)
        atomic_store_explicit(&s->ctr[i], 0, memory_order_relaxed);
}

/* ---- stripe locks ---- */

int seg_lock_init(pthread_mutex_t *mu)
{
    return shm_mutex_init(mu) == 0 ? HKV_OK : HKV_ENOMEM;
}

/* After EOWNERDEAD: the lock is ours, what it guards may be half-done. */
static int recover(pthread_mutex_t *mu, seg_repair_fn *repair, void *arg)
{
    if (repair != NULL)
        repair(arg);
    pthread_mutex_consistent(mu);
    return HKV_OK;
}

int seg_lock(pthread_mutex_t *mu, seg_repair_fn *repair, void *arg)
{
    int rc = pthread_mutex_lock(mu);
    if (rc == 0)
        return HKV_OK;
    if (rc == EOWNERDEAD)
        return recover(mu, repair, arg);
    return HKV_ECORRUPT; /* ENOTRECOVERABLE, EINVAL: only if the segment was scribbled */
}

int seg_trylock(pthread_mutex_t *mu, int tries, seg_repair_fn *repair, void *arg)
{
    for (int i = 0; i < tries; i++) {
        int rc = pthread_mutex_trylock(mu);
        if (rc == 0)
            return HKV_OK;
        if (rc == EOWNERDEAD)
            return recover(mu, repair, arg);
        if (rc != EBUSY)
            return HKV_ECORRUPT;
        if (i + 1 < tries)
            seg_relax();
    }
    return HKV_EAGAIN;
}

void seg_unlock(pthread_mutex_t *mu)
{
    pthread_mutex_unlock(mu);
}

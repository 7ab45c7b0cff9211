/*
 * ratelimit.c - the colo's token buckets (server/colo/ratelimit.h): the
 * segment, the lock-free charge of a known client, the locked insert of a
 * new one, and repair after a process died inside.  The rules (how much a
 * class may take) are per process, in ratelimit_rules.c.
 *
 * Layout (every region 64-byte aligned; the header holds offsets, never
 * pointers; the header, its checksum and the counter rows are the segment
 * module's (segment.h), and rl_attach has it recompute the layout from the
 * header's inputs, the bucket count and the SipHash key, and compare):
 *
 *   header    struct seg_hdr, geometry, the SipHash key, region offsets
 *   counters  segment.h's rows, RL_CTR_COUNT of each row used
 *   stripes   nstripes x { robust process-shared mutex, slots used }
 *   slots     nstripes x per_stripe x { key, tat }: 16 bytes a bucket
 *
 * A slot is two words.  `key` is a 63-bit fingerprint of (client, class)
 * with the top bit set, 0 while the slot was never used; `tat` is the
 * bucket (see ratelimit.h), in CLOCK_MONOTONIC ns, or RL_BUSY while the
 * slot changes hands.  The SipHash key is drawn at each start, so nobody
 * outside can aim many clients at one stripe.
 *
 * Lookup is lock-free: linear probing from the key's home within its stripe,
 * at most `probe` slots, stopping at a never-used slot (slots are re-used,
 * never emptied, so no tombstones are needed and a chain never breaks).
 * The charge loads tat (acquire), checks the slot still holds the key, and
 * CASes tat forward.
 *
 * Inserting needs the stripe lock (so a key is never inserted twice), taken
 * with trylock and a bounded spin: the event loop never waits on another
 * process.  Under the lock the chain is scanned again; the key goes to the
 * first slot that is idle (its tat is in the past, so its bucket is full and
 * forgetting it loses nothing) or never used.  Re-using an idle slot is
 * CAS(tat: idle -> RL_BUSY), store key, store tat = now (a full bucket).
 * The CAS fails if a charger got there first (the slot was not idle after
 * all).  A charger that read the old key sees RL_BUSY or a tat written after
 * the new key and, reloading the key, finds it changed and looks again; its
 * CAS cannot succeed on the new bucket by accident, because the new tat (now)
 * is later than any tat of the old bucket it could have read (tats only grow
 * between re-uses).
 *
 * A process killed holding a stripe lock leaves EOWNERDEAD to the next
 * locker, which repairs the stripe (any RL_BUSY tat becomes now: a full
 * bucket, for whichever key the slot holds) and marks the mutex consistent.
 * A charger that meets RL_BUSY for longer than a bounded spin goes through
 * the lock for the same reason.  Nothing else can be half-done: a never-used
 * slot is claimed by writing tat before key.
 */
#include "server/colo/ratelimit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "server/colo/gcra.h"
#include "server/colo/ratelimit_int.h"
#include "server/core/clock.h"

#define RL_MAGIC 0x74696d696c766b68ULL /* "hkvlimit" */
#define RL_LAYOUT_VERSION 2
#define RL_PROBE 16                   /* slots a key may be from its home */
#define RL_STRIPE_MAX 64
#define RL_BUCKETS_MIN 64
#define RL_BUCKETS_MAX (1u << 24)
#define RL_LOCK_TRIES 32              /* trylock attempts before failing open */
#define RL_CAS_TRIES 64               /* charge attempts (contention, RL_BUSY) */
#define RL_USER_INLINE 64             /* longer user names are hashed first */

_Static_assert(RL_CTR_COUNT <= SEG_ROW_U64, "a counter row holds every counter");

/* The inputs of the layout are buckets and sipkey. */
struct rl_hdr {
    struct seg_hdr seg;
    uint32_t buckets, nstripes, per_stripe, probe;
    uint32_t stripe_size, pad;
    uint8_t sipkey[SIPHASH_KEY_LEN];
    uint64_t off_stripes, off_slots;
};
_Static_assert(sizeof(struct rl_hdr) <= SEG_HDR_MAX, "the segment takes the header");

/* The segment's layout (struct seg_kind): fills every size and offset of
 * hdr from in's buckets and sipkey.  HKV_OK or HKV_EINVAL. */
static int layout(void *hdr, const void *in)
{
    const struct rl_hdr *from = in;
    uint32_t buckets = from->buckets;
    uint8_t key[SIPHASH_KEY_LEN];
    memcpy(key, from->sipkey, sizeof(key));
    struct rl_hdr *h = hdr;
    if (buckets < RL_BUCKETS_MIN || buckets > RL_BUCKETS_MAX)
        return HKV_EINVAL;
    h->buckets = buckets;
    memcpy(h->sipkey, key, sizeof(key));
    uint32_t ns = 1;
    while (ns * 2 <= buckets / 64 && ns * 2 <= RL_STRIPE_MAX)
        ns *= 2;
    h->nstripes = ns;
    h->per_stripe = buckets / ns;
    h->probe = h->per_stripe < RL_PROBE ? h->per_stripe : RL_PROBE;
    h->stripe_size = (uint32_t)seg_align(sizeof(struct rl_stripe), 64);
    h->pad = 0;
    uint64_t off = seg_first(sizeof(*h));
    h->off_stripes = off;
    off += (uint64_t)ns * h->stripe_size;
    h->off_slots = seg_align(off, 64);
    off = h->off_slots + (uint64_t)ns * h->per_stripe * sizeof(struct rl_slot);
    h->seg.bytes = seg_align(off, 4096);
    return HKV_OK;
}

static const struct seg_kind rl_kind = {
    .name = "hotkvd-ratelimit",
    .magic = RL_MAGIC,
    .version = RL_LAYOUT_VERSION,
    .hdr_size = sizeof(struct rl_hdr),
    .layout = layout,
};

static void bind_view(struct rl *rl)
{
    const struct rl_hdr *h = (const struct rl_hdr *)rl->seg.base;
    rl->stripes = rl->seg.base + h->off_stripes;
    rl->slots = (struct rl_slot *)(rl->seg.base + h->off_slots);
    rl->nstripes = h->nstripes;
    rl->per_stripe = h->per_stripe;
    rl->probe = h->probe;
    rl->stripe_size = h->stripe_size;
    memcpy(rl->sipkey, h->sipkey, sizeof(rl->sipkey));
    rl->ok = 1;
}

int rl_create(const struct rl_opts *o, struct rl **out)
{
    struct rl_hdr h;
    *out = NULL;
    memset(&h, 0, sizeof(h));
    h.buckets = o != NULL ? o->buckets : 0;
    if (getrandom(h.sipkey, sizeof(h.sipkey), 0) != (ssize_t)sizeof(h.sipkey)) {
        /* no entropy source: a key nobody outside can read still beats none */
        uint64_t a = (uint64_t)clock_unix_ns() ^ ((uint64_t)getpid() << 32);
        uint64_t b = (uint64_t)(uintptr_t)&h;
        memcpy(h.sipkey, &a, 8);
        memcpy(h.sipkey + 8, &b, 8);
    }
    struct rl *rl = calloc(1, sizeof(*rl));
    if (rl == NULL)
        return HKV_ENOMEM;
    int rc = seg_create(&rl->seg, &rl_kind, &h);
    if (rc != HKV_OK) {
        free(rl);
        return rc;
    }
    bind_view(rl);
    for (uint32_t s = 0; s < rl->nstripes; s++) {
        if (seg_lock_init(&stripe_at(rl, s)->mu) != HKV_OK) {
            seg_destroy(&rl->seg);
            free(rl);
            if (errno == 0)
                errno = ENOMEM;
            return HKV_ENOMEM;
        }
    }
    *out = rl;
    return HKV_OK;
}

int rl_attach(struct rl *rl)
{
    if (rl == NULL)
        return HKV_ECORRUPT;
    rl->ok = 0;
    if (seg_attach(&rl->seg, &rl_kind) != HKV_OK)
        return HKV_ECORRUPT;
    bind_view(rl);
    return HKV_OK;
}

void rl_destroy(struct rl **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct rl *rl = *p;
    seg_destroy(&rl->seg);
    free(rl);
    *p = NULL;
}

/* ---- keys ---- */

int64_t rl_now(void)
{
    return clock_mono_ns();
}

static uint64_t key_hash(const struct rl *rl, const struct rl_key *k, int cls)
{
    uint8_t buf[16 + RL_USER_INLINE];
    size_t n = 16;
    uint32_t ul = k->user != NULL ? (uint32_t)k->ulen : UINT32_MAX;
    uint16_t c = (uint16_t)cls;
    buf[0] = k->family;
    buf[1] = 0;
    memcpy(buf + 2, &c, 2);
    memcpy(buf + 4, k->addr, 8);
    memcpy(buf + 12, &ul, 4);
    if (k->user != NULL) {
        if (k->ulen <= RL_USER_INLINE) {
            memcpy(buf + 16, k->user, k->ulen);
            n += k->ulen;
        } else {
            uint64_t hu = siphash24(rl->sipkey, k->user, k->ulen);
            memcpy(buf + 16, &hu, 8);
            n += 8;
        }
    }
    return siphash24(rl->sipkey, buf, n);
}

struct loc {
    uint32_t s, home;
    uint64_t fp;
};

static inline struct loc locate_hash(const struct rl *rl, uint64_t h)
{
    struct loc l;
    l.s = (uint32_t)h & (rl->nstripes - 1);
    l.home = (uint32_t)(((h >> 32) * rl->per_stripe) >> 32);
    l.fp = h | (1ULL << 63);
    return l;
}

static inline struct loc locate(const struct rl *rl, const struct rl_key *k, int cls)
{
    return locate_hash(rl, key_hash(rl, k, cls));
}

static inline uint32_t next_pos(const struct rl *rl, uint32_t pos)
{
    return ++pos == rl->per_stripe ? 0 : pos;
}

/* ---- counters ---- */

static void count(struct rl *rl, enum rl_counter which)
{
    if (rl->ok)
        seg_count(&rl->seg, which, 1);
    else
        rl->local[which]++;
}

/* ---- the stripe lock ---- */

/* Any slot left RL_BUSY by a dead writer gets a full bucket; the count of
 * used slots is recounted.  Under the (just recovered) lock. */
static void repair(struct rl *rl, uint32_t s, int64_t now)
{
    struct rl_stripe *st = stripe_at(rl, s);
    uint32_t used = 0;
    for (uint32_t p = 0; p < rl->per_stripe; p++) {
        struct rl_slot *sl = slot_at(rl, s, p);
        if (atomic_load_explicit(&sl->tat, memory_order_relaxed) == RL_BUSY)
            atomic_store_explicit(&sl->tat, (uint64_t)now, memory_order_release);
        used += atomic_load_explicit(&sl->key, memory_order_relaxed) != 0;
    }
    st->used = used;
    st->wip = 0;
}

struct stripe_fix {
    struct rl *rl;
    uint32_t s;
    int64_t now;
    int count;                        /* count it in ratelimit_lock_repairs */
};

/* seg_repair_fn: the stripe's last locker died holding it. */
static void repair_stripe(void *arg)
{
    struct stripe_fix *f = arg;
    repair(f->rl, f->s, f->now);
    if (f->count)
        count(f->rl, RL_CTR_ratelimit_lock_repairs);
}

/* HKV_OK (held; a dead holder's damage repaired and counted), HKV_EAGAIN
 * (held by a live process past the bounded spin), HKV_ECORRUPT (the mutex
 * is unrecoverable or not a mutex: only if the segment was scribbled on). */
static int stripe_trylock(struct rl *rl, uint32_t s, int64_t now)
{
    struct stripe_fix f = {rl, s, now, 1};
    return seg_trylock(&stripe_at(rl, s)->mu, RL_LOCK_TRIES, repair_stripe, &f);
}

static void stripe_unlock(struct rl *rl, uint32_t s)
{
    seg_unlock(&stripe_at(rl, s)->mu);
}

/* ---- lookup, insert, charge ---- */

/* Lock-free: key's slot, or NULL if it has none. */
static struct rl_slot *find(const struct rl *rl, const struct loc *l)
{
    uint32_t pos = l->home;
    for (uint32_t i = 0; i < rl->probe; i++, pos = next_pos(rl, pos)) {
        struct rl_slot *sl = slot_at(rl, l->s, pos);
        uint64_t k = atomic_load_explicit(&sl->key, memory_order_acquire);
        if (k == l->fp)
            return sl;
        if (k == 0)
            return NULL;
    }
    return NULL;
}

/* Under the stripe lock: key's slot, found or made.  HKV_OK, HKV_EFULL (no
 * idle or unused slot within the probe). */
static int insert_locked(struct rl *rl, const struct loc *l, int64_t now, struct rl_slot **out)
{
    for (int round = 0; round < 4; round++) {
        struct rl_slot *idle = NULL, *unused = NULL;
        uint64_t idle_tat = 0;
        uint32_t pos = l->home;
        for (uint32_t i = 0; i < rl->probe; i++, pos = next_pos(rl, pos)) {
            struct rl_slot *sl = slot_at(rl, l->s, pos);
            uint64_t k = atomic_load_explicit(&sl->key, memory_order_relaxed);
            if (k == l->fp) {
                *out = sl;
                return HKV_OK;
            }
            if (k == 0) {
                unused = sl;
                break;
            }
            uint64_t t = atomic_load_explicit(&sl->tat, memory_order_relaxed);
            if (idle == NULL && t != RL_BUSY && (int64_t)(t - (uint64_t)now) < 0) {
                idle = sl;
                idle_tat = t;
            }
        }
        if (idle != NULL) {
            /* re-use: the earliest idle slot keeps chains short */
            if (!atomic_compare_exchange_strong_explicit(&idle->tat, &idle_tat, RL_BUSY,
                                                         memory_order_acq_rel,
                                                         memory_order_relaxed))
                continue; /* charged meanwhile: not idle after all */
            atomic_store_explicit(&idle->key, l->fp, memory_order_release);
            atomic_store_explicit(&idle->tat, (uint64_t)now, memory_order_release);
            *out = idle;
            return HKV_OK;
        }
        if (unused != NULL) {
            atomic_store_explicit(&unused->tat, (uint64_t)now, memory_order_relaxed);
            atomic_store_explicit(&unused->key, l->fp, memory_order_release);
            stripe_at(rl, l->s)->used++;
            *out = unused;
            return HKV_OK;
        }
        return HKV_EFULL;
    }
    return HKV_EFULL;
}

/* One request against the bucket in sl, which held fp when found.
 * RL_ALLOW, RL_REJECT (*wait_ns = ns until a token), -1: the slot changed
 * hands (look again), -2: RL_BUSY or contention past the bounded tries. */
static int charge(struct rl_slot *sl, uint64_t fp, const struct rl_rule *r, int64_t now,
                  int64_t *wait_ns)
{
    uint64_t tat = atomic_load_explicit(&sl->tat, memory_order_acquire);
    for (int tries = 0; tries < RL_CAS_TRIES; tries++) {
        if (tat == RL_BUSY) {
            seg_relax();
            tat = atomic_load_explicit(&sl->tat, memory_order_acquire);
            continue;
        }
        if (atomic_load_explicit(&sl->key, memory_order_relaxed) != fp)
            return -1;
        int64_t base = (int64_t)(tat - (uint64_t)now) > 0 ? (int64_t)tat : now;
        if (base - now > r->limit)
            base = now + r->limit; /* debt past the burst (a lowered limit, a scribble): empty */
        int64_t next = base + r->t;
        int64_t over = next - now - r->limit;
        if (over > 0) {
            *wait_ns = over;
            return RL_REJECT;
        }
        if (atomic_compare_exchange_weak_explicit(&sl->tat, &tat, (uint64_t)next,
                                                  memory_order_acq_rel, memory_order_acquire))
            return RL_ALLOW;
    }
    return -2;
}

static int fail_open(struct rl *rl, enum rl_counter why)
{
    count(rl, RL_CTR_ratelimit_failopen);
    if (why != RL_CTR_ratelimit_failopen)
        count(rl, why);
    return RL_ALLOW;
}

/* The key's slot, found lock-free or inserted under its stripe's lock
 * (insert 0: found only).  *out NULL when there is none: the reason to fail
 * open is returned (RL_CTR_COUNT: none, with insert 0). */
static enum rl_counter slot_for(struct rl *rl, const struct loc *l, int64_t now, int insert,
                                struct rl_slot **out)
{
    if ((*out = find(rl, l)) != NULL || !insert)
        return RL_CTR_COUNT;
    int rc = stripe_trylock(rl, l->s, now);
    if (rc != HKV_OK)
        return rc == HKV_EAGAIN ? RL_CTR_ratelimit_failopen_busy : RL_CTR_ratelimit_failopen;
    rc = insert_locked(rl, l, now, out);
    stripe_unlock(rl, l->s);
    if (rc != HKV_OK) {
        *out = NULL;
        return RL_CTR_ratelimit_failopen_full;
    }
    return RL_CTR_COUNT;
}

/* A slot stuck changing hands: its writer may have died, which the lock
 * knows (EOWNERDEAD repairs it); a live one is slow.  RL_CTR_COUNT: look
 * again; else the reason to fail open. */
static enum rl_counter unstick(struct rl *rl, const struct loc *l, int64_t now)
{
    int rc = stripe_trylock(rl, l->s, now);
    if (rc != HKV_OK)
        return rc == HKV_EAGAIN ? RL_CTR_ratelimit_failopen_busy : RL_CTR_ratelimit_failopen;
    stripe_unlock(rl, l->s);
    return RL_CTR_COUNT;
}

int rl_check(struct rl *rl, const struct rl_key *key, int cls, int64_t now, int64_t *retry_ms)
{
    if (rl == NULL || cls <= RL_CLS_NONE || cls >= RL_NCLS)
        return RL_ALLOW;
    const struct rl_rule *r = &rl->rules[cls];
    if (r->t == 0)
        return RL_ALLOW; /* no limit for this class here */
    if (!rl->ok || key == NULL || now <= (int64_t)RL_BUSY)
        return fail_open(rl, RL_CTR_ratelimit_failopen);
    struct loc l = locate(rl, key, cls);
    for (int round = 0; round < 4; round++) {
        struct rl_slot *sl;
        enum rl_counter why = slot_for(rl, &l, now, 1, &sl);
        if (sl == NULL)
            return fail_open(rl, why);
        int64_t wait = 0;
        int v = charge(sl, l.fp, r, now, &wait);
        if (v == RL_ALLOW) {
            count(rl, RL_CTR_ratelimit_allowed);
            return RL_ALLOW;
        }
        if (v == RL_REJECT) {
            count(rl, RL_CTR_ratelimit_rejected);
            if (retry_ms != NULL)
                *retry_ms = (wait + 999999) / 1000000;
            return RL_REJECT;
        }
        if (v == -2 && (why = unstick(rl, &l, now)) != RL_CTR_COUNT)
            return fail_open(rl, why);
    }
    return fail_open(rl, RL_CTR_ratelimit_failopen_busy);
}

/* ---- CL.THROTTLE: an application's key, its own limit ---- */

/* charge(), with the limit and the reply gcra_apply's.  0 (res filled; a
 * limited request or one of quantity 0 stores nothing), -1, -2 as charge. */
static int charge_gcra(struct rl_slot *sl, uint64_t fp, const struct gcra_limit *lim,
                       int64_t now, struct gcra_result *res)
{
    uint64_t tat = atomic_load_explicit(&sl->tat, memory_order_acquire);
    for (int tries = 0; tries < RL_CAS_TRIES; tries++) {
        if (tat == RL_BUSY) {
            seg_relax();
            tat = atomic_load_explicit(&sl->tat, memory_order_acquire);
            continue;
        }
        if (atomic_load_explicit(&sl->key, memory_order_relaxed) != fp)
            return -1;
        gcra_apply(lim, (int64_t)tat, now, res);
        if (res->limited || lim->quantity == 0)
            return 0;
        if (atomic_compare_exchange_weak_explicit(&sl->tat, &tat, (uint64_t)res->tat,
                                                  memory_order_acq_rel, memory_order_acquire))
            return 0;
    }
    return -2;
}

static int throttle_open(struct rl *rl, enum rl_counter why, const struct gcra_limit *lim,
                         int64_t now, struct gcra_result *res)
{
    if (rl != NULL) /* no segment at all: logged at start, nowhere to count */
        fail_open(rl, why);
    gcra_apply(lim, 0, now, res); /* what a new key would be told */
    res->limited = 0;
    res->retry_after_s = -1;
    return 1;
}

int rl_throttle(struct rl *rl, const void *key, size_t klen, const struct gcra_limit *lim,
                int64_t now, struct gcra_result *res)
{
    if (rl == NULL || !rl->ok || now <= (int64_t)RL_BUSY)
        return throttle_open(rl, RL_CTR_ratelimit_failopen, lim, now, res);
    struct loc l = locate_hash(rl, siphash24(rl->sipkey, key, klen));
    for (int round = 0; round < 4; round++) {
        struct rl_slot *sl;
        enum rl_counter why = slot_for(rl, &l, now, lim->quantity > 0, &sl);
        if (sl == NULL && why != RL_CTR_COUNT)
            return throttle_open(rl, why, lim, now, res);
        if (sl == NULL) { /* a look (quantity 0) at a key with no bucket: a full one */
            gcra_apply(lim, 0, now, res);
            count(rl, RL_CTR_ratelimit_allowed);
            return 0;
        }
        int v = charge_gcra(sl, l.fp, lim, now, res);
        if (v == 0) {
            count(rl, res->limited ? RL_CTR_ratelimit_rejected : RL_CTR_ratelimit_allowed);
            return 0;
        }
        if (v == -2 && (why = unstick(rl, &l, now)) != RL_CTR_COUNT)
            return throttle_open(rl, why, lim, now, res);
    }
    return throttle_open(rl, RL_CTR_ratelimit_failopen_busy, lim, now, res);
}

/* ---- test hooks ---- */

int rl_test_hold_stripe(struct rl *rl, const struct rl_key *key, int cls, int mid_write)
{
    struct loc l = locate(rl, key, cls);
    struct rl_stripe *st = stripe_at(rl, l.s);
    struct stripe_fix f = {rl, l.s, rl_now(), 0};
    if (seg_lock(&st->mu, repair_stripe, &f) != HKV_OK)
        return HKV_ECORRUPT;
    if (mid_write) {
        struct rl_slot *sl = NULL;
        if (insert_locked(rl, &l, rl_now(), &sl) != HKV_OK)
            return HKV_EFULL;
        atomic_store_explicit(&sl->tat, RL_BUSY, memory_order_release);
        st->wip = 1;
    }
    return HKV_OK; /* still holding it: the caller is meant to die */
}

uint32_t rl_test_stripe(struct rl *rl, const struct rl_key *key, int cls)
{
    return locate(rl, key, cls).s;
}

void rl_test_geometry(struct rl *rl, uint32_t *nstripes, uint32_t *per_stripe, uint32_t *probe)
{
    *nstripes = rl->nstripes;
    *per_stripe = rl->per_stripe;
    *probe = rl->probe;
}

void rl_test_scribble_header(struct rl *rl)
{
    ((struct rl_hdr *)rl->seg.base)->seg.generation ^= 1;
}

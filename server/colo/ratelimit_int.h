/*
 * ratelimit_int.h - private to server/colo/ratelimit*.c: this process's view
 * of the rate limiter, shared by the segment and charge code (ratelimit.c)
 * and the per-process rules (ratelimit_rules.c), and the numbers
 * (ratelimit_stats.c).  Nothing outside the limiter includes this.  The
 * files call nothing of each other: the rules file fills rules[] and map[],
 * ratelimit.c reads them; the stats file reads the slots and stripes.
 */
#ifndef HKV_RATELIMIT_INT_H
#define HKV_RATELIMIT_INT_H

#include <stdint.h>

#include "proto/siphash.h"
#include "server/colo/ratelimit.h"
#include "server/colo/segment.h"

/* A rule as the charge uses it: t = ns per token, limit = burst * t; t = 0:
 * no rule for the class. */
struct rl_rule {
    int64_t t, limit;
};

/* A stripe: its lock and how many of its slots hold a key. */
struct rl_stripe {
    pthread_mutex_t mu;
    uint32_t used;                    /* slots holding a key (under mu) */
    uint32_t wip;                     /* test hook: a writer left inside */
} __attribute__((aligned(64)));

#define RL_BUSY 1ULL /* tat of a slot that is changing hands */

/* A bucket: a key's fingerprint and its tat (ratelimit.c's file header). */
struct rl_slot {
    _Atomic uint64_t key;
    _Atomic uint64_t tat;
};

/* This process's view: pointers made from the header, and its rules. */
struct rl {
    struct seg seg;                   /* the mapping and this process's counter row */
    int ok;                           /* mapped and validated */
    char *stripes;
    struct rl_slot *slots;
    uint32_t nstripes, per_stripe, probe, stripe_size;
    uint8_t sipkey[SIPHASH_KEY_LEN];
    uint64_t local[RL_CTR_COUNT];     /* counted here when the segment is unusable */
    int nrules;                       /* classes with a rule */
    struct rl_rule rules[RL_NCLS];
    uint16_t map[CMD_COUNT];          /* command id -> class (rl_class_map) */
};

static inline struct rl_stripe *stripe_at(const struct rl *rl, uint32_t s)
{
    return (struct rl_stripe *)(rl->stripes + (size_t)s * rl->stripe_size);
}

static inline struct rl_slot *slot_at(const struct rl *rl, uint32_t s, uint32_t pos)
{
    return &rl->slots[(size_t)s * rl->per_stripe + pos];
}

#endif

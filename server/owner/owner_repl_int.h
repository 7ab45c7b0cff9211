/*
 * owner_repl_int.h - what the two files of the primary's replication
 * module share (owner_repl.c: the streams to followers, their joins and
 * removals; owner_repl_wait.c: the answers, pushes and reads that wait for
 * them, and what each write sends).  Private to them: one module
 * (scripts/check/layers.py GROUPS); owner_repl.h tells the story.
 */
#ifndef HKV_OWNER_REPL_INT_H
#define HKV_OWNER_REPL_INT_H

#include <stdint.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_repl.h"

#define PENDING_SLOTS 4096           /* key hashes of held ledger writes (reads of them wait) */
#define OREPL_BUCKETS 1024           /* the leaf index (a write finds its leaf's streams) */

enum sphase { S_FREE, S_BEGIN, S_SEED, S_CATCHUP, S_JOINING, S_ADDING, S_IN_SYNC, S_REMOVING };
static const char *const SPHASES[] __attribute__((unused)) = {"free", "begin", "seed", "catch-up", "joining", "adding",
                                      "in sync", "removing"};

struct rstream {
    enum sphase phase;
    struct hand_leaf leaf;
    uint32_t to;
    struct hlink *h;                 /* NULL once the link went */
    struct ocopy *copy;
    int required;                    /* answers wait for it */
    int in_set;                      /* in the leaf's in-sync set (a CAS or the map said so) */
    int call_out, unknown;           /* a CAS is out / its outcome is not known */
    uint64_t held, committed;        /* the follower's HELD and PROGRESS */
    uint64_t fence_sent, fenced;     /* a hand-over's FENCE out / acknowledged (its last seq) */
    int fence_nacked;                /* the follower could not commit for the FENCE out */
    uint64_t join_seq;
    uint64_t gen;                    /* tells a reused slot from the stream a reply was for */
    uint64_t order;                  /* the agent's order (0: answered) */
    int64_t epoch;                   /* the leaf's epoch as this stream knows it */
    int64_t deadline_ms, retry_ms, started_ms;
    int touched;                     /* the request running now sent it something */
    uint16_t next;                   /* the leaf index's chain (slot + 1; 0: end) */
};

struct rneed { uint16_t slot; uint64_t gen, seq; };
struct rpush { char *key; size_t klen; uint64_t place, version, khash; };

struct rwait {
    struct olink *l;
    uint64_t id, ticket;
    int durable, failed;
    struct hkv_buf reply;
    int64_t deadline_ms, since_ms;
    struct rpush *push;
    size_t npush;
    int nneed;
    struct rwait *next;
    struct rneed need[];
};

struct rread {                       /* a read of a key whose write waits */
    struct olink *l;
    char *payload;
    size_t plen;
    struct rread *next;
};

struct orepl {
    struct rstream s[OREPL_MAX];
    uint64_t next_gen;
    struct rwait *head, **tail;
    size_t nwait;
    struct rpush *cur_push;          /* the running request's deferred pushes */
    size_t ncur_push, cap_push;
    int touched_any;
    uint16_t touched[OREPL_MAX];     /* slots the running request touched */
    int ntouched;
    uint16_t bucket[OREPL_BUCKETS];  /* leaf -> its streams (slot + 1) */
    uint16_t nbits[33];              /* streams per leaf depth: the depths to look up */
    uint16_t pending[PENDING_SLOTS];
    struct rread *reads, **reads_tail;
    struct event *tick;
    struct orepl_stats st;
};

static inline int64_t now_ms(void) { return clock_mono_ms(); }

static inline int in_leaf(const struct hand_leaf *lf, uint64_t place)
{
    return (uint64_t)(uint32_t)(place >> 32) - lf->start < (1ULL << (32 - lf->bits));
}

static inline unsigned bucket_of(uint32_t start, uint8_t bits)
{
    uint32_t prefix = bits ? start >> (32 - bits) : 0;
    return (prefix * 2654435761u ^ bits) % OREPL_BUCKETS;
}

static inline void touch(struct orepl *r, int slot)
{
    if (!r->s[slot].touched) {
        r->s[slot].touched = 1;
        r->touched[r->ntouched++] = (uint16_t)slot;
    }
    r->touched_any |= r->s[slot].required;
}

static inline void untouch_all(struct orepl *r)
{
    for (int i = 0; i < r->ntouched; i++)
        r->s[r->touched[i]].touched = 0;
    r->ntouched = 0;
    r->touched_any = 0;
}

/* ---- owner_repl_wait.c ---- */
/* Answers every held answer whose followers hold it (or that failed). */
void orepl_release(struct owner *o);
/* The held answers waiting for stream `slot` fail: its leaf's primary changed. */
void orepl_fail_waiters_of(struct owner *o, int slot);
/* 1 if need n of held answer w is met. */
int orepl_need_met(const struct orepl *r, const struct rwait *w, const struct rneed *n);
/* Frees every held answer and parked read (teardown). */
void orepl_wait_free(struct orepl *r);

#endif

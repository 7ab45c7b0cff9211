/*
 * cache_health.h - each owner's health as the colo sees it, in the colo
 * segment (cache.h): whether the owner answers, or has been marked silent
 * (asked, and no answer to any edge of the colo for the allowance), so that
 * every edge of the colo answers a stale entry of that owner's keys at once
 * instead of each key, in each edge, finding out again by waiting.
 *
 * Per owner slot (the edge's owner index g: hot owners then cold ones on a
 * single host, owner number - 1 in a cluster) two words, each changed by
 * one CAS and each carrying its own check bits (a function of the slot and
 * the rest of the word), since any process of the colo may die mid-write
 * or scribble:
 *   health  state (answering / silent), since (monotonic ms: the last
 *           answer seen, coarse to CACHE_HEALTH_COARSE_MS; or when it was
 *           marked silent), episode (counts marks, 11 bits);
 *   probe   when a probe of the owner was last claimed (monotonic ms).
 * A word whose check bits, or whose time (more than a second in the
 * future), do not hold is read as "answering, nothing known": the side
 * that makes readers wait as before, never the side that serves stale
 * values.  A writer replaces such a word with a sound one.
 *
 * Trust.  A mark is believed only while the owner is being probed: its
 * probe word was claimed within trust_ms (cache_health_silent).  So a mark
 * nobody probes any more (every edge that probed it died, or the owner
 * serves no leaf now) stops counting by itself, and the next reader asks
 * the owner as before.
 *
 * All functions are lock-free, any process, any time; NULL c or g out of
 * range: nothing (answering).
 */
#ifndef HKV_CACHE_HEALTH_H
#define HKV_CACHE_HEALTH_H

#include <stdint.h>

struct cache;

#define CACHE_HEALTH_OWNERS 512   /* hot-owners + cold-owners, or a cluster's owner numbers */
#define CACHE_HEALTH_COARSE_MS 8  /* an answer's time is written at most this often */

/* What owner slot g's words say (cache_health_get). */
struct cache_health_view {
    int marked;                   /* silent (trusted or not) */
    int64_t since;                /* marked: when; else the last answer seen (0: none known) */
    uint32_t episode;
    int64_t probed;               /* the last probe claim (0: none known) */
};
void cache_health_get(struct cache *c, unsigned g, int64_t now, struct cache_health_view *v);

/* 1 if owner g is marked silent and the mark is trusted (a probe was
 * claimed within trust_ms of now).  Two atomic loads. */
int cache_health_silent(struct cache *c, unsigned g, int64_t now, int64_t trust_ms);

/* Owner g answered a request of this colo at now.  Clears a mark (returns
 * 1 when this call cleared one), else notes the time of the answer (a
 * write at most every CACHE_HEALTH_COARSE_MS) and returns 0. */
int cache_health_answered(struct cache *c, unsigned g, int64_t now);

/* A request sent to owner g at sent_ms has had no answer by now (the
 * caller's allowance has passed).  Marks g silent, a new episode (counted
 * in owner_silent_marks; its probe word claimed at now), unless it is
 * marked already or an answer from g reached the colo since sent_ms (an
 * owner that answers someone is not silent: this request is slow on its
 * own link).  1 if this call marked it. */
int cache_health_unanswered(struct cache *c, unsigned g, int64_t sent_ms, int64_t now);

/* The probing turn of owner g: 1 if no probe of it was claimed in the
 * colo within interval_ms and this call claimed one now (the caller
 * probes, or counts a probe it has out already), 0 otherwise. */
int cache_health_probe_claim(struct cache *c, unsigned g, int64_t now, int64_t interval_ms);

#endif

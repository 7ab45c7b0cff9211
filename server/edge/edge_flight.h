/*
 * edge_flight.h - single-flight fetches: one fetch of a key per edge process
 * (and, with the colo's refresh lock, per colo), however many readers wait
 * for it.
 *
 * A reader that misses (or finds an entry stale by the refresh allowance or
 * more) waits on the key's flight: flight_find, else flight_start, then
 * flight_wait.  Each waiter is answered exactly once, in arrival order,
 * through the callback given to flights_setup: with the owner's value or
 * absence, with the colo's entry once another edge filled it, or, when its
 * miss-wait passes first, with the colo's stale entry or its class's
 * timeout answer (degraded, or an error) while the fetch goes on and fills
 * the segment.  A waiter may leave before that (its client went away).
 *
 * Flights know no command and no op: the caller embeds a struct
 * flight_waiter where it likes and renders the answer itself.
 */
#ifndef HKV_EDGE_FLIGHT_H
#define HKV_EDGE_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/stamp.h"
#include "server/core/router.h"
#include "server/edge/edge_cache_policy.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"

struct flight;
struct flight_waiter;
struct flight_answer;

/* Called once per waiter, which is no longer waiting (w->f is NULL). */
typedef void (*flight_answer_fn)(struct flight_waiter *w, const struct flight_answer *a);

/* A reader waiting on a flight; the caller owns the memory and keeps it
 * until the answer or flight_leave. */
struct flight_waiter {
    struct flight_waiter *next;
    struct flight *f;             /* NULL while not waiting */
    int64_t start_ms;             /* when it began to wait: its miss-wait runs from here */
    void *arg;                    /* the caller's */
    flight_answer_fn fn;          /* its answer; NULL: the flights' (flights_setup) */
};

enum flight_kind {
    FLIGHT_DATA,                  /* the key's value or its absence (found) */
    FLIGHT_ERROR,                 /* an error reply: err (resp_add_error) */
    FLIGHT_OWNER_ERROR,           /* the owner's error reply, verbatim: err[0..errlen) */
};

/* One waiter's answer; pointers valid only during the callback. */
struct flight_answer {
    enum flight_kind kind;
    int found;
    const char *v;
    size_t n;
    int64_t expire_at;            /* unix ms, 0 = none */
    /* for the reply's metadata (CLIENT META) */
    int64_t age_ms;
    hkv_stamp stamp;
    int stale;                    /* an entry past its fresh time */
    int degraded;                 /* the class's degraded answer: no value */
    int from_owner;               /* the owner's answer to this flight's own fetch */
    const char *err;
    size_t errlen;
};

/* The flights' options (the process builds them from the config). */
struct flights_opts {
    int64_t miss_wait_ms;         /* how long a reader waits for a fetch */
    struct cfg *routed;           /* the config the router routes with (the live one):
                                   * each flight keeps a reference, for its route's class */
};

/* What the read path's inline checks read of e->flights (the first member
 * of its private struct: no call on a cache hit). */
struct flights_head {
    int64_t miss_wait_ms;         /* the refresh allowance A (opts.miss_wait_ms) */
};

/* e->flights with the answer callback; 0, or -1 on allocation failure. */
int flights_setup(struct edge *e, flight_answer_fn answer, const struct flights_opts *opts);
/* Frees every flight (no waiter is answered; process exit). */
void flights_teardown(struct edge *e);
/* A reload (the options of the config about to be installed): a lower
 * miss-wait applies at once to the readers already waiting. */
void flights_reload(struct edge *e, const struct flights_opts *opts);

/* The flight of key already in the air from this process, or NULL. */
struct flight *flight_find(struct edge *e, uint64_t hash, const char *key, size_t len);
/* Starts a flight for key (not in flight here; rt and o from edge_owner_of).
 * With the colo cache it fetches only if it gets the key's refresh lock,
 * else it waits for the edge that has it; a background flight (a stale
 * entry's refresh) then does nothing.  NULL when nothing was started
 * (allocation failure, or background and the lock is taken). */
struct flight *flight_start(struct edge *e, const char *key, size_t len, const struct route *rt,
                            struct owner_ref *o, int background);
/* w waits on f from now (w->fn: NULL unless the caller set it since). */
void flight_wait(struct flight *f, struct flight_waiter *w);
/* w stops waiting (no answer will come); nothing if it is not waiting. */
void flight_leave(struct flight_waiter *w);
/* When f began (clock_mono_ms). */
int64_t flight_started(const struct flight *f);

/* The refresh allowance A: the miss-wait (edge_read.c explains the bound). */
static inline int64_t flight_allowance(const struct edge *e)
{
    return ((const struct flights_head *)e->flights)->miss_wait_ms;
}

/* May an entry whose fresh time ends at fresh_until be served at once? */
static inline int flight_servable(const struct edge *e, int64_t fresh_until, int64_t now)
{
    return edge_cache_servable(fresh_until, now, flight_allowance(e));
}

#endif

/*
 * owner_work_report.c - the owner's half of owner_work.h: the hooks the
 * request path calls, and the window.
 *
 * One timer per window (move-window, read again at every window so a
 * reload takes effect at the next one).  When it fires it reads the loop
 * thread's CPU clock: the CPU time the thread spent since the last window
 * over the wall time is the loop's busy fraction.  The timer runs on the
 * loop thread, so CLOCK_THREAD_CPUTIME_ID is the loop's own clock; the
 * persister's and the purge's threads are not counted (the disk is judged
 * by the persist backlog instead).  Then, in a cluster, it sends its agent
 * one LEAF_LOAD with the owner's busiest leaves (the map as the owner
 * holds it: owner_own_map) and starts a new window.  A report that finds
 * the control channel down is dropped: the next window sends a fresh one.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/syskey.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_work.h"

#define OWORK_SEND 16              /* leaves in one report: the busiest */

struct owork_run {
    struct owork *w;
    struct event *tick;
    int64_t wall_ns, cpu_ns;       /* at the window's start */
    uint64_t backlog_prev;
    struct hand_load best[OWORK_SEND];
};

static int64_t ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void arm(struct owner *o)
{
    int64_t ms = o->opts.move_window_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(o->work->tick, &tv);
}

/* Keeps the OWORK_SEND busiest leaves in r->best (sorted, busiest first). */
static void keep(struct owork_run *r, int *n, const struct hand_load *x)
{
    if (x->work == 0)
        return;
    int at = *n < OWORK_SEND ? *n : OWORK_SEND - 1;
    if (*n == OWORK_SEND && r->best[at].work >= x->work)
        return;
    while (at > 0 && r->best[at - 1].work < x->work) {
        r->best[at] = r->best[at - 1];
        at--;
    }
    r->best[at] = *x;
    if (*n < OWORK_SEND)
        (*n)++;
}

static void report(struct owner *o, uint32_t window_ms, uint32_t busy, uint64_t backlog)
{
    struct owork_run *r = o->work;
    const struct cmap_table *t = owner_own_map(o);
    unsigned me = owner_own_number(o);
    if (o->agent == NULL || t == NULL || me == 0)
        return;
    int n = 0;
    for (uint32_t i = 0; i < t->nleaves[o->pool]; i++) {
        const struct cmap_leaf *l = &t->leaves[o->pool][i];
        if (l->owner != me || l->state != CMAP_SERVING)
            continue;
        struct hand_load x = {.leaf = {.pool = (uint8_t)o->pool}};
        owork_leaf(r->w, l->start, l->bits, &x);
        keep(r, &n, &x);
    }
    struct hand_msg m = {.u.load = {window_ms, busy, backlog, r->backlog_prev, owork_total(r->w),
                                    n > 0 ? r->best : NULL, (uint32_t)n}};
    owner_agent_load(o, &m);
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct owork_run *r = o->work;
    int64_t wall = ns_of(CLOCK_MONOTONIC), cpu = ns_of(CLOCK_THREAD_CPUTIME_ID);
    int64_t dw = wall - r->wall_ns, dc = cpu - r->cpu_ns;
    uint32_t busy = dw <= 0 || dc <= 0 ? 0 : dc >= dw ? 1000 : (uint32_t)(dc * 1000 / dw);
    size_t keys, bytes;
    ledger_dirty(o->ledger, &keys, &bytes);
    o->st.owner_busy_permille = busy;
    report(o, (uint32_t)(dw / 1000000), busy, keys);
    r->backlog_prev = keys;
    r->wall_ns = wall;
    r->cpu_ns = cpu;
    owork_reset(r->w);
    arm(o);
}

int owner_work_setup(struct owner *o)
{
    struct owork_run *r = calloc(1, sizeof(*r));
    if (r == NULL || (r->w = owork_create()) == NULL) {
        free(r);
        return -1;
    }
    o->work = r;
    r->tick = evtimer_new(o->base, on_window, o);
    if (r->tick == NULL)
        return -1;
    r->wall_ns = ns_of(CLOCK_MONOTONIC);
    r->cpu_ns = ns_of(CLOCK_THREAD_CPUTIME_ID);
    arm(o);
    return 0;
}

void owner_work_teardown(struct owner *o)
{
    struct owork_run *r = o->work;
    if (r == NULL)
        return;
    if (r->tick != NULL)
        event_free(r->tick);
    owork_destroy(&r->w);
    free(r);
    o->work = NULL;
}

void owner_work_request(struct owner *o, uint64_t place, struct wire_slice key)
{
    if (o->work != NULL && !syskey_is(key.p, key.len)) /* its target is counted */
        owork_request(o->work->w, place, key.p, key.len);
}

void owner_work_write(struct owner *o, struct wire_slice key)
{
    if (o->work != NULL)
        owork_write(o->work->w, router_place(key.p, key.len));
}

void owner_work_push(struct owner *o, const char *key, size_t klen, unsigned colos,
                     uint64_t bytes)
{
    if (o->work != NULL)
        owork_push(o->work->w, router_place(key, klen), key, klen, colos, bytes);
}

/*
 * master_stats.c - CONFIG RESETSTAT, daemon-wide.  An edge that is asked
 * sends CTL_RESETSTAT up; the master zeroes the colo segments' counters
 * (cache and rate limiter: they belong to no one child) and has every child
 * zero its own, then answers the edge, which only then replies OK.  So right
 * after the OK, INFO from any edge shows every counter from zero, gauges
 * untouched.
 *
 * A round has two phases: owners first, then edges.  An edge keeps a copy
 * of each owner's last STATS and drops its counters when told; an owner that
 * was told first cannot answer that edge's next poll with the old numbers.
 * A child confirms with CTL_RESETSTAT_DONE; a child that is not running has
 * its scoreboard slot zeroed here instead, one that dies is not waited for,
 * and one that does not confirm within RESETSTAT_WAIT_MS is logged and not
 * waited for either (a stopped or wedged process cannot hang the command).
 * Requests that arrive during a round are served by the next one.
 */
#include <event2/buffer.h>

#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/master/master_int.h"

#define RESETSTAT_WAIT_MS 1000

static void tell(struct child *c, uint8_t type)
{
    if (c->ctl != NULL)
        ctl_put(bufferevent_get_output(c->ctl), type, NULL, 0);
}

static void phase_start(struct master *m, int phase);

static void round_start(struct master *m)
{
    for (int i = 0; i < m->nchildren; i++) {
        m->children[i].rs_round += m->children[i].rs_asked;
        m->children[i].rs_asked = 0;
    }
    for (int k = 0; k < m->ncolos; k++) {
        cache_reset_counters(m->caches[k]);
        rl_reset_counters(m->limiters[k]);
        if (m->app_limiters != NULL)
            rl_reset_counters(m->app_limiters[k]);
    }
    log_verbose("CONFIG RESETSTAT: zeroing the counters of every process");
    phase_start(m, 1);
}

/* The phase is over: the next one, or the answers and the next round. */
static void phase_done(struct master *m)
{
    evtimer_del(m->rs_timer);
    if (m->rs_phase == 1) {
        phase_start(m, 2);
        return;
    }
    m->rs_phase = 0;
    int again = 0;
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        for (; c->rs_round > 0; c->rs_round--)
            tell(c, CTL_RESETSTAT_DONE);
        again |= c->rs_asked > 0;
    }
    if (again)
        round_start(m);
}

/* Phase 1 tells the owners, phase 2 the edges. */
static void phase_start(struct master *m, int phase)
{
    m->rs_phase = phase;
    enum board_role role = phase == 1 ? BOARD_OWNER : BOARD_EDGE;
    int waiting = 0;
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c->role != role)
            continue;
        if (c->pid > 0 && c->ctl != NULL) {
            tell(c, CTL_RESETSTAT);
            c->rs_pending = 1;
            waiting++;
        } else {
            board_reset_counters(&m->board->slots[c->slot]); /* no process writes it now */
        }
    }
    if (waiting == 0) {
        phase_done(m);
        return;
    }
    struct timeval tv = {RESETSTAT_WAIT_MS / 1000, (RESETSTAT_WAIT_MS % 1000) * 1000};
    evtimer_add(m->rs_timer, &tv);
}

static void check_phase(struct master *m)
{
    if (m->rs_phase == 0)
        return;
    for (int i = 0; i < m->nchildren; i++)
        if (m->children[i].rs_pending)
            return;
    phase_done(m);
}

void master_resetstat_asked(struct child *c)
{
    c->rs_asked++;
    if (c->m->rs_phase == 0)
        round_start(c->m);
}

void master_resetstat_confirmed(struct child *c)
{
    if (!c->rs_pending)
        return; /* late, after the timeout */
    c->rs_pending = 0;
    check_phase(c->m);
}

void master_resetstat_gone(struct child *c)
{
    c->rs_asked = c->rs_round = 0;
    if (c->rs_pending) {
        c->rs_pending = 0;
        check_phase(c->m);
    }
}

void master_resetstat_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    char name[64];
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (!c->rs_pending)
            continue;
        log_warning("%s did not confirm CONFIG RESETSTAT within %d ms; its counters may not "
                    "be reset", master_child_name(c, m->cfg, name, sizeof(name)), RESETSTAT_WAIT_MS);
        c->rs_pending = 0;
    }
    phase_done(m);
}

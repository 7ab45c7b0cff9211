/*
 * edge_pause.c - CLIENT PAUSE / UNPAUSE over the board's pause word; see
 * edge_pause.h.
 *
 * The word is (end << 1 | all), end in CLOCK_MONOTONIC ms, 0 for none; it is
 * changed by compare-and-swap only (two edges pausing at once both win the
 * stricter mode and the later end) and read with one relaxed load per
 * request.  A parked connection is held (conn_hold) by one of this edge's
 * two tokens, by the mode that parked it; each tick while some are held
 * releases those the word no longer covers (conn_release re-runs their
 * input, and the hook parks again whatever is still covered), so no list
 * of connections is kept.
 */
#include "server/edge/edge_pause.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <event2/event.h>

#include "server/core/board.h"
#include "server/core/clock.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"

/* A connection parked under WRITE waits for the pause to end; one parked
 * under ALL may go (to be parked again if it writes) once it is down to
 * WRITE: each is held by the token of its mode. */
struct edge_pause {
    struct event *tick;
    uint64_t parked[2];           /* held by token[0] (WRITE) and token[1] (ALL) */
    char token[2];
};

static _Atomic uint64_t *word(struct edge *e)
{
    return &e->ctx->board->client_pause;
}

/* The pause in force now: 0 none, 1 writes, 2 all. */
static int mode_now(struct edge *e)
{
    uint64_t w = atomic_load_explicit(word(e), memory_order_relaxed);
    if (w == 0 || (int64_t)(w >> 1) <= clock_mono_ms())
        return 0;
    return (w & 1) ? 2 : 1;
}

static void arm(struct edge_pause *p)
{
    struct timeval tv = {0, PAUSE_TICK_MS * 1000};
    evtimer_add(p->tick, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    struct edge_pause *p = e->pause;
    int mode = mode_now(e);
    /* those the pause no longer covers try again (park() counts them again,
     * and re-arms, when they are still covered) */
    for (int m = 0; m < 2; m++) {
        if (p->parked[m] > 0 && mode <= m) {
            board_add(&e->stats->blocked_clients, -(int64_t)p->parked[m]);
            p->parked[m] = 0;
            conn_release(e, &p->token[m]);
        }
    }
    if (p->parked[0] + p->parked[1] > 0)
        arm(p);
}

void edge_pause_conn_gone(struct conn *c)
{
    struct edge_pause *p = c->e->pause;
    for (int m = 0; p != NULL && m < 2; m++) {
        if (c->hold == &p->token[m] && p->parked[m] > 0) {
            p->parked[m]--;
            board_add(&c->e->stats->blocked_clients, -1);
        }
    }
}

static int park(struct conn *c, int mode)
{
    struct edge *e = c->e;
    if (e->pause == NULL) {
        struct edge_pause *p = calloc(1, sizeof(*p));
        if (p == NULL || (p->tick = evtimer_new(e->base, on_tick, e)) == NULL) {
            free(p);
            return 0; /* cannot wait without a timer: run it (never fail it) */
        }
        e->pause = p;
    }
    struct edge_pause *p = e->pause;
    conn_hold(c, &p->token[mode - 1]);
    if (p->parked[0] + p->parked[1] == 0)
        arm(p);
    p->parked[mode - 1]++;
    board_add(&e->stats->blocked_clients, 1);
    board_add(&e->stats->client_pause_parked, 1);
    return 1;
}

int edge_pause_mode(struct edge *e)
{
    if (atomic_load_explicit(word(e), memory_order_relaxed) == 0)
        return 0;
    return mode_now(e);
}

int edge_pause_hold(struct conn *c, int write)
{
    int mode = edge_pause_mode(c->e);
    return (mode == 2 || (mode == 1 && write)) ? park(c, mode) : 0;
}

void edge_pause_cmd(struct conn *c, int argc, const struct resp_slice *argv)
{
    uint64_t all = 1;
    if (argc == 4) {
        if (edge_arg_is(&argv[3], "write")) {
            all = 0;
        } else if (!edge_arg_is(&argv[3], "all")) {
            resp_add_error(&c->out, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    } else if (argc != 3) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                                 "'%.*s'. Try CLIENT HELP.", (int)argv[1].len, argv[1].p);
        return;
    }
    long long ms;
    if (edge_arg_ll(&argv[2], &ms) != 0) {
        resp_add_error(&c->out, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        resp_add_error(&c->out, "ERR timeout is negative");
        return;
    }
    int64_t now = clock_mono_ms();
    if (ms > ((int64_t)1 << 61) - now) {
        resp_add_error(&c->out, "ERR timeout is out of range");
        return;
    }
    /* 0: a pause that has ended already (Redis's end of 0), which still
     * raises the mode of one in force */
    uint64_t end = ms > 0 ? (uint64_t)(now + ms) : 0;
    _Atomic uint64_t *w = word(c->e);
    uint64_t old = atomic_load_explicit(w, memory_order_relaxed), next;
    do {
        uint64_t old_end = old >> 1, old_all = old & 1;
        if ((int64_t)old_end <= now)
            old_end = old_all = 0; /* an ended pause does not count */
        next = (end > old_end ? end : old_end) << 1 | (all | old_all);
        if ((next >> 1) == 0)
            next = 0;
    } while (!atomic_compare_exchange_weak_explicit(w, &old, next, memory_order_relaxed,
                                                    memory_order_relaxed));
    resp_add_simple(&c->out, "OK");
}

void edge_unpause_cmd(struct conn *c)
{
    atomic_store_explicit(word(c->e), 0, memory_order_relaxed);
    resp_add_simple(&c->out, "OK");
}

void edge_pause_teardown(struct edge *e)
{
    if (e->pause == NULL)
        return;
    event_free(e->pause->tick);
    free(e->pause);
    e->pause = NULL;
}

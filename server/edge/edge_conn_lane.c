/*
 * edge_conn_lane.c - the write lane of the connection layer (edge_conn.h
 * says what it is for; edge_conn_lane.h what the layer calls).
 *
 * Lane connections' read events have priority 0 (the owner links' own,
 * edge.c) and the connections sit in a small epoll set of their own
 * (conns_st(e)->lane_ep, made at the first lane connection) as well as libevent's.
 * lane_tick, after each client read, looks at that set and at the owners
 * (e->conns->opts.poll) every CONN_POLL_EVERY reads.  A lane connection found
 * readable is made active with event_active: its priority being above the
 * running one, libevent ends the turn's client callbacks there, serves it,
 * and then goes on with the clients still ready (nothing is skipped, the
 * turn is only reordered).  Cost when no connection writes: a counter; with
 * a writer connected, one epoll_wait on the lane's set per
 * CONN_POLL_EVERY reads.
 */
#include "server/edge/edge_conn_lane.h"

#include "server/edge/edge_conn_int.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <event2/event.h>

#define PRIO_LANE 0               /* the owner links' priority (edge.c) */
#define PRIO_CLIENT 1

static void lane_leave(struct conn *c)
{
    struct edge *e = c->e;
    if (!c->lane)
        return;
    if (event_priority_set(c->rev, PRIO_CLIENT) != 0)
        return; /* active right now: next batch */
    epoll_ctl(conns_st(e)->lane_ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->lane = 0;
    conns_st(e)->nlane--;
}

static void lane_join(struct conn *c)
{
    struct edge *e = c->e;
    if (c->lane || conns_st(e)->nlane >= CONN_LANE_MAX)
        return;
    if (conns_st(e)->lane_ep <= 0) {
        int fd = epoll_create1(EPOLL_CLOEXEC);
        if (fd <= 0) { /* 0 would read as "none": keep stdin's slot out of it */
            if (fd == 0)
                close(fd);
            return;
        }
        conns_st(e)->lane_ep = fd;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(conns_st(e)->lane_ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        return;
    if (event_priority_set(c->rev, PRIO_LANE) != 0) {
        epoll_ctl(conns_st(e)->lane_ep, EPOLL_CTL_DEL, c->fd, NULL);
        return;
    }
    c->lane = 1;
    conns_st(e)->nlane++;
}

void lane_after_batch(struct conn *c)
{
    if (c->batch.reads || c->batch.n > CONN_LANE_BATCH || c->batch.owed > CONN_LANE_BATCH)
        lane_leave(c);
    else if (c->batch.writes)
        lane_join(c);
}

/* Lane connections with bytes to read are made active (they run before the
 * rest of the turn's clients: edge_conn.h). */
static void lane_poll(struct edge *e)
{
    struct epoll_event evs[16];
    int n = epoll_wait(conns_st(e)->lane_ep, evs, 16, 0);
    for (int i = 0; i < n; i++) {
        struct conn *c = evs[i].data.ptr;
        if (!c->paused && !c->close_after_write && c->hold == NULL)
            event_active(c->rev, EV_READ, 1);
    }
}

void lane_tick(struct edge *e, int in_lane)
{
    if (++conns_st(e)->reads % CONN_POLL_EVERY != 0)
        return;
    if (e->conns->opts.poll != NULL)
        e->conns->opts.poll(e);
    if (conns_st(e)->nlane > 0 && !in_lane)
        lane_poll(e);
}

void lane_forget(struct conn *c)
{
    if (!c->lane)
        return;
    epoll_ctl(conns_st(c->e)->lane_ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->lane = 0;
    conns_st(c->e)->nlane--;
}

void lane_teardown(struct edge *e)
{
    if (conns_st(e)->lane_ep > 0)
        close(conns_st(e)->lane_ep);
    conns_st(e)->lane_ep = 0;
}

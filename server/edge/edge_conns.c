/*
 * edge_conns.c - the connection layer as one module of the edge (e->conns,
 * edge_conn.h): its state made, given new options and freed, and the walks
 * over every connection (the 100 ms checks, a stop, closing them all).
 * One connection's life is edge_conn.c's.
 */
#include "server/edge/edge_conn.h"

#include <stdlib.h>

#include "server/edge/edge_conn_int.h"
#include "server/edge/edge_conn_lane.h"
#include "server/edge/edge_conn_limit.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_reply.h"

void conns_cron(struct edge *e, int64_t now)
{
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (!conn_cron_ok(c, now))
            conn_close(c);
        c = next;
    }
}

void conns_stop(struct edge *e)
{
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (buf_unread(&c->out) == 0 && c->sq_head == NULL) {
            conn_close(c);
        } else {
            c->close_after_write = 1;
            event_del(c->rev);
        }
        c = next;
    }
}

void conns_close_all(struct edge *e)
{
    if (e->conns == NULL)
        return;
    while (e->conns->list != NULL)
        conn_close(e->conns->list);
    lane_teardown(e);
}

int conns_setup(struct edge *e, const struct conns_opts *opts)
{
    struct conns_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -1;
    st->pub.opts = *opts;
    e->conns = &st->pub;
    return 0;
}

void conns_reload(struct edge_conns *x, const struct conns_opts *opts)
{
    const struct conn_hooks *hooks = x->opts.hooks;
    void (*poll)(struct edge *) = x->opts.poll;
    x->opts = *opts;
    x->opts.hooks = hooks;
    x->opts.poll = poll;
    for (struct conn *c = x->list; c != NULL; c = c->next)
        c->parser.lim = x->opts.limits;
}

void conns_teardown(struct edge_conns **xp)
{
    struct conns_state *st = (struct conns_state *)*xp;
    if (st == NULL)
        return;
    slots_teardown(st);
    free(st);
    *xp = NULL;
}

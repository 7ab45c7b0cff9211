/*
 * edge_client_kill.c - CLIENT KILL (edge_client.h): Redis's filters over
 * every client of the host; one of another edge is asked to close through
 * the clients board and waited for (at most KILL_WAIT_MS).
 */
#include "server/edge/edge_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/auth.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_op_int.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

/* What CLIENT KILL matches (Redis's filters; empty: not given). */
struct kill_filter {
    const struct resp_slice *addr, *laddr, *user;
    uint64_t id;
    int other_type;               /* TYPE master/replica/pubsub: no hotkvd client */
    int skipme;
};

/* A client of another edge asked to close, waited for. */
struct kill_target {
    uint32_t slot, idx;
    uint64_t id;
};

struct kill_args {
    int64_t killed;
    int64_t deadline_ms;
    struct kill_target *targets;
    uint32_t n, cap;
    int old_form;
    int close_self;
};
_Static_assert(sizeof(struct kill_args) <= OP_ARGS_MAX, "kill_args too large for an op");
#define K(op) OP_ARGS(op, struct kill_args)

#define KILL_WAIT_MS 1000         /* an edge that does not act by then is not waited for */

static int str_is(const char *s, const struct resp_slice *v)
{
    return v == NULL || (strlen(s) == v->len && memcmp(s, v->p, v->len) == 0);
}

static int kill_matches(const struct kill_filter *f, uint64_t id, const char *addr,
                        const char *laddr, const char *user)
{
    return !f->other_type && (f->id == 0 || f->id == id) && str_is(addr, f->addr) &&
           str_is(laddr, f->laddr) && str_is(user, f->user);
}

struct kill_scan {
    const struct kill_filter *f;
    struct kill_args *k;
    struct edge *e;
};

static void kill_other(const struct board_client *r, uint32_t slot, uint32_t idx, void *arg)
{
    struct kill_scan *ks = arg;
    uint64_t id = atomic_load_explicit(&r->id, memory_order_relaxed);
    if (!kill_matches(ks->f, id, r->addr, r->laddr, r->user))
        return;
    struct kill_args *k = ks->k;
    if (k->n == k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 8;
        struct kill_target *t = realloc(k->targets, cap * sizeof(*t));
        if (t == NULL)
            return;
        k->targets = t;
        k->cap = cap;
    }
    clients_kill_other(ks->e, slot, idx, id);
    k->targets[k->n++] = (struct kill_target){slot, idx, id};
    k->killed++;
}

/* Redis's CLIENT KILL parser.  0, or -1 with the error written. */
static int kill_parse(struct conn *c, int argc, const struct resp_slice *argv,
                      struct kill_filter *f)
{
    memset(f, 0, sizeof(*f));
    f->skipme = 1;
    if (argc == 3) { /* the old form, ADDR only: may kill the caller */
        f->addr = &argv[2];
        f->skipme = 0;
        return 0;
    }
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc) {
            resp_add_error(&c->out, "ERR syntax error");
            return -1;
        }
        const struct resp_slice *o = &argv[i], *v = &argv[i + 1];
        long long n;
        if (edge_arg_is(o, "id")) {
            if (edge_arg_ll(v, &n) != 0 || n < 1) {
                resp_add_error(&c->out, "ERR client-id should be greater than 0");
                return -1;
            }
            f->id = (uint64_t)n;
        } else if (edge_arg_is(o, "type")) {
            if (!edge_arg_is(v, "normal") && !edge_arg_is(v, "master") &&
                !edge_arg_is(v, "replica") && !edge_arg_is(v, "slave") &&
                !edge_arg_is(v, "pubsub")) {
                resp_add_errorf(&c->out, "ERR Unknown client type '%.*s'", (int)v->len, v->p);
                return -1;
            }
            f->other_type = !edge_arg_is(v, "normal");
        } else if (edge_arg_is(o, "addr")) {
            f->addr = v;
        } else if (edge_arg_is(o, "laddr")) {
            f->laddr = v;
        } else if (edge_arg_is(o, "user")) {
            if (auth_user_find(c->e->auth->users, v->p, v->len) < 0) {
                resp_add_errorf(&c->out, "ERR No such user '%.*s'", (int)v->len, v->p);
                return -1;
            }
            f->user = v;
        } else if (edge_arg_is(o, "skipme")) {
            if (!edge_arg_is(v, "yes") && !edge_arg_is(v, "no")) {
                resp_add_error(&c->out, "ERR syntax error");
                return -1;
            }
            f->skipme = edge_arg_is(v, "yes");
        } else {
            resp_add_error(&c->out, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

static void kill_reply(struct op *op)
{
    struct kill_args *k = K(op);
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        if (!k->old_form)
            resp_add_int(out, k->killed);
        else if (k->killed == 0)
            resp_add_error(out, "ERR No such client");
        else
            resp_add_simple(out, "OK");
        if (k->close_self)
            op->c->close_after_write = 1;
    }
    free(k->targets);
    k->targets = NULL;
    op_finish(op);
}

static void kill_unlink(struct op *op)
{
    struct edge *e = op->e;
    for (struct op **p = &e->ops->kill_waits; *p != NULL; p = &(*p)->next)
        if (*p == op) {
            *p = op->next;
            op->next = NULL;
            return;
        }
}

static void kill_cancel(struct op *op)
{
    kill_unlink(op);
    free(K(op)->targets);
    K(op)->targets = NULL;
    op_finish(op);
}

static const struct op_family kill_family = {.cancel = kill_cancel};

void client_kill_cron(struct edge *e, int64_t now_ms)
{
    struct op *op = e->ops->kill_waits;
    while (op != NULL) {
        struct op *next = op->next;
        struct kill_args *k = K(op);
        int waiting = 0;
        for (uint32_t i = 0; i < k->n && !waiting; i++)
            waiting = clients_still_there(e, k->targets[i].slot, k->targets[i].idx,
                                          k->targets[i].id);
        if (!waiting || now_ms >= k->deadline_ms) {
            kill_unlink(op);
            kill_reply(op);
        }
        op = next;
    }
}

/* CLIENT KILL: this edge's matching clients are closed now (the caller
 * after its reply), other edges' are asked to close theirs and waited for
 * (edge_clients.h), bounded by KILL_WAIT_MS. */
void client_kill_cmd(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct kill_filter f;
    if (kill_parse(c, argc, argv, &f) != 0)
        return;
    struct op *op = op_new(c, &kill_family, "client|kill");
    if (op == NULL)
        return;
    struct kill_args *k = K(op);
    k->old_form = argc == 3;
    k->deadline_ms = clock_mono_ms() + KILL_WAIT_MS;
    struct conn *x = c->e->conns->list;
    while (x != NULL) {
        struct conn *next = x->next;
        const char *user =
            sess_of(x)->user >= 0 ? auth_user_name(c->e->auth->users, sess_of(x)->user) : "default";
        if (kill_matches(&f, x->id, x->addr, x->laddr, user) && !(x == c && f.skipme)) {
            k->killed++;
            if (x == c)
                k->close_self = 1;
            else
                conn_close(x);
        }
        x = next;
    }
    struct kill_scan ks = {&f, k, c->e};
    clients_each_other(c->e, kill_other, &ks);
    if (k->n == 0) {
        kill_reply(op);
        return;
    }
    op->next = c->e->ops->kill_waits;
    c->e->ops->kill_waits = op;
}



/*
 * edge_clients.c - the clients board, this edge's side (edge_clients.h).
 *
 * Rows are written seqlock-style by this edge only: seq goes odd, the
 * fields change, seq goes even (release); a reader copies the row between
 * two reads of seq and keeps the copy only if both were the same even
 * number, retrying a few times (a row that keeps changing is skipped, not
 * waited for).  kill_id is the one field others write.
 */
#include "server/edge/edge_clients.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/edge/auth.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

#define NO_ROW (-1)
#define READ_TRIES 8
#define FULL_REFRESH_TICKS 10     /* every row once a second (cron: 100 ms) */

static struct board_clients *my_table(struct edge *e)
{
    return board_clients(e->ctx->board, (uint32_t)e->ctx->slot);
}

/* This edge's rows (a module of the edge: e->clients). */
struct edge_clients {
    struct board_clients *table;  /* this edge's table in the board */
    struct conn **conns;          /* row -> connection (board->clients_cap entries) */
    uint32_t *free;               /* rows freed, a stack */
    uint32_t nfree;
    uint32_t used;                /* rows [0, used) were handed out */
    int tick;                     /* cron ticks, for the full refresh */
};

int clients_setup(struct edge *e)
{
    struct board *b = e->ctx->board;
    struct board_clients *t = my_table(e);
    /* A predecessor's rows: nobody lists them (owner_pid is not ours yet);
     * clear them before claiming the table. */
    atomic_store_explicit(&t->owner_pid, 0, memory_order_release);
    uint32_t used = atomic_load_explicit(&t->used, memory_order_relaxed);
    if (used > b->clients_cap)
        used = b->clients_cap;
    for (uint32_t i = 0; i < used; i++) {
        struct board_client *r = board_client_row(b, (uint32_t)e->ctx->slot, i);
        atomic_store_explicit(&r->id, 0, memory_order_relaxed);
        atomic_store_explicit(&r->kill_id, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&t->used, 0, memory_order_relaxed);
    atomic_store_explicit(&t->kills, 0, memory_order_relaxed);
    struct edge_clients *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -1;
    m->table = t;
    m->conns = calloc(b->clients_cap, sizeof(*m->conns));
    m->free = calloc(b->clients_cap, sizeof(*m->free));
    if (m->conns == NULL || m->free == NULL) {
        clients_teardown(&m);
        return -1;
    }
    atomic_store_explicit(&t->owner_pid, (int32_t)getpid(), memory_order_release);
    e->clients = m;
    return 0;
}

void clients_teardown(struct edge_clients **mp)
{
    struct edge_clients *m = *mp;
    if (m == NULL)
        return;
    atomic_store_explicit(&m->table->owner_pid, 0, memory_order_release);
    free(m->conns);
    free(m->free);
    free(m);
    *mp = NULL;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void clients_fill(const struct conn *c, struct board_client *r)
{
    /* omem: what client-output-buffer-limit counts (the bytes waiting to be
     * sent, replies owed included); obl: those in the reply buffer; oll:
     * the replies owed behind it */
    size_t omem = conn_held(c), oll = c->nslots;
    int writing = event_pending(c->wev, EV_WRITE, NULL) != 0;
    r->resp = (uint32_t)sess_of(c)->proto;
    r->created_ms = c->created_ms;
    r->last_ms = c->last_ms;
    r->fd = c->fd;
    r->cmd = sess_of(c)->last_stat;
    r->events[0] = c->paused ? (writing ? 'w' : '\0') : 'r';
    r->events[1] = !c->paused && writing ? 'w' : '\0';
    r->qbuf = buf_unread(&c->in);
    r->qbuf_free = c->in.cap - c->in.len;
    r->rbs = c->out.cap;
    r->rbp = c->out_peak;
    r->obl = buf_unread(&c->out);
    r->oll = oll;
    r->omem = omem;
    r->tot_mem = sizeof(*c) + c->in.cap + c->out.cap + omem +
                 (sess_of(c)->name ? strlen(sess_of(c)->name) : 0);
    const struct pubsub_sess *ps = sess_of(c)->pubsub;
    r->sub = ps != NULL ? (uint32_t)ps->nch : 0;
    r->psub = ps != NULL ? (uint32_t)ps->npat : 0;
    r->flags = (sess_of(c)->monitor ? BOARD_CLIENT_F_MONITOR : 0) |
               (r->sub + r->psub > 0 ? BOARD_CLIENT_F_PUBSUB : 0);
    copy_str(r->addr, sizeof(r->addr), c->addr);
    copy_str(r->laddr, sizeof(r->laddr), c->laddr);
    copy_str(r->user, sizeof(r->user),
             sess_of(c)->user >= 0 ? auth_user_name(c->e->auth->users, sess_of(c)->user)
                                   : "default");
    size_t n = sess_of(c)->name != NULL ? strlen(sess_of(c)->name) : 0;
    r->name_len = (uint32_t)n;
    memcpy(r->name, sess_of(c)->name != NULL ? sess_of(c)->name : "",
           n < sizeof(r->name) ? n : sizeof(r->name));
}

static void write_row(struct conn *c)
{
    struct board_client *r = board_client_row(c->e->ctx->board, (uint32_t)c->e->ctx->slot,
                                              (uint32_t)sess_of(c)->board_row);
    uint32_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);
    atomic_store_explicit(&r->seq, s | 1u, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    clients_fill(c, r);
    atomic_store_explicit(&r->id, c->id, memory_order_relaxed);
    atomic_store_explicit(&r->seq, (s | 1u) + 1, memory_order_release);
    sess_of(c)->board_ncmds = sess_of(c)->ncmds;
}

void clients_accepted(struct conn *c)
{
    struct edge *e = c->e;
    sess_of(c)->board_row = NO_ROW;
    if (e->clients == NULL)
        return;
    uint32_t i;
    if (e->clients->nfree > 0)
        i = e->clients->free[--e->clients->nfree];
    else if (e->clients->used < e->ctx->board->clients_cap)
        i = e->clients->used++;
    else
        return; /* past the table: listed by this edge only */
    struct board_clients *t = my_table(e);
    if (atomic_load_explicit(&t->used, memory_order_relaxed) < e->clients->used)
        atomic_store_explicit(&t->used, e->clients->used, memory_order_relaxed);
    struct board_client *r = board_client_row(e->ctx->board, (uint32_t)e->ctx->slot, i);
    atomic_store_explicit(&r->kill_id, 0, memory_order_relaxed);
    e->clients->conns[i] = c;
    sess_of(c)->board_row = (int32_t)i;
    write_row(c);
}

void clients_publish(struct conn *c)
{
    if (sess_of(c)->board_row != NO_ROW)
        write_row(c);
}

void clients_gone(struct conn *c)
{
    struct edge *e = c->e;
    if (sess_of(c)->board_row == NO_ROW)
        return;
    uint32_t i = (uint32_t)sess_of(c)->board_row;
    struct board_client *r = board_client_row(e->ctx->board, (uint32_t)e->ctx->slot, i);
    uint32_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);
    atomic_store_explicit(&r->seq, s | 1u, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&r->id, 0, memory_order_relaxed);
    atomic_store_explicit(&r->seq, (s | 1u) + 1, memory_order_release);
    e->clients->conns[i] = NULL;
    e->clients->free[e->clients->nfree++] = i;
    sess_of(c)->board_row = NO_ROW;
}

void clients_cron(struct edge *e, int64_t now_ms)
{
    if (e->clients == NULL)
        return;
    struct board_clients *t = my_table(e);
    if (atomic_exchange_explicit(&t->kills, 0, memory_order_acq_rel) != 0) {
        for (uint32_t i = 0; i < e->clients->used; i++) {
            struct conn *c = e->clients->conns[i];
            struct board_client *r = board_client_row(e->ctx->board, (uint32_t)e->ctx->slot, i);
            if (c != NULL && atomic_load_explicit(&r->kill_id, memory_order_acquire) == c->id)
                conn_close(c); /* clients_gone frees the row: the asker sees it go */
        }
    }
    int full = ++e->clients->tick % FULL_REFRESH_TICKS == 0;
    for (uint32_t i = 0; i < e->clients->used; i++) {
        struct conn *c = e->clients->conns[i];
        if (c != NULL && (full || sess_of(c)->ncmds != sess_of(c)->board_ncmds))
            write_row(c);
    }
}

/* A consistent copy of row r into out: 1, or 0 (free, or never still). */
static int read_row(const struct board_client *r, struct board_client *out)
{
    for (int t = 0; t < READ_TRIES; t++) {
        uint32_t s1 = atomic_load_explicit(&r->seq, memory_order_acquire);
        if (s1 & 1u)
            continue;
        memcpy(out, (const void *)r, sizeof(*out));
        atomic_thread_fence(memory_order_acquire);
        uint32_t s2 = atomic_load_explicit(&r->seq, memory_order_relaxed);
        if (s1 == s2)
            return atomic_load_explicit(&out->id, memory_order_relaxed) != 0;
    }
    return 0;
}

/* The table of slot s if a live edge other than this one publishes in it. */
static struct board_clients *live_table(struct edge *e, uint32_t s)
{
    struct board *b = e->ctx->board;
    if (s == (uint32_t)e->ctx->slot ||
        atomic_load_explicit(&b->slots[s].role, memory_order_relaxed) != BOARD_EDGE)
        return NULL;
    struct board_clients *t = board_clients(b, s);
    int32_t pid = atomic_load_explicit(&t->owner_pid, memory_order_acquire);
    if (pid == 0 || pid != atomic_load_explicit(&b->slots[s].pid, memory_order_relaxed))
        return NULL;
    return t;
}

void clients_each_other(struct edge *e, clients_fn fn, void *arg)
{
    struct board *b = e->ctx->board;
    struct board_client copy;
    for (uint32_t s = 0; s < b->nslots; s++) {
        struct board_clients *t = live_table(e, s);
        if (t == NULL)
            continue;
        uint32_t used = atomic_load_explicit(&t->used, memory_order_relaxed);
        if (used > b->clients_cap)
            used = b->clients_cap;
        for (uint32_t i = 0; i < used; i++)
            if (read_row(board_client_row(b, s, i), &copy)) {
                copy.addr[sizeof(copy.addr) - 1] = '\0'; /* nothing read is trusted */
                copy.laddr[sizeof(copy.laddr) - 1] = '\0';
                copy.user[sizeof(copy.user) - 1] = '\0';
                fn(&copy, s, i, arg);
            }
    }
}

void clients_kill_other(struct edge *e, uint32_t slot, uint32_t idx, uint64_t id)
{
    struct board *b = e->ctx->board;
    if (slot >= b->nslots || idx >= b->clients_cap)
        return;
    atomic_store_explicit(&board_client_row(b, slot, idx)->kill_id, id, memory_order_release);
    atomic_fetch_add_explicit(&board_clients(b, slot)->kills, 1, memory_order_acq_rel);
}

int clients_still_there(struct edge *e, uint32_t slot, uint32_t idx, uint64_t id)
{
    struct board *b = e->ctx->board;
    if (slot >= b->nslots || idx >= b->clients_cap || live_table(e, slot) == NULL)
        return 0;
    return atomic_load_explicit(&board_client_row(b, slot, idx)->id, memory_order_acquire) == id;
}

/*
 * edge_tx.c - a connection's transaction state (edge_tx.h): MULTI, the
 * queue, DISCARD, WATCH and UNWATCH.  EXEC is edge_exec.c's.
 *
 * The queue keeps offsets into one byte buffer, so growing it moves
 * nothing that is pointed at; EXEC copies what it sends into its op, which
 * outlives the connection if need be (a write runs to its end).  Buffers
 * are shrunk when a transaction ends, so one large transaction does not pin
 * memory for the connection's life.
 *
 * WATCH's versions are read by an op of the WATCH family: one GET per key
 * (a key per request, so a missing key's NOTFOUND carries its own version)
 * on the read link (behind the client's writes when it has some in flight,
 * so a client's own write before its WATCH is seen).  The entries are added
 * at once and filled when the answers come; the generation number tells an
 * answer that arrives after its list was cleared (UNWATCH, EXEC) to leave
 * the new list alone.  The connection is held (its next requests not read)
 * until the versions are known.
 */
#include "server/edge/edge_tx.h"

#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_call.h"
#include "server/edge/edge_cmd.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_sess.h"

#define TX_KEEP 4096 /* bytes a connection keeps between transactions */

static struct edge_tx *tx_of(struct conn *c)
{
    if (sess_of(c)->tx == NULL)
        sess_of(c)->tx = calloc(1, sizeof(*sess_of(c)->tx));
    return sess_of(c)->tx;
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap < 16 ? 16 : *cap;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * size);
    if (p == NULL)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

/* Forgets the queue (keeps MULTI and the flags). */
static void queue_clear(struct edge_tx *tx)
{
    buf_reset(&tx->bytes);
    buf_shrink(&tx->bytes, TX_KEEP);
    tx->nwords = tx->ncmds = tx->nlocal = 0;
    if (tx->cmds_cap > 256) {
        free(tx->cmds);
        free(tx->words);
        tx->cmds = NULL;
        tx->words = NULL;
        tx->cmds_cap = tx->words_cap = 0;
    }
}

static void unwatch(struct conn *c)
{
    struct edge_tx *tx = sess_of(c)->tx;
    sess_of(c)->watching = 0;
    buf_reset(&tx->wbytes);
    buf_shrink(&tx->wbytes, TX_KEEP);
    tx->nwatch = 0;
    tx->watch_pending = 0;
    tx->watch_failed = 0;
    tx->gen++;
}

void edge_tx_end(struct conn *c)
{
    struct edge_tx *tx = sess_of(c)->tx;
    if (tx == NULL)
        return;
    queue_clear(tx);
    tx->multi = tx->dirty = tx->full = 0;
    unwatch(c);
}

void edge_tx_conn_gone(struct conn *c)
{
    struct edge_tx *tx = sess_of(c)->tx;
    if (tx == NULL)
        return;
    buf_deinit(&tx->bytes);
    buf_deinit(&tx->wbytes);
    free(tx->words);
    free(tx->cmds);
    free(tx->watch);
    free(tx);
    sess_of(c)->tx = NULL;
}

int edge_tx_queued(const struct conn *c)
{
    return sess_of(c)->tx != NULL && sess_of(c)->tx->multi ? (int)sess_of(c)->tx->ncmds : -1;
}

int edge_tx_writes(const struct conn *c)
{
    const struct edge_tx *tx = sess_of(c)->tx;
    for (uint32_t i = 0; tx != NULL && tx->multi && i < tx->ncmds; i++)
        if (cmd_get(tx->cmds[i].id)->flags & CMD_F_WRITE || tx->cmds[i].id == CMD_PUBLISH)
            return 1;
    return 0;
}

void edge_tx_flag(struct conn *c)
{
    if (sess_of(c)->tx != NULL && sess_of(c)->tx->multi)
        sess_of(c)->tx->dirty = 1;
}

/* ---- MULTI, DISCARD, RESET ------------------------------------------------- */

void edge_cmd_multi(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge_tx *tx = tx_of(c);
    if (tx == NULL) {
        reply_error(c, "ERR out of memory");
        return;
    }
    if (tx->multi) {
        reply_error(c, "ERR MULTI calls can not be nested");
        return;
    }
    tx->multi = 1;
    resp_add_simple(&c->out, "OK");
}

void edge_cmd_discard(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (sess_of(c)->tx == NULL || !sess_of(c)->tx->multi) {
        reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    edge_tx_end(c);
    resp_add_simple(&c->out, "OK");
}

void edge_tx_reset(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_tx_end(c);
    edge_cmd_reset(c, argc, argv);
}

/* ---- the queue ----------------------------------------------------------------- */

/* Commands the edge answers itself inside a transaction (edge_exec.c). */
static int is_local(enum cmd_id id)
{
    return id == CMD_PING || id == CMD_ECHO || id == CMD_TIME || id == CMD_LASTSAVE ||
           id == CMD_UNWATCH || id == CMD_CL_THROTTLE;
}

/* Drops the queue after a bound was passed: the error is the command's
 * reply, EXEC will answer EXECABORT. */
static void overflow(struct conn *c, struct edge_tx *tx, const char *fmt, long long n)
{
    queue_clear(tx);
    tx->dirty = tx->full = 1;
    resp_add_errorf(&c->out, fmt, n);
}

/* Copies the command into the queue; 0, or -1 with the reply written. */
static int queue_add(struct conn *c, struct edge_tx *tx, const struct cmd_def *d, int argc,
                     const struct resp_slice *argv)
{
    const struct edge_cmd_opts *lim = &c->e->cmd_opts;
    size_t total = 0;
    for (int i = 0; i < argc; i++)
        total += argv[i].len;
    if ((int64_t)tx->ncmds + 1 > lim->multi_max_commands) {
        overflow(c, tx, "ERR Transaction discarded: more than %lld commands queued "
                 "(multi-max-commands)", (long long)lim->multi_max_commands);
        return -1;
    }
    if ((uint64_t)buf_unread(&tx->bytes) + total > (uint64_t)lim->multi_max_bytes) {
        overflow(c, tx, "ERR Transaction discarded: more than %lld bytes queued "
                 "(multi-max-bytes)", (long long)lim->multi_max_bytes);
        return -1;
    }
    /* The owner takes one request of at most this many words and watched keys. */
    if ((uint64_t)tx->nwords + (uint64_t)argc + tx->nwatch + 1 > WIRE_MAX_ITEMS_DEFAULT) {
        overflow(c, tx, "ERR Transaction discarded: more than %lld words queued (the most "
                 "one owner request takes)", (long long)WIRE_MAX_ITEMS_DEFAULT);
        return -1;
    }
    if (grow((void **)&tx->cmds, &tx->cmds_cap, tx->ncmds + 1, sizeof(*tx->cmds)) != 0 ||
        grow((void **)&tx->words, &tx->words_cap, tx->nwords + (uint32_t)argc,
             sizeof(*tx->words)) != 0 ||
        buf_reserve(&tx->bytes, total + 1, 0) != HKV_OK) {
        overflow(c, tx, "ERR out of memory queuing the command (%lld bytes)", (long long)total);
        return -1;
    }
    struct tx_cmd *q = &tx->cmds[tx->ncmds++];
    q->id = d->id;
    q->w0 = tx->nwords;
    q->n = (uint32_t)argc;
    q->local = is_local(d->id);
    tx->nlocal += (uint32_t)q->local;
    for (int i = 0; i < argc; i++) {
        tx->words[tx->nwords++] = (struct tx_word){buf_unread(&tx->bytes), argv[i].len};
        buf_append(&tx->bytes, argv[i].p, argv[i].len);
    }
    return 0;
}

int edge_tx_queue(struct conn *c, const struct cmd_def *d, int argc, const struct resp_slice *argv)
{
    struct edge_tx *tx = sess_of(c)->tx;
    if (tx == NULL || !tx->multi)
        return 0;
    switch (d->id) {
    case CMD_EXEC:
    case CMD_DISCARD:
    case CMD_MULTI:
    case CMD_WATCH:
    case CMD_QUIT:
    case CMD_RESET:
        return 0;
    default:
        break;
    }
    int keyed = d->first_key > 0 && (d->flags & (CMD_F_READ | CMD_F_WRITE));
    if (!keyed && !is_local(d->id)) {
        tx->dirty = 1;
        resp_add_errorf(&c->out, "ERR Command not allowed inside a transaction: '%s' (hotkvd runs "
                        "a transaction on its keys' owner: commands with keys, and PING, ECHO, "
                        "TIME, UNWATCH)", d->name);
        return 1;
    }
    if (keyed) {
        /* Redis Cluster checks each queued command's keys on their own. */
        struct owner_ref *o;
        const char *err;
        if (edge_cmd_owner(c->e, d, argc, argv, &o, &err) != 0) {
            tx->dirty = 1;
            reply_error(c, err);
            return 1;
        }
    }
    if (!tx->full && queue_add(c, tx, d, argc, argv) != 0)
        return 1;
    resp_add_simple(&c->out, "QUEUED");
    return 1;
}

/* ---- WATCH, UNWATCH ------------------------------------------------------------- */

struct watch_args {
    uint64_t gen;                 /* the list's generation when the WATCH came */
    uint32_t first;               /* its first entry in tx->watch */
    uint32_t answered;            /* keys whose version came */
};
_Static_assert(sizeof(struct watch_args) <= OP_ARGS_MAX, "watch_args too large for an op");
#define WA(op) OP_ARGS(op, struct watch_args)

static int watch_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                        const struct wire_slice *keys, struct wire_rid rid)
{
    return wire_put_get(b, id, keys, r->nk);
}

/* The list this op fills, or NULL when it was cleared meanwhile (or the
 * client is gone). */
static struct edge_tx *watch_list(struct op *op)
{
    struct edge_tx *tx = op->c != NULL ? sess_of(op->c)->tx : NULL;
    return tx != NULL && tx->gen == WA(op)->gen ? tx : NULL;
}

static void watch_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    uint64_t version;
    int64_t expire_at = 0;
    if (m->type == WIRE_VALUE) {
        version = m->u.value.stamp;
        expire_at = (int64_t)m->u.value.expire_ms;
    } else if (m->type == WIRE_NOTFOUND) {
        version = m->u.notfound.stamp;
    } else {
        op_error(op, "ERR unexpected answer from the owner");
        return;
    }
    WA(op)->answered++;
    struct edge_tx *tx = watch_list(op);
    if (tx == NULL)
        return;
    struct tx_watch *w = &tx->watch[WA(op)->first + op->kidx[r->k0]];
    w->version = version;
    w->expire_at = expire_at;
    w->known = 1;
}

static void watch_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

/* Whatever the outcome: the WATCH is no longer pending; a version not read
 * fails the next EXEC; the connection is read again. */
static void watch_end(struct op *op)
{
    struct edge_tx *tx = watch_list(op);
    if (tx != NULL) {
        tx->watch_pending--;
        if (op->err || WA(op)->answered != op->nkeys)
            tx->watch_failed = 1;
    }
    if (op->c != NULL && sess_of(op->c)->tx != NULL && op->c->hold == sess_of(op->c)->tx)
        conn_hold(op->c, NULL); /* op_finish's conn_slot_done resumes it */
}

static const struct op_family watch_ops = {0, watch_encode, watch_answer, watch_done, NULL,
                                           watch_end};

void edge_cmd_watch(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge_tx *tx = tx_of(c);
    if (tx == NULL) {
        reply_error(c, "ERR out of memory");
        return;
    }
    if (tx->multi) {
        reply_error(c, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    const struct edge_cmd_opts *lim = &c->e->cmd_opts;
    int n = argc - 1;
    size_t total = 0;
    for (int i = 1; i < argc; i++)
        total += argv[i].len;
    struct owner_ref *o;
    const char *err;
    if (edge_cmd_owner(c->e, cmd_get(CMD_WATCH), argc, argv, &o, &err) != 0) {
        reply_error(c, err);
        return;
    }
    if ((int64_t)tx->nwatch + n > lim->multi_max_commands ||
        (uint64_t)buf_unread(&tx->wbytes) + total > (uint64_t)lim->multi_max_bytes) {
        resp_add_errorf(&c->out, "ERR more than %lld keys or %lld bytes of keys watched "
                        "(multi-max-commands, multi-max-bytes)",
                        (long long)lim->multi_max_commands, (long long)lim->multi_max_bytes);
        return;
    }
    if (grow((void **)&tx->watch, &tx->watch_cap, tx->nwatch + (uint32_t)n,
             sizeof(*tx->watch)) != 0 ||
        buf_reserve(&tx->wbytes, total + 1, 0) != HKV_OK) {
        reply_error(c, "ERR out of memory");
        return;
    }
    struct op *op = op_new(c, &watch_ops, "watch");
    if (op == NULL)
        return;
    WA(op)->gen = tx->gen;
    WA(op)->first = tx->nwatch;
    tx->watch_pending++; /* watch_end balances it, whatever happens next */
    sess_of(c)->watching = 1;     /* its reads ask the owner until the list is cleared */
    for (int i = 1; i < argc; i++) {
        tx->watch[tx->nwatch++] =
            (struct tx_watch){buf_unread(&tx->wbytes), argv[i].len, 0, 0, 0};
        buf_append(&tx->wbytes, argv[i].p, argv[i].len);
    }
    if (op_copy_keys(op, n, argv + 1, 1, NULL) != 0 ||
        op_split(op, WIRE_GET, WIRE_ROLE_READ, 1) != 0) {
        op_finish_error(op);
        return;
    }
    conn_hold(c, tx); /* until the versions are known (watch_end) */
    op_start(op);
}

void edge_cmd_unwatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (sess_of(c)->tx != NULL)
        unwatch(c);
    resp_add_simple(&c->out, "OK");
}

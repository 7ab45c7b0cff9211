/*
 * edge_read.c - the read commands, until the colo cache exists: GET, MGET,
 * EXISTS, STRLEN, TYPE, TTL, PTTL go to the key's owner on its READ link.
 *
 * Single-flight: a single-key GET (and STRLEN, TYPE, one-key EXISTS, which
 * need the same answer) joins a GET of the same key already in flight from
 * this process instead of asking the owner again; every waiter is answered
 * from the one reply.  A flight is keyed by the routing hash, which the route
 * computes anyway, and comes from a freelist.
 *
 * Order within one client: reads and writes travel on different links, so a
 * client that pipelines "SET k v; GET k" could see its GET overtake its SET.
 * While a client has a write in flight, its reads therefore go on the WRITE
 * link, behind its writes, and do not join flights.
 *
 * Reads are never retried: an owner that does not answer within write-timeout
 * gets the client "-TRYAGAIN owner <pool>/<n> did not answer".
 */
#include <stdlib.h>
#include <string.h>

#include "server/edge_int.h"

struct flight {
    struct flight *hnext;
    struct edge *e;
    uint64_t hash;
    struct hkv_buf key;
    struct owner_ref *owner;
    struct op *waiters, *wtail;
    int moved;
    int linked;
};

/* Writes one key's answer in the form its command wants. */
static void render_one(struct op *op, struct hkv_buf *out, int found, const char *v, size_t n)
{
    int proto = op->c->proto;
    switch (op->cmd) {
    case CMD_GET:
        if (found)
            resp_add_bulk(out, v, n);
        else
            resp_add_null(out, proto);
        break;
    case CMD_STRLEN:
        resp_add_int(out, found ? (int64_t)n : 0);
        break;
    case CMD_TYPE:
        resp_add_simple(out, found ? "string" : "none");
        break;
    default: /* EXISTS of one key */
        resp_add_int(out, found ? 1 : 0);
        break;
    }
}

/* ---- flights --------------------------------------------------------------- */

static struct flight **bucket(struct edge *e, uint64_t hash)
{
    return &e->flights[hash & (EDGE_FLIGHT_BUCKETS - 1)];
}

static void flight_unlink(struct flight *f)
{
    if (!f->linked)
        return;
    struct flight **pp = bucket(f->e, f->hash);
    while (*pp != f)
        pp = &(*pp)->hnext;
    *pp = f->hnext;
    f->linked = 0;
}

static void flight_free(struct flight *f)
{
    struct edge *e = f->e;
    buf_reset(&f->key);
    buf_shrink(&f->key, 1024);
    f->hnext = e->free_flights;
    e->free_flights = f;
}

static void flight_cb(void *arg, int status, const struct wire_msg *m);

static int flight_send(struct flight *f)
{
    struct elink *l = f->owner->link[WIRE_ROLE_READ];
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    struct wire_slice k = wire_slice(buf_head(&f->key), buf_unread(&f->key));
    if (wire_put_get(b, id, &k, 1) != HKV_OK || elink_commit(l, id, flight_cb, f) != HKV_OK)
        return -1;
    return 0;
}

/* Answers every waiter; m NULL with an error text, or the owner's answer. */
static void flight_answer(struct flight *f, const struct wire_msg *m, const char *err)
{
    flight_unlink(f);
    struct op *op = f->waiters;
    f->waiters = f->wtail = NULL;
    while (op != NULL) {
        struct op *next = op->next;
        struct hkv_buf *out = op_out(op);
        if (out != NULL) {
            if (err != NULL) {
                resp_add_error(out, err);
            } else if (m->type == WIRE_VALUE) {
                render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len);
            } else if (m->type == WIRE_NOTFOUND) {
                render_one(op, out, 0, NULL, 0);
            } else if (m->type == WIRE_ERROR) {
                buf_append(out, "-", 1);
                buf_append(out, m->u.error.text.p, m->u.error.text.len);
                buf_append(out, "\r\n", 2);
            } else {
                resp_add_error(out, "ERR unexpected answer from the owner");
            }
        }
        op_finish(op);
        op = next;
    }
    flight_free(f);
}

static void flight_cb(void *arg, int status, const struct wire_msg *m)
{
    struct flight *f = arg;
    struct edge *e = f->e;
    char err[128];
    if (status != HKV_OK) {
        snprintf(err, sizeof(err), "TRYAGAIN owner %s/%d did not answer", pool_name(f->owner->pool),
                 f->owner->index);
        flight_answer(f, NULL, err);
        return;
    }
    if (m->type == WIRE_VALUE)
        hlc_observe(&e->hlc, m->u.value.stamp);
    if (m->type == WIRE_MOVED && !f->moved) {
        f->moved = 1;
        router_moved(e->router, f->owner->pool, m->u.moved.leaf, m->u.moved.leaf_bits,
                     (int)m->u.moved.owner, m->u.moved.map_gen);
        struct route rt;
        struct owner_ref *o = edge_owner_of(e, buf_head(&f->key), buf_unread(&f->key), &rt);
        if (o != NULL) {
            f->owner = o;
            if (flight_send(f) == 0)
                return;
        }
    }
    if (m->type == WIRE_MOVED) {
        snprintf(err, sizeof(err), "TRYAGAIN owner %s/%d moved the key", pool_name(f->owner->pool),
                 f->owner->index);
        flight_answer(f, NULL, err);
        return;
    }
    flight_answer(f, m, NULL);
}

void edge_flights_teardown(struct edge *e)
{
    for (size_t i = 0; i < EDGE_FLIGHT_BUCKETS; i++) {
        while (e->flights[i] != NULL) {
            struct flight *f = e->flights[i];
            e->flights[i] = f->hnext;
            buf_deinit(&f->key);
            free(f);
        }
    }
    while (e->free_flights != NULL) {
        struct flight *f = e->free_flights;
        e->free_flights = f->hnext;
        buf_deinit(&f->key);
        free(f);
    }
}

/* ---- single-key reads ------------------------------------------------------ */

static void one_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    if (m->type == WIRE_VALUE)
        render_one(op, out, 1, m->u.value.value.p, m->u.value.value.len);
    else if (m->type == WIRE_NOTFOUND)
        render_one(op, out, 0, NULL, 0);
    else
        resp_add_error(out, "ERR unexpected answer from the owner");
}

static void finish(struct op *op)
{
    op_finish(op);
}

/* GET, STRLEN, TYPE and one-key EXISTS. */
static void read_one(struct conn *c, enum cmd_id cmd, const struct resp_slice *key)
{
    struct edge *e = c->e;
    if (c->writes_inflight > 0) {
        /* Behind this client's writes, on the write link: no flight. */
        struct op *op = op_new(c, cmd, 0);
        if (op == NULL)
            return;
        op->answer = one_answer;
        op->done = finish;
        if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_GET, WIRE_ROLE_READ) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
        return;
    }
    struct route rt;
    struct owner_ref *o = edge_owner_of(e, key->p, key->len, &rt);
    if (o == NULL) {
        reply_error(c, "ERR no owner serves this key's pool");
        return;
    }
    struct flight *f = *bucket(e, rt.hash);
    while (f != NULL && !(f->hash == rt.hash && buf_unread(&f->key) == key->len &&
                          memcmp(buf_head(&f->key), key->p, key->len) == 0))
        f = f->hnext;
    int fresh = f == NULL;
    if (fresh) {
        f = e->free_flights;
        if (f != NULL)
            e->free_flights = f->hnext;
        else if ((f = calloc(1, sizeof(*f))) == NULL) {
            reply_error(c, "ERR out of memory");
            return;
        }
        f->e = e;
        f->hash = rt.hash;
        f->owner = o;
        f->moved = 0;
        f->waiters = f->wtail = NULL;
        if (buf_append(&f->key, key->p, key->len) != HKV_OK || flight_send(f) != 0) {
            flight_free(f);
            reply_error(c, "ERR out of memory");
            return;
        }
        f->hnext = *bucket(e, rt.hash);
        *bucket(e, rt.hash) = f;
        f->linked = 1;
    }
    struct op *op = op_new(c, cmd, 0);
    if (op == NULL)
        return; /* the flight goes on for its other waiters, or alone */
    op->next = NULL;
    if (f->wtail)
        f->wtail->next = op;
    else
        f->waiters = op;
    f->wtail = op;
}

void edge_cmd_get(struct conn *c, int argc, const struct resp_slice *argv)
{
    read_one(c, CMD_GET, &argv[1]);
}

void edge_cmd_strlen(struct conn *c, int argc, const struct resp_slice *argv)
{
    read_one(c, CMD_STRLEN, &argv[1]);
}

void edge_cmd_type(struct conn *c, int argc, const struct resp_slice *argv)
{
    read_one(c, CMD_TYPE, &argv[1]);
}

/* ---- TTL, PTTL -------------------------------------------------------------- */

static void ttl_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    struct hkv_buf *out = op_out(op);
    if (out == NULL)
        return;
    if (m->type != WIRE_INT) {
        resp_add_error(out, "ERR unexpected answer from the owner");
        return;
    }
    int64_t ms = m->u.integer.value;
    if (op->cmd == CMD_TTL && ms >= 0)
        ms = (ms + 500) / 1000; /* Redis rounds */
    resp_add_int(out, ms);
}

static void ttl(struct conn *c, enum cmd_id cmd, const struct resp_slice *key)
{
    struct op *op = op_new(c, cmd, 0);
    if (op == NULL)
        return;
    op->answer = ttl_answer;
    op->done = finish;
    if (op_copy_keys(op, 1, key, 1, NULL) != 0 || op_single(op, WIRE_TTL, WIRE_ROLE_READ) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

void edge_cmd_ttl(struct conn *c, int argc, const struct resp_slice *argv)
{
    ttl(c, CMD_TTL, &argv[1]);
}

void edge_cmd_pttl(struct conn *c, int argc, const struct resp_slice *argv)
{
    ttl(c, CMD_PTTL, &argv[1]);
}

/* ---- MGET, EXISTS ----------------------------------------------------------- */

/* The i-th key's answer inside one owner's reply (VALUE/NOTFOUND for a
 * one-key GET, VALUES otherwise). */
static int item(const struct wire_msg *m, uint32_t i, struct wire_slice *v)
{
    if (m->type == WIRE_VALUE && i == 0) {
        *v = m->u.value.value;
        return 1;
    }
    if (m->type == WIRE_VALUES && i < m->u.values.nitems && m->u.values.items[i].found) {
        *v = m->u.values.items[i].value;
        return 1;
    }
    return 0;
}

static int shape_ok(const struct oreq *r, const struct wire_msg *m)
{
    if (m->type == WIRE_VALUES)
        return m->u.values.nitems == r->nk;
    return r->nk == 1 && (m->type == WIRE_VALUE || m->type == WIRE_NOTFOUND);
}

static void mget_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!shape_ok(r, m)) {
        op_error(op, "ERR unexpected answer from owner %s/%d", pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    if (op->nreqs == 1) {
        /* One owner holds every key: the reply is written straight away. */
        struct hkv_buf *out = op_out(op);
        op->rendered = 1;
        if (out == NULL)
            return;
        resp_add_array(out, r->nk);
        for (uint32_t i = 0; i < r->nk; i++) {
            struct wire_slice v;
            if (item(m, i, &v))
                resp_add_bulk(out, v.p, v.len);
            else
                resp_add_null(out, op->c->proto);
        }
        return;
    }
    for (uint32_t i = 0; i < r->nk; i++) {
        struct mres *x = &op->mres[op->kidx[r->k0 + i]];
        struct wire_slice v;
        x->found = item(m, i, &v);
        if (x->found) {
            x->off = buf_unread(&op->res);
            x->len = v.len;
            if (buf_append(&op->res, v.p, v.len) != HKV_OK)
                op_error(op, "ERR out of memory");
        }
    }
}

static void mget_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL && !op->rendered) {
        resp_add_array(out, op->nkeys);
        for (uint32_t k = 0; k < op->nkeys; k++) {
            struct mres *x = &op->mres[k];
            if (x->found)
                resp_add_bulk(out, buf_head(&op->res) + x->off, x->len);
            else
                resp_add_null(out, op->c->proto);
        }
    }
    op_finish(op);
}

static void exists_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (!shape_ok(r, m)) {
        op_error(op, "ERR unexpected answer from owner %s/%d", pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    struct wire_slice v;
    for (uint32_t i = 0; i < r->nk; i++)
        op->acc += item(m, i, &v);
}

static void acc_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, op->acc);
    op_finish(op);
}

static void multi_read(struct conn *c, enum cmd_id cmd, int n, const struct resp_slice *keys)
{
    struct op *op = op_new(c, cmd, 0);
    if (op == NULL)
        return;
    op->answer = cmd == CMD_MGET ? mget_answer : exists_answer;
    op->done = cmd == CMD_MGET ? mget_done : acc_done;
    if (op_copy_keys(op, n, keys, 1, NULL) != 0 || op_split(op, WIRE_GET, WIRE_ROLE_READ, 0) != 0) {
        op_finish_error(op);
        return;
    }
    if (cmd == CMD_MGET && op->nreqs > 1) {
        if (op->mres_cap < (uint32_t)n) {
            struct mres *x = realloc(op->mres, (size_t)n * sizeof(*x));
            if (x == NULL) {
                op_error(op, "ERR out of memory");
                op_finish_error(op);
                return;
            }
            op->mres = x;
            op->mres_cap = (uint32_t)n;
        }
        memset(op->mres, 0, (size_t)n * sizeof(*op->mres));
    }
    op_start(op);
}

void edge_cmd_mget(struct conn *c, int argc, const struct resp_slice *argv)
{
    multi_read(c, CMD_MGET, argc - 1, argv + 1);
}

void edge_cmd_exists(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc == 2)
        read_one(c, CMD_EXISTS, &argv[1]);
    else
        multi_read(c, CMD_EXISTS, argc - 1, argv + 1);
}

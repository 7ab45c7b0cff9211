/*
 * edge_http_write.c - PUT and DELETE /v1/kv/{key}: HTTP writes, through the
 * very write path RESP SET and DEL take (edge_write_op.h's requests and
 * cache update, the op engine's numbering, exactly-once retries, MOVED and
 * write-deadline); only the reply is HTTP's.  No second write path: a PUT
 * is the owner's SET, a DELETE its DEL, and the version the owner gives the
 * write is the ETag a GET of the key shows afterwards.
 *
 *   PUT    body = the value; ?ttl=SECONDS or ?px=MS (one of them) sets an
 *          expiry, as SET EX / PX.  200 with ETag "<version>" (the edge does
 *          not learn whether the key existed: it sends no GET flag, so the
 *          old value never travels); 201 for a create asked with
 *          If-None-Match: * (SET NX), 412 when the key exists (ETag: the
 *          version it holds).
 *   DELETE 204 with X-Hotkvd-Index: <the delete's version> when the key
 *          existed, 404 when it did not (nothing changed).
 *
 * Errors keep README's table (not applied / outcome unknown), as statuses:
 *   text with "outcome unknown"          504, body "outcome unknown: ..."
 *   TRYAGAIN, BUSY, OOM, UNAVAILABLE     503 + Retry-After, "not applied: ..."
 *   ERR out of memory, any other error   500, "not applied: ..."
 * With If-Match or an Idempotency-Key the write is the owner's transaction
 * instead (edge_http_cas.c): the same gates, the same table.
 * The gates (login, ACL +@write on the key, the SET/DEL rate limit) are
 * edge_http.c's, before the op exists; the body's bounds and timeout too.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/core/clock.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_write_op.h"

struct http_wargs {
    struct write_args w;          /* first: write_encode and write_wrote read it */
    hkv_stamp stamp;              /* the owner's version of the write (or the key's, NX met) */
    uint8_t minor, keep_alive, create;
};
_Static_assert(sizeof(struct http_wargs) <= OP_ARGS_MAX, "http_wargs too large for an op");
#define HW(op) OP_ARGS(op, struct http_wargs)

static void hw_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    write_wrote(op, r, m);
    if (m->type == WIRE_OK) {
        HW(op)->w.acc = m->u.ok.applied;
        HW(op)->stamp = m->u.ok.stamp;
    } else if (m->type == WIRE_INT) {
        HW(op)->w.acc += m->u.integer.value;
        HW(op)->stamp = m->u.integer.stamp;
    } else {
        op_error(op, "ERR unexpected answer from the owner");
    }
}

/* ETag: "v"\r\nX-Hotkvd-Index: v\r\n into extra. */
static void version_headers(char *extra, size_t cap, hkv_stamp v, int etag)
{
    if (etag)
        snprintf(extra, cap, "ETag: \"%llu\"\r\nX-Hotkvd-Index: %llu\r\n", (unsigned long long)v,
                 (unsigned long long)v);
    else
        snprintf(extra, cap, "X-Hotkvd-Index: %llu\r\n", (unsigned long long)v);
}

static void hw_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    struct http_wargs *a = HW(op);
    if (out != NULL) {
        struct conn *c = op->c;
        char extra[128];
        if (a->w.cmd == CMD_DEL) {
            version_headers(extra, sizeof(extra), a->stamp, 0);
            if (a->w.acc > 0) {
                hr_status(c, out, 204, a->minor, a->keep_alive);
                buf_append_str(out, extra);
                buf_append(out, "\r\n", 2); /* 204: no body, no Content-Length */
            } else {
                hr_simple(c, out, 404, a->minor, a->keep_alive, 0, extra, "not found");
            }
        } else {
            version_headers(extra, sizeof(extra), a->stamp, 1);
            if (a->w.acc) {
                hr_simple(c, out, a->create ? 201 : 200, a->minor, a->keep_alive, 0, extra,
                          a->create ? "created" : "stored");
            } else {
                board_add(&op->e->stats->http_precondition_failed, 1);
                hr_simple(c, out, 412, a->minor, a->keep_alive, 0, extra,
                          "not applied: the key exists (If-None-Match: *)");
            }
        }
    }
    op_finish(op);
}




static void hw_fail(struct op *op)
{
    edge_http_write_error(op, HW(op)->minor, HW(op)->keep_alive);
}

static const struct op_family http_write_ops = {OP_F_WRITE, write_encode, hw_answer, hw_done,
                                               NULL, NULL};

void edge_http_write(struct conn *c, const struct http_write *w)
{
    struct edge *e = c->e;
    int del = w->q->method == HTTP_DELETE;
    board_add(del ? &e->stats->http_deletes : &e->stats->http_puts, 1);
    conn_note_request(c, 1);
    struct op *op = op_new(c, &http_write_ops, del ? "DEL" : "SET");
    if (op == NULL)
        return;
    op->fail = hw_fail;
    struct http_wargs *a = HW(op);
    a->w.cmd = del ? CMD_DEL : CMD_SET;
    a->w.exp = w->exp;
    a->w.wflags = w->create ? WIRE_SET_NX : 0;
    a->minor = (uint8_t)w->q->minor;
    a->keep_alive = (uint8_t)w->keep_alive;
    a->create = (uint8_t)w->create;
    struct http_edge *he = e->http;
    struct resp_slice key = {buf_head(&he->key), buf_unread(&he->key)};
    struct resp_slice val = {w->body.p != NULL ? w->body.p : "", w->body.len};
    if (op_copy_keys(op, 1, &key, 1, del ? NULL : &val) != 0 ||
        op_single(op, del ? WIRE_DEL : WIRE_SET, WIRE_ROLE_WRITE) == NULL) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- requests ------------------------------------------------------------------------ */

/* If-None-Match's fields are exactly "*". */
static int inm_is_star(const struct http_req *q)
{
    size_t pos = 0;
    struct http_slice name, value;
    int star = 0;
    while (http_req_field_next(q, &pos, &name, &value) == HKV_OK)
        if (name.len == 13 && strncasecmp(name.p, "if-none-match", 13) == 0) {
            if (!(value.len == 1 && value.p[0] == '*'))
                return 0;
            star = 1;
        }
    return star;
}

/* x->pre: the headers of a PUT whose body is still to come, checked before
 * it is read (no rate-limit charge, no op). */
int edge_http_kv_write(struct conn *c, const struct http_run *x, struct http_slice raw)
{
    const struct http_req *q = x->req;
    int del = q->method == HTTP_DELETE;
    struct http_write w = {.q = q, .keep_alive = x->keep_alive, .body = x->body};
    struct http_slice tv, pv;
    int has_t = edge_http_param(c, x, "ttl", &tv), has_p = 0;
    if (has_t < 0 || (has_p = edge_http_param(c, x, "px", &pv)) < 0)
        return -1;
    if (has_t || has_p) {
        uint64_t n = 0;
        if (del || (has_t && has_p) || http_parse_u64(has_t ? tv : pv, &n) != HKV_OK || n == 0 ||
            n > (1ULL << 40)) {
            edge_http_bad(c, x, "ttl takes seconds, px milliseconds: one of them, above 0, on a PUT");
            return -1;
        }
        w.exp = (struct wire_expiry){WIRE_EXP_REL, (int64_t)(has_t ? n * 1000 : n)};
    }
    if (q->if_none_match) {
        if (del || !inm_is_star(q)) {
            edge_http_bad(c, x, "a write's If-None-Match takes only * (create only, on a PUT)");
            return -1;
        }
        w.create = 1;
    }
    uint64_t version = 0;
    int im = q->if_match.p != NULL ? edge_http_if_match(q->if_match, &version) : 0;
    if (im < 0 || (q->if_match.p != NULL && w.create)) {
        edge_http_bad(c, x, im < 0 ? "If-Match takes one strong entity tag (\"<version>\") or *"
                                   : "If-Match and If-None-Match together");
        return -1;
    }
    if (q->idem_key.p != NULL && edge_http_idem_key(q->idem_key, &w.idem) != 0) {
        edge_http_bad(c, x, "Idempotency-Key takes 1 to 255 visible ASCII bytes, an sf-string");
        return -1;
    }
    w.match = q->if_match.p != NULL;
    if (edge_http_gates(c, x, raw, del ? CMD_DEL : CMD_SET, !x->pre) != 0)
        return -1;
    if (c->e->stopping) {
        /* A draining edge takes no new write (its stop waits for those in
         * flight, bounded by shutdown-timeout): the client writes elsewhere. */
        hr_simple(c, &c->out, 503, q->minor, 0, 0, "Retry-After: 1\r\n",
                  "not applied: the edge is draining");
        return -1;
    }
    if (x->pre)
        return 0;
    if (w.match || w.idem.p != NULL)
        edge_http_cas(c, &w, version, im == 1);
    else
        edge_http_write(c, &w);
    return 0;
}

/* A PUT's headers, its body still to come: the gates now, so a refused
 * client is told before it sends the body (and the connection closes: the
 * body would follow); then 100 Continue if it asked. */
static void run_pre(struct conn *c, void *arg)
{
    struct http_run *x = arg;
    const struct http_req *q = x->req;
    struct http_slice rest;
    int ok = 0;
    if (edge_http_sess_denied(c))
        hr_simple(c, &c->out, 403, q->minor, 0, 0, NULL, "protected mode");
    else if (!edge_http_prefix(q->path, "/v1/kv/", &rest))
        hr_simple(c, &c->out, 405, q->minor, 0, 0, "Allow: GET, HEAD\r\n",
                  "PUT and DELETE are for /v1/kv/KEY only");
    else
        ok = edge_http_kv_write(c, x, rest) == 0;
    if (!ok)
        x->pre = -1;
    else if (q->expect_continue)
        buf_append_str(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
}

static void run_too_large(struct conn *c, void *arg)
{
    const struct http_run *x = arg;
    board_add(&c->e->stats->http_bodies_too_large, 1);
    hr_simple(c, &c->out, 413, x->req->minor, 0, 0, NULL,
              "the body is larger than proto-max-bulk-len");
}

/* The body is whole only when c->in holds all of it: the request is
 * parsed again then (its header section at most 16 KB, once per read until
 * body_need bytes are in: edge_http_input returns at once before that). */
int edge_http_body(struct conn *c, struct http_run *x, const char *p, size_t n, size_t used)
{
    struct http_sess *hs = sess_of(c)->http;
    uint64_t cl = x->req->content_length;
    if (cl > (uint64_t)edge_config(c->e)->proto_max_bulk_len) { /* before a byte of it */
        conn_run(c, run_too_large, x);
        return -1;
    }
    if (n - used >= cl) {
        x->body = (struct http_slice){p + used, (size_t)cl};
        hs->body_wait = 0;
        return 1;
    }
    if (!hs->body_wait) { /* its headers, the first time: the gates, 100 Continue */
        int keep = x->keep_alive;
        x->pre = 1;
        x->keep_alive = 0; /* a refusal now closes: the body would follow */
        if (conn_run(c, run_pre, x) != 0 || x->pre < 0)
            return -1;
        x->keep_alive = keep;
        hs->body_wait = 1;
        hs->body_need = used + (size_t)cl;
        hs->body_start_ms = clock_mono_ms();
    }
    http_req_parser_reset(&hs->parser);
    return 0;
}

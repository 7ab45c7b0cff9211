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
 * The gates (login, ACL +@write on the key, the SET/DEL rate limit) are
 * edge_http.c's, before the op exists; the body's bounds and timeout too.
 */
#include <stdio.h>
#include <string.h>

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

static int has(const struct hkv_buf *b, const char *lit)
{
    size_t n = strlen(lit), len = buf_unread(b);
    const char *p = buf_head(b);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(p + i, lit, n) == 0)
            return 1;
    return 0;
}

static int starts(const struct hkv_buf *b, const char *lit)
{
    size_t n = strlen(lit);
    return buf_unread(b) >= n && memcmp(buf_head(b), lit, n) == 0;
}

/* The recorded error, in README's table's terms. */
static void hw_fail(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    struct http_wargs *a = HW(op);
    const struct hkv_buf *eb = &op->errbuf;
    if (out != NULL) {
        int unknown = has(eb, "outcome unknown");
        int busy = starts(eb, "TRYAGAIN") || starts(eb, "BUSY") || starts(eb, "OOM") ||
                   starts(eb, "UNAVAILABLE") || starts(eb, "LOADING");
        int status = unknown ? 504 : busy ? 503 : 500;
        char body[600];
        snprintf(body, sizeof(body), "%s: %.*s", unknown ? "outcome unknown" : "not applied",
                 (int)(buf_unread(eb) < 512 ? buf_unread(eb) : 512), buf_head(eb));
        hr_simple(op->c, out, status, a->minor, a->keep_alive, 0,
                  status == 500 ? NULL : "Retry-After: 1\r\n", body);
    }
    op_finish(op);
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

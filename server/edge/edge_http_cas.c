/*
 * edge_http_cas.c - PUT and DELETE with If-Match: a compare-and-set on the
 * owner's version of the key, through what the owner already offers for
 * exactly that: a MULTI/EXEC transaction with a watched key (WIRE_EXEC,
 * owner_call.c).  The owner compares the watched key's version with the
 * one the client names and, only if they are equal, runs the one command
 * atomically in the same loop turn; it is a numbered write like every
 * other (exactly-once retries, MOVED, durability by class).
 *
 *   If-Match: "V"   watch (key, V), then SET key value XX [PX ms] (PUT) or
 *                   DEL key (DELETE).  XX: a key that is gone does not
 *                   match, whatever its tombstone's version.
 *   If-Match: *     no watch: SET ... XX, or DEL (the key must exist).
 * Answers: the EXEC's nil reply (the version changed), SET XX not met or
 * DEL 0 (the key is missing) -> 412; applied -> 200 with the new ETag (the
 * version the owner's change list gives the key) or 204.  Only one entity
 * tag, strong (RFC 9110 13.1.1: If-Match compares strongly, so W/"V" never
 * matches): a list is 400.
 *
 * The cache is updated from the change list before the answer
 * (edge_call_taken), as for every CALL and EXEC.
 */
#include <stdio.h>
#include <string.h>

#include "server/edge/edge_call.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_sess.h"

enum { CAS_APPLIED = 1, CAS_NOT_MET, CAS_ERROR };

struct cas_args {
    uint64_t version;             /* If-Match's V (has_watch) */
    int has_watch;                /* 0: If-Match: * */
    int del;
    int outcome;                  /* CAS_* */
    hkv_stamp stamp;              /* the version the write gave the key */
    uint8_t minor, keep_alive;
};
_Static_assert(sizeof(struct cas_args) <= OP_ARGS_MAX, "cas_args too large for an op");
#define CA(op) OP_ARGS(op, struct cas_args)

static int cas_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                      const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    struct wire_watch w = {.key = op->keys[1], .version = CA(op)->version};
    struct wire_cmd cmd = {.args = op->keys, .nargs = op->nkeys};
    return wire_put_exec(b, id, rid, 2, &w, CA(op)->has_watch ? 1 : 0, &cmd, 1);
}

static int reply_is(const struct wire_slice *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && memcmp(s->p, lit, n) == 0;
}

static void cas_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (edge_call_taken(op, r, m) != 0)
        return;
    struct cas_args *a = CA(op);
    const struct wire_slice *rep = &m->u.resp.reply;
    if (m->u.resp.nchanges > 0)
        a->stamp = m->u.resp.changes[0].version;
    if (reply_is(rep, "*1\r\n+OK\r\n") || reply_is(rep, "*1\r\n:1\r\n")) {
        a->outcome = CAS_APPLIED;
    } else if (reply_is(rep, "*-1\r\n") || reply_is(rep, "*1\r\n$-1\r\n") ||
               reply_is(rep, "*1\r\n:0\r\n")) {
        a->outcome = CAS_NOT_MET;
    } else {
        /* a command's error inside the EXEC's array: not applied */
        a->outcome = CAS_ERROR;
        buf_reset(&op->res);
        buf_append(&op->res, rep->p, rep->len < 200 ? rep->len : 200);
    }
}

static void cas_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    struct cas_args *a = CA(op);
    if (out != NULL) {
        struct conn *c = op->c;
        char extra[128];
        if (a->outcome == CAS_APPLIED && a->del) {
            snprintf(extra, sizeof(extra), "X-Hotkvd-Index: %llu\r\n", (unsigned long long)a->stamp);
            hr_status(c, out, 204, a->minor, a->keep_alive);
            buf_append_str(out, extra);
            buf_append(out, "\r\n", 2);
        } else if (a->outcome == CAS_APPLIED) {
            snprintf(extra, sizeof(extra), "ETag: \"%llu\"\r\nX-Hotkvd-Index: %llu\r\n",
                     (unsigned long long)a->stamp, (unsigned long long)a->stamp);
            hr_simple(c, out, 200, a->minor, a->keep_alive, 0, extra, "stored");
        } else if (a->outcome == CAS_NOT_MET) {
            board_add(&op->e->stats->http_precondition_failed, 1);
            hr_simple(c, out, 412, a->minor, a->keep_alive, 0, NULL,
                      "not applied: the key's version is not If-Match's (or the key is missing)");
        } else {
            char body[300];
            for (size_t i = 0; i < buf_unread(&op->res); i++)
                if (buf_head(&op->res)[i] == '\r' || buf_head(&op->res)[i] == '\n')
                    ((char *)buf_head(&op->res))[i] = ' ';
            snprintf(body, sizeof(body), "not applied: %.*s", (int)buf_unread(&op->res),
                     buf_head(&op->res));
            hr_simple(c, out, 500, a->minor, a->keep_alive, 0, NULL, body);
        }
    }
    op_finish(op);
}

static void cas_fail(struct op *op)
{
    edge_http_write_error(op, CA(op)->minor, CA(op)->keep_alive);
}

static const struct op_family cas_ops = {OP_F_WRITE, cas_encode, cas_answer, cas_done, NULL,
                                         NULL};

int edge_http_if_match(struct http_slice v, uint64_t *version)
{
    if (v.len == 1 && v.p[0] == '*')
        return 0;
    if (v.len < 3 || v.p[0] != '"' || v.p[v.len - 1] != '"')
        return -1;
    struct http_slice d = {v.p + 1, v.len - 2};
    return http_parse_u64(d, version) == HKV_OK && *version != 0 ? 1 : -1;
}

void edge_http_cas(struct conn *c, const struct http_write *w, uint64_t version, int has_watch)
{
    struct edge *e = c->e;
    int del = w->q->method == HTTP_DELETE;
    board_add(del ? &e->stats->http_deletes : &e->stats->http_puts, 1);
    conn_note_request(c, 1);
    struct http_edge *he = e->http;
    struct route rt;
    struct owner_ref *o = edge_owner_of(e, buf_head(&he->key), buf_unread(&he->key), &rt);
    struct op *op = op_new(c, &cas_ops, "EXEC");
    if (op == NULL)
        return;
    op->fail = cas_fail;
    struct cas_args *a = CA(op);
    a->version = version;
    a->has_watch = has_watch;
    a->del = del;
    a->minor = (uint8_t)w->q->minor;
    a->keep_alive = (uint8_t)w->keep_alive;
    char ms[24];
    struct resp_slice words[6] = {{del ? "DEL" : "SET", 3}, {buf_head(&he->key), buf_unread(&he->key)}};
    int n = 2;
    if (!del) {
        words[n++] = (struct resp_slice){w->body.p != NULL ? w->body.p : "", w->body.len};
        words[n++] = (struct resp_slice){"XX", 2};
        if (w->exp.kind == WIRE_EXP_REL) {
            words[n++] = (struct resp_slice){"PX", 2};
            words[n++] = (struct resp_slice){ms, (size_t)snprintf(ms, sizeof(ms), "%lld",
                                                                  (long long)w->exp.ms)};
        }
    }
    if (o == NULL) {
        op_error(op, "TRYAGAIN no owner serves the key's pool");
        op_finish_error(op);
        return;
    }
    if (op_copy_keys(op, n, words, 1, NULL) != 0 ||
        op_to_owner(op, o, WIRE_EXEC, WIRE_ROLE_WRITE) != 0) {
        op_finish_error(op);
        return;
    }
    /* The request's routing key, for a MOVED: the key (as edge_call.c). */
    struct oreq *r = req_at(op, 0);
    op->kidx[0] = 1;
    r->k0 = 0;
    r->nk = 1;
    op_start(op);
}

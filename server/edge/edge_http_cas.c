/*
 * edge_http_cas.c - the HTTP writes the owner runs as a transaction
 * (WIRE_EXEC, owner_call.c): PUT and DELETE with If-Match (a compare-and-
 * set on the owner's version of the key), and any PUT or DELETE with an
 * Idempotency-Key.  A transaction is a numbered write like every other
 * (exactly-once retries of this edge, MOVED, durability by class).
 *
 *   If-Match: "V"   watch (key, V), then SET key value XX [PX ms] (PUT) or
 *                   DEL key (DELETE).  XX: a key that is gone does not
 *                   match, whatever its tombstone's version.
 *   If-Match: *     no watch: SET ... XX, or DEL (the key must exist).
 *   If-None-Match: * SET ... NX; otherwise SET key value [PX ms] / DEL key.
 *   Idempotency-Key the transaction starts with the owner's own word
 *                   "hkv.idem" (record key, fingerprint, TTL): the owner
 *                   answers a request it has a record of from the record
 *                   (never applying it again), refuses a record of another
 *                   request, and else runs the rest and keeps its reply
 *                   under the record key, in the same change list as the
 *                   write (owner_idem.c).  The record key names the user,
 *                   the key and the Idempotency-Key (proto/syskey.h), so a
 *                   retry on any connection, edge or host finds it.
 * Answers: the EXEC's nil reply (the version changed), SET NX/XX not met or
 * DEL 0 -> 412 (404 for a plain DELETE); applied -> 200 / 201 with the new
 * ETag (the version the owner's change list, or the record, gives the key)
 * or 204; the record of another request -> 422.  Only one entity tag,
 * strong (RFC 9110 13.1.1: If-Match compares strongly, so W/"V" never
 * matches): a list is 400.
 *
 * The cache is updated from the change list before the answer
 * (edge_call_taken), as for every CALL and EXEC.
 */
#include <stdio.h>
#include <string.h>

#include "proto/siphash.h"
#include "proto/syskey.h"
#include "server/edge/auth.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_sess.h"

enum { CAS_APPLIED = 1, CAS_NOT_MET, CAS_ERROR, CAS_OTHER_REQUEST };

struct cas_args {
    uint64_t version;             /* If-Match's V (has_watch) */
    int has_watch;                /* watch (key, version) */
    int del, create, match, idem; /* DELETE; If-None-Match: *; If-Match; Idempotency-Key */
    int outcome;                  /* CAS_* */
    int replayed;                 /* answered from an Idempotency-Key record */
    hkv_stamp stamp;              /* the version the write gave the key */
    uint8_t minor, keep_alive;
};
_Static_assert(sizeof(struct cas_args) <= OP_ARGS_MAX, "cas_args too large for an op");
#define CA(op) OP_ARGS(op, struct cas_args)

#define IDEM_WORDS 4              /* hkv.idem record-key fingerprint ttl-ms */

static int cas_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                      const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    uint32_t at = CA(op)->idem ? IDEM_WORDS : 0;
    struct wire_watch w = {.key = op->keys[at + 1], .version = CA(op)->version};
    struct wire_cmd cmd[2] = {{.args = op->keys, .nargs = IDEM_WORDS},
                              {.args = op->keys + at, .nargs = op->nkeys - at}};
    (void)keys;
    return wire_put_exec(b, id, rid, 2, &w, CA(op)->has_watch ? 1 : 0, at ? cmd : cmd + 1,
                         at ? 2 : 1);
}

/* The inner command's element: its outcome. */
static int outcome_of(const struct resp_value *v)
{
    if (v->type == RESP_SIMPLE || (v->type == RESP_INT && v->integer > 0))
        return CAS_APPLIED;
    if (v->type == RESP_NULL || v->type == RESP_INT)
        return CAS_NOT_MET; /* SET NX / XX not met, DEL of a missing key */
    return CAS_ERROR;
}

static void cas_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (edge_call_taken(op, r, m) != 0)
        return;
    struct cas_args *a = CA(op);
    const struct wire_slice *rep = &m->u.resp.reply;
    if (m->u.resp.nchanges > 0)
        a->stamp = m->u.resp.changes[0].version;
    struct resp_value *v = NULL;
    size_t used;
    a->outcome = CAS_ERROR;
    if (resp_parse_reply(rep->p, rep->len, &used, &v) == HKV_OK) {
        size_t want = a->idem ? 2 : 1;
        if (v->type == RESP_NULL || (v->type == RESP_ARRAY && v->elems == NULL && v->n == 0 &&
                                     rep->len >= 2 && rep->p[1] == '-')) {
            a->outcome = CAS_NOT_MET; /* the watch broke: nothing ran */
        } else if (v->type == RESP_ERROR && a->idem && v->len >= 12 &&
                   memcmp(v->str, "IDEMPOTENCY ", 12) == 0) {
            a->outcome = CAS_OTHER_REQUEST;
        } else if (v->type == RESP_ARRAY && v->n == want) {
            const struct resp_value *head = a->idem ? &v->elems[0] : NULL;
            if (head != NULL && head->type == RESP_ARRAY && head->n == 2 &&
                head->elems[0].type == RESP_INT && head->elems[1].type == RESP_INT) {
                a->replayed = head->elems[0].integer != 0;
                a->stamp = (hkv_stamp)head->elems[1].integer; /* the key's, after the write */
            }
            a->outcome = outcome_of(&v->elems[want - 1]);
        }
    }
    if (a->outcome == CAS_ERROR || a->outcome == CAS_OTHER_REQUEST) {
        /* a command's error inside the EXEC's array: not applied */
        buf_reset(&op->res);
        buf_append(&op->res, rep->p, rep->len < 200 ? rep->len : 200);
    }
    resp_value_free(&v);
}

static void cas_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    struct cas_args *a = CA(op);
    if (out != NULL) {
        struct conn *c = op->c;
        char extra[192];
        const char *rp = a->replayed ? "Idempotent-Replayed: true\r\n" : "";
        if (a->replayed)
            board_add(&op->e->stats->http_idempotent_replays, 1);
        if (a->outcome == CAS_APPLIED && a->del) {
            snprintf(extra, sizeof(extra), "X-Hotkvd-Index: %llu\r\n%s",
                     (unsigned long long)a->stamp, rp);
            hr_status(c, out, 204, a->minor, a->keep_alive);
            buf_append_str(out, extra);
            buf_append(out, "\r\n", 2);
        } else if (a->outcome == CAS_APPLIED) {
            snprintf(extra, sizeof(extra), "ETag: \"%llu\"\r\nX-Hotkvd-Index: %llu\r\n%s",
                     (unsigned long long)a->stamp, (unsigned long long)a->stamp, rp);
            hr_simple(c, out, a->create ? 201 : 200, a->minor, a->keep_alive, 0, extra,
                      a->create ? "created" : "stored");
        } else if (a->outcome == CAS_NOT_MET && a->del && !a->match) {
            snprintf(extra, sizeof(extra), "X-Hotkvd-Index: %llu\r\n%s",
                     (unsigned long long)a->stamp, rp);
            hr_simple(c, out, 404, a->minor, a->keep_alive, 0, extra, "not found");
        } else if (a->outcome == CAS_NOT_MET) {
            board_add(&op->e->stats->http_precondition_failed, 1);
            if (a->create)
                snprintf(extra, sizeof(extra), "ETag: \"%llu\"\r\nX-Hotkvd-Index: %llu\r\n%s",
                         (unsigned long long)a->stamp, (unsigned long long)a->stamp, rp);
            else
                snprintf(extra, sizeof(extra), "%s", rp);
            hr_simple(c, out, 412, a->minor, a->keep_alive, 0, extra,
                      a->create ? "not applied: the key exists (If-None-Match: *)"
                                : "not applied: the key's version is not If-Match's (or the "
                                  "key is missing)");
        } else if (a->outcome == CAS_OTHER_REQUEST) {
            board_add(&op->e->stats->http_idempotency_mismatches, 1);
            hr_simple(c, out, 422, a->minor, a->keep_alive, 0, NULL,
                      "not applied: the Idempotency-Key was used for another request");
        } else {
            char body[300];
            for (size_t i = 0; i < buf_unread(&op->res); i++)
                if (buf_head(&op->res)[i] == '\r' || buf_head(&op->res)[i] == '\n')
                    ((char *)buf_head(&op->res))[i] = ' ';
            /* the record of what ran could not be kept: it may have applied */
            int unknown = memmem(buf_head(&op->res), buf_unread(&op->res), "outcome unknown",
                                 15) != NULL;
            snprintf(body, sizeof(body), "%s: %.*s", unknown ? "outcome unknown" : "not applied",
                     (int)buf_unread(&op->res), buf_head(&op->res));
            hr_simple(c, out, unknown ? 504 : 500, a->minor, a->keep_alive, 0,
                      unknown ? "Retry-After: 1\r\n" : NULL, body);
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

int edge_http_idem_key(struct http_slice v, struct http_slice *out)
{
    if (v.len >= 2 && v.p[0] == '"' && v.p[v.len - 1] == '"') /* an sf-string */
        v = (struct http_slice){v.p + 1, v.len - 2};
    if (v.len == 0 || v.len > SYSKEY_IDEM_MAX)
        return -1;
    for (size_t i = 0; i < v.len; i++)
        if ((unsigned char)v.p[i] < 0x21 || (unsigned char)v.p[i] > 0x7e || v.p[i] == '"' ||
            v.p[i] == '\\')
            return -1;
    *out = v;
    return 0;
}

/* What makes two requests the same one (the IETF draft's fingerprint):
 * method, condition, expiry, body; 16 bytes of two SipHashes.  The key and
 * the user are in the record key already. */
static void fingerprint(const struct http_write *w, int del, uint64_t version, int match,
                        int has_watch, char out[16])
{
    static const uint8_t k1[SIPHASH_KEY_LEN] = "hotkvd-idem-fp-1", k2[SIPHASH_KEY_LEN] = "hotkvd-idem-fp-2";
    struct {
        uint8_t del, create, match, watch;
        int32_t exp_kind;
        int64_t exp_ms;
        uint64_t version;
        uint64_t body1;
    } h;
    memset(&h, 0, sizeof(h));
    h.del = (uint8_t)del;
    h.create = (uint8_t)w->create;
    h.match = (uint8_t)match;
    h.watch = (uint8_t)has_watch;
    h.exp_kind = (int32_t)w->exp.kind;
    h.exp_ms = w->exp.ms;
    h.version = version;
    h.body1 = siphash24(k1, w->body.p, w->body.len);
    uint64_t a = siphash24(k1, &h, sizeof(h));
    h.body1 = siphash24(k2, w->body.p, w->body.len);
    uint64_t b = siphash24(k2, &h, sizeof(h));
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
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
    a->match = w->match;
    a->has_watch = w->match && has_watch;
    a->del = del;
    a->create = w->create;
    a->idem = w->idem.p != NULL;
    a->minor = (uint8_t)w->q->minor;
    a->keep_alive = (uint8_t)w->keep_alive;
    char ms[24], ttl[24], fp[16];
    static char rkey[SYSKEY_PREFIX_LEN + 16 + 64 * 1024 + SYSKEY_USER_MAX + SYSKEY_IDEM_MAX];
    struct resp_slice words[IDEM_WORDS + 7];
    int n = 0;
    if (a->idem) {
        int uid = sess_of(c)->user;
        const char *user = uid >= 0 && e->auth->users != NULL ? auth_user_name(e->auth->users, uid)
                                                               : "default";
        size_t rlen = syskey_idem(rkey, sizeof(rkey), buf_head(&he->key), buf_unread(&he->key),
                                  user, strlen(user), w->idem.p, w->idem.len);
        if (rlen == 0) {
            op_error(op, "ERR the key is too long for an Idempotency-Key record");
            op_finish_error(op);
            return;
        }
        fingerprint(w, del, version, w->match, a->has_watch, fp);
        board_add(&e->stats->http_idempotent_writes, 1);
        words[n++] = (struct resp_slice){"hkv.idem", 8};
        words[n++] = (struct resp_slice){rkey, rlen};
        words[n++] = (struct resp_slice){fp, sizeof(fp)};
        words[n++] = (struct resp_slice){ttl, (size_t)snprintf(ttl, sizeof(ttl), "%lld",
                                         (long long)edge_config(e)->http_idempotency_ttl_ms)};
    }
    words[n++] = (struct resp_slice){del ? "DEL" : "SET", 3};
    words[n++] = (struct resp_slice){buf_head(&he->key), buf_unread(&he->key)};
    if (!del) {
        words[n++] = (struct resp_slice){w->body.p != NULL ? w->body.p : "", w->body.len};
        if (w->match || w->create)
            words[n++] = (struct resp_slice){w->match ? "XX" : "NX", 2};
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
    op->kidx[0] = a->idem ? IDEM_WORDS + 1 : 1;
    r->k0 = 0;
    r->nk = 1;
    op_start(op);
}

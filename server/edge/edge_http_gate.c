/*
 * edge_http_gate.c - what every HTTP key endpoint shares, below them all
 * (edge_http.c routes, edge_http_write.c and edge_http_cas.c write): the
 * gates (key decoding, login, ACL, rate limit), query parameters, and a
 * write's error in HTTP's words (the error table: not applied -> 4xx/5xx
 * with Retry-After where a retry helps, outcome unknown -> 504).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "server/edge/auth.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_sess.h"

#define AUTH_HDR "WWW-Authenticate: Basic realm=\"hotkvd\", charset=\"UTF-8\"\r\n"

int edge_http_prefix(struct http_slice s, const char *lit, struct http_slice *rest)
{
    size_t n = strlen(lit);
    if (s.len < n || memcmp(s.p, lit, n) != 0)
        return 0;
    *rest = (struct http_slice){s.p + n, s.len - n};
    return 1;
}

/* The gates every key endpoint passes, for cmd (GET, SET for a PUT, DEL
 * for a DELETE): 0, or -1 with the refusal written.  charge 0: the rate
 * limit is not looked at (a PUT's headers, checked before its body is read;
 * the whole request passes them all again).  The decoded key is left in
 * e->http->key. */
int edge_http_gates(struct conn *c, const struct http_run *x, struct http_slice raw,
                    enum cmd_id cmd, int charge)
{
    struct edge *e = c->e;
    struct http_edge *he = e->http;
    const struct http_req *q = x->req;
    int head = q->method == HTTP_HEAD;
    size_t klen = 0;
    buf_reset(&he->key);
    int rc = buf_reserve(&he->key, raw.len + 1, 0) == HKV_OK
                 ? http_pct_decode(raw.p, raw.len, buf_tail(&he->key), raw.len + 1, &klen)
                 : HKV_ENOMEM;
    if (rc != HKV_OK || klen == 0) {
        hr_simple(c, &c->out, rc == HKV_ENOMEM ? 500 : 400, q->minor, x->keep_alive, head, NULL,
                  rc == HKV_OK ? "empty key" : "bad percent-encoding in the key");
        return -1;
    }
    he->key.len = klen;
    if (syskey_is(buf_head(&he->key), klen)) {
        hr_simple(c, &c->out, 400, q->minor, x->keep_alive, head, NULL,
                  "keys beginning with \\xff hkv \\0 are hotkvd's own");
        return -1;
    }
    int user = edge_http_sess_login(c, q);
    if (user < 0) {
        hr_simple(c, &c->out, 401, q->minor, x->keep_alive, head, AUTH_HDR,
                  "authentication required");
        return -1;
    }
    sess_of(c)->user = user;
    const struct cmd_def *d = cmd_get(cmd);
    if (!auth_user_unrestricted(e->auth->users, user)) {
        struct resp_slice argv[3] = {{d->name, strlen(d->name)}, {buf_head(&he->key), klen}, {"", 0}};
        if (auth_allowed(e->auth->users, user, d, cmd == CMD_SET ? 3 : 2, argv) != AUTH_OK) {
            hr_simple(c, &c->out, 403, q->minor, x->keep_alive, head, NULL,
                      cmd == CMD_GET           ? "no permission to read this key"
                      : cmd == CMD_CL_THROTTLE ? "no permission to throttle this key"
                                               : "no permission to write this key");
            return -1;
        }
    }
    int64_t retry_ms = 0;
    if (charge && e->rl->map[cmd] != RL_CLS_NONE && edge_rl_over(c, d, &retry_ms)) {
        char extra[64];
        snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
                 (long long)(retry_ms <= 0 ? 1 : (retry_ms + 999) / 1000));
        hr_simple(c, &c->out, 429, q->minor, x->keep_alive, head, extra, "rate limited");
        return -1;
    }
    return 0;
}

/* A query parameter: 0 absent, 1 present (*v), -1 malformed (400 written). */
int edge_http_param(struct conn *c, const struct http_run *x, const char *name,
                    struct http_slice *v)
{
    int rc = http_query_get(x->req->query, name, v);
    if (rc == HKV_ENOENT)
        return 0;
    if (rc == HKV_OK)
        return 1;
    hr_simple(c, &c->out, 400, x->req->minor, x->keep_alive, x->req->method == HTTP_HEAD, NULL,
              "a query parameter given twice");
    return -1;
}

void edge_http_bad(struct conn *c, const struct http_run *x, const char *why)
{
    hr_simple(c, &c->out, 400, x->req->minor, x->keep_alive, x->req->method == HTTP_HEAD, NULL,
              why);
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

void edge_http_write_error(struct op *op, int minor, int keep_alive)
{
    struct hkv_buf *out = op_out(op);
    const struct hkv_buf *eb = &op->errbuf;
    if (out != NULL) {
        int unknown = has(eb, "outcome unknown");
        int busy = starts(eb, "TRYAGAIN") || starts(eb, "BUSY") || starts(eb, "OOM") ||
                   starts(eb, "UNAVAILABLE") || starts(eb, "LOADING");
        int status = unknown ? 504 : busy ? 503 : 500;
        char body[600];
        snprintf(body, sizeof(body), "%s: %.*s", unknown ? "outcome unknown" : "not applied",
                 (int)(buf_unread(eb) < 512 ? buf_unread(eb) : 512), buf_head(eb));
        hr_simple(op->c, out, status, minor, keep_alive, 0,
                  status == 500 ? NULL : "Retry-After: 1\r\n", body);
    }
    op_finish(op);
}

/*
 * edge_http_throttle.c - POST /v1/ratelimit/KEY?burst=B&rate=N&period=S
 * [&quantity=Q]: CL.THROTTLE over HTTP (edge_throttle.h), behind the key
 * endpoints' gates (Basic credentials, the user's key patterns, +@read or
 * +@write).  200 when allowed, 429 with Retry-After when limited (none when
 * the quantity could never pass); both carry the IETF draft's
 * RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and a JSON body
 * with redis-cell's five fields and whether the table failed open.
 */
#include <stdio.h>
#include <string.h>

#include "server/edge/edge_http_int.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_throttle.h"

static int need(struct conn *c, const struct http_run *x, const char *name,
                struct resp_slice *out, int optional)
{
    struct http_slice v;
    int rc = edge_http_param(c, x, name, &v);
    if (rc < 0)
        return -1;
    if (rc == 0 && !optional) {
        edge_http_bad(c, x, "burst, rate and period are needed (quantity is 1 unless given)");
        return -1;
    }
    *out = (struct resp_slice){v.p, rc == 0 ? 0 : v.len};
    return rc;
}

void edge_http_throttle(struct conn *c, const struct http_run *x, struct http_slice raw)
{
    const struct http_req *q = x->req;
    struct resp_slice burst, rate, period, quantity;
    if (edge_http_gates(c, x, raw, CMD_CL_THROTTLE, 1) != 0 ||
        need(c, x, "burst", &burst, 0) < 0 || need(c, x, "rate", &rate, 0) < 0 ||
        need(c, x, "period", &period, 0) < 0)
        return;
    int hq = need(c, x, "quantity", &quantity, 1);
    if (hq < 0)
        return;
    struct gcra_result r;
    int failopen = 0;
    const char *err = NULL;
    struct hkv_buf *key = &c->e->http->key;
    if (edge_throttle(c->e, buf_head(key), buf_unread(key), &burst, &rate, &period,
                      hq > 0 ? &quantity : NULL, &r, &failopen, &err) != 0) {
        edge_http_bad(c, x, err + 4); /* without "ERR " */
        return;
    }
    char hdr[256], body[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "RateLimit-Limit: %lld\r\nRateLimit-Remaining: %lld\r\n"
                     "RateLimit-Reset: %lld\r\n",
                     (long long)r.limit, (long long)r.remaining, (long long)r.reset_after_s);
    if (r.limited && r.retry_after_s >= 0)
        snprintf(hdr + n, sizeof(hdr) - (size_t)n, "Retry-After: %lld\r\n",
                 (long long)r.retry_after_s);
    int blen = snprintf(body, sizeof(body),
                        "{\"limited\":%d,\"limit\":%lld,\"remaining\":%lld,\"retry_after\":%lld,"
                        "\"reset_after\":%lld,\"failopen\":%d}\n",
                        r.limited, (long long)r.limit, (long long)r.remaining,
                        (long long)r.retry_after_s, (long long)r.reset_after_s, failopen);
    hr_status(c, &c->out, r.limited ? 429 : 200, q->minor, x->keep_alive);
    buf_append_str(&c->out, hdr);
    hr_body(&c->out, "application/json", body, (size_t)blen, 0);
}

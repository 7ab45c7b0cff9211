/*
 * edge_http_kv.c - GET and HEAD /v1/kv/{key}, and its long poll
 * (?index=N&wait=D).
 *
 * Every answer comes from the read path (edge_http_wake.c: the colo cache,
 * then the key's single flight, miss-wait, the class's on-timeout answer),
 * and is only rendered here:
 *   value            200, ETag "<version>" (strong: the owner's version of
 *                    the write names the bytes), X-Hotkvd-Index: <version>,
 *                    X-Hotkvd-Stale, Age (seconds in this colo), and
 *                    Cache-Control: max-age=<fresh>,
 *                    stale-while-revalidate=<keep - fresh>, stale-if-error=<keep>
 *                    (the class's, in seconds), Content-Type (the class's);
 *                    If-None-Match naming it: 304 with the same headers
 *   absence          404, X-Hotkvd-Index: <the delete's version>
 *                    (0: never written), max-age=<negative-ttl>
 *   degraded         200, empty, X-Hotkvd-Degraded: 1, Cache-Control: no-store
 *                    (class on-timeout degrade, nothing in the colo)
 *   error            503 + Retry-After (on-timeout error, no owner), 500
 *                    (out of memory)
 *
 * Long poll.  With index=N the request holds until this colo's version of
 * THAT key exceeds N, or until its wait (capped at http-poll-max-wait, plus
 * up to 1/16 of jitter so a crowd that started together does not return
 * together) passes; then it is answered like a GET, Consul's way: 200 with
 * the current value and an unchanged X-Hotkvd-Index when nothing changed.
 * It never answers a version older than N: when the colo holds an older one
 * (a client that moved from another colo), the read treats it as a miss and
 * refreshes it from the owner through the flight; if the owner itself has
 * only an older version (a fetch sent after the poll began confirms it), N
 * was not this key's and the poll is answered at once with the owner's
 * value, as Consul resets an index that goes backwards; if the owner cannot
 * say in time, the poll holds, and at its end is answered 503 rather than
 * older.  A change of the key while a read is in flight makes it read
 * again (rewake), so a push that raced with a fetch is never lost.
 */
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "server/core/clock.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_int.h"

static void kv_result(struct hreq *r, const struct hres *res);
static void kv_changed(struct hreq *r, hkv_stamp v);
static void kv_timer(struct hreq *r);

static const struct hreq_ops kv_ops = {kv_result, kv_changed, kv_timer};

/* Answers r with what res holds. */
static void render(struct hreq *r, const struct hres *res)
{
    struct conn *c = r->c;
    struct edge *e = c->e;
    struct hkv_buf *out = hreq_out(r);
    if (out == NULL)
        return;
    const struct cfg *cfg = edge_config(e);
    if (res->error) {
        int oom = res->errlen >= 7 && memcmp(res->err, "ERR out", 7) == 0;
        char body[200];
        snprintf(body, sizeof(body), "%.*s", (int)(res->errlen < 160 ? res->errlen : 160),
                 res->err);
        hr_simple(c, out, oom ? 500 : 503, r->minor, r->keep_alive, r->head,
                  oom ? NULL : "Retry-After: 1\r\n", body);
        return;
    }
    const struct cfg_class *cls = cfg_class_for(cfg, r->key, r->klen);
    if (res->f.degraded) {
        hr_status(c, out, 200, r->minor, r->keep_alive);
        buf_append_str(out, "X-Hotkvd-Degraded: 1\r\nCache-Control: no-store\r\n");
        hr_body(out, cls->content_type, NULL, 0, r->head);
        return;
    }
    uint64_t v = res->f.stamp;
    uint64_t age = res->f.age_ms > 0 ? (uint64_t)res->f.age_ms / 1000 : 0;
    if (!res->found) {
        char extra[160];
        snprintf(extra, sizeof(extra),
                 "X-Hotkvd-Index: %llu\r\nX-Hotkvd-Stale: %d\r\nAge: %llu\r\n"
                 "Cache-Control: max-age=%lld\r\n",
                 (unsigned long long)v, res->f.stale ? 1 : 0, (unsigned long long)age,
                 (long long)(e->http->opts.negative_ttl_ms / 1000));
        hr_simple(c, out, 404, r->minor, r->keep_alive, r->head, extra, "not found");
        return;
    }
    /* the hot path: appended, not printf'd (edge_http_reply.c) */
    char etag[24];
    size_t en = 0;
    etag[en++] = '"';
    en += hr_u64s(etag + en, v);
    etag[en++] = '"';
    int notmod = r->inm.if_none_match && http_req_inm_match(&r->inm, etag, en);
    uint64_t fresh = cls->fresh_ms > 0 ? (uint64_t)cls->fresh_ms / 1000 : 0;
    uint64_t keep = cls->keep_ms > 0 ? (uint64_t)cls->keep_ms / 1000 : 0;
    hr_status(c, out, notmod ? 304 : 200, r->minor, r->keep_alive);
    buf_append_str(out, "ETag: ");
    buf_append(out, etag, en);
    buf_append_str(out, "\r\nX-Hotkvd-Index: ");
    buf_append(out, etag + 1, en - 2);
    buf_append_str(out, res->f.stale ? "\r\nX-Hotkvd-Stale: 1\r\nAge: "
                                     : "\r\nX-Hotkvd-Stale: 0\r\nAge: ");
    hr_u64(out, age);
    buf_append_str(out, "\r\nCache-Control: max-age=");
    hr_u64(out, fresh);
    buf_append_str(out, ", stale-while-revalidate=");
    hr_u64(out, keep > fresh ? keep - fresh : 0);
    buf_append_str(out, ", stale-if-error=");
    hr_u64(out, keep);
    buf_append(out, "\r\n", 2);
    if (notmod)
        buf_append(out, "\r\n", 2); /* 304: no body, no length */
    else
        hr_body(out, cls->content_type, res->v, res->n, r->head);
}

/* Answers r and ends it (a held one: its slot, counted woken or expired). */
static void answer(struct hreq *r, const struct hres *res)
{
    if (r->kind == HREQ_POLL && r->held)
        board_add(r->final ? &r->c->e->stats->http_polls_expired
                           : &r->c->e->stats->http_polls_woken,
                  1);
    render(r, res);
    hreq_done(r);
}

static void answer_unavailable(struct hreq *r)
{
    static const char why[] = "the colo cannot confirm a version at least the index";
    struct hres res = {.error = 1, .err = why, .errlen = sizeof(why) - 1};
    render(r, &res);
    hreq_done(r);
}

static void kv_result(struct hreq *r, const struct hres *res)
{
    if (res->error || res->f.degraded || r->kind == HREQ_GET) {
        answer(r, res);
        return;
    }
    hkv_stamp v = res->f.stamp;
    if (v > r->index || (v < r->index && res->confirmed) || (r->final && v == r->index)) {
        answer(r, res);
        return;
    }
    if (r->final) {
        answer_unavailable(r); /* never older than the client's index */
        return;
    }
    if (!r->heap) {
        struct hreq *k = hreq_keep(r);
        if (k == NULL) {
            struct hres oom = {.error = 1, .err = "ERR out of memory", .errlen = 17};
            answer(r, &oom);
            return;
        }
        r = k;
    }
    if (!r->held) {
        r->held = 1;
        hreq_timer(r, r->deadline_ms - clock_mono_ms());
    }
    hreq_register(r);
    if (r->rewake) {
        r->rewake = 0;
        hreq_read(r, r->index); /* its key changed while it read: again */
    }
}

static void kv_changed(struct hreq *r, hkv_stamp v)
{
    if (v != 0 && v <= r->index)
        return; /* not newer than what the client has */
    if (r->reading) {
        r->rewake = 1;
        return;
    }
    hreq_read(r, r->index);
}

static void kv_timer(struct hreq *r)
{
    r->final = 1;
    if (!r->reading)
        hreq_read(r, r->index);
}

void edge_http_kv(struct hreq *r, int64_t wait_ms)
{
    r->ops = &kv_ops;
    if (r->kind == HREQ_POLL)
        r->deadline_ms = clock_mono_ms() + wait_ms;
    hreq_read(r, r->kind == HREQ_POLL ? r->index : 0);
}

void edge_http_kv_stop(struct hreq *r)
{
    if (r->kind != HREQ_POLL)
        return; /* a GET's flight answers it */
    r->final = 1;
    hreq_timer(r, 0);
}

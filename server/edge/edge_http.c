/*
 * edge_http.c - the HTTP front door's connections (edge_http.h): parse,
 * route, pass the gates, and hand each request to its endpoint.
 *
 * The design choice: HTTP is a second protocol on the RESP connection layer
 * (edge_conn.h's input hook), not libevent's evhttp.  So a held request
 * keeps the connection readable (a client that leaves frees its poll at
 * once, which evhttp does not notice, libevent #78/#666), pipelined
 * requests are answered in order by the same reply slots RESP uses, and
 * every client bound (maxclients, output limits, client-max-pending, TLS)
 * is the same code.  The parser is proto/http_req.h's, pure and fuzzed.
 *
 * The gates are RESP's own decisions, answered in HTTP's words: protected
 * mode (auth_protected, decided per request from the config in force, so a
 * reload that turns it on applies to open keep-alive sessions) -> 403 and
 * close; Basic credentials (auth_check_password; a keep-alive client's last
 * good credentials are remembered so it is not hashed on every request) ->
 * 401; the user's ACL for GET of the key (auth_allowed) -> 403; the GET
 * command's rate limit (edge_rl_over) -> 429 with Retry-After.
 *
 * Logins across requests and reloads (remembered credentials, checked again
 * when the users are rebuilt) are edge_http_sess.c's.
 */
#include "server/edge/edge_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/core/router_map.h"
#include "server/edge/auth.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_metrics.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_pause.h"
#include "server/edge/edge_sess.h"

#define AUTH_HDR "WWW-Authenticate: Basic realm=\"hotkvd\", charset=\"UTF-8\"\r\n"

/* ---- setup ---------------------------------------------------------------------- */

static void load_allow(struct edge *e, const struct http_opts *o)
{
    struct http_edge *he = e->http;
    struct cfg_cidr *a = calloc(o->nmetrics_allow ? o->nmetrics_allow : 1, sizeof(*a));
    if (a == NULL) {
        log_warning("reload: out of memory for http-metrics-allow; the old list stays");
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < o->nmetrics_allow; i++)
        if (cfg_cidr_parse(o->metrics_allow[i], &a[n]) == HKV_OK)
            n++;
    free(he->allow);
    he->allow = a;
    he->nallow = n;
}

int edge_http_setup(struct edge *e, const struct http_opts *opts)
{
    if (e->ectx->nhttp == 0)
        return 0;
    struct http_edge *he = calloc(1, sizeof(*he));
    if (he == NULL)
        return -1;
    e->http = he;
    he->rnd = (uint64_t)clock_mono_ns() ^ ((uint64_t)e->ctx->slot << 48);
    atomic_store_explicit(&e->stats->http_polls_held, 0, memory_order_relaxed);
    atomic_store_explicit(&e->stats->http_watch_streams, 0, memory_order_relaxed);
    he->opts = *opts;
    he->opts.metrics_allow = NULL;
    load_allow(e, opts);
    return edge_http_wake_setup(e);
}

void edge_http_teardown(struct edge *e)
{
    struct http_edge *he = e->http;
    if (he == NULL)
        return;
    edge_http_wake_teardown(e);
    free(he->allow);
    buf_deinit(&he->key);
    free(he);
    e->http = NULL;
}

void edge_http_reload(struct edge *e, const struct http_opts *opts)
{
    if (e->http == NULL)
        return;
    load_allow(e, opts);
    edge_http_sess_reload(e, opts); /* compares with the old options */
    e->http->opts = *opts;
    e->http->opts.metrics_allow = NULL;
}

/* ---- connections ------------------------------------------------------------------ */

void edge_http_accepted(struct conn *c, const struct sockaddr *peer)
{
    struct http_sess *hs = calloc(1, sizeof(*hs));
    if (hs == NULL) {
        c->close_after_write = 1;
        return;
    }
    sess_of(c)->http = hs;
    http_req_parser_init(&hs->parser, NULL);
    sess_of(c)->user = auth_initial_user(c->e->auth->users);
    sess_of(c)->user_implicit = 1;
    sess_of(c)->remote = peer == NULL || !auth_is_loopback(peer);
    if (peer != NULL && (peer->sa_family == AF_INET || peer->sa_family == AF_INET6)) {
        memcpy(&hs->peer, peer, peer->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                           : sizeof(struct sockaddr_in6));
        hs->has_peer = 1;
    }
}

int edge_http_hangup(struct conn *c)
{
    return edge_http_sess_holds(sess_of(c)->http); /* a held poll or stream was for this client only */
}

void edge_http_closing(struct conn *c)
{
    struct http_sess *hs = sess_of(c)->http;
    if (hs == NULL)
        return;
    while (hs->reqs != NULL) {
        struct hreq *r = hs->reqs;
        if (r->kind != HREQ_GET && !c->e->stopping)
            board_add(&c->e->stats->http_polls_hangup, 1);
        hreq_free(r);
    }
    free(hs);
    sess_of(c)->http = NULL;
}

/* ---- endpoints ---------------------------------------------------------------------- */

static int slice_is(struct http_slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.p, lit, n) == 0;
}


/* Whether the host serves, for /healthz: every owner process of the host is
 * ready (its board slot: it opened its files and listens; a link connected
 * to its socket says nothing, the master made the socket) and, in a
 * cluster, the map gives the pools leaves (before `--cluster-init` no key
 * can be served).  Latched by the caller: once serving, an owner that
 * restarts later is the read path's business (stale or degraded answers),
 * not "starting". */
static int host_serving(struct edge *e)
{
    struct board *bd = e->ctx->board;
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (atomic_load_explicit(&s->role, memory_order_relaxed) == BOARD_OWNER &&
            !atomic_load_explicit(&s->ready, memory_order_relaxed))
            return 0;
    }
    struct rmap *m = router_map(e->owners->router);
    if (m == NULL)
        return 1;
    rmap_sync(m, e->ctx->cmap);
    const struct cmap_table *t = rmap_table(m);
    return t != NULL && t->nleaves[CFG_POOL_HOT] + t->nleaves[CFG_POOL_COLD] > 0;
}

static void healthz(struct conn *c, const struct http_run *x)
{
    struct edge *e = c->e;
    struct http_edge *he = e->http;
    const struct http_req *q = x->req;
    if (!he->serving && !e->stopping)
        he->serving = host_serving(e);
    const char *retry = "Cache-Control: no-store\r\nRetry-After: 1\r\n";
    if (e->stopping) /* closed after it: keep_alive is off while stopping */
        hr_simple(c, &c->out, 503, q->minor, x->keep_alive, q->method == HTTP_HEAD, retry,
                  "draining");
    else if (!he->serving)
        hr_simple(c, &c->out, 503, q->minor, x->keep_alive, q->method == HTTP_HEAD, retry,
                  "starting");
    else
        hr_simple(c, &c->out, 200, q->minor, x->keep_alive, q->method == HTTP_HEAD,
                  "Cache-Control: no-store\r\n", "ok");
}

/* /metrics and /v1/stats are the operator's: 1 if the peer is in
 * http-metrics-allow, else 0 with 403 written. */
static int operator_peer(struct conn *c, const struct http_run *x)
{
    struct http_edge *he = c->e->http;
    struct http_sess *hs = sess_of(c)->http;
    const struct http_req *q = x->req;
    int ok = 0;
    for (size_t i = 0; i < he->nallow && !ok; i++)
        ok = cfg_cidr_match(&he->allow[i], hs->has_peer ? (struct sockaddr *)&hs->peer : NULL);
    if (!ok)
        hr_simple(c, &c->out, 403, q->minor, x->keep_alive, q->method == HTTP_HEAD, NULL,
                  "not in http-metrics-allow");
    return ok;
}

static void metrics(struct conn *c, const struct http_run *x)
{
    const struct http_req *q = x->req;
    if (!operator_peer(c, x))
        return;
    struct hkv_buf b = HKV_BUF_INIT;
    if (edge_metrics_render(c->e, &b) != HKV_OK) {
        hr_simple(c, &c->out, 500, q->minor, x->keep_alive, q->method == HTTP_HEAD, NULL,
                  "metrics could not be rendered");
    } else {
        hr_status(c, &c->out, 200, q->minor, x->keep_alive);
        buf_append_str(&c->out, "Cache-Control: no-store\r\n");
        hr_body(&c->out, EDGE_METRICS_CONTENT_TYPE, buf_head(&b), buf_unread(&b),
                q->method == HTTP_HEAD);
    }
    buf_deinit(&b);
}


/* A stack request for the key in e->http->key. */
static void request(struct conn *c, const struct http_run *x, enum hreq_kind kind, struct hreq *r)
{
    struct http_edge *he = c->e->http;
    memset(r, 0, sizeof(*r));
    r->c = c;
    r->kind = kind;
    r->head = x->req->method == HTTP_HEAD;
    r->minor = x->req->minor;
    r->keep_alive = x->keep_alive;
    r->key = buf_head(&he->key);
    r->klen = buf_unread(&he->key);
    r->hash = router_hash(r->key, r->klen);
    r->inm = *x->req;
    r->start_ms = clock_mono_ms();
}


static int over_polls(struct conn *c, const struct http_run *x)
{
    struct edge *e = c->e;
    if (e->http->nheld < (uint64_t)e->http->opts.max_polls)
        return 0;
    board_add(&e->stats->http_polls_refused, 1);
    hr_simple(c, &c->out, 503, x->req->minor, x->keep_alive, x->req->method == HTTP_HEAD,
              "Retry-After: 1\r\n", "too many held requests (http-max-polls)");
    return 1;
}


static void kv(struct conn *c, const struct http_run *x, struct http_slice raw)
{
    struct edge *e = c->e;
    struct http_slice iv, wv;
    int has_i = edge_http_param(c, x, "index", &iv), has_w;
    if (has_i < 0 || (has_w = edge_http_param(c, x, "wait", &wv)) < 0)
        return;
    uint64_t index = 0, wait = (uint64_t)e->http->opts.poll_max_wait_ms;
    if ((has_i && http_parse_u64(iv, &index) != HKV_OK) ||
        (has_w && http_parse_wait(wv, &wait) != HKV_OK)) {
        edge_http_bad(c, x, "index needs a number, wait a duration (30s, 1500ms, 5m)");
        return;
    }
    if (has_i && over_polls(c, x))
        return;
    if (edge_http_gates(c, x, raw, CMD_GET, 1) != 0)
        return;
    struct hreq r;
    request(c, x, has_i ? HREQ_POLL : HREQ_GET, &r);
    r.index = index;
    r.has_index = has_i;
    int64_t cap = e->http->opts.poll_max_wait_ms;
    int64_t w = (int64_t)wait < cap ? (int64_t)wait : cap;
    if (e->stopping)
        w = 0; /* a draining edge holds nothing new: answered as a held poll is at the stop */
    /* Jitter, up to 1/16 of the wait (Consul's): a crowd that began together
     * does not come back together. */
    struct http_edge *he = e->http;
    he->rnd = he->rnd * 6364136223846793005ULL + 1442695040888963407ULL;
    w += (int64_t)((he->rnd >> 33) % (uint64_t)(w / 16 + 1));
    edge_http_kv(&r, w);
}

static void watch(struct conn *c, const struct http_run *x, struct http_slice raw)
{
    const struct http_req *q = x->req;
    struct http_slice fv, iv;
    int has_f = edge_http_param(c, x, "format", &fv), has_i;
    if (has_f < 0 || (has_i = edge_http_param(c, x, "index", &iv)) < 0)
        return;
    int fmt = q->has_accept && (q->accept & HTTP_ACCEPT_NDJSON) && !(q->accept & HTTP_ACCEPT_SSE)
                  ? HTTP_FMT_NDJSON
                  : HTTP_FMT_SSE;
    if (has_f && (slice_is(fv, "ndjson") || slice_is(fv, "sse")))
        fmt = slice_is(fv, "ndjson") ? HTTP_FMT_NDJSON : HTTP_FMT_SSE;
    else if (has_f) {
        edge_http_bad(c, x, "format is sse or ndjson");
        return;
    }
    uint64_t last = 0;
    int has_last = q->last_event_id.p != NULL || has_i;
    if ((q->last_event_id.p != NULL && http_parse_u64(q->last_event_id, &last) != HKV_OK) ||
        (q->last_event_id.p == NULL && has_i && http_parse_u64(iv, &last) != HKV_OK)) {
        edge_http_bad(c, x, "Last-Event-ID and index need a number");
        return;
    }
    if (q->method != HTTP_HEAD && over_polls(c, x))
        return;
    if (edge_http_gates(c, x, raw, CMD_GET, 1) != 0)
        return;
    struct hreq r;
    request(c, x, HREQ_WATCH, &r);
    r.format = fmt;
    r.index = last;
    r.has_index = has_last;
    r.first = !has_last;
    r.final = c->e->stopping; /* draining: the current value, then the stream's end */
    edge_http_watch(&r);
}

static void run_request(struct conn *c, void *arg)
{
    const struct http_run *x = arg;
    const struct http_req *q = x->req;
    struct http_slice rest;
    sess_of(c)->ncmds++;
    if (edge_http_sess_denied(c)) {
        hr_simple(c, &c->out, 403, q->minor, 0, q->method == HTTP_HEAD, NULL,
                  "protected mode: hotkvd serves only loopback clients until a password is set "
                  "for the default user or protected-mode is off");
    } else if (slice_is(q->path, "/healthz")) {
        healthz(c, x);
    } else if (slice_is(q->path, "/metrics")) {
        metrics(c, x);
    } else if (slice_is(q->path, "/v1/stats") &&
               (q->method == HTTP_GET || q->method == HTTP_HEAD)) {
        if (operator_peer(c, x))
            edge_http_stats(c, x);
    } else if (edge_http_prefix(q->path, "/v1/kv/", &rest) &&
               (q->method == HTTP_PUT || q->method == HTTP_DELETE)) {
        edge_http_kv_write(c, x, rest);
    } else if (edge_http_prefix(q->path, "/v1/ratelimit/", &rest) && q->method == HTTP_POST) {
        edge_http_throttle(c, x, rest);
    } else if (edge_http_prefix(q->path, "/v1/ratelimit/", &rest)) {
        hr_simple(c, &c->out, 405, q->minor, x->keep_alive, q->method == HTTP_HEAD,
                  "Allow: POST\r\n", "/v1/ratelimit/KEY takes POST");
    } else if (q->method == HTTP_PUT || q->method == HTTP_DELETE || q->method == HTTP_POST) {
        hr_simple(c, &c->out, 405, q->minor, x->keep_alive, 0, "Allow: GET, HEAD\r\n",
                  "PUT and DELETE are for /v1/kv/KEY only, POST for /v1/ratelimit/KEY");
    } else if (edge_http_prefix(q->path, "/v1/kv/", &rest)) {
        kv(c, x, rest);
    } else if (edge_http_prefix(q->path, "/v1/watch/", &rest)) {
        watch(c, x, rest);
    } else {
        hr_simple(c, &c->out, 404, q->minor, x->keep_alive, q->method == HTTP_HEAD, NULL,
                  "no such endpoint (/v1/kv/KEY, /v1/watch/KEY, /v1/ratelimit/KEY, /v1/stats, "
                  "/healthz, /metrics)");
    }
}

static void run_refusal(struct conn *c, void *arg)
{
    const struct http_run *x = arg;
    const struct http_error *err = x->err;
    hr_simple(c, &c->out, err->status, 1, !err->close, 0,
              err->status == 405 ? "Allow: GET, HEAD, PUT, DELETE, POST\r\n" : NULL, err->reason);
}

static void run_timeout(struct conn *c, void *arg)
{
    hr_simple(c, &c->out, 408, 1, 0, 0, NULL,
              arg != NULL ? "the request's body took too long (http-body-timeout)"
                          : "the request's header section took too long");
}

/* CLIENT PAUSE covers the requests for keys (edge_pause.h): 1 when this one
 * is parked, to be parsed again when the pause lets it go. */
static int paused(struct conn *c, const struct http_req *q)
{
    struct http_slice rest;
    if (!edge_http_prefix(q->path, "/v1/kv/", &rest) &&
        !edge_http_prefix(q->path, "/v1/watch/", &rest) &&
        !edge_http_prefix(q->path, "/v1/ratelimit/", &rest))
        return 0;
    return edge_pause_hold(c, q->method == HTTP_PUT || q->method == HTTP_DELETE);
}

long edge_http_input(struct conn *c, const char *p, size_t n)
{
    struct http_sess *hs = sess_of(c)->http;
    if (hs == NULL) {
        c->close_after_write = 1;
        return -1;
    }
    if (hs->streaming) { /* the pipeline ended with a watch (edge_http_watch.c) */
        hs->req_start_ms = 0;
        return (long)n;
    }
    if (hs->body_wait && n < hs->body_need)
        return 0; /* a PUT's body, still coming (http-body-timeout) */
    int64_t now = clock_mono_ms();
    if (hs->req_start_ms == 0)
        hs->req_start_ms = now;
    struct http_req req;
    struct http_error err;
    size_t used = 0;
    int rc = http_req_parse(&hs->parser, p, n, &used, &req, &err);
    if (rc == HKV_EAGAIN)
        return 0;
    hs->req_start_ms = used < n ? now : 0; /* a pipelined request's clock starts now */
    if (rc != HKV_OK) {
        struct http_run x = {.err = &err};
        if (conn_run(c, run_refusal, &x) != 0 || err.close) {
            c->close_after_write = 1;
            return -1;
        }
        return (long)used;
    }
    if (paused(c, &req)) {
        hs->req_start_ms = 0; /* no header timeout while it waits */
        return 0;
    }
    struct http_run x = {.req = &req,
                    .keep_alive = req.keep_alive && !edge_http_sess_denied(c) && !c->e->stopping};
    if (req.method == HTTP_PUT && req.content_length > 0) {
        int b = edge_http_body(c, &x, p, n, used);
        if (b <= 0) {
            hs->req_start_ms = 0; /* the header section is whole: the body's clock runs */
            if (b < 0)
                c->close_after_write = 1;
            return b;
        }
        used += (size_t)req.content_length;
        hs->req_start_ms = used < n ? now : 0;
    }
    if (conn_run(c, run_request, &x) != 0 || !x.keep_alive)
        c->close_after_write = 1;
    return (long)used;
}

/* ---- timeouts, the stop ---------------------------------------------------------- */

void edge_http_cron(struct edge *e, int64_t now)
{
    if (e->http == NULL)
        return;
    const struct http_opts *o = &e->http->opts;
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        struct http_sess *hs = sess_of(c)->http;
        if (hs == NULL) {
            c = next;
            continue;
        }
        int64_t idle_from = c->last_ms > hs->answered_ms ? c->last_ms : hs->answered_ms;
        if (!c->close_after_write && hs->body_wait && !c->paused && c->hold == NULL &&
            now - hs->body_start_ms >= o->body_timeout_ms) {
            /* A body that does not come: closed, and what it sent is dropped. */
            board_add(&e->stats->http_body_timeouts, 1);
            hs->body_wait = 0;
            c->close_after_write = 1;
            if (conn_run(c, run_timeout, c) == 0)
                conn_flush(c); /* may close c */
            else
                conn_close(c);
        } else if (!c->close_after_write && hs->req_start_ms != 0 && !c->paused && c->hold == NULL &&
            now - hs->req_start_ms >= o->header_timeout_ms) {
            /* Slowloris: a header section that does not finish in time (while
             * the connection is read: not behind its own pipeline's bound). */
            c->close_after_write = 1;
            if (conn_run(c, run_timeout, NULL) == 0)
                conn_flush(c); /* may close c */
            else
                conn_close(c);
        } else if (!c->close_after_write && hs->req_start_ms == 0 && !hs->body_wait &&
                   c->sq_head == NULL && c->hold == NULL && /* not a parked request */
                   buf_unread(&c->out) == 0 && now - idle_from >= o->keepalive_timeout_ms) {
            conn_close(c);
        } else {
            /* A watch whose reader was slow sends the latest once it has room
             * (an HTTP/1.0 stream closes after it: close_after_write is set). */
            for (struct hreq *r = hs->reqs; r != NULL; r = r->cnext)
                if (r->kind == HREQ_WATCH && r->dirty) {
                    edge_http_watch_cron(r); /* one per connection and tick: it may close c */
                    break;
                }
        }
        c = next;
    }
}

void edge_http_stop(struct edge *e)
{
    if (e->http == NULL)
        return;
    for (struct conn *c = e->conns->list; c != NULL; c = c->next)
        for (struct hreq *r = sess_of(c)->http != NULL ? sess_of(c)->http->reqs : NULL; r != NULL;
             r = r->cnext) {
            if (r->kind == HREQ_POLL)
                edge_http_kv_stop(r);
            else if (r->kind == HREQ_WATCH)
                edge_http_watch_stop(r);
        }
}

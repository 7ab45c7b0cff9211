/*
 * edge_http.h - the HTTP front door of an edge: http-port and https-port
 * (sockets opened by the master, served on the edge's own connection layer
 * beside RESP).  GET and HEAD; PUT and DELETE on /v1/kv only:
 *
 *   /v1/kv/{key}      the key through the same read path as RESP GET (colo
 *                     cache, single flight, miss-wait, on-timeout, negative
 *                     caching), with ETag/304, and a long poll with
 *                     ?index=N&wait=D (edge_http_kv.c); PUT and DELETE are
 *                     SET and DEL ops of the write path (edge_http_write.c),
 *                     a PUT's body bounded by proto-max-bulk-len (413 from
 *                     its Content-Length) and http-body-timeout
 *   /v1/watch/{key}   a stream of its versions, SSE or NDJSON (edge_http_watch.c)
 *   /healthz          200 while serving, 503 while starting (an owner
 *                     process of the host not ready yet, or in a cluster a
 *                     map without leaves) or draining (the edge stops)
 *   /metrics          Prometheus text (edge_metrics.h), to http-metrics-allow
 *
 * While the edge stops (drains what it owes) its HTTP ports keep accepting,
 * the RESP ports do not: each request is answered and its connection
 * closed, /healthz with 503 "draining", a GET as always, a long poll at once
 * (not held), a watch with the value the colo holds and then its end.
 * Users, ACLs, protected mode and rate limits are RESP's: HTTP Basic
 * credentials log in as the named user for that request (401 without a
 * valid one when the default user needs a password), a key the user may not
 * read (or write: SET, DEL) is 403, the command's rate limit answers 429 with Retry-After,
 * and protected mode answers 403 to a non-loopback peer.  Bounds: the
 * parser's (request line, header count and bytes: proto/http_req.h),
 * http-header-timeout for a request's header section (408, slowloris),
 * http-keepalive-timeout between requests, http-max-polls held readers per
 * edge, and every client limit of the connection layer (maxclients, output
 * buffers, client-max-pending for pipelines).
 *
 * The connection hooks are these functions; edge.c plugs them in
 * (conn_accept_with) next to the edge's own accept and closing work.
 */
#ifndef HKV_EDGE_HTTP_H
#define HKV_EDGE_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/cfg.h"
#include "proto/buf.h"
#include "server/edge/edge_conn.h"

/* The HTTP front door's options (the process builds them from the config,
 * at setup and at each reload; the allow list points into that config and
 * is parsed by the call). */
struct http_opts {
    char *const *metrics_allow;   /* http-metrics-allow: who may GET /metrics */
    size_t nmetrics_allow;
    int64_t max_polls;            /* held long polls + watch streams per edge */
    int64_t poll_max_wait_ms;
    int64_t header_timeout_ms;    /* a request's header section, first byte to last */
    int64_t body_timeout_ms;      /* a PUT's body, from its header section's end */
    int64_t keepalive_timeout_ms; /* idle between requests */
    int64_t heartbeat_ms;         /* watch streams: a comment line this often */
    int64_t negative_ttl_ms;      /* a 404's Cache-Control max-age */
};

/* e->http (NULL when the edge has no HTTP socket): 0, or -1 (memory). */
int edge_http_setup(struct edge *e, const struct http_opts *opts);
/* After every connection is closed. */
void edge_http_teardown(struct edge *e);
/* http-metrics-allow and the other reloadable directives from next. */
void edge_http_reload(struct edge *e, const struct http_opts *opts);
/* Every 100 ms: header and keep-alive timeouts, slow watch readers. */
void edge_http_cron(struct edge *e, int64_t now_ms);
/* The edge stops: held polls are answered with what the colo holds, and
 * streams end (on their timers, so no callback runs from here).  New
 * requests are still taken (see the top). */
void edge_http_stop(struct edge *e);

/* Connection hooks (edge_conn.h). */
void edge_http_accepted(struct conn *c, const struct sockaddr *peer);
long edge_http_input(struct conn *c, const char *p, size_t n);
int edge_http_hangup(struct conn *c);
void edge_http_closing(struct conn *c);

/* INFO # HTTP (edge_http_info.c): the host's held polls and streams, and
 * this edge's front door settings. */
void edge_http_info(struct hkv_buf *b, struct edge *e);

#endif

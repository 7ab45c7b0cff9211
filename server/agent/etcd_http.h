/*
 * etcd_http.h - a small HTTP/1.1 client connection on libevent bufferevents, for
 * the agent's etcd client (etcd.c): POST with a Content-Length body (never
 * chunked: etcd's gateway stalls on a chunked request), over plain TCP or TLS
 * (bufferevent_openssl; the server's certificate is verified against a CA file
 * or the system's CAs, and must name the host of the URL).
 *
 * One connection carries one request at a time and is kept alive between
 * them; it connects on the first request and again after the server closed
 * it.  The response is parsed by http_resp.c (bounded in every dimension) and
 * handed to the caller as head, body slices and done; the caller decides what
 * to keep.  Every request carries its deadlines: head_ms until the status and
 * headers are in (connect and TLS handshake included), total_ms until the
 * whole response is (0: none, for a stream), idle_ms of silence once the head
 * is in (0: none).  A deadline passed, a closed connection or a bad response
 * ends the request with done(rc != HKV_OK) and closes the connection.
 *
 * Callbacks run on the loop from the connection's events, never from inside
 * etcd_http_post.  A callback may post the next request or destroy the
 * connection.
 */
#ifndef HKV_ETCD_HTTP_H
#define HKV_ETCD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "proto/http_resp.h"

struct http_url {
    int tls;                 /* https */
    char host[256];          /* name or address, without brackets */
    char port[8];
    char hostport[272];      /* for the Host header: "h:p", "[v6]:p" */
};

/* "http://host:port" or "https://host[:port]" (an IPv6 address in
 * brackets, an optional trailing '/', nothing else after it; default port
 * 80 / 443).  HKV_OK or HKV_EINVAL. */
int etcd_http_url_parse(const char *url, struct http_url *u);

/* A client TLS context: TLS 1.2 or newer, peer verification on, CAs from
 * ca_file (NULL or "": the system's).  NULL with a reason in err. */
SSL_CTX *etcd_http_tls_ctx(const char *ca_file, char *err, size_t errlen);

struct http_handler {
    /* The head of the response is in r (status, framing). */
    void (*head)(void *arg, const struct http_resp *r);
    /* Body bytes, valid only during the call. */
    void (*data)(void *arg, const char *p, size_t n);
    /* The end: HKV_OK (the whole response arrived), HKV_ETIMEDOUT, HKV_EIO
     * (connect, TLS or the connection failed), HKV_EPROTO / HKV_ETOOBIG (a
     * response outside the bounds).  reached = 0 when the request cannot
     * have reached the server (the connection never came up): safe to send
     * it elsewhere. */
    void (*done)(void *arg, int rc, int reached);
};

struct http_conn;

/* A connection to u (not connected yet).  ctx is needed for https (the
 * connection takes a reference); dns may be NULL (names are then resolved
 * blocking).  max_body bounds a response body (0: unbounded, for streams
 * whose caller bounds what it keeps).  NULL on ENOMEM or https without ctx. */
struct http_conn *etcd_http_create(struct event_base *base, struct evdns_base *dns,
                                   SSL_CTX *ctx, const struct http_url *u, uint64_t max_body);
/* Closes and frees; no callback runs afterwards (also from inside one). */
void etcd_http_destroy(struct http_conn **c);

/* Sends POST path with body (Content-Type application/json) and, when auth
 * is not NULL, an Authorization header.  0; HKV_EINVAL (a request is in
 * flight, or bad arguments); HKV_ENOMEM; HKV_EIO (no socket): then no
 * callback runs. */
int etcd_http_post(struct http_conn *c, const char *path, const char *auth, const char *body,
                   size_t len, int64_t head_ms, int64_t total_ms, int64_t idle_ms,
                   const struct http_handler *h, void *arg);

/* 1 while a request is in flight. */
int etcd_http_busy(const struct http_conn *c);
/* The endpoint this connection talks to. */
const struct http_url *etcd_http_url(const struct http_conn *c);
/* Why the last request failed ("connect: Connection refused", "TLS:
 * certificate verify failed", "timed out waiting for the head" ...), or "". */
const char *etcd_http_error(const struct http_conn *c);

#endif

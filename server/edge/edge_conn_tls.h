/*
 * edge_conn_tls.h - TLS on a client connection: the session's handshake,
 * reads and writes on the connection's own non-blocking fd and buffers.
 * These never close the connection: they return what happened and the
 * connection layer (edge_conn.c) closes, so this sits below it.
 *
 * A read that needs the fd writable (SSL_read's WANT_WRITE) or a write that
 * needs it readable (SSL_write's WANT_READ) is recorded in c->tls and
 * retried from the other event.
 */
#ifndef HKV_EDGE_CONN_TLS_H
#define HKV_EDGE_CONN_TLS_H

#include <sys/types.h>

#include "server/edge/edge_conn.h"

/* c->tls bits */
#define CONN_TLS_HANDSHAKE 0x1    /* handshake not finished */
#define CONN_TLS_READ_WANTS_WRITE 0x2
#define CONN_TLS_WRITE_WANTS_READ 0x4
#define CONN_TLS_FATAL 0x8        /* a fatal TLS error: no close_notify */
#define CONN_TLS_COUNTED 0x10     /* counted in tls_connections */

struct ssl_ctx_st;

/* conn_tls_write's answers */
enum conn_tls_w {
    CONN_TLS_SENT,                /* out is empty */
    CONN_TLS_WAIT,                /* the handshake waits for the fd */
    CONN_TLS_WANT_WRITE,          /* SSL_write waits for the fd to be writable */
    CONN_TLS_WANT_READ,           /* SSL_write waits for it to be readable */
    CONN_TLS_FAILED,              /* the session failed: close */
};

/* A server-side session on c->fd from ctx; 0, or -1 (nothing to free but
 * what conn_tls_free frees). */
int conn_tls_new(struct conn *c, struct ssl_ctx_st *ctx);
/* Sends a close_notify (best effort, never waited for) unless the session
 * failed or never started, and frees it. */
void conn_tls_free(struct conn *c);
/* Drives the handshake: 1 finished, 0 waiting for the fd, -1 failed
 * (counted and logged: close the connection). */
int conn_tls_handshake(struct conn *c);
/* Reads what the session has into c->in (room reserved): bytes, 0 for none
 * now, -1 when the peer closed or the session failed (close). */
ssize_t conn_tls_read(struct conn *c);
/* Writes c->out through the session, handshake first; see enum conn_tls_w.
 * The caller arms the events of the WANT answers (after its output check). */
enum conn_tls_w conn_tls_write(struct conn *c);

#endif

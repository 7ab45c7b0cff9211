/*
 * edge_conn_tls.c - TLS on a client connection (edge_conn_tls.h).
 *
 * The session runs over the connection's own fd and buffers, not a
 * bufferevent, so the plaintext path pays one predictable branch on c->ssl
 * and nothing else.  The choice that shapes this file: it only reports
 * (finished, waiting, failed) and the connection layer closes, so TLS sits
 * below edge_conn.c and never calls back into it.
 */
#include "server/edge/edge_conn_tls.h"

#include <limits.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/core/log.h"
#include "server/edge/edge_int.h"

int conn_tls_new(struct conn *c, SSL_CTX *ctx)
{
    ERR_clear_error();
    c->ssl = ctx != NULL ? SSL_new(ctx) : NULL;
    int ok = c->ssl != NULL && SSL_set_fd(c->ssl, c->fd) == 1;
    if (ok)
        SSL_set_accept_state(c->ssl);
    c->tls = CONN_TLS_HANDSHAKE;
    ERR_clear_error();
    return ok ? 0 : -1;
}

void conn_tls_free(struct conn *c)
{
    if (c->ssl == NULL)
        return;
    /* A close_notify, best effort (never waited for), unless the session
     * failed or never started. */
    if (!(c->tls & (CONN_TLS_FATAL | CONN_TLS_HANDSHAKE))) {
        ERR_clear_error();
        SSL_shutdown(c->ssl);
    }
    if (c->tls & CONN_TLS_COUNTED)
        board_add(&c->e->stats->tls_connections, -1);
    SSL_free(c->ssl);
    c->ssl = NULL;
    ERR_clear_error();
}

/* A TLS session ended in an error: counted if it was in its handshake. */
static void tls_failed(struct conn *c)
{
    c->tls |= CONN_TLS_FATAL;
    if (c->tls & CONN_TLS_HANDSHAKE) {
        board_add(&c->e->stats->tls_handshake_failures, 1);
        char why[160] = "connection closed";
        unsigned long e = ERR_peek_error();
        if (e != 0)
            ERR_error_string_n(e, why, sizeof(why));
        log_verbose("client %s: TLS handshake failed (%s); closing", c->addr, why);
    }
    ERR_clear_error();
}

int conn_tls_handshake(struct conn *c)
{
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->tls = (uint8_t)((c->tls & ~CONN_TLS_HANDSHAKE) | CONN_TLS_COUNTED);
        board_add(&c->e->stats->tls_connections, 1);
        if (buf_unread(&c->out) > 0)
            event_add(c->wev, NULL); /* a reply queued before it finished */
        else
            event_del(c->wev);
        return 1;
    }
    int err = SSL_get_error(c->ssl, r);
    if (err == SSL_ERROR_WANT_READ) {
        event_del(c->wev);
        return 0;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
        event_add(c->wev, NULL);
        return 0;
    }
    tls_failed(c);
    return -1;
}

ssize_t conn_tls_read(struct conn *c)
{
    if (c->tls & CONN_TLS_HANDSHAKE) {
        int h = conn_tls_handshake(c);
        if (h <= 0)
            return h;
    }
    size_t room = buf_room(&c->in);
    ERR_clear_error();
    int n = SSL_read(c->ssl, buf_tail(&c->in), room > INT_MAX ? INT_MAX : (int)room);
    if (n > 0)
        return n;
    int err = SSL_get_error(c->ssl, n);
    if (err == SSL_ERROR_WANT_READ)
        return 0;
    if (err == SSL_ERROR_WANT_WRITE) {
        c->tls |= CONN_TLS_READ_WANTS_WRITE;
        event_add(c->wev, NULL);
        return 0;
    }
    if (err != SSL_ERROR_ZERO_RETURN) /* ZERO_RETURN: the client's close_notify */
        tls_failed(c);
    return -1;
}

enum conn_tls_w conn_tls_write(struct conn *c)
{
    if (c->tls & CONN_TLS_HANDSHAKE) {
        /* Output before the handshake finished (a protected-mode refusal at
         * accept) waits for it; the handshake needs the read event even if
         * the connection is closing. */
        if (buf_unread(&c->out) > 0 && !event_pending(c->rev, EV_READ, NULL))
            event_add(c->rev, NULL);
        int h = conn_tls_handshake(c);
        if (h < 0)
            return CONN_TLS_FAILED;
        if (h == 0)
            return CONN_TLS_WAIT;
    }
    while (buf_unread(&c->out) > 0) {
        /* After a WANT_*, SSL_write is retried with the same head bytes and a
         * length never smaller (out only grows at its tail until written). */
        size_t len = buf_unread(&c->out);
        ERR_clear_error();
        int n = SSL_write(c->ssl, buf_head(&c->out), len > INT_MAX ? INT_MAX : (int)len);
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        int err = SSL_get_error(c->ssl, n);
        if (err == SSL_ERROR_WANT_WRITE)
            return CONN_TLS_WANT_WRITE;
        if (err == SSL_ERROR_WANT_READ)
            return CONN_TLS_WANT_READ;
        tls_failed(c);
        return CONN_TLS_FAILED;
    }
    return CONN_TLS_SENT;
}

/*
 * tls.h - the OpenSSL server context for the TLS client port.
 *
 * Connection I/O over TLS lives with the plaintext path in edge_conn.c (one
 * code path: a connection has an SSL object or not).  This file only builds
 * the SSL_CTX from the tls-* directives: each edge builds one at start and a
 * new one on every reload (SIGHUP re-reads the certificate files); the master
 * builds one at start only to refuse a bad certificate before forking.
 */
#ifndef HKV_TLS_H
#define HKV_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "config/cfg.h"

/* A server context for cfg (certificate, key, CA, client verification,
 * protocol versions; renegotiation off, no session tickets).  NULL with a
 * one-line reason in err ("tls-cert-file '/x.crt': ... no start line"). */
SSL_CTX *tls_ctx_new(const struct cfg *cfg, char *err, size_t errlen);

/* The oldest OpenSSL error queued, as text (then the queue is cleared);
 * `fallback` when the queue is empty. */
void tls_error_text(char *buf, size_t len, const char *fallback);
/* Frees ctx (NULL-safe) and writes "WHAT 'PATH': <OpenSSL's reason>" (or
 * "WHAT: ..." with no path) into err; returns NULL, for the context builders'
 * error paths. */
struct ssl_ctx_st *tls_ctx_fail(struct ssl_ctx_st *ctx, char *err, size_t errlen,
                                const char *what, const char *path);

#endif

/*
 * tls_cluster.h - the TLS of links between hosts of a cluster: an edge of
 * one host talking to an owner of another (../shared/CLUSTER.md §4).
 *
 * Mutual TLS from a cluster CA, and nothing else: each side presents
 * cluster-tls-cert-file (with its key) and trusts only cluster-tls-ca-file
 * (never the system's store: a certificate any public CA signed must not
 * open a link), verification is required both ways (an owner refuses a
 * client without a certificate), TLS 1.2 or newer, no renegotiation, no
 * session resumption.  A valid chain is not enough: the peer's certificate
 * must also NAME the host it claims to be (its CN or a subjectAltName DNS
 * entry equal to the `host` name, which is what HELLO carries and what
 * the cluster map lists), so one host's certificate cannot speak for
 * another.  The client checks the owner's host during the handshake
 * (tls_cluster_expect_host); the owner checks the edge's after HELLO
 * (tls_cluster_peer_is), since only HELLO says which host it claims.
 *
 * Same-host links stay on Unix sockets and use none of this.
 */
#ifndef HKV_TLS_CLUSTER_H
#define HKV_TLS_CLUSTER_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "config/cfg.h"

/* A context from cfg's cluster-tls-* files: server = 1 for an owner's
 * listener (client certificate required), 0 for an edge's links.  NULL
 * with a one-line reason in err ("cluster-tls-cert-file '/x.crt': ...").
 * Each call reads the files again (a reload builds a new one). */
SSL_CTX *tls_cluster_ctx_new(const struct cfg *cfg, int server, char *err, size_t errlen);
/* The same from the three files alone, for a module its process handed
 * them to (none may be NULL; "" is refused as above). */
struct tls_cluster_files {
    const char *cert, *key, *ca;
};
SSL_CTX *tls_cluster_ctx_from(const struct tls_cluster_files *f, int server, char *err,
                              size_t errlen);

/* Client side, before the handshake: the handshake fails unless the
 * server's certificate names host (CN or subjectAltName DNS).  0, or -1
 * (out of memory, or an empty host). */
int tls_cluster_expect_host(SSL *ssl, const char *host);

/* After a handshake: 1 if the peer presented a certificate, its chain
 * verified against the cluster CA, and it names host (CN or
 * subjectAltName DNS); else 0, with a short reason in why. */
int tls_cluster_peer_is(SSL *ssl, const char *host, char *why, size_t whylen);

#endif

/*
 * tls_cluster.c - TLS contexts and peer-name checks for links between
 * hosts; see tls_cluster.h.
 *
 * Unlike the client port's context (tls.c), which serves whatever clients
 * the operator allows, this one is closed: the only trust anchor is the
 * cluster CA file (SSL_CTX_load_verify_locations on it, never the default
 * paths), the peer must present a certificate (SSL_VERIFY_FAIL_IF_NO_PEER_CERT
 * on the owner's side), and the name check looks at the subject CN as well
 * as subjectAltName (X509_CHECK_FLAG_ALWAYS_CHECK_SUBJECT), because the
 * cluster's certificates name a host either way and the rule is "CN or SAN".
 */
#include "server/core/tls_cluster.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "server/core/tls.h"

SSL_CTX *tls_cluster_ctx_new(const struct cfg *cfg, int server, char *err, size_t errlen)
{
    struct tls_cluster_files f = {cfg->cluster_tls_cert_file, cfg->cluster_tls_key_file,
                                  cfg->cluster_tls_ca_file};
    return tls_cluster_ctx_from(&f, server, err, errlen);
}

SSL_CTX *tls_cluster_ctx_from(const struct tls_cluster_files *f, int server, char *err,
                              size_t errlen)
{
    ERR_clear_error();
    if (f->cert[0] == '\0' || f->key[0] == '\0' || f->ca[0] == '\0') {
        snprintf(err, errlen, "links between hosts need cluster-tls-cert-file, "
                              "cluster-tls-key-file and cluster-tls-ca-file");
        return NULL;
    }
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (ctx == NULL)
        return tls_ctx_fail(NULL, err, errlen, "SSL_CTX_new", NULL);
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
        return tls_ctx_fail(ctx, err, errlen, "TLS 1.2 or newer", NULL);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* A peer that closes without close_notify is an end of stream: frames are
     * length-prefixed, so a cut one is seen at the frame level anyway. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    /* The edge's links write from a buffer that may move between a
     * WANT_WRITE and the retry (same unsent bytes), and partially. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (server)
        SSL_CTX_set_num_tickets(ctx, 0);
    if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1)
        return tls_ctx_fail(ctx, err, errlen, "cluster-tls-cert-file", f->cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1)
        return tls_ctx_fail(ctx, err, errlen, "cluster-tls-key-file", f->key);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return tls_ctx_fail(ctx, err, errlen, "cluster-tls-key-file does not match cluster-tls-cert-file",
                    f->key);
    if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1)
        return tls_ctx_fail(ctx, err, errlen, "cluster-tls-ca-file", f->ca);
    if (server) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(f->ca);
        if (names == NULL)
            return tls_ctx_fail(ctx, err, errlen, "cluster-tls-ca-file", f->ca);
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                       NULL);
    ERR_clear_error();
    return ctx;
}

int tls_cluster_expect_host(SSL *ssl, const char *host)
{
    if (host == NULL || host[0] == '\0')
        return -1;
    X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_ALWAYS_CHECK_SUBJECT |
                                           X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(p, host, 0) == 1 ? 0 : -1;
}

int tls_cluster_peer_is(SSL *ssl, const char *host, char *why, size_t whylen)
{
    X509 *cert = SSL_get_peer_certificate(ssl);
    if (cert == NULL) {
        snprintf(why, whylen, "no peer certificate");
        return 0;
    }
    int ok = 0;
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK)
        snprintf(why, whylen, "peer certificate not verified: %s",
                 X509_verify_cert_error_string(v));
    else if (host == NULL || host[0] == '\0')
        snprintf(why, whylen, "no host name to check the peer certificate against");
    else if (X509_check_host(cert, host, strlen(host),
                             X509_CHECK_FLAG_ALWAYS_CHECK_SUBJECT |
                                 X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
                             NULL) != 1)
        snprintf(why, whylen, "peer certificate does not name host '%s'", host);
    else
        ok = 1;
    X509_free(cert);
    return ok;
}

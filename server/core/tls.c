/* tls.c - the OpenSSL server context; see tls.h. */
#include "tls.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/x509.h>

void tls_error_text(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (e == 0)
        snprintf(buf, len, "%s", fallback);
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

/* The lowest and highest version named in tls-protocols (validated by the
 * config: TLSv1.2 and/or TLSv1.3). */
static void protocol_range(const char *s, int *lo, int *hi)
{
    *lo = 0;
    *hi = 0;
    while (*s != '\0') {
        size_t w = strcspn(s, " \t");
        if (w == 0) {
            s++;
            continue;
        }
        int v = w == 7 && strncasecmp(s, "TLSv1.3", 7) == 0   ? TLS1_3_VERSION
                : w == 7 && strncasecmp(s, "TLSv1.2", 7) == 0 ? TLS1_2_VERSION
                                                              : 0;
        if (v != 0 && (*lo == 0 || v < *lo))
            *lo = v;
        if (v > *hi)
            *hi = v;
        s += w;
    }
    if (*lo == 0) { /* cannot happen with a validated config: TLS 1.2+ */
        *lo = TLS1_2_VERSION;
        *hi = TLS1_3_VERSION;
    }
}

SSL_CTX *tls_ctx_fail(SSL_CTX *ctx, char *err, size_t errlen, const char *what, const char *path)
{
    char why[256];
    tls_error_text(why, sizeof(why), "failed");
    if (path != NULL)
        snprintf(err, errlen, "%s '%s': %s", what, path, why);
    else
        snprintf(err, errlen, "%s: %s", what, why);
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *tls_ctx_new(const struct cfg *cfg, char *err, size_t errlen)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL)
        return tls_ctx_fail(NULL, err, errlen, "SSL_CTX_new", NULL);
    int lo, hi;
    protocol_range(cfg->tls_protocols, &lo, &hi);
    if (SSL_CTX_set_min_proto_version(ctx, lo) != 1 || SSL_CTX_set_max_proto_version(ctx, hi) != 1)
        return tls_ctx_fail(ctx, err, errlen, "tls-protocols", cfg->tls_protocols);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
    /* Partial writes: SSL_write returns after each record, like write(2);
     * moving buffer: c->out may be reallocated between a WANT_WRITE and the
     * retry (its unsent head is the same bytes).  Release buffers: an idle
     * connection holds no 16 KB record buffers. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* Each edge has its own context, so a session cached or a ticket issued
     * by one edge would not resume on another: issue none. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_dh_auto(ctx, 1);

    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert_file) != 1)
        return tls_ctx_fail(ctx, err, errlen, "tls-cert-file", cfg->tls_cert_file);
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1)
        return tls_ctx_fail(ctx, err, errlen, "tls-key-file", cfg->tls_key_file);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return tls_ctx_fail(ctx, err, errlen, "tls-key-file does not match tls-cert-file",
                    cfg->tls_key_file);

    int mode = SSL_VERIFY_NONE;
    if (cfg->tls_ca_cert_file[0] != '\0') {
        if (SSL_CTX_load_verify_locations(ctx, cfg->tls_ca_cert_file, NULL) != 1)
            return tls_ctx_fail(ctx, err, errlen, "tls-ca-cert-file", cfg->tls_ca_cert_file);
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->tls_ca_cert_file);
        if (names == NULL)
            return tls_ctx_fail(ctx, err, errlen, "tls-ca-cert-file", cfg->tls_ca_cert_file);
        SSL_CTX_set_client_CA_list(ctx, names);
        if (cfg->tls_auth_clients == CFG_TLS_AUTH_YES)
            mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        else if (cfg->tls_auth_clients == CFG_TLS_AUTH_OPTIONAL)
            mode = SSL_VERIFY_PEER;
    }
    SSL_CTX_set_verify(ctx, mode, NULL);
    ERR_clear_error();
    return ctx;
}

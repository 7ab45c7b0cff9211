/*
 * check_tls.c - TLS for clients against the real daemon: redis-cli --tls,
 * client certificates (tls-auth-clients), hostile clients on the TLS port
 * (plaintext, a stalled or half-sent handshake), INFO counters, and
 * certificate reload on SIGHUP (a replaced certificate is served to new
 * connections; a broken one keeps the old).
 *
 * Each test makes its own CA and certificates with the openssl command (EC
 * P-256, 1-day validity) in its own temp dir.  External commands (openssl,
 * redis-cli) run with a time bound and are waited for by pid; the in-process
 * client (OpenSSL) has 5 s socket timeouts.  Every loop is bounded.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tests/harness.h"

#define OPENSSL "/usr/bin/openssl"
#define REDIS_CLI "/usr/bin/redis-cli"
#define FIXTURE "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static int run(char *const argv[], char *out, size_t len, int ms)
{
    return h_run(argv, NULL, out, len, ms);
}

static int have(const char *path)
{
    return access(path, X_OK) == 0;
}

/* ---- certificates ---- */

struct pki {
    char dir[256];
    char ca[320], ca_key[320];
    char srv[320], srv_key[320];
    char cli[320], cli_key[320];
    char rogue[320], rogue_key[320]; /* a client certificate from another CA */
};

static void openssl_ok(char *const argv[])
{
    char out[8192];
    int rc = run(argv, out, sizeof(out), 20000);
    ck_assert_msg(rc == 0, "%s %s failed (%d): %s", argv[1], argv[2], rc, out);
}

/* A self-signed CA: <dir>/<name>.crt and .key. */
static void make_ca(const char *dir, const char *name, char *crt, char *key)
{
    char subj[128];
    sprintf(crt, "%s/%s.crt", dir, name);
    sprintf(key, "%s/%s.key", dir, name);
    snprintf(subj, sizeof(subj), "/CN=hotkvd test %s", name);
    char *argv[] = {OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", subj,
                    "-keyout", key, "-out", crt, NULL};
    openssl_ok(argv);
}

/* A certificate for CN=`cn` signed by ca/ca_key: <dir>/<name>.crt and .key. */
static void make_leaf(const char *dir, const char *name, const char *cn, const char *ca,
                      const char *ca_key, char *crt, char *key)
{
    static int serial = 1000;
    char csr[320], ext[320], subj[128], ser[32];
    sprintf(crt, "%s/%s.crt", dir, name);
    sprintf(key, "%s/%s.key", dir, name);
    snprintf(csr, sizeof(csr), "%s/%s.csr", dir, name);
    snprintf(ext, sizeof(ext), "%s/%s.ext", dir, name);
    snprintf(subj, sizeof(subj), "/CN=%s", cn);
    snprintf(ser, sizeof(ser), "%d", serial++);
    FILE *f = fopen(ext, "w");
    ck_assert_ptr_nonnull(f);
    fputs("subjectAltName=DNS:localhost,IP:127.0.0.1\n", f);
    fclose(f);
    char *a1[] = {OPENSSL, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                  "-nodes", "-subj", subj, "-keyout", key, "-out", csr, NULL};
    openssl_ok(a1);
    char *a2[] = {OPENSSL, "x509", "-req", "-in", csr, "-CA", (char *)ca, "-CAkey",
                  (char *)ca_key, "-set_serial", ser, "-days", "1", "-extfile", ext,
                  "-out", crt, NULL};
    openssl_ok(a2);
}

static void make_pki(struct pki *k)
{
    h_tmpdir(k->dir, sizeof(k->dir));
    char other[320], other_key[320];
    make_ca(k->dir, "ca", k->ca, k->ca_key);
    make_ca(k->dir, "otherca", other, other_key);
    make_leaf(k->dir, "server", "localhost", k->ca, k->ca_key, k->srv, k->srv_key);
    make_leaf(k->dir, "client", "hotkvd-client", k->ca, k->ca_key, k->cli, k->cli_key);
    make_leaf(k->dir, "rogue", "rogue-client", other, other_key, k->rogue, k->rogue_key);
}

/* The daemon with TLS on a second port; extra config after the TLS lines. */
static int start_tls(struct daemon *d, const struct pki *k, int *tls_port, const char *extra)
{
    char conf[2048];
    *tls_port = h_free_port();
    snprintf(conf, sizeof(conf),
             FIXTURE "tls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n%s",
             *tls_port, k->srv, k->srv_key, k->ca, extra != NULL ? extra : "");
    return h_start(d, conf);
}

/* ---- clients ---- */

/* redis-cli --tls against port with the given client certificate (NULL:
 * none); out holds what it printed, trailing newline removed. */
static int cli_tls(int port, const struct pki *k, const char *crt, const char *key, char *out,
                   size_t len, const char *a1, const char *a2, const char *a3)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    char *argv[16];
    int n = 0;
    argv[n++] = REDIS_CLI;
    argv[n++] = "--tls";
    argv[n++] = "--cacert";
    argv[n++] = (char *)k->ca;
    if (crt != NULL) {
        argv[n++] = "--cert";
        argv[n++] = (char *)crt;
        argv[n++] = "--key";
        argv[n++] = (char *)key;
    }
    argv[n++] = "-p";
    argv[n++] = p;
    argv[n++] = (char *)a1;
    argv[n++] = (char *)a2;
    argv[n++] = (char *)a3;
    argv[n] = NULL;
    int rc = run(argv, out, len, 10000);
    size_t l = strlen(out);
    if (l > 0 && out[l - 1] == '\n')
        out[l - 1] = '\0';
    return rc;
}

/* An in-process TLS client (OpenSSL), for what redis-cli cannot show: a
 * connection held open, a protocol version forced. */
struct tcli {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
};

static void tcli_close(struct tcli *t)
{
    if (t->ssl != NULL)
        SSL_free(t->ssl);
    if (t->ctx != NULL)
        SSL_CTX_free(t->ctx);
    if (t->fd >= 0)
        close(t->fd);
    t->ssl = NULL;
    t->ctx = NULL;
    t->fd = -1;
}

/* Connects and completes the handshake (as the client sees it; with TLS 1.3
 * a refused client certificate shows only at the first read).  0 or -1. */
static int tcli_open(struct tcli *t, int port, const struct pki *k, const char *crt,
                     const char *key, int max_version)
{
    t->fd = -1;
    t->ssl = NULL;
    t->ctx = SSL_CTX_new(TLS_client_method());
    ck_assert_ptr_nonnull(t->ctx);
    ck_assert_int_eq(SSL_CTX_load_verify_locations(t->ctx, k->ca, NULL), 1);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (max_version != 0)
        SSL_CTX_set_max_proto_version(t->ctx, max_version);
    if (crt != NULL) {
        ck_assert_int_eq(SSL_CTX_use_certificate_file(t->ctx, crt, SSL_FILETYPE_PEM), 1);
        ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM), 1);
    }
    t->fd = h_connect(port);
    if (t->fd < 0) {
        tcli_close(t);
        return -1;
    }
    struct timeval tv = {5, 0};
    setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    t->ssl = SSL_new(t->ctx);
    SSL_set_fd(t->ssl, t->fd);
    ERR_clear_error();
    if (SSL_connect(t->ssl) != 1) {
        ERR_clear_error();
        tcli_close(t);
        return -1;
    }
    return 0;
}

/* Sends raw RESP and reads one reply's bytes (up to len-1). */
static int tcli_call(struct tcli *t, const char *req, char *out, size_t len)
{
    ERR_clear_error();
    if (SSL_write(t->ssl, req, (int)strlen(req)) != (int)strlen(req))
        return -1;
    int n = SSL_read(t->ssl, out, (int)len - 1);
    ERR_clear_error();
    if (n <= 0)
        return -1;
    out[n] = '\0';
    return n;
}

static int tcli_ping(struct tcli *t)
{
    char buf[64];
    return tcli_call(t, "*1\r\n$4\r\nPING\r\n", buf, sizeof(buf)) > 0 &&
           strcmp(buf, "+PONG\r\n") == 0;
}

/* Reads from a plain socket until EOF, an error or 5 s (h_connect's receive
 * timeout).  Returns 1 if the peer closed (EOF or reset), 0 on timeout;
 * bytes received go to buf. */
static int read_until_closed(int fd, char *buf, size_t len, size_t *got)
{
    *got = 0;
    int64_t end = h_now_ms() + 8000;
    while (h_now_ms() < end) {
        ssize_t r = read(fd, buf + *got, len - 1 - *got);
        if (r > 0) {
            *got += (size_t)r;
            if (*got >= len - 1)
                return 0;
            continue;
        }
        if (r == 0 || errno == ECONNRESET)
            return 1;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR)
            return 1;
    }
    return 0;
}

static int64_t info_int(const struct daemon *d, const char *field)
{
    return h_info_int(d->port, field);
}

/* Polls INFO until field == want, up to ms. */
static int info_becomes(const struct daemon *d, const char *field, int64_t want, int ms)
{
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        if (info_int(d, field) == want)
            return 1;
        h_sleep_ms(50);
    }
    return info_int(d, field) == want;
}

static int64_t count_in_log(const struct daemon *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return 0;
    char line[2048];
    int64_t n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Stops the daemon and checks that every child exited 0 (under ASan a leak
 * report makes a child exit non-zero); returns the master's status. */
static int stop_clean(struct daemon *d)
{
    int status = h_halt(d);
    int64_t all = count_in_log(d, "exited with status");
    int64_t zero = count_in_log(d, "exited with status 0");
    if (all != zero)
        h_dump_log(d);
    ck_assert_msg(all == zero, "%lld of %lld children exited non-zero", (long long)(all - zero),
                  (long long)all);
    h_rmtree(d->dir);
    return status;
}

/* ---- tests ---- */

static int64_t wait_generation(const struct daemon *d, int64_t gen);

START_TEST(redis_cli_tls_ping_set_get)
{
    if (!have(REDIS_CLI) || !have(OPENSSL)) {
        fprintf(stderr, "SKIP tls redis_cli: redis-cli or openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    struct daemon d;
    int tp;
    ck_assert_int_eq(start_tls(&d, &k, &tp, NULL), 0);
    char out[4096];
    ck_assert_int_eq(cli_tls(tp, &k, k.cli, k.cli_key, out, sizeof(out), "PING", NULL, NULL), 0);
    ck_assert_str_eq(out, "PONG");
    cli_tls(tp, &k, k.cli, k.cli_key, out, sizeof(out), "SET", "tls:k", "over-tls");
    ck_assert_str_eq(out, "OK");
    cli_tls(tp, &k, k.cli, k.cli_key, out, sizeof(out), "GET", "tls:k", NULL);
    ck_assert_str_eq(out, "over-tls");
    /* the plaintext port serves the same data */
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "GET", "tls:k", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert(r->v->len == 8 && memcmp(r->v->str, "over-tls", 8) == 0);
    h_free(r);
    close(fd);
    /* a value larger than a TLS record (16 KB) both ways, and a pipeline */
    struct tcli t;
    ck_assert_int_eq(tcli_open(&t, tp, &k, k.cli, k.cli_key, 0), 0);
    enum { BIG = 100000 };
    char *req = malloc(BIG + 128), *rep = malloc(BIG + 128);
    int hl = sprintf(req, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", BIG);
    memset(req + hl, 'v', BIG);
    strcpy(req + hl + BIG, "\r\n*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
    ck_assert_int_eq(SSL_write(t.ssl, req, (int)strlen(req)), (int)strlen(req));
    size_t want = 5 + strlen("$100000\r\n") + BIG + 2, got = 0;
    int64_t end = h_now_ms() + 10000;
    while (got < want && h_now_ms() < end) {
        int n = SSL_read(t.ssl, rep + got, (int)(BIG + 127 - got));
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    ck_assert_uint_eq(got, want);
    ck_assert(memcmp(rep, "+OK\r\n$100000\r\n", 14) == 0);
    ck_assert(rep[14] == 'v' && rep[14 + BIG - 1] == 'v');
    free(req);
    free(rep);
    /* INFO counts the held TLS connection (over the plaintext port) */
    /* the redis-cli connections' ends may still be on their way to their edges */
    ck_assert(info_becomes(&d, "tls_connections", 1, 10000));
    ck_assert_int_eq(info_int(&d, "tls_handshake_failures"), 0);
    tcli_close(&t);
    ck_assert(info_becomes(&d, "tls_connections", 0, 10000));
    ck_assert_int_eq(WEXITSTATUS(stop_clean(&d)), 0);
    h_rmtree(k.dir);
}
END_TEST

START_TEST(client_certificate_is_required)
{
    if (!have(REDIS_CLI) || !have(OPENSSL)) {
        fprintf(stderr, "SKIP tls auth_clients: redis-cli or openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    struct daemon d;
    int tp;
    ck_assert_int_eq(start_tls(&d, &k, &tp, "tls-auth-clients yes\n"), 0);
    char out[4096];
    /* no certificate: refused */
    cli_tls(tp, &k, NULL, NULL, out, sizeof(out), "PING", NULL, NULL);
    ck_assert_msg(strstr(out, "PONG") == NULL, "no-cert client got: %s", out);
    fprintf(stderr, "tls: redis-cli without a client certificate: \"%s\"\n", out);
    /* a certificate from another CA: refused */
    cli_tls(tp, &k, k.rogue, k.rogue_key, out, sizeof(out), "PING", NULL, NULL);
    ck_assert_msg(strstr(out, "PONG") == NULL, "rogue client got: %s", out);
    struct tcli t;
    if (tcli_open(&t, tp, &k, NULL, NULL, 0) == 0) { /* TLS 1.3: refusal shows on read */
        ck_assert(!tcli_ping(&t));
        tcli_close(&t);
    }
    ck_assert(info_becomes(&d, "tls_handshake_failures", 3, 10000));
    /* the signed one still works */
    ck_assert_int_eq(cli_tls(tp, &k, k.cli, k.cli_key, out, sizeof(out), "PING", NULL, NULL), 0);
    ck_assert_str_eq(out, "PONG");
    /* CONFIG SET may relax it (not a path) but may not change the files */
    int64_t gen = info_int(&d, "config_generation");
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "CONFIG", "SET", "tls-auth-clients", "optional", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(strstr(r->raw, "+OK") == r->raw, "got %s", r->raw);
    h_free(r);
    r = h_cmdv(fd, "CONFIG", "SET", "tls-cert-file", "/etc/passwd", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->raw[0] == '-', "CONFIG SET tls-cert-file got %s", r->raw);
    h_free(r);
    r = h_cmdv(fd, "CONFIG", "GET", "tls-auth-clients", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(strstr(r->raw, "optional"));
    h_free(r);
    close(fd);
    gen = wait_generation(&d, gen);
    /* optional: no certificate needed */
    for (int i = 0; i < 6; i++) {
        cli_tls(tp, &k, NULL, NULL, out, sizeof(out), "PING", NULL, NULL);
        ck_assert_msg(strcmp(out, "PONG") == 0, "optional, no cert, try %d: %s", i, out);
    }
    /* optional still verifies a certificate that is presented */
    cli_tls(tp, &k, k.rogue, k.rogue_key, out, sizeof(out), "PING", NULL, NULL);
    ck_assert_msg(strstr(out, "PONG") == NULL, "optional, rogue got: %s", out);
    /* tls-protocols: TLSv1.3 only refuses a TLS 1.2 client */
    fd = h_connect(d.port);
    r = h_cmdv(fd, "CONFIG", "SET", "tls-protocols", "TLSv1.3", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(strstr(r->raw, "+OK") == r->raw, "got %s", r->raw);
    h_free(r);
    close(fd);
    wait_generation(&d, gen);
    for (int i = 0; i < 4; i++) {
        int ok = tcli_open(&t, tp, &k, k.cli, k.cli_key, TLS1_2_VERSION) == 0;
        if (ok) {
            ok = tcli_ping(&t);
            tcli_close(&t);
        }
        ck_assert_msg(!ok, "a TLS 1.2 client was served with tls-protocols TLSv1.3");
        ck_assert_int_eq(tcli_open(&t, tp, &k, k.cli, k.cli_key, 0), 0);
        ck_assert(tcli_ping(&t));
        ck_assert_str_eq(SSL_get_version(t.ssl), "TLSv1.3");
        tcli_close(&t);
    }
    ck_assert_int_eq(WEXITSTATUS(stop_clean(&d)), 0);
    h_rmtree(k.dir);
}
END_TEST

START_TEST(plaintext_on_tls_port_is_closed_without_reply)
{
    if (!have(OPENSSL)) {
        fprintf(stderr, "SKIP tls plaintext: openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    struct daemon d;
    int tp;
    ck_assert_int_eq(start_tls(&d, &k, &tp, "tls-handshake-timeout 10s\n"), 0);
    const char *reqs[] = {"PING\r\n", "*1\r\n$4\r\nPING\r\n",
                          "GET / HTTP/1.1\r\nHost: x\r\n\r\n"};
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        int fd = h_connect(tp);
        ck_assert_int_ge(fd, 0);
        int64_t t0 = h_now_ms();
        ck_assert_int_eq(h_send(fd, reqs[i], strlen(reqs[i])), 0);
        char buf[4096];
        size_t got;
        int closed = read_until_closed(fd, buf, sizeof(buf), &got);
        int64_t ms = h_now_ms() - t0;
        close(fd);
        buf[got] = '\0';
        fprintf(stderr, "tls: plaintext %zu bytes to the TLS port: closed=%d after %lld ms, "
                        "%zu bytes back (first 0x%02x)\n",
                strlen(reqs[i]), closed, (long long)ms, got, got ? (unsigned char)buf[0] : 0);
        ck_assert_msg(closed, "plaintext client not closed");
        /* closed by the failed handshake, long before the 10 s timeout */
        ck_assert_int_lt(ms, 5000);
        /* no RESP came back: at most a TLS alert record (content type 21) */
        ck_assert(strstr(buf, "PONG") == NULL);
        ck_assert(got == 0 || (unsigned char)buf[0] == 0x15);
    }
    ck_assert(info_becomes(&d, "tls_handshake_failures", 3, 10000));
    /* the daemon is fine: both ports serve */
    ck_assert(h_ping(d.port));
    struct tcli t;
    ck_assert_int_eq(tcli_open(&t, tp, &k, k.cli, k.cli_key, 0), 0);
    ck_assert(tcli_ping(&t));
    tcli_close(&t);
    ck_assert_int_eq(WEXITSTATUS(stop_clean(&d)), 0);
    h_rmtree(k.dir);
}
END_TEST

START_TEST(stalled_handshake_is_closed_at_timeout)
{
    if (!have(OPENSSL)) {
        fprintf(stderr, "SKIP tls stalled: openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    struct daemon d;
    int tp;
    ck_assert_int_eq(start_tls(&d, &k, &tp, "tls-handshake-timeout 1s\n"), 0);
    /* nothing sent; then a TLS record header cut short; then a ClientHello
     * header announcing more bytes than ever come */
    struct {
        const char *what;
        const char *bytes;
        size_t n;
    } cases[] = {
        {"nothing", "", 0},
        {"4 bytes of a record header", "\x16\x03\x01\x02", 4},
        {"a record header announcing 512 bytes", "\x16\x03\x01\x02\x00\x01", 6},
    };
    enum { N = sizeof(cases) / sizeof(cases[0]) };
    int fds[N];
    int64_t t0 = h_now_ms();
    for (int i = 0; i < N; i++) {
        fds[i] = h_connect(tp);
        ck_assert_int_ge(fds[i], 0);
        if (cases[i].n > 0)
            ck_assert_int_eq(h_send(fds[i], cases[i].bytes, cases[i].n), 0);
    }
    /* a normal TLS client is served meanwhile */
    struct tcli t;
    ck_assert_int_eq(tcli_open(&t, tp, &k, k.cli, k.cli_key, 0), 0);
    ck_assert(tcli_ping(&t));
    for (int i = 0; i < N; i++) {
        char buf[256];
        size_t got;
        int closed = read_until_closed(fds[i], buf, sizeof(buf), &got);
        int64_t ms = h_now_ms() - t0;
        close(fds[i]);
        fprintf(stderr, "tls: stalled handshake (%s): closed=%d after %lld ms, %zu bytes back\n",
                cases[i].what, closed, (long long)ms, got);
        ck_assert_msg(closed, "stalled client (%s) not closed", cases[i].what);
        ck_assert_int_ge(ms, 900);
        ck_assert_int_le(ms, 5000); /* the timeout's doing: the read gives up at 8 s */
    }
    ck_assert(info_becomes(&d, "tls_handshake_failures", N, 10000));
    /* the established connection, idle past the timeout, is not affected */
    ck_assert(tcli_ping(&t));
    tcli_close(&t);
    ck_assert(h_ping(d.port));
    ck_assert_int_eq(WEXITSTATUS(stop_clean(&d)), 0);
    h_rmtree(k.dir);
}
END_TEST

/* The SHA-256 fingerprint of a PEM certificate file, per `openssl x509`. */
static void file_fingerprint(const char *path, char *fp, size_t len)
{
    char out[1024];
    char *argv[] = {OPENSSL, "x509", "-in", (char *)path, "-noout", "-fingerprint", "-sha256",
                    NULL};
    ck_assert_int_eq(run(argv, out, sizeof(out), 10000), 0);
    const char *p = strchr(out, '=');
    ck_assert_ptr_nonnull(p);
    snprintf(fp, len, "%.*s", (int)strcspn(p + 1, "\r\n"), p + 1);
}

/* The fingerprint of the certificate the daemon serves on port, as
 * `openssl s_client` received it; "" if the handshake failed. */
static void served_fingerprint(int port, const struct pki *k, char *fp, size_t len)
{
    char out[16384], addr[64], pem[400];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    char *argv[] = {OPENSSL, "s_client", "-connect", addr, "-CAfile", (char *)k->ca, "-cert",
                    (char *)k->cli, "-key", (char *)k->cli_key, NULL};
    run(argv, out, sizeof(out), 10000);
    fp[0] = '\0';
    char *b = strstr(out, "-----BEGIN CERTIFICATE-----");
    char *e = b != NULL ? strstr(b, "-----END CERTIFICATE-----") : NULL;
    if (e == NULL) {
        fprintf(stderr, "tls: s_client got no certificate: %.2000s\n", out);
        return;
    }
    e += strlen("-----END CERTIFICATE-----");
    snprintf(pem, sizeof(pem), "%s/served.pem", k->dir);
    FILE *f = fopen(pem, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%.*s\n", (int)(e - b), b);
    fclose(f);
    file_fingerprint(pem, fp, len);
}

/* Replaces dst by src (rename: the daemon never reads a half-written file). */
static void replace_file(const char *src, const char *dst)
{
    char tmp[400];
    snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
    FILE *in = fopen(src, "r"), *out = fopen(tmp, "w");
    ck_assert(in != NULL && out != NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    ck_assert_int_eq(rename(tmp, dst), 0);
}

/* Waits until INFO's config_generation moves past `gen` and every edge slot
 * runs it; returns it. */
static int64_t wait_generation(const struct daemon *d, int64_t gen)
{
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end) {
        int64_t g = info_int(d, "config_generation");
        if (g > gen) {
            int fd = h_connect(d->port);
            struct h_reply *r = fd >= 0 ? h_cmdv(fd, "INFO", "processes", NULL) : NULL;
            if (fd >= 0)
                close(fd);
            int all = r != NULL;
            char want[64];
            snprintf(want, sizeof(want), "config_generation=%lld", (long long)g);
            for (const char *p = r ? r->v->str : NULL; p != NULL && (p = strstr(p, "role=edge"));
                 p++) {
                const char *eol = strchr(p, '\r');
                const char *hit = strstr(p, want);
                if (hit == NULL || (eol != NULL && hit > eol))
                    all = 0;
            }
            if (r)
                h_free(r);
            if (all)
                return g;
        }
        h_sleep_ms(50);
    }
    ck_abort_msg("reload not applied within 10 s");
    return -1;
}

static int64_t hup_and_wait(const struct daemon *d, int64_t gen)
{
    kill(d->pid, SIGHUP);
    return wait_generation(d, gen);
}

START_TEST(sighup_reloads_certificate_and_keeps_old_on_error)
{
    if (!have(OPENSSL) || !have(REDIS_CLI)) {
        fprintf(stderr, "SKIP tls reload: redis-cli or openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    char live_crt[400], live_key[400];
    snprintf(live_crt, sizeof(live_crt), "%s/live.crt", k.dir);
    snprintf(live_key, sizeof(live_key), "%s/live.key", k.dir);
    replace_file(k.srv, live_crt);
    replace_file(k.srv_key, live_key);
    struct pki served = k;
    strcpy(served.srv, live_crt);
    strcpy(served.srv_key, live_key);
    struct daemon d;
    int tp;
    ck_assert_int_eq(start_tls(&d, &served, &tp, NULL), 0);
    char fp_a[128], fp_b[128], fp[128], out[4096];
    file_fingerprint(k.srv, fp_a, sizeof(fp_a));
    served_fingerprint(tp, &k, fp, sizeof(fp));
    ck_assert_str_eq(fp, fp_a);
    /* a connection made before the reload */
    struct tcli held;
    ck_assert_int_eq(tcli_open(&held, tp, &k, k.cli, k.cli_key, 0), 0);
    ck_assert(tcli_ping(&held));

    /* a new certificate and key (same CA) */
    char crt_b[320], key_b[320];
    make_leaf(k.dir, "server2", "localhost", k.ca, k.ca_key, crt_b, key_b);
    file_fingerprint(crt_b, fp_b, sizeof(fp_b));
    ck_assert_str_ne(fp_a, fp_b);
    replace_file(crt_b, live_crt);
    replace_file(key_b, live_key);
    int64_t gen = hup_and_wait(&d, info_int(&d, "config_generation"));
    for (int i = 0; i < 6; i++) { /* new connections, whichever edge takes them */
        served_fingerprint(tp, &k, fp, sizeof(fp));
        if (strcmp(fp, fp_b) != 0)
            h_dump_log(&d);
        ck_assert_msg(strcmp(fp, fp_b) == 0, "try %d: served %s, want %s", i, fp, fp_b);
    }
    ck_assert(tcli_ping(&held)); /* the old session goes on */
    fprintf(stderr, "tls: SIGHUP with a new certificate: served %.23s... (was %.23s...)\n", fp_b,
            fp_a);

    /* a broken certificate file: the previous one stays */
    int64_t warned = count_in_log(&d, "TLS reload failed");
    FILE *f = fopen(live_crt, "w");
    ck_assert_ptr_nonnull(f);
    fputs("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    hup_and_wait(&d, gen);
    for (int i = 0; i < 6; i++) {
        served_fingerprint(tp, &k, fp, sizeof(fp));
        if (strcmp(fp, fp_b) != 0)
            h_dump_log(&d);
        ck_assert_msg(strcmp(fp, fp_b) == 0, "broken file, try %d: served '%s', want %s", i, fp,
                      fp_b);
    }
    ck_assert_int_eq(cli_tls(tp, &k, k.cli, k.cli_key, out, sizeof(out), "PING", NULL, NULL), 0);
    ck_assert_str_eq(out, "PONG");
    ck_assert(tcli_ping(&held));
    /* one warning line for the host (edges other than the first log at debug) */
    ck_assert_int_eq(count_in_log(&d, "TLS reload failed") - warned, 1);
    tcli_close(&held);
    ck_assert_int_eq(WEXITSTATUS(stop_clean(&d)), 0);
    h_rmtree(k.dir);
}
END_TEST

START_TEST(bad_tls_config_is_refused_at_start)
{
    if (!have(OPENSSL)) {
        fprintf(stderr, "SKIP tls bad_start: openssl not installed\n");
        return;
    }
    struct pki k;
    make_pki(&k);
    /* a key that does not match the certificate: a one-line error, exit 1 */
    char dir[256], conf[400], portstr[16], out[4096];
    h_tmpdir(dir, sizeof(dir));
    snprintf(conf, sizeof(conf), "%s/bad.conf", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "dir %s\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n",
            dir, h_free_port(), k.srv, k.cli_key, k.ca);
    fclose(f);
    snprintf(portstr, sizeof(portstr), "%d", h_free_port());
    char *argv[] = {(char *)h_bin(), conf, "--port", portstr, NULL};
    ck_assert_int_eq(run(argv, out, sizeof(out), 15000), 1);
    ck_assert_msg(strstr(out, "tls-key-file") != NULL, "got: %s", out);
    /* tls-auth-clients yes without a CA file: refused by validation */
    f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "dir %s\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\n", dir, h_free_port(),
            k.srv, k.srv_key);
    fclose(f);
    ck_assert_int_eq(run(argv, out, sizeof(out), 15000), 1);
    ck_assert_msg(strstr(out, "tls-ca-cert-file") != NULL, "got: %s", out);
    h_rmtree(dir);
    h_rmtree(k.dir);
}
END_TEST

Suite *tls_suite(void)
{
    Suite *s = suite_create("tls");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"redis_cli", redis_cli_tls_ping_set_get},
        {"auth_clients", client_certificate_is_required},
        {"plaintext", plaintext_on_tls_port_is_closed_without_reply},
        {"stalled", stalled_handshake_is_closed_at_timeout},
        {"reload", sighup_reloads_certificate_and_keeps_old_on_error},
        {"bad_start", bad_tls_config_is_refused_at_start},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

/*
 * edge_link_io.c - Unix, TCP and TLS transport for owner links; see
 * edge_link_io.h.
 *
 * The link keeps its own buffers and plain events (edge_link.c); this file
 * only turns "read/write these bytes" into read(2)/write(2) or
 * SSL_read/SSL_write and maps OpenSSL's WANT_READ/WANT_WRITE onto EAGAIN
 * plus the event to wait for, so the link's state machine is the same for
 * every transport.  The handshake's verification (chain to the cluster CA,
 * the owner's host name in its certificate) is set up by tls_cluster.h.
 */
#include "server/edge/edge_link_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/err.h>

#include "server/core/tls.h"
#include "server/core/tls_cluster.h"

#define KEEPIDLE_S 10
#define KEEPINTVL_S 5
#define KEEPCNT 3

static void tcp_options(int fd)
{
    int one = 1, idle = KEEPIDLE_S, intvl = KEEPINTVL_S, cnt = KEEPCNT;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

int eio_connect(const char *path, const char *addr, int port, int *fd, char *why, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t slen;
    memset(&ss, 0, sizeof(ss));
    *fd = -1;
    if (addr == NULL) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof(un->sun_path), "%s", path);
        slen = sizeof(*un);
    } else if (port <= 0 || port > 65535) {
        snprintf(why, len, "bad port %d", port);
        return -1;
    } else if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ((struct sockaddr_in *)&ss)->sin_family = AF_INET;
        ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
        slen = sizeof(struct sockaddr_in);
    } else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
        slen = sizeof(struct sockaddr_in6);
    } else {
        snprintf(why, len, "'%.64s' is not an IP address (names are not resolved on the loop)",
                 addr);
        return -1;
    }
    int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(why, len, "socket: %s", strerror(errno));
        return -1;
    }
    if (addr != NULL)
        tcp_options(s);
    int rc = connect(s, (struct sockaddr *)&ss, slen);
    if (rc != 0 && errno != EINPROGRESS) {
        if (addr != NULL)
            snprintf(why, len, "connect %s:%d: %s", addr, port, strerror(errno));
        else
            snprintf(why, len, "connect %s: %s", path, strerror(errno));
        close(s);
        return -1;
    }
    *fd = s;
    return rc == 0 ? 0 : 1;
}

int eio_connected(int fd, char *why, size_t len)
{
    int err = 0;
    socklen_t n = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0)
        err = errno;
    if (err != 0) {
        snprintf(why, len, "connect: %s", strerror(err));
        return -1;
    }
    return 0;
}

SSL *eio_tls_new(SSL_CTX *ctx, int fd, const char *peer_host, char *why, size_t len)
{
    ERR_clear_error();
    SSL *ssl = ctx != NULL ? SSL_new(ctx) : NULL;
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || tls_cluster_expect_host(ssl, peer_host) != 0) {
        tls_error_text(why, len, ctx == NULL ? "no cluster TLS context" : "cannot start TLS");
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

/* An SSL_* result that is not success: EAGAIN with *want, or a failure. */
static int ssl_fail(SSL *ssl, int rc, short *want, char *why, size_t len)
{
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *want = e == SSL_ERROR_WANT_READ ? EV_READ : EV_WRITE;
        errno = EAGAIN;
        return 0;
    }
    if (why != NULL) {
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK)
            snprintf(why, len, "TLS: owner certificate refused: %s",
                     X509_verify_cert_error_string(v));
        else if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
            snprintf(why, len, "TLS: %s", rc == 0 ? "connection closed" : strerror(errno));
        else {
            char t[200];
            tls_error_text(t, sizeof(t), "failed");
            snprintf(why, len, "TLS: %s", t);
        }
    }
    ERR_clear_error();
    errno = e == SSL_ERROR_ZERO_RETURN ? 0 : EPROTO;
    return -1;
}

int eio_handshake(SSL *ssl, short *want, char *why, size_t len)
{
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl);
    if (rc == 1)
        return 1;
    return ssl_fail(ssl, rc, want, why, len);
}

ssize_t eio_read(int fd, SSL *ssl, void *buf, size_t n, short *want, char *why, size_t len)
{
    *want = EV_READ;
    if (ssl == NULL)
        return read(fd, buf, n);
    ERR_clear_error();
    int rc = SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    if (SSL_get_error(ssl, rc) == SSL_ERROR_ZERO_RETURN)
        return 0;
    ssl_fail(ssl, rc, want, why, len);
    return -1;
}

ssize_t eio_write(int fd, SSL *ssl, const void *buf, size_t n, short *want, char *why,
                  size_t len)
{
    *want = EV_WRITE;
    if (ssl == NULL)
        return write(fd, buf, n);
    ERR_clear_error();
    int rc = SSL_write(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    ssl_fail(ssl, rc, want, why, len);
    return -1;
}

int eio_pending(SSL *ssl)
{
    return ssl != NULL ? SSL_pending(ssl) : 0;
}

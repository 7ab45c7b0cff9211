/*
 * edge_link_io.h - the byte transport under an owner link (edge_link.c):
 * a Unix socket to an owner of this host, or TCP with mutual TLS to an
 * owner of another host (../shared/CLUSTER.md §4).
 *
 * Everything is non-blocking and does no name lookup: a TCP address must
 * be an IP literal (the cluster map carries addresses; a name is refused,
 * since resolving it would block the event loop).  TCP sockets get
 * TCP_NODELAY (a request is one small frame, often alone) and keepalive
 * (a peer host that vanished is noticed even on an idle link).
 *
 * Reads and writes have one contract for both kinds: > 0 bytes moved; 0 on
 * a read is the end of the stream; -1 with errno EAGAIN means try again
 * once the fd is ready for *want (EV_READ or EV_WRITE: over TLS a read may
 * need the socket writable and a write readable); any other -1 is fatal for
 * the connection, with errno set (EPROTO for a TLS failure, the reason in
 * tls_error_text).  An SSL object may hold decrypted bytes the socket no
 * longer signals (eio_pending): the caller reads again before it waits.
 */
#ifndef HKV_EDGE_LINK_IO_H
#define HKV_EDGE_LINK_IO_H

#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

/* Starts connecting to a Unix socket path, or to addr:port over TCP (addr
 * an IPv4 or IPv6 literal).  Returns 0 (connected), 1 (in progress: wait
 * for writable, then eio_connected), or -1 with why; *fd is the socket
 * (-1 on error). */
int eio_connect(const char *path, const char *addr, int port, int *fd, char *why, size_t len);
/* After writable: 0 if the connect succeeded, else -1 with why. */
int eio_connected(int fd, char *why, size_t len);

/* A client TLS session on fd from ctx that accepts only a server
 * certificate naming peer_host.  NULL with why. */
SSL *eio_tls_new(SSL_CTX *ctx, int fd, const char *peer_host, char *why, size_t len);
/* Drives the handshake: 1 done, 0 not yet (wait for *want), -1 failed
 * (why says how: an untrusted chain, a name that does not match, a peer
 * that refused our certificate ...). */
int eio_handshake(SSL *ssl, short *want, char *why, size_t len);

/* A fatal TLS failure (errno EPROTO) leaves its reason in why (an alert the
 * owner sent, such as a refused certificate); why may be NULL. */
ssize_t eio_read(int fd, SSL *ssl, void *buf, size_t n, short *want, char *why, size_t len);
ssize_t eio_write(int fd, SSL *ssl, const void *buf, size_t n, short *want, char *why,
                  size_t len);
/* Decrypted bytes waiting inside ssl (0 for a plain socket). */
int eio_pending(SSL *ssl);

#endif

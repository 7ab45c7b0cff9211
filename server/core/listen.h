/*
 * listen.h - listening sockets, opened once by the master before it forks.
 * Every edge accepts on the same inherited sockets, so a restarted edge
 * never closes a socket that still holds queued connections (closing a
 * SO_REUSEPORT socket resets what was queued on it).
 */
#ifndef HKV_LISTEN_H
#define HKV_LISTEN_H

#include <stddef.h>

#include "proto/hkv.h"

/* Binds and listens on addr:port (IPv4 or IPv6 literal, or "*" for every
 * IPv4 address; "::*" for every IPv6 one).  Returns the non-blocking fd, or -1
 * with a one-line reason in err ("Could not bind 127.0.0.1:6380: Address
 * already in use"). */
int listen_tcp(const char *addr, int port, int backlog, char *err, size_t errlen);
/* Binds a Unix stream socket at path (removing a stale socket file first). */
int listen_unix(const char *path, int backlog, char *err, size_t errlen);

#endif

/*
 * notify.h - the systemd notify protocol (sd_notify(3)), written by hand: one
 * datagram to $NOTIFY_SOCKET.  Writing it ourselves saves a dependency for
 * twenty lines and works the same outside systemd (no socket: a no-op).
 *
 * Only the master notifies.  notify_setup() reads and then unsets
 * NOTIFY_SOCKET/WATCHDOG_* so that forked children never inherit them.
 */
#ifndef HKV_NOTIFY_H
#define HKV_NOTIFY_H

#include <stdint.h>

/* Captures the environment; call once in the master before forking. */
void notify_setup(void);
/* Sends `state` ("READY=1\nSTATUS=..."); 0 sent, -1 not under systemd or failed. */
int notify_send(const char *state);
int notify_sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when the master was started by systemd with a notify socket (a child
 * knows it too: it inherits the captured address). */
int notify_supervised(void);
/* The watchdog interval systemd asked for, in microseconds, or 0. */
uint64_t notify_watchdog_usec(void);

#endif

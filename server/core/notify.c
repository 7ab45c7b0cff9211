/* notify.c - sd_notify by hand; see notify.h. */
#include "notify.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un notify_addr;
static socklen_t notify_addrlen;
static uint64_t watchdog_usec;

void notify_setup(void)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path != NULL && path[0] != '\0' && strlen(path) < sizeof(notify_addr.sun_path)) {
        memset(&notify_addr, 0, sizeof(notify_addr));
        notify_addr.sun_family = AF_UNIX;
        size_t n = strlen(path);
        memcpy(notify_addr.sun_path, path, n);
        if (path[0] == '@')
            notify_addr.sun_path[0] = '\0'; /* abstract namespace */
        notify_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    }
    const char *wd = getenv("WATCHDOG_USEC");
    const char *wpid = getenv("WATCHDOG_PID");
    if (wd != NULL && (wpid == NULL || atol(wpid) == (long)getpid()))
        watchdog_usec = strtoull(wd, NULL, 10);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int notify_supervised(void)
{
    return notify_addrlen != 0;
}

int notify_send(const char *state)
{
    if (notify_addrlen == 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&notify_addr,
                       notify_addrlen);
    close(fd);
    return n < 0 ? -1 : 0;
}

int notify_sendf(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return notify_send(msg);
}

uint64_t notify_watchdog_usec(void)
{
    return watchdog_usec;
}

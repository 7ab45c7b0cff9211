/* listen.c - opening listening sockets; see listen.h. */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int finish(int fd, const struct sockaddr *sa, socklen_t len, int backlog, const char *what,
                  char *err, size_t errlen)
{
    if (bind(fd, sa, len) != 0 || listen(fd, backlog) != 0) {
        snprintf(err, errlen, "Could not bind %s: %s", what, strerror(errno));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    return fd;
}

int listen_tcp(const char *addr, int port, int backlog, char *err, size_t errlen)
{
    char what[300];
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof(ss));
    snprintf(what, sizeof(what), strchr(addr, ':') ? "[%s]:%d" : "%s:%d", addr, port);
    if (strcmp(addr, "*") == 0 || strcmp(addr, "0.0.0.0") == 0) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        in->sin_port = htons((uint16_t)port);
        len = sizeof(*in);
    } else if (strcmp(addr, "::*") == 0 || strchr(addr, ':')) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        if (strcmp(addr, "::*") == 0)
            in6->sin6_addr = in6addr_any;
        else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) != 1) {
            snprintf(err, errlen, "Could not bind %s: not an IPv6 address", what);
            return -1;
        }
        len = sizeof(*in6);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, addr, &in->sin_addr) != 1) {
            snprintf(err, errlen, "Could not bind %s: not an IPv4 address", what);
            return -1;
        }
        len = sizeof(*in);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "Could not bind %s: %s", what, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    return finish(fd, (struct sockaddr *)&ss, len, backlog, what, err, errlen);
}

int listen_unix(const char *path, int backlog, char *err, size_t errlen)
{
    struct sockaddr_un un;
    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(un.sun_path)) {
        snprintf(err, errlen, "Could not bind %s: path too long for a Unix socket", path);
        return -1;
    }
    strcpy(un.sun_path, path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "Could not bind %s: exists and is not a socket", path);
            return -1;
        }
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "Could not bind %s: %s", path, strerror(errno));
        return -1;
    }
    return finish(fd, (struct sockaddr *)&un, sizeof(un), backlog, path, err, errlen);
}

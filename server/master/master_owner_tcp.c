/*
 * master_owner_tcp.c - a cluster host's owners on TCP: the listening
 * socket each owner accepts other hosts' edges on (../shared/CLUSTER.md §4).
 *
 * Like the owners' Unix sockets, these are opened once by the master before
 * the first fork and handed to each owner (struct owner_ctx tcp_fd), so a
 * restarted owner is reachable at once and a port in use is one error line
 * at start, not a restart loop.  Owner k of pool p listens on owner-port +
 * g, g its host-wide index (hot owners first, then cold), on the address
 * advertise-addr names.  advertise-addr may be a name: it is resolved here,
 * once, at start (the master's loop is not running yet), never again; the
 * cluster map carries it as published, and edges dial IPs only.  The
 * cluster TLS context is built once here too, only to refuse files that do
 * not load before any owner depends on them (each owner builds its own).
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "server/core/listen.h"
#include "server/core/log.h"
#include "server/core/tls_cluster.h"
#include "server/master/master_int.h"

/* advertise-addr as an IP literal: itself, or its first address. */
static int resolve(const char *name, char *ip, size_t iplen, char *err, size_t len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(err, len, "advertise-addr '%s': %s", name, rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    const void *a = res->ai_family == AF_INET6
                        ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    rc = inet_ntop(res->ai_family, a, ip, (socklen_t)iplen) != NULL ? 0 : -1;
    freeaddrinfo(res);
    if (rc != 0)
        snprintf(err, len, "advertise-addr '%s': cannot print its address", name);
    return rc;
}

int master_owner_tcp_open(struct master *m, char *err, size_t len)
{
    const struct cfg *cfg = m->cfg;
    if (cfg->cluster[0] == '\0' || cfg->owner_port == 0)
        return 0;
    SSL_CTX *ctx = tls_cluster_ctx_new(cfg, 1, err, len);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(ctx);
    char ip[INET6_ADDRSTRLEN];
    if (resolve(cfg->advertise_addr, ip, sizeof(ip), err, len) != 0)
        return -1;
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c->role != BOARD_OWNER)
            continue;
        int g = c->pool == CFG_POOL_HOT ? c->index : cfg->hot_owners + c->index;
        c->tcp_fd = listen_tcp(ip, cfg->owner_port + g, 511, err, len);
        if (c->tcp_fd < 0)
            return -1;
    }
    log_notice("owners listen for other hosts on %s ports %d..%d (mutual TLS)", ip,
               cfg->owner_port, cfg->owner_port + cfg->hot_owners + cfg->cold_owners - 1);
    return 0;
}

void master_owner_tcp_close(struct master *m, const struct child *keep)
{
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c != keep && c->tcp_fd >= 0) {
            close(c->tcp_fd);
            c->tcp_fd = -1;
        }
    }
}

/*
 * master_http.c - what the HTTP front door needs made before the first fork:
 * the http-port and https-port listening sockets (on every bind address, as
 * the RESP ports), and per colo the change ring (server/colo/changes.h)
 * with one eventfd per edge, so that a long poll held on any edge of a colo
 * wakes on a write applied by any other.  Kept apart from master_boot.c so
 * the front door is one call in the boot and one in each child's start.
 *
 * The rings are made whether or not HTTP is on: CLIENT TRACKING reads them
 * too.  While both ports are 0 edges get no HTTP socket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/colo/bus.h"
#include "server/colo/changes.h"
#include "server/core/listen.h"
#include "server/core/tls.h"
#include "server/edge/edge.h"
#include "server/master/master_int.h"

static int listen_port(struct master *m, int port, char *err, size_t len)
{
    for (size_t i = 0; i < m->cfg->nbind; i++) {
        int fd = listen_tcp(m->cfg->bind[i], port, 511, err, len);
        if (fd < 0)
            return -1;
        m->http_fds[m->nhttp++] = fd;
    }
    return 0;
}

int master_http_boot(struct master *m, char *err, size_t len)
{
    const struct cfg *cfg = m->cfg;
    /* The pub/sub bus of each colo (bus.h), whatever the ports: RESP's. */
    m->buses = calloc((size_t)cfg->colos, sizeof(*m->buses));
    if (m->buses == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    for (int k = 0; k < cfg->colos; k++)
        if (bus_create((uint32_t)cfg->edge_workers, (uint64_t)cfg->pubsub_bus_size,
                       &m->buses[k]) != HKV_OK) {
            snprintf(err, len, "colo %d: pub/sub bus: %s", k, strerror(errno));
            return -1;
        }
    m->http_fds = calloc(cfg->nbind * 2, sizeof(int));
    m->changes = calloc((size_t)cfg->colos, sizeof(*m->changes));
    if (m->http_fds == NULL || m->changes == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    /* The rings serve CLIENT TRACKING too: made whether or not HTTP is on. */
    for (int k = 0; k < cfg->colos; k++)
        if (changes_create((uint32_t)cfg->edge_workers, &m->changes[k]) != HKV_OK) {
            snprintf(err, len, "colo %d: change ring: %s", k, strerror(errno));
            return -1;
        }
    if (cfg->http_port == 0 && cfg->https_port == 0)
        return 0;
    if (cfg->http_port != 0 && listen_port(m, cfg->http_port, err, len) != 0)
        return -1;
    if (cfg->https_port != 0) {
        /* A certificate that does not load is refused now, not in every edge. */
        SSL_CTX *ctx = tls_ctx_new(cfg, err, len);
        if (ctx == NULL)
            return -1;
        SSL_CTX_free(ctx);
        size_t before = m->nhttp;
        if (listen_port(m, cfg->https_port, err, len) != 0)
            return -1;
        m->nhttps = m->nhttp - before;
    }
    return 0;
}

void master_http_child(struct master *m, int colo, struct edge_ctx *ectx)
{
    if (ectx != NULL) {
        ectx->bus = m->buses != NULL ? m->buses[colo] : NULL;
        ectx->colo_buses = m->buses;
        ectx->http_fds = m->http_fds;
        ectx->nhttp = m->nhttp;
        ectx->nhttps = m->nhttps;
        ectx->changes = m->changes != NULL ? m->changes[colo] : NULL;
        return;
    }
    master_http_teardown(m); /* an owner: serves no HTTP, reads no ring */
}

void master_http_close(struct master *m)
{
    for (size_t i = 0; i < m->nhttp; i++)
        close(m->http_fds[i]);
    m->nhttp = m->nhttps = 0;
}

void master_http_teardown(struct master *m)
{
    master_http_close(m);
    free(m->http_fds);
    m->http_fds = NULL;
    m->nhttp = m->nhttps = 0;
    if (m->changes != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            changes_destroy(&m->changes[k]);
    free(m->changes);
    m->changes = NULL;
    if (m->buses != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            bus_destroy(&m->buses[k]);
    free(m->buses);
    m->buses = NULL;
}

/*
 * master_boot.c - what exists before the first fork, and its teardown.
 *
 * Everything a child inherits is made here, once, by the master: the
 * listening sockets (so a restarted edge accepts on the same port at once,
 * and a port in use is one error line at start, not a restart loop), each
 * owner's link socket (so edges reach a restarted owner at the same path),
 * the scoreboard, and per colo the cache and rate-limit segments (nginx's
 * shared zones: made before fork, inherited, never named); in a cluster,
 * the cluster map the agent writes and every child reads.  Checks that
 * would otherwise fail in every child (a data dir that is not writable, a
 * certificate that does not load) are made here too, so the daemon refuses
 * to start instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/colo/cache.h"
#include "server/agent/etcd.h"
#include "server/colo/ratelimit.h"
#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/listen.h"
#include "server/core/log.h"
#include "server/core/tls.h"
#include "server/core/topo.h"
#include "server/master/master_int.h"
#include "server/master/master_rehome.h"

const char *master_child_name(const struct child *c, const struct cfg *cfg, char *buf, size_t len)
{
    if (c->role == BOARD_AGENT) {
        snprintf(buf, len, "agent");
    } else if (c->role == BOARD_EDGE) {
        char colo[TOPO_COLO_NAME_MAX];
        topo_colo_name(cfg, c->colo, colo, sizeof(colo));
        snprintf(buf, len, "edge %.40s/%d", colo, c->index);
    } else {
        snprintf(buf, len, "owner %s/%d", topo_pool_name(c->pool), c->index);
    }
    return buf;
}

static int check_dir(const char *dir, char *err, size_t len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, len, "data dir '%s': %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, len, "data dir '%s': not a directory", dir);
        return -1;
    }
    char probe[TOPO_PATH_MAX];
    snprintf(probe, sizeof(probe), "%s/.hotkvd-write-test.%d", dir, (int)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, len, "data dir '%s' is not writable: %s", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

static int write_pidfile(const char *path, char *err, size_t len)
{
    if (path == NULL || path[0] == '\0')
        return 0;
    FILE *f = fopen(path, "we");
    if (f == NULL) {
        snprintf(err, len, "pidfile '%s': %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    return 0;
}

static int open_sockets(struct master *m, char *err, size_t len)
{
    m->listen_fds = calloc(m->cfg->nbind * 3, sizeof(int));
    if (m->listen_fds == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < m->cfg->nbind; i++) {
        int fd = listen_tcp(m->cfg->bind[i], m->cfg->port, 511, err, len);
        if (fd < 0)
            return -1;
        m->listen_fds[m->nlisten++] = fd;
    }
    for (size_t i = 0; m->cfg->writer_port != 0 && i < m->cfg->nbind; i++) {
        int fd = listen_tcp(m->cfg->bind[i], m->cfg->writer_port, 511, err, len);
        if (fd < 0)
            return -1;
        m->listen_fds[m->nlisten++] = fd;
        m->nwriter++;
    }
    if (m->cfg->tls_port != 0) {
        /* Refuse a certificate that does not load now, rather than have
         * every edge fail and be restarted in a loop. */
        SSL_CTX *ctx = tls_ctx_new(m->cfg, err, len);
        if (ctx == NULL)
            return -1;
        SSL_CTX_free(ctx);
        for (size_t i = 0; i < m->cfg->nbind; i++) {
            int fd = listen_tcp(m->cfg->bind[i], m->cfg->tls_port, 511, err, len);
            if (fd < 0)
                return -1;
            m->listen_fds[m->nlisten++] = fd;
            m->ntls++;
        }
    }
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c->role != BOARD_OWNER)
            continue;
        char path[TOPO_PATH_MAX];
        topo_owner_socket(m->cfg, c->pool, c->index, path, sizeof(path));
        c->link_fd = listen_unix(path, 511, err, len);
        if (c->link_fd < 0)
            return -1;
    }
    return master_owner_tcp_open(m, err, len);
}

/* The scoreboard and, per colo, the cache and the rate limiter. */
static int map_segments(struct master *m, char *err, size_t len)
{
    const struct cfg *cfg = m->cfg;
    /* one edge may hold every client: each slot gets maxclients rows */
    m->board = board_create_clients((uint32_t)m->nchildren, (uint32_t)cfg->maxclients);
    if (m->board == NULL) {
        snprintf(err, len, "shared memory: %s", strerror(errno));
        return -1;
    }
    struct cache_opts co = {.bytes = (size_t)cfg->cache_memory,
                            .max_value = (size_t)cfg->cache_max_value,
                            .hot_sample = 16};
    m->caches = calloc((size_t)cfg->colos, sizeof(*m->caches));
    m->limiters = calloc((size_t)cfg->colos, sizeof(*m->limiters));
    m->app_limiters = calloc((size_t)cfg->colos, sizeof(*m->app_limiters));
    if (m->caches == NULL || m->limiters == NULL || m->app_limiters == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    for (int k = 0; k < cfg->colos; k++)
        if (cache_create(&co, &m->caches[k]) != HKV_OK) {
            snprintf(err, len, "colo cache segment of %lld bytes: %s",
                     (long long)cfg->cache_memory, strerror(errno));
            return -1;
        }
    /* One limiter per colo, next to its cache.  Without one the colo's edges
     * limit nothing (the limiter fails open), which is logged, not fatal. */
    struct rl_opts ro = {.buckets = (uint32_t)cfg->ratelimit_buckets};
    for (int k = 0; k < cfg->colos; k++)
        if (rl_create(&ro, &m->limiters[k]) != HKV_OK)
            log_warning("colo %d: no rate-limit segment (%lld buckets): %s; its clients are not "
                        "rate limited", k, (long long)cfg->ratelimit_buckets, strerror(errno));
    struct rl_opts ao = {.buckets = (uint32_t)(cfg->app_ratelimit_memory / 16)};
    for (int k = 0; k < cfg->colos; k++)
        if (rl_create(&ao, &m->app_limiters[k]) != HKV_OK)
            log_warning("colo %d: no CL.THROTTLE segment (%lld bytes): %s; every CL.THROTTLE "
                        "is allowed and counted in app_ratelimit_failopen", k,
                        (long long)cfg->app_ratelimit_memory, strerror(errno));
    if (master_cluster(cfg) && (m->cmap = cmap_create()) == NULL) {
        snprintf(err, len, "cluster map segment: %s", strerror(errno));
        return -1;
    }
    atomic_store_explicit(&m->board->master_pid, getpid(), memory_order_relaxed);
    atomic_store_explicit(&m->board->config_generation, m->generation, memory_order_relaxed);
    atomic_store_explicit(&m->board->start_unix_ms, clock_unix_ms(), memory_order_relaxed);
    return 0;
}

/* A cluster host: etcd settings the agent could never use refuse the start
 * (the agent would fail the same way at every restart). */
static int check_cluster(const struct cfg *cfg, char *err, size_t len)
{
    if (!master_cluster(cfg))
        return 0;
    struct etcd_opts o = {.endpoints = cfg->etcd_endpoints, .nendpoints = cfg->netcd_endpoints,
                          .user = cfg->etcd_user, .password = cfg->etcd_password,
                          .ca_file = cfg->etcd_ca_file, .timeout_ms = cfg->etcd_timeout_ms};
    char why[256];
    if (etcd_opts_check(&o, why, sizeof(why)) != HKV_OK) {
        snprintf(err, len, "etcd settings: %s", why);
        return -1;
    }
    return 0;
}

int master_boot(struct master *m, char *err, size_t len)
{
    m->ncolos = m->cfg->colos;
    if (check_cluster(m->cfg, err, len) != 0 || check_dir(m->cfg->dir, err, len) != 0 ||
        open_sockets(m, err, len) != 0 || master_http_boot(m, err, len) != 0 ||
        write_pidfile(m->cfg->pidfile, err, len) != 0 || master_rehome(m->cfg, err, len) != 0)
        return -1;
    return map_segments(m, err, len);
}

int master_build_children(struct master *m, event_callback_fn on_restart)
{
    const struct cfg *cfg = m->cfg;
    m->nchildren = cfg->colos * cfg->edge_workers + cfg->hot_owners + cfg->cold_owners +
                   (master_cluster(cfg) ? 1 : 0);
    m->children = calloc((size_t)m->nchildren, sizeof(struct child));
    if (m->children == NULL)
        return -1;
    int k = 0;
    /* Owners get the low slots and are forked first: edges connect to them. */
    for (int pool = CFG_POOL_HOT; pool <= CFG_POOL_COLD; pool++) {
        int n = pool == CFG_POOL_HOT ? cfg->hot_owners : cfg->cold_owners;
        for (int i = 0; i < n; i++, k++)
            m->children[k] = (struct child){.role = BOARD_OWNER, .pool = pool, .index = i};
    }
    /* then edges in the slots worker_edge_slot says, then the agent */
    for (int colo = 0; colo < cfg->colos; colo++)
        for (int i = 0; i < cfg->edge_workers; i++, k++)
            m->children[k] = (struct child){.role = BOARD_EDGE, .index = i, .colo = colo};
    if (master_cluster(cfg)) {
        m->children[k] = (struct child){.role = BOARD_AGENT};
        m->agent = &m->children[k++];
    }
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        c->m = m;
        c->slot = i;
        c->link_fd = -1;
        c->tcp_fd = -1;
        c->backoff_ms = MASTER_BACKOFF_MIN_MS;
        c->restart = evtimer_new(m->base, on_restart, c);
        if (c->restart == NULL)
            return -1;
    }
    return 0;
}

void master_teardown(struct master *m)
{
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c->ctl)
            bufferevent_free(c->ctl);
        if (c->restart)
            event_free(c->restart);
        if (c->link_fd >= 0) {
            close(c->link_fd);
            char path[TOPO_PATH_MAX];
            topo_owner_socket(m->cfg, c->pool, c->index, path, sizeof(path));
            unlink(path);
        }
    }
    master_owner_tcp_close(m, NULL);
    free(m->children);
    for (size_t i = 0; i < m->nlisten; i++)
        close(m->listen_fds[i]);
    free(m->listen_fds);
    struct event **evs[] = {&m->sig_term, &m->sig_int, &m->sig_hup, &m->sig_chld, &m->watchdog,
                            &m->deadline, &m->rs_timer, &m->cluster_wait};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (*evs[i])
            event_free(*evs[i]);
    if (m->base)
        event_base_free(m->base);
    board_destroy(&m->board);
    cmap_destroy(&m->cmap);
    if (m->caches != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            cache_destroy(&m->caches[k]);
    free(m->caches);
    if (m->limiters != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            rl_destroy(&m->limiters[k]);
    free(m->limiters);
    if (m->app_limiters != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            rl_destroy(&m->app_limiters[k]);
    free(m->app_limiters);
    master_http_teardown(m);
}

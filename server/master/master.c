/*
 * master.c - supervision, reload and stop; see master.h.
 *
 * The shape follows nginx: signal handlers only wake the loop (libevent's
 * evsignal), and the loop acts.  Every child has a slot: edges first, then hot
 * owners, then cold owners.  A slot keeps its board slot, its control channel
 * and its restart backoff across restarts of the process in it.
 *
 * Stop order matters: edges stop first (they finish what clients asked,
 * including writes still waiting on owners), then owners (they flush their
 * dirty keys to disk), so no acknowledged write is cut off mid-way.
 */
#include "master.h"
#include "server/master/master_rehome.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "server/core/board.h"
#include "server/core/ctl.h"
#include "server/edge/edge.h"
#include "server/core/listen.h"
#include "server/core/log.h"
#include "server/core/notify.h"
#include "server/owner/owner.h"
#include "server/core/proctitle.h"
#include "server/core/tls.h"
#include "server/core/version.h"
#include "server/core/worker.h"
#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define STABLE_MS 10000 /* a child up this long has its backoff reset */

struct master;

struct child {
    struct master *m;
    enum board_role role;
    enum cfg_pool pool;
    int index;
    int colo;                 /* edges: which colo */
    int slot;
    pid_t pid;
    int ready;
    int64_t started_ms;
    int64_t backoff_ms;
    struct bufferevent *ctl;
    struct event *restart;
    int link_fd;              /* owners: the listening socket edges connect to */
};

struct master {
    const struct master_opts *opts;
    struct cfg *cfg;
    struct event_base *base;
    struct board *board;
    struct cache **caches;    /* one colo segment per colo, shared by its edges */
    struct rl **limiters;     /* one rate-limit segment per colo (NULL: none, fail open) */
    int *listen_fds;          /* the port's sockets, then tls-port's */
    size_t nlisten;
    size_t ntls;              /* the last ntls of listen_fds are tls-port's */
    struct child *children;
    int nchildren;
    uint64_t generation;
    int announced_ready;
    int stopping;             /* 0 running, 1 stopping edges, 2 stopping owners */
    struct event *sig_term, *sig_int, *sig_hup, *sig_chld, *watchdog, *deadline;
};

struct cfg *master_load_config(const struct master_opts *o, struct cfg_error *err)
{
    struct cfg *c = cfg_create();
    if (c == NULL) {
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return NULL;
    }
    if (o->config_path != NULL && cfg_load_file(c, o->config_path, err) != HKV_OK)
        goto fail;
    for (int i = 0; i < o->noverrides; i++)
        if (cfg_apply(c, o->override_argc[i], o->override_argv[i], "command line", err) != HKV_OK)
            goto fail;
    if (cfg_validate(c, err) != HKV_OK)
        goto fail;
    return c;
fail:
    cfg_destroy(&c);
    return NULL;
}

static const char *child_name(const struct child *c, const struct cfg *cfg, char *buf, size_t len)
{
    if (c->role == BOARD_EDGE) {
        char colo[TOPO_COLO_NAME_MAX];
        topo_colo_name(cfg, c->colo, colo, sizeof(colo));
        snprintf(buf, len, "edge %.40s/%d", colo, c->index);
    }
    else
        snprintf(buf, len, "owner %s/%d", topo_pool_name(c->pool), c->index);
    return buf;
}

static int alive(const struct master *m, enum board_role role)
{
    int n = 0;
    for (int i = 0; i < m->nchildren; i++)
        if (m->children[i].pid > 0 && (role == BOARD_EMPTY || m->children[i].role == role))
            n++;
    return n;
}

static void send_config(struct master *m, struct child *c);
static void config_set(struct master *m, const char *p, size_t len);

/* ---- control channel ------------------------------------------------------ */

static void announce(struct master *m)
{
    int ready = 0;
    for (int i = 0; i < m->nchildren; i++)
        ready += m->children[i].ready;
    if (ready < m->nchildren || m->stopping)
        return;
    char addr[256] = "";
    if (m->cfg->nbind > 0)
        snprintf(addr, sizeof(addr), "%s:%d", m->cfg->bind[0], m->cfg->port);
    if (m->cfg->nbind > 0 && m->ntls > 0)
        snprintf(addr + strlen(addr), sizeof(addr) - strlen(addr), " and TLS port %d",
                 m->cfg->tls_port);
    if (!m->announced_ready) {
        m->announced_ready = 1;
        log_notice("ready: %d edges and %d owners serving on %s (config generation %llu)",
                   m->cfg->colos * m->cfg->edge_workers, m->cfg->hot_owners + m->cfg->cold_owners, addr,
                   (unsigned long long)m->generation);
    }
    notify_sendf("READY=1\nSTATUS=serving on %s: %d edges, %d owners, config generation %llu",
                 addr, m->cfg->colos * m->cfg->edge_workers, m->cfg->hot_owners + m->cfg->cold_owners,
                 (unsigned long long)m->generation);
}

static void on_ctl_msg(void *arg, uint8_t type, const char *payload, size_t len)
{
    struct child *c = arg;
    if (type == CTL_READY) {
        c->ready = 1;
        announce(c->m);
    } else if (type == CTL_SET && !c->m->stopping) {
        config_set(c->m, payload, len);
    }
}

static void on_ctl_read(struct bufferevent *bev, void *arg)
{
    struct child *c = arg;
    if (ctl_each(bufferevent_get_input(bev), on_ctl_msg, c) != HKV_OK) {
        char name[64];
        log_warning("%s: malformed control message, killing it",
                    child_name(c, c->m->cfg, name, sizeof(name)));
        kill(c->pid, SIGKILL);
    }
}

static void on_ctl_event(struct bufferevent *bev, short what, void *arg)
{
    struct child *c = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        /* The process is exiting; SIGCHLD does the bookkeeping. */
        bufferevent_free(c->ctl);
        c->ctl = NULL;
    }
}

static void send_config(struct master *m, struct child *c)
{
    if (c->ctl == NULL)
        return;
    size_t len;
    char *text = cfg_serialize(m->cfg, &len);
    if (text == NULL)
        return;
    char *msg = malloc(len + 8);
    if (msg != NULL) {
        ctl_put_u64((unsigned char *)msg, m->generation);
        memcpy(msg + 8, text, len);
        ctl_put(bufferevent_get_output(c->ctl), CTL_CONFIG, msg, len + 8);
        free(msg);
    }
    free(text);
}

/* ---- spawning ------------------------------------------------------------- */

static void child_run(struct master *m, struct child *c, int ctl_fd) __attribute__((noreturn));

static void child_run(struct master *m, struct child *c, int ctl_fd)
{
    /* Nothing of the master's loop may run here: its epoll set and its
     * signal pipe are shared with the master until reinit. */
    event_reinit(m->base);
    event_base_free(m->base);
    /* The master's ends of the other children's control channels must not
     * stay open here, or those children would never see EOF when the master
     * dies.  Their bufferevents are abandoned with the master's loop. */
    for (int i = 0; i < m->nchildren; i++) {
        if (m->children[i].ctl != NULL)
            close(bufferevent_getfd(m->children[i].ctl));
        if (m->children[i].role == BOARD_OWNER && &m->children[i] != c)
            close(m->children[i].link_fd);
    }

    struct worker_ctx ctx = {
        .role = c->role,
        .index = c->index,
        .pool = c->pool,
        .slot = c->slot,
        .cfg = m->cfg,
        .board = m->board,
        .ctl_fd = ctl_fd,
        .master_pid = getppid(),
    };
    int code;
    if (c->role == BOARD_EDGE) {
        ctx.listen_fds = m->listen_fds;
        ctx.nlisten = m->nlisten;
        ctx.ntls = m->ntls;
        ctx.cache = m->caches[c->colo];
        ctx.rl = m->limiters[c->colo]; /* per colo: limits are not global */
        ctx.colo_index = c->colo;
        topo_colo_name(m->cfg, c->colo, ctx.colo_name, sizeof(ctx.colo_name));
        code = edge_main(&ctx);
    } else {
        for (size_t i = 0; i < m->nlisten; i++)
            close(m->listen_fds[i]);
        for (int k = 0; k < m->cfg->colos; k++)
            cache_destroy(&m->caches[k]); /* owners never read a colo segment */
        for (int k = 0; k < m->cfg->colos; k++)
            rl_destroy(&m->limiters[k]);
        ctx.owner_fds = &c->link_fd;
        ctx.nowner_fds = 1;
        code = owner_main(&ctx);
    }
    exit(code);
}

static int spawn(struct master *m, struct child *c)
{
    char name[64];
    int sv[2];
    child_name(c, m->cfg, name, sizeof(name));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        log_warning("%s: socketpair: %s", name, strerror(errno));
        return -1;
    }
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        struct board_slot *s = &m->board->slots[c->slot];
        atomic_store_explicit(&s->pid, getpid(), memory_order_relaxed);
        child_run(m, c, sv[1]);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sv[1]);
    if (pid < 0) {
        log_warning("%s: fork: %s", name, strerror(errno));
        close(sv[0]);
        return -1;
    }
    c->pid = pid;
    c->ready = 0;
    c->started_ms = clock_mono_ms();
    struct board_slot *s = &m->board->slots[c->slot];
    atomic_store_explicit(&s->pid, pid, memory_order_relaxed);
    atomic_store_explicit(&s->role, c->role, memory_order_relaxed);
    atomic_store_explicit(&s->started_ms, c->started_ms, memory_order_relaxed);
    atomic_store_explicit(&s->heartbeat_ms, c->started_ms, memory_order_relaxed);
    atomic_store_explicit(&s->config_generation, m->generation, memory_order_relaxed);
    c->ctl = bufferevent_socket_new(m->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    if (c->ctl != NULL) {
        bufferevent_setcb(c->ctl, on_ctl_read, NULL, on_ctl_event, c);
        bufferevent_enable(c->ctl, EV_READ);
    } else {
        close(sv[0]);
    }
    log_verbose("%s started, pid %d", name, (int)pid);
    return 0;
}

static void on_restart(evutil_socket_t fd, short what, void *arg)
{
    struct child *c = arg;
    if (c->m->stopping || c->pid > 0)
        return;
    if (spawn(c->m, c) != 0) {
        struct timeval tv = {c->backoff_ms / 1000, (c->backoff_ms % 1000) * 1000};
        evtimer_add(c->restart, &tv);
    }
}

static void describe_exit(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "ended with wait status 0x%x", status);
}

static void finish_stop(struct master *m)
{
    log_notice("stopped");
    event_base_loopbreak(m->base);
}

static void stop_owners(struct master *m)
{
    m->stopping = 2;
    for (int i = 0; i < m->nchildren; i++)
        if (m->children[i].role == BOARD_OWNER && m->children[i].pid > 0)
            kill(m->children[i].pid, SIGTERM);
    if (alive(m, BOARD_EMPTY) == 0)
        finish_stop(m);
}

static void reaped(struct master *m, struct child *c, int status)
{
    char name[64], how[128];
    child_name(c, m->cfg, name, sizeof(name));
    describe_exit(status, how, sizeof(how));
    int64_t up = clock_mono_ms() - c->started_ms;
    pid_t pid = c->pid;
    c->pid = 0;
    c->ready = 0;
    atomic_store_explicit(&m->board->slots[c->slot].pid, 0, memory_order_relaxed);
    atomic_store_explicit(&m->board->slots[c->slot].ready, 0, memory_order_relaxed);
    if (c->ctl != NULL) {
        bufferevent_free(c->ctl);
        c->ctl = NULL;
    }
    if (m->stopping) {
        log_verbose("%s %s", name, how);
        if (m->stopping == 1 && alive(m, BOARD_EDGE) == 0)
            stop_owners(m);
        else if (m->stopping == 2 && alive(m, BOARD_EMPTY) == 0)
            finish_stop(m);
        return;
    }
    if (up >= STABLE_MS)
        c->backoff_ms = BACKOFF_MIN_MS;
    log_warning("%s (pid %d) %s after %lld ms; restarting in %lld ms", name, (int)pid, how,
                (long long)up, (long long)c->backoff_ms);
    atomic_fetch_add_explicit(&m->board->slots[c->slot].restarts, 1, memory_order_relaxed);
    struct timeval tv = {c->backoff_ms / 1000, (c->backoff_ms % 1000) * 1000};
    evtimer_add(c->restart, &tv);
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* ---- signals -------------------------------------------------------------- */

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct master *m = arg;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < m->nchildren; i++)
            if (m->children[i].pid == pid) {
                reaped(m, &m->children[i], status);
                break;
            }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    char name[64];
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        if (c->pid > 0) {
            log_warning("%s (pid %d) did not stop within shutdown-timeout, killing it",
                        child_name(c, m->cfg, name, sizeof(name)), (int)c->pid);
            kill(c->pid, SIGKILL);
        }
    }
    for (int i = 0; i < m->nchildren; i++)
        if (m->children[i].pid > 0)
            waitpid(m->children[i].pid, NULL, 0); /* SIGKILL cannot be ignored */
    finish_stop(m);
}

static void begin_stop(struct master *m, const char *why)
{
    if (m->stopping)
        return;
    m->stopping = 1;
    log_notice("%s: stopping edges, then owners (shutdown-timeout %lld ms)", why,
               (long long)m->cfg->shutdown_timeout_ms);
    notify_send("STOPPING=1\nSTATUS=stopping");
    for (size_t i = 0; i < m->nlisten; i++)
        close(m->listen_fds[i]);
    m->nlisten = 0;
    m->ntls = 0;
    for (int i = 0; i < m->nchildren; i++) {
        evtimer_del(m->children[i].restart);
        if (m->children[i].role == BOARD_EDGE && m->children[i].pid > 0)
            kill(m->children[i].pid, SIGTERM);
    }
    int64_t ms = m->cfg->shutdown_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(m->deadline, &tv);
    if (alive(m, BOARD_EDGE) == 0)
        stop_owners(m);
}

/* Makes `next` the live config (taking it), bumps the generation and sends
 * it to every child. */
static void install(struct master *m, struct cfg *next)
{
    cfg_destroy(&m->cfg);
    m->cfg = next;
    m->generation++;
    atomic_store_explicit(&m->board->config_generation, m->generation, memory_order_relaxed);
    log_setup(m->cfg->loglevel, m->cfg->logfile);
    for (int i = 0; i < m->nchildren; i++)
        send_config(m, &m->children[i]);
}

static void log_restart_only(const char *name, int flags, void *arg)
{
    if (!(flags & CFG_F_RELOADABLE))
        log_warning("reload: '%s' changed but takes effect only after a restart", name);
    else
        log_notice("reload: '%s' changed", name);
}

static void reload(struct master *m)
{
    notify_sendf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
                 (unsigned long long)clock_mono_us());
    log_reopen();
    struct cfg_error err;
    struct cfg *next = master_load_config(m->opts, &err);
    if (next == NULL) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused, keeping config generation %llu: %s",
                    (unsigned long long)m->generation, err.msg);
        announce(m);
        return;
    }
    struct cfg *merged = cfg_reload_merge(m->cfg, next);
    if (merged == NULL) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused: out of memory");
        cfg_destroy(&next);
        announce(m);
        return;
    }
    /* What would run keeps the running restart-only values, which the file
     * may have counted on changing (wire-max-frame against proto-max-bulk-len):
     * check the merge too, or the children would refuse it. */
    if (cfg_validate(merged, &err) != HKV_OK) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused, keeping config generation %llu: %s (restart-only "
                    "directives keep their running values until a restart)",
                    (unsigned long long)m->generation, err.msg);
        cfg_destroy(&next);
        cfg_destroy(&merged);
        announce(m);
        return;
    }
    int changed = cfg_diff(m->cfg, next, log_restart_only, NULL);
    cfg_destroy(&next);
    install(m, merged);
    log_notice("reload: config generation %llu applied (%d directives changed)",
               (unsigned long long)m->generation, changed);
    announce(m);
}

/* CONFIG SET from an edge: the same validation as a file, applied to the
 * live config and broadcast like a reload.  A later reload from the file
 * replaces it (there is no CONFIG REWRITE). */
static void config_set(struct master *m, const char *p, size_t len)
{
    struct cfg *next = cfg_dup(m->cfg);
    struct cfg_error err = {"out of memory"};
    int ok = next != NULL;
    size_t i = 0;
    while (ok && i < len) {
        const char *name = p + i;
        size_t nl = strnlen(name, len - i);
        if (i + nl + 1 >= len) {
            snprintf(err.msg, sizeof(err.msg), "malformed request");
            ok = 0;
            break;
        }
        const char *val = name + nl + 1;
        size_t vl = strnlen(val, len - i - nl - 1);
        ok = cfg_set(next, name, val, &err) == HKV_OK;
        i += nl + 1 + vl + 1;
    }
    if (ok)
        ok = cfg_validate(next, &err) == HKV_OK;
    if (!ok) {
        log_warning("CONFIG SET refused: %s", err.msg);
        cfg_destroy(&next);
        return;
    }
    install(m, next);
    log_notice("CONFIG SET: config generation %llu applied", (unsigned long long)m->generation);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct master *m = arg;
    if (sig == SIGHUP) {
        if (!m->stopping)
            reload(m);
    } else {
        begin_stop(m, sig == SIGTERM ? "SIGTERM" : "SIGINT");
    }
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    int64_t now = clock_mono_ms();
    int64_t limit = (int64_t)(notify_watchdog_usec() / 1000);
    for (int i = 0; i < m->nchildren; i++) {
        struct board_slot *s = &m->board->slots[m->children[i].slot];
        int64_t hb = atomic_load_explicit(&s->heartbeat_ms, memory_order_relaxed);
        /* A child restarting is the master doing its job; a stuck one is not. */
        if (m->children[i].pid > 0 && m->children[i].ready && now - hb > limit)
            return;
    }
    notify_send("WATCHDOG=1");
}

/* ---- setup ---------------------------------------------------------------- */

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
    m->listen_fds = calloc(m->cfg->nbind * 2, sizeof(int));
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
    return 0;
}

static int build_children(struct master *m)
{
    const struct cfg *cfg = m->cfg;
    m->nchildren = cfg->colos * cfg->edge_workers + cfg->hot_owners + cfg->cold_owners;
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
    for (int colo = 0; colo < cfg->colos; colo++)
        for (int i = 0; i < cfg->edge_workers; i++, k++)
            m->children[k] = (struct child){.role = BOARD_EDGE, .index = i, .colo = colo};
    for (int i = 0; i < m->nchildren; i++) {
        struct child *c = &m->children[i];
        c->m = m;
        c->slot = i;
        c->link_fd = -1;
        c->backoff_ms = BACKOFF_MIN_MS;
        c->restart = evtimer_new(m->base, on_restart, c);
        if (c->restart == NULL)
            return -1;
    }
    return 0;
}

static void teardown(struct master *m)
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
    free(m->children);
    for (size_t i = 0; i < m->nlisten; i++)
        close(m->listen_fds[i]);
    free(m->listen_fds);
    struct event **evs[] = {&m->sig_term, &m->sig_int, &m->sig_hup, &m->sig_chld, &m->watchdog,
                            &m->deadline};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (*evs[i])
            event_free(*evs[i]);
    if (m->base)
        event_base_free(m->base);
    board_destroy(&m->board);
    if (m->caches != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            cache_destroy(&m->caches[k]);
    free(m->caches);
    if (m->limiters != NULL)
        for (int k = 0; k < m->cfg->colos; k++)
            rl_destroy(&m->limiters[k]);
    free(m->limiters);
}

int master_run(const struct master_opts *o, struct cfg *cfg)
{
    struct master mst = {.opts = o, .cfg = cfg, .generation = 1};
    struct master *m = &mst;
    char err[512];
    int code = 1;

    log_set_role("master");
    if (log_setup(cfg->loglevel, cfg->logfile) != HKV_OK) {
        fprintf(stderr, "hotkvd: cannot open logfile '%s': %s\n", cfg->logfile, strerror(errno));
        cfg_destroy(&m->cfg);
        return 1;
    }
    proctitle_set("hotkvd: master");
    event_set_log_callback(log_libevent);
    notify_setup();
    signal(SIGPIPE, SIG_IGN);
    m->base = event_base_new();
    if (m->base == NULL || build_children(m) != 0) {
        log_warning("cannot start: out of memory");
        goto out;
    }
    if (check_dir(cfg->dir, err, sizeof(err)) != 0 || open_sockets(m, err, sizeof(err)) != 0 ||
        write_pidfile(cfg->pidfile, err, sizeof(err)) != 0 ||
        master_rehome(cfg, err, sizeof(err)) != 0) {
        log_warning("cannot start: %s", err);
        goto out;
    }
    m->board = board_create((uint32_t)m->nchildren);
    if (m->board == NULL) {
        log_warning("cannot start: shared memory: %s", strerror(errno));
        goto out;
    }
    struct cache_opts co = {.bytes = (size_t)cfg->cache_memory,
                            .max_value = (size_t)cfg->cache_max_value,
                            .hot_sample = 16};
    m->caches = calloc((size_t)cfg->colos, sizeof(*m->caches));
    if (m->caches == NULL)
        goto out;
    for (int k = 0; k < cfg->colos; k++)
        if (cache_create(&co, &m->caches[k]) != HKV_OK) {
            log_warning("cannot start: colo cache segment of %lld bytes: %s",
                        (long long)cfg->cache_memory, strerror(errno));
            goto out;
        }
    /* One limiter per colo, next to its cache.  Without one the colo's edges
     * limit nothing (the limiter fails open), which is logged, not fatal. */
    m->limiters = calloc((size_t)cfg->colos, sizeof(*m->limiters));
    if (m->limiters == NULL)
        goto out;
    struct rl_opts ro = {.buckets = (uint32_t)cfg->ratelimit_buckets};
    for (int k = 0; k < cfg->colos; k++)
        if (rl_create(&ro, &m->limiters[k]) != HKV_OK)
            log_warning("colo %d: no rate-limit segment (%lld buckets): %s; its clients are not "
                        "rate limited", k, (long long)cfg->ratelimit_buckets, strerror(errno));
    atomic_store_explicit(&m->board->master_pid, getpid(), memory_order_relaxed);
    atomic_store_explicit(&m->board->config_generation, m->generation, memory_order_relaxed);
    atomic_store_explicit(&m->board->start_unix_ms, clock_unix_ms(), memory_order_relaxed);

    m->sig_term = evsignal_new(m->base, SIGTERM, on_signal, m);
    m->sig_int = evsignal_new(m->base, SIGINT, on_signal, m);
    m->sig_hup = evsignal_new(m->base, SIGHUP, on_signal, m);
    m->sig_chld = evsignal_new(m->base, SIGCHLD, on_sigchld, m);
    m->watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
    m->deadline = evtimer_new(m->base, on_deadline, m);
    if (!m->sig_term || !m->sig_int || !m->sig_hup || !m->sig_chld || !m->watchdog || !m->deadline)
        goto out;
    evsignal_add(m->sig_term, NULL);
    evsignal_add(m->sig_int, NULL);
    evsignal_add(m->sig_hup, NULL);
    evsignal_add(m->sig_chld, NULL);
    if (notify_watchdog_usec() > 0) {
        uint64_t half = notify_watchdog_usec() / 2;
        struct timeval tv = {(time_t)(half / 1000000), (suseconds_t)(half % 1000000)};
        event_add(m->watchdog, &tv);
    }

    log_notice("hotkvd %s starting: %d colo(s) named %s, %d edges each, %d hot + %d cold owners, "
               "dir %s", HOTKVD_VERSION, cfg->colos, cfg->colo, cfg->edge_workers, cfg->hot_owners,
               cfg->cold_owners, cfg->dir);
    for (int i = 0; i < m->nchildren; i++)
        if (spawn(m, &m->children[i]) != 0)
            goto out;
    event_base_dispatch(m->base);
    code = 0;
out:
    if (code != 0 && m->base != NULL) {
        for (int i = 0; i < m->nchildren; i++)
            if (m->children[i].pid > 0)
                kill(m->children[i].pid, SIGKILL);
        for (int i = 0; i < m->nchildren; i++)
            if (m->children[i].pid > 0)
                waitpid(m->children[i].pid, NULL, 0);
    }
    if (m->cfg->pidfile && m->cfg->pidfile[0] && code == 0)
        unlink(m->cfg->pidfile);
    teardown(m);
    cfg_destroy(&m->cfg);
    return code;
}

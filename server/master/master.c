/*
 * master.c - supervision; see master.h.  The master only forks, reaps and
 * reloads (nginx's ngx_process_cycle): it does no request work and touches
 * no client byte.  What exists before the first fork is made in
 * master_boot.c, config generations live in master_reload.c, CONFIG
 * RESETSTAT's round in master_stats.c (see master_int.h for the map).
 *
 * The shape follows nginx: signal handlers only wake the loop (libevent's
 * evsignal), and the loop acts.  Every child has a slot: owners first, then
 * edges.  A slot keeps its board slot, its control channel and its restart
 * backoff across restarts of the process in it: a child that dies is forked
 * again after a backoff that doubles (100 ms up to 5 s) and goes back to the
 * minimum once a process stayed up for 10 s.
 *
 * Stop order matters: edges stop first (they finish what clients asked,
 * including writes still waiting on owners), then owners (they flush their
 * dirty keys to disk), so no acknowledged write is cut off mid-way.
 *
 * A cluster host (`cluster` set) has one more child, the agent, forked
 * first: owners and edges are forked only once the agent has published a
 * cluster map and the host's number (from etcd, or from the map saved in
 * `dir` when etcd does not answer), since they route from it.  If the agent
 * finds this host's name or an owner id held by another live hotkvd, it
 * says so (CTL_REFUSED) and the master stops with status 1.  The agent
 * stops with the owners.
 */
#include "master.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/agent/agent.h"
#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/core/notify.h"
#include "server/core/proctitle.h"
#include "server/core/runinfo.h"
#include "server/core/topo.h"
#include "server/core/version.h"
#include "server/core/worker.h"
#include "server/edge/edge.h"
#include "server/master/master_int.h"
#include "server/master/master_policy.h"
#include "server/owner/owner.h"

#define CLUSTER_POLL_MS 100   /* how often a cluster host checks for its map */
#define CLUSTER_LOG_MS 5000   /* and says it is still waiting */

static void begin_stop(struct master *m, const char *why);

static int alive(const struct master *m, enum board_role role)
{
    int n = 0;
    for (int i = 0; i < m->nchildren; i++)
        if (m->children[i].pid > 0 && (role == BOARD_EMPTY || m->children[i].role == role))
            n++;
    return n;
}

/* ---- control channel ------------------------------------------------------ */

static void on_ctl_msg(void *arg, uint8_t type, const char *payload, size_t len)
{
    struct child *c = arg;
    if (type == CTL_READY) {
        c->ready = 1;
        master_announce(c->m);
    } else if (type == CTL_SET && !c->m->stopping) {
        master_config_set(c->m, payload, len);
    } else if (type == CTL_RESETSTAT) {
        master_resetstat_asked(c);
    } else if (type == CTL_RESETSTAT_DONE) {
        master_resetstat_confirmed(c);
    } else if (type == CTL_CACHE_FORGET) {
        master_cache_forget(c, payload, len);
    } else if (type == CTL_REFUSED && c->role == BOARD_AGENT && !c->m->stopping) {
        log_warning("cannot start: %.*s", (int)(len < 1024 ? len : 1024), payload);
        c->m->exit_code = 1;
        begin_stop(c->m, "the cluster refused this host");
    }
}

static void on_ctl_read(struct bufferevent *bev, void *arg)
{
    struct child *c = arg;
    if (ctl_each(bufferevent_get_input(bev), on_ctl_msg, c) != HKV_OK) {
        char name[64];
        log_warning("%s: malformed control message, killing it",
                    master_child_name(c, c->m->cfg, name, sizeof(name)));
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
    master_owner_tcp_close(m, c);

    struct worker_ctx ctx = {
        .role = c->role,
        .index = c->index,
        .slot = c->slot,
        .cfg = m->cfg,
        .board = m->board,
        .ctl_fd = ctl_fd,
        .master_pid = getppid(),
        .cmap = m->cmap,
    };
    int code;
    if (c->role == BOARD_AGENT) {
        for (size_t i = 0; i < m->nlisten; i++)
            close(m->listen_fds[i]);
        for (int k = 0; k < m->cfg->colos; k++)
            cache_destroy(&m->caches[k]);
        for (int k = 0; k < m->cfg->colos; k++) {
            rl_destroy(&m->limiters[k]);
            if (m->app_limiters != NULL)
                rl_destroy(&m->app_limiters[k]);
        }
        master_http_child(m, -1, NULL);
        code = agent_main(&ctx);
    } else if (c->role == BOARD_EDGE) {
        struct edge_ctx ectx = {
            .cache = m->caches[c->colo],
            .rl = m->limiters[c->colo], /* per colo: limits are not global */
            .app_rl = m->app_limiters != NULL ? m->app_limiters[c->colo] : NULL,
            .colo_index = c->colo,
            .colo_caches = m->caches,
            .colo_limiters = m->limiters,
            .colo_app_limiters = m->app_limiters,
            .ncolos = m->cfg->colos,
            .listen_fds = m->listen_fds,
            .nlisten = m->nlisten,
            .nwriter = m->nwriter,
            .ntls = m->ntls,
            .writer = m->nwriter > 0 && c->index >= m->cfg->edge_workers - m->cfg->writer_edges,
        };
        topo_colo_name(m->cfg, c->colo, ectx.colo_name, sizeof(ectx.colo_name));
        master_http_child(m, c->colo, &ectx);
        code = edge_main(&ctx, &ectx);
    } else {
        for (size_t i = 0; i < m->nlisten; i++)
            close(m->listen_fds[i]);
        for (int k = 0; k < m->cfg->colos; k++)
            cache_destroy(&m->caches[k]); /* owners never read a colo segment */
        for (int k = 0; k < m->cfg->colos; k++) {
            rl_destroy(&m->limiters[k]);
            if (m->app_limiters != NULL)
                rl_destroy(&m->app_limiters[k]);
        }
        master_http_child(m, -1, NULL);
        struct owner_ctx octx = {.pool = c->pool, .link_fd = c->link_fd, .tcp_fd = c->tcp_fd};
        code = owner_main(&ctx, &octx);
    }
    exit(code);
}

static int spawn(struct master *m, struct child *c)
{
    char name[64];
    int sv[2];
    master_child_name(c, m->cfg, name, sizeof(name));
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
        if (master_stop_signals(m->stopping, m->children[i].role) && m->children[i].pid > 0)
            kill(m->children[i].pid, SIGTERM);
    if (alive(m, BOARD_EMPTY) == 0)
        finish_stop(m);
}

static void reaped(struct master *m, struct child *c, int status)
{
    char name[64], how[128];
    master_child_name(c, m->cfg, name, sizeof(name));
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
    master_resetstat_gone(c);
    if (c->role == BOARD_OWNER && m->agent != NULL && m->agent->ctl != NULL && !m->stopping) {
        /* the agent promotes the dead owner's followers at once (CLUSTER.md §7) */
        unsigned char died[5] = {(unsigned char)c->pool, (unsigned char)(c->index >> 24),
                                 (unsigned char)(c->index >> 16), (unsigned char)(c->index >> 8),
                                 (unsigned char)c->index};
        ctl_put(bufferevent_get_output(m->agent->ctl), CTL_OWNER_DIED, died, sizeof(died));
    }
    switch (master_after_exit(m->stopping, alive(m, BOARD_EDGE), alive(m, BOARD_EMPTY))) {
    case MASTER_RESTART:
        break;
    case MASTER_STOP_OWNERS:
        log_verbose("%s %s", name, how);
        stop_owners(m);
        return;
    case MASTER_STOPPED:
        log_verbose("%s %s", name, how);
        finish_stop(m);
        return;
    case MASTER_WAIT:
        log_verbose("%s %s", name, how);
        return;
    }
    int64_t delay = master_restart_delay(&c->backoff_ms, up);
    log_warning("%s (pid %d) %s after %lld ms; restarting in %lld ms", name, (int)pid, how,
                (long long)up, (long long)delay);
    atomic_fetch_add_explicit(&m->board->slots[c->slot].restarts, 1, memory_order_relaxed);
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
    evtimer_add(c->restart, &tv);
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
                        master_child_name(c, m->cfg, name, sizeof(name)), (int)c->pid);
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
    m->nwriter = 0;
    m->ntls = 0;
    /* The HTTP ports too: the draining edges hold them open (/healthz says
     * "draining") until the last exits; then they are refused, not silent. */
    master_http_close(m);
    for (int i = 0; i < m->nchildren; i++) {
        evtimer_del(m->children[i].restart);
        if (master_stop_signals(m->stopping, m->children[i].role) && m->children[i].pid > 0)
            kill(m->children[i].pid, SIGTERM);
    }
    int64_t ms = m->cfg->shutdown_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(m->deadline, &tv);
    if (alive(m, BOARD_EDGE) == 0)
        stop_owners(m);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct master *m = arg;
    if (sig == SIGHUP) {
        if (!m->stopping)
            master_reload(m);
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
        if (master_child_stuck(m->children[i].pid > 0, m->children[i].ready, hb, now, limit))
            return;
    }
    notify_send("WATCHDOG=1");
}

/* ---- a cluster host: owners and edges wait for the map -------------------- */

static int spawn_members(struct master *m)
{
    m->members_started = 1;
    for (int i = 0; i < m->nchildren; i++)
        if (&m->children[i] != m->agent && spawn(m, &m->children[i]) != 0)
            return -1;
    return 0;
}

static void on_cluster_wait(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    if (m->stopping || m->members_started) {
        event_del(m->cluster_wait);
        return;
    }
    struct cmap_health h;
    cmap_health_get(m->cmap, &h);
    int64_t rev = cmap_revision(m->cmap);
    int64_t now = clock_mono_ms();
    if (rev > 0 && h.host_number != 0) {
        event_del(m->cluster_wait);
        log_notice("cluster %s: host %s is host number %u, map revision %lld%s; starting owners "
                   "and edges", m->cfg->cluster, m->cfg->host, h.host_number, (long long)rev,
                   h.from_disk ? " (saved in dir: etcd did not answer)" : "");
        if (spawn_members(m) != 0) {
            m->exit_code = 1;
            begin_stop(m, "cannot fork");
        }
        return;
    }
    if (now - m->wait_logged_ms >= CLUSTER_LOG_MS) {
        m->wait_logged_ms = now;
        log_notice("cluster %s: waiting %lld s for the agent (map revision %lld, host number %u, "
                   "etcd %s); owners and edges start once both are known", m->cfg->cluster,
                   (long long)((now - m->wait_since_ms) / 1000), (long long)rev, h.host_number,
                   h.etcd_up ? "up" : h.etcd_ok_ms ? "down" : "not reached yet");
    }
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
    runinfo_init(o->config_path);
    signal(SIGPIPE, SIG_IGN);
    m->base = event_base_new();
    if (m->base == NULL || master_build_children(m, on_restart) != 0) {
        log_warning("cannot start: out of memory");
        goto out;
    }
    if (master_boot(m, err, sizeof(err)) != 0) {
        log_warning("cannot start: %s", err);
        goto out;
    }

    m->sig_term = evsignal_new(m->base, SIGTERM, on_signal, m);
    m->sig_int = evsignal_new(m->base, SIGINT, on_signal, m);
    m->sig_hup = evsignal_new(m->base, SIGHUP, on_signal, m);
    m->sig_chld = evsignal_new(m->base, SIGCHLD, on_sigchld, m);
    m->watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
    m->deadline = evtimer_new(m->base, on_deadline, m);
    m->rs_timer = evtimer_new(m->base, master_resetstat_timeout, m);
    if (!m->sig_term || !m->sig_int || !m->sig_hup || !m->sig_chld || !m->watchdog ||
        !m->deadline || !m->rs_timer)
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
    if (m->agent == NULL) {
        if (spawn_members(m) != 0)
            goto out;
    } else {
        /* a cluster host: the agent first, the others once it has a map */
        m->cluster_wait = event_new(m->base, -1, EV_PERSIST, on_cluster_wait, m);
        if (m->cluster_wait == NULL || spawn(m, m->agent) != 0)
            goto out;
        m->wait_since_ms = m->wait_logged_ms = clock_mono_ms();
        struct timeval tv = {0, CLUSTER_POLL_MS * 1000};
        event_add(m->cluster_wait, &tv);
    }
    event_base_dispatch(m->base);
    code = m->exit_code;
out:
    if (code != 0 && m->base != NULL) {
        for (int i = 0; i < m->nchildren; i++)
            if (m->children[i].pid > 0)
                kill(m->children[i].pid, SIGKILL);
        for (int i = 0; i < m->nchildren; i++)
            if (m->children[i].pid > 0)
                waitpid(m->children[i].pid, NULL, 0);
    }
    if (m->cfg->pidfile && m->cfg->pidfile[0] && (code == 0 || m->exit_code != 0))
        unlink(m->cfg->pidfile);
    master_teardown(m);
    cfg_destroy(&m->cfg);
    return code;
}

/*
 * worker.c - the runtime every child shares; see worker.h.
 *
 * Three ways to learn the master is gone, because each alone has a hole:
 * PR_SET_PDEATHSIG (fires on the death of the forking *thread*, and not at all
 * if the master died before prctl ran), EOF on the control channel (immediate,
 * unless another process still holds the master's end), and a getppid() check
 * on the heartbeat timer (slow, but always right).
 */
#include "worker.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/core/proctitle.h"
#include "server/core/clock.h"

#define HEARTBEAT_MS 250

struct worker {
    struct worker_ctx *ctx;
    struct event_base *base;
    struct worker_hooks hooks;
    struct bufferevent *ctl;
    struct event *sig_term, *sig_int, *sig_hup, *heartbeat;
    int stopping;
    worker_msg_fn on_msg;          /* worker_on_message; NULL: other messages dropped */
    void *on_msg_arg;
};

void worker_on_message(struct worker *w, worker_msg_fn fn, void *arg)
{
    w->on_msg = fn;
    w->on_msg_arg = arg;
}

int worker_prepare(struct worker_ctx *ctx, const char *title)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != ctx->master_pid)
        return -1;
    proctitle_set("hotkvd: %s", title);
    log_set_role(title);
    return 0;
}

static void begin_stop(struct worker *w, int fast)
{
    if (w->stopping && !fast)
        return;
    w->stopping = 1;
    w->hooks.stop(w->hooks.arg, fast);
}

static int master_gone(const struct worker *w)
{
    return getppid() != w->ctx->master_pid;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct worker *w = arg;
    if (sig == SIGHUP) {
        log_reopen(); /* the master sends configs over ctl; HUP only rotates logs */
        return;
    }
    int fast = master_gone(w);
    log_notice("received %s%s, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT",
               fast ? " (master is gone)" : "");
    begin_stop(w, fast);
}

/* RssAnon of /proc/self/status: the anonymous resident memory (the heap,
 * malloc's own mmaps, stacks), one small read whatever the heap holds.  Not
 * mallinfo2(): glibc walks every free chunk of every bin with the arena
 * locked, and an owner with a large ledger has hundreds of thousands (one
 * holding a 64 MiB leaf spent 0.16 to 0.8 s in it per heartbeat, its loop
 * stopped, writes waited seconds). */
uint64_t worker_heap_bytes(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *at = strstr(buf, "\nRssAnon:");
    return at != NULL ? strtoull(at + strlen("\nRssAnon:"), NULL, 10) * 1024 : 0;
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    struct board_slot *s = &w->ctx->board->slots[w->ctx->slot];
    atomic_store_explicit(&s->heartbeat_ms, clock_mono_ms(), memory_order_relaxed);
    /* INFO memory's used_memory, summed by any edge */
    atomic_store_explicit(&s->heap_bytes, worker_heap_bytes(), memory_order_relaxed);
    if (master_gone(w)) {
        log_warning("master %d is gone, exiting", (int)w->ctx->master_pid);
        begin_stop(w, 1);
    }
}

void worker_install(struct worker *w, struct cfg *next)
{
    w->hooks.reload(w->hooks.arg, next);
    struct cfg *old = w->ctx->cfg;
    w->ctx->cfg = next;
    cfg_destroy(&old); /* our reference: whatever still reads it holds its own */
    log_setup(next->loglevel, next->logfile);
}

hkv_status worker_send(struct worker *w, uint8_t type, const void *payload, size_t len)
{
    if (w->ctl == NULL)
        return HKV_EIO;
    return ctl_put(bufferevent_get_output(w->ctl), type, payload, len);
}

static void apply_config(struct worker *w, const char *payload, size_t len)
{
    if (len < 8) {
        log_warning("control channel: short CONFIG message ignored");
        return;
    }
    uint64_t gen = ctl_get_u64((const unsigned char *)payload);
    struct cfg *next = cfg_create();
    struct cfg_error err;
    if (next == NULL)
        return;
    if (cfg_load_text(next, payload + 8, len - 8, "master", &err) != HKV_OK ||
        cfg_validate(next, &err) != HKV_OK) {
        /* The master validated it; failing here means a bug, not bad input. */
        log_warning("control channel: config generation %llu refused: %s",
                    (unsigned long long)gen, err.msg);
        cfg_destroy(&next);
        return;
    }
    worker_install(w, next);
    atomic_store_explicit(&w->ctx->board->slots[w->ctx->slot].config_generation, gen,
                          memory_order_relaxed);
    unsigned char g[8];
    ctl_put_u64(g, gen);
    ctl_put(bufferevent_get_output(w->ctl), CTL_APPLIED, g, sizeof(g));
    log_verbose("config generation %llu applied", (unsigned long long)gen);
}

static void resetstat(struct worker *w)
{
    board_reset_counters(&w->ctx->board->slots[w->ctx->slot]);
    if (w->hooks.resetstat != NULL)
        w->hooks.resetstat(w->hooks.arg);
    if (w->ctl != NULL)
        ctl_put(bufferevent_get_output(w->ctl), CTL_RESETSTAT_DONE, NULL, 0);
}

static void on_ctl_msg(void *arg, uint8_t type, const char *payload, size_t len)
{
    struct worker *w = arg;
    if (type == CTL_CONFIG)
        apply_config(w, payload, len);
    else if (type == CTL_RESETSTAT)
        resetstat(w);
    else if (type == CTL_RESETSTAT_DONE && w->hooks.resetstat_done != NULL)
        w->hooks.resetstat_done(w->hooks.arg);
    else if (type == CTL_CACHE_FORGOTTEN && w->hooks.cache_forgotten != NULL)
        w->hooks.cache_forgotten(w->hooks.arg);
    else if (w->on_msg != NULL)
        w->on_msg(w->on_msg_arg, type, payload, len);
}

static void on_ctl_read(struct bufferevent *bev, void *arg)
{
    struct worker *w = arg;
    if (ctl_each(bufferevent_get_input(bev), on_ctl_msg, w) != HKV_OK) {
        log_warning("control channel: malformed message, treating the master as gone");
        begin_stop(w, 1);
    }
}

static void on_ctl_event(struct bufferevent *bev, short what, void *arg)
{
    struct worker *w = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        bufferevent_free(w->ctl);
        w->ctl = NULL;
        if (!w->stopping || master_gone(w)) {
            log_warning("control channel closed: the master is gone, exiting");
            begin_stop(w, 1);
        }
    }
}

struct worker *worker_create(struct worker_ctx *ctx, struct event_base *base,
                             const struct worker_hooks *hooks)
{
    struct worker *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->ctx = ctx;
    w->base = base;
    w->hooks = *hooks;
    signal(SIGPIPE, SIG_IGN);
    w->sig_term = evsignal_new(base, SIGTERM, on_signal, w);
    w->sig_int = evsignal_new(base, SIGINT, on_signal, w);
    w->sig_hup = evsignal_new(base, SIGHUP, on_signal, w);
    w->heartbeat = event_new(base, -1, EV_PERSIST, on_heartbeat, w);
    w->ctl = bufferevent_socket_new(base, ctx->ctl_fd, BEV_OPT_CLOSE_ON_FREE);
    if (!w->sig_term || !w->sig_int || !w->sig_hup || !w->heartbeat || !w->ctl) {
        worker_destroy(&w);
        return NULL;
    }
    evsignal_add(w->sig_term, NULL);
    evsignal_add(w->sig_int, NULL);
    evsignal_add(w->sig_hup, NULL);
    struct timeval tv = {0, HEARTBEAT_MS * 1000};
    event_add(w->heartbeat, &tv);
    bufferevent_setcb(w->ctl, on_ctl_read, NULL, on_ctl_event, w);
    bufferevent_enable(w->ctl, EV_READ);
    /* Signals were blocked across fork so none could hit a half-built child. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    on_heartbeat(-1, 0, w);
    return w;
}

void worker_ready(struct worker *w)
{
    struct board_slot *s = &w->ctx->board->slots[w->ctx->slot];
    atomic_store_explicit(&s->ready, 1, memory_order_relaxed);
    if (w->ctl != NULL)
        ctl_put(bufferevent_get_output(w->ctl), CTL_READY, NULL, 0);
}

void worker_quiesce(struct worker *w)
{
    if (w->ctl != NULL) {
        bufferevent_free(w->ctl);
        w->ctl = NULL;
    }
    if (w->sig_hup)
        event_del(w->sig_hup);
    if (w->heartbeat)
        event_del(w->heartbeat);
    atomic_store_explicit(&w->ctx->board->slots[w->ctx->slot].ready, 0, memory_order_relaxed);
}

int worker_stopping(const struct worker *w)
{
    return w->stopping;
}

void worker_destroy(struct worker **wp)
{
    if (wp == NULL || *wp == NULL)
        return;
    struct worker *w = *wp;
    if (w->ctl)
        bufferevent_free(w->ctl);
    if (w->sig_term)
        event_free(w->sig_term);
    if (w->sig_int)
        event_free(w->sig_int);
    if (w->sig_hup)
        event_free(w->sig_hup);
    if (w->heartbeat)
        event_free(w->heartbeat);
    free(w);
    *wp = NULL;
}

/*
 * master_int.h - what the master's files share: the master context and one
 * child slot.  Private to server/master/.
 *
 *   master.c         supervision: fork, reap, restart with backoff, stop in
 *                    order, signals, the watchdog, control messages in
 *   master_policy.c  its decisions as pure functions: the backoff, what an
 *                    exit leads to, who a stop phase or a reload reaches
 *   master_boot.c    what exists before the first fork: the data dir, the
 *                    listening sockets, the shared segments, the pidfile,
 *                    the child table; and their teardown
 *   master_reload.c  config generations: load, SIGHUP reload, CONFIG SET,
 *                    the broadcast to every child, READY to systemd
 *   master_stats.c   CONFIG RESETSTAT: every process's counters zeroed
 *   master_forget.c  FLUSHALL: every colo segment forgets older versions
 *   master_http.c    the HTTP front door's sockets and change rings
 *
 * The calls go one way: master.c calls the others, which call at most
 * master_boot.c, and nothing calls master.c (a timer's callback is handed
 * over as a function pointer).
 */
#ifndef HKV_MASTER_INT_H
#define HKV_MASTER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config/cfg.h"
#include "server/core/board.h"
#include "server/master/master.h"
#include "server/master/master_policy.h"

struct bus;
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
    int tcp_fd;               /* cluster owners: the TCP socket other hosts' edges
                               * connect to (master_owner_tcp.c); -1 = none */
    int rs_asked;             /* RESETSTATs it asked for, not yet in a round */
    int rs_round;             /* RESETSTATs it asked for, answered when this round ends */
    int rs_pending;           /* told to reset in this phase, not confirmed yet */
};

struct master {
    const struct master_opts *opts;
    struct cfg *cfg;
    struct event_base *base;
    struct board *board;
    int ncolos;               /* colos (restart-only): of caches, limiters, changes */
    struct cache **caches;    /* one colo segment per colo, shared by its edges */
    struct rl **limiters;     /* one rate-limit segment per colo (NULL: none, fail open) */
    struct rl **app_limiters; /* CL.THROTTLE's, one per colo (NULL: none, fail open) */
    int *listen_fds;          /* the port's sockets, writer-port's, then tls-port's */
    size_t nlisten;
    size_t nwriter;           /* writer-port's: just before the tls-port ones */
    size_t ntls;              /* the last ntls of listen_fds are tls-port's */
    int *http_fds;            /* http-port's sockets, then https-port's (master_http.c) */
    size_t nhttp;             /* all of them */
    size_t nhttps;            /* the last nhttps are https-port's */
    struct changes **changes; /* per colo: its change ring (NULL: no HTTP port) */
    struct bus **buses;       /* per colo: its pub/sub bus (master_http.c) */
    struct child *children;
    int nchildren;
    uint64_t generation;
    int announced_ready;
    int stopping;             /* 0 running, 1 stopping edges, 2 stopping owners */
    struct event *sig_term, *sig_int, *sig_hup, *sig_chld, *watchdog, *deadline;
    int rs_phase;             /* RESETSTAT round: 0 none, 1 owners, 2 edges */
    struct event *rs_timer;   /* the phase's bound (master_resetstat_timeout) */
    /* a cluster host (cfg->cluster set); all NULL/0 on a single host */
    struct cmap *cmap;        /* the cluster map, written by the agent */
    struct child *agent;      /* the last slot of the child table */
    struct event *cluster_wait; /* until the map and the host number are there */
    int64_t wait_since_ms, wait_logged_ms;
    int members_started;      /* owners and edges were forked */
    int exit_code;            /* 1 once the agent refused the host */
};

/* A cluster host: `cluster` is set. */
static inline int master_cluster(const struct cfg *cfg)
{
    return cfg->cluster != NULL && cfg->cluster[0] != '\0';
}

/* ---- master_boot.c ---- */

/* "edge a/0", "owner hot/1", "agent": how logs name a child. */
const char *master_child_name(const struct child *c, const struct cfg *cfg, char *buf, size_t len);
/* The child table: owners first (edges connect to them), then edges, then
 * in a cluster the agent, each with its restart timer (on_restart, arg the
 * child).  0, or -1 (memory). */
int master_build_children(struct master *m, event_callback_fn on_restart);
/* Everything the children inherit, before the first fork: checks the data
 * dir, opens the listening sockets and the owners' link sockets, writes the
 * pidfile, maps the board, the colo caches and the rate limiters (and in a
 * cluster the cluster map).  0, or -1
 * with why in err ("cannot start: " is the caller's). */
int master_boot(struct master *m, char *err, size_t len);
/* Frees what master_build_children and master_boot made (partial or not),
 * and the master's events and loop. */
void master_teardown(struct master *m);

/* ---- master_owner_tcp.c ---- */

/* A cluster host with owner-port: each owner's TCP listener (owner-port +
 * its host-wide index, on advertise-addr resolved now) into c->tcp_fd, after
 * checking the cluster TLS files load.  0 (also when there is nothing to
 * open), or -1 with why in err. */
int master_owner_tcp_open(struct master *m, char *err, size_t len);
/* Closes every owner's TCP listener except keep's (NULL: all). */
void master_owner_tcp_close(struct master *m, const struct child *keep);

/* ---- master_http.c ---- */

struct edge_ctx;
/* The HTTP front door's part of the boot (after the RESP sockets): its
 * listening sockets and, per colo, the change ring with an eventfd per
 * edge.  Nothing when both ports are 0.  0, or -1 with why in err. */
int master_http_boot(struct master *m, char *err, size_t len);
/* In a child just forked: an edge of colo `colo` gets its part in ectx; an
 * owner (ectx NULL) closes the sockets and unmaps the rings. */
void master_http_child(struct master *m, int colo, struct edge_ctx *ectx);
/* The stop: the master's copies of the HTTP sockets closed (the edges'
 * copies keep the ports open while they drain). */
void master_http_close(struct master *m);
/* Frees what master_http_boot made. */
void master_http_teardown(struct master *m);

/* ---- master_reload.c ---- */

/* Every child is ready: tells systemd (READY=1, STATUS) and, the first
 * time, the log. */
void master_announce(struct master *m);
/* SIGHUP: the file again; a bad one changes nothing and is counted. */
void master_reload(struct master *m);
/* CONFIG SET from an edge: "name\0value\0" pairs. */
void master_config_set(struct master *m, const char *p, size_t len);

/* ---- master_stats.c ---- */

/* c sent CTL_RESETSTAT: it is answered CTL_RESETSTAT_DONE once every process
 * has zeroed its counters (a round starts now, or after the current one). */
void master_resetstat_asked(struct child *c);
/* c sent CTL_RESETSTAT_DONE. */
void master_resetstat_confirmed(struct child *c);
/* c's process ended: nothing is waited from it, nothing is owed to it. */
void master_resetstat_gone(struct child *c);
/* m->rs_timer's callback (arg the master). */
void master_resetstat_timeout(evutil_socket_t fd, short what, void *arg);

/* ---- master_forget.c ---- */

/* c sent CTL_CACHE_FORGET (payload: u64 flush versions): every colo segment
 * forgets what those owners stamped before them; c is answered
 * CTL_CACHE_FORGOTTEN at once. */
void master_cache_forget(struct child *c, const char *payload, size_t len);

#endif

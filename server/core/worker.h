/*
 * worker.h - what every child process (edge or owner) shares: the context the
 * master hands it at fork, and the runtime around its event loop — signals,
 * the control channel (config reloads, the master's lifeline), the heartbeat
 * in the scoreboard, and the parent-death check.  The core knows no role:
 * what only an edge or only an owner needs (sockets, colo segments, pool)
 * travels in the role's own context, which the master fills and hands to
 * edge_main / owner_main next to this one.
 *
 * A role plugs in with two hooks: `reload` receives a new validated config
 * (the worker drops its reference to the old one after the hook returns) and
 * `stop` begins an orderly stop.  `fast` is set when the master is gone:
 * then the role has about half a second, not shutdown-timeout.  Two optional
 * hooks take part in CONFIG RESETSTAT (ctl.h): the worker zeroes the
 * process's scoreboard counters itself, the role its own.  One more optional
 * hook hears that the master applied a FLUSHALL's cache forget (ctl.h).
 *
 * In a cluster (`cluster` set) every child also sees the cluster map
 * (ctx->cmap, mapped by the master before it forks; NULL on a single host),
 * and a third role runs beside edges and owners: the agent, the host's one
 * etcd client and the map's one writer (server/agent/agent.h).
 *
 * Edge ids.  The id an edge gives its owner links (HELLO edge_id, the
 * writer prefix of its request ids) is its board slot + 1 on a single
 * host; in a cluster it is prefixed with the host's number, so it is unique
 * in the whole cluster (the agent registers writers/<edge_id> for each).
 * Edges take the slots after the owners, colo by colo (the master's child
 * table), and the agent the one after the edges; worker_edge_slot and
 * worker_edge_id say it once for the master, the edges and the agent.
 */
#ifndef HKV_WORKER_H
#define HKV_WORKER_H

#include <sys/types.h>

#include <event2/event.h>

#include "config/cfg.h"
#include "proto/stamp.h"
#include "server/core/board.h"

struct cmap;

struct worker_ctx {
    enum board_role role;
    int index;              /* the process's number in its group (colo or pool) */
    int slot;               /* this process's board slot */
    struct cfg *cfg;        /* the config in effect; replaced on reload, when the
                             * process drops its reference: a pointer into it
                             * kept past the current callback needs cfg_ref */
    struct board *board;
    int ctl_fd;             /* child end of the control socketpair */
    pid_t master_pid;
    struct cmap *cmap;      /* the cluster map (server/core/cmap.h); NULL on a
                             * single host */
};

/* The board slot of edge i of colo k (owners take the slots before). */
static inline int worker_edge_slot(const struct cfg *cfg, int colo, int i)
{
    return cfg->hot_owners + cfg->cold_owners + colo * cfg->edge_workers + i;
}

/* The edge id of the edge in `slot`: slot + 1, prefixed in a cluster by the
 * host's number (host_number << STAMP_WRITER_BITS; 0 on a single host). */
static inline uint32_t worker_edge_id(uint32_t host_number, int slot)
{
    return host_number << STAMP_WRITER_BITS | (((uint32_t)slot + 1) & STAMP_WRITER_MAX);
}

struct worker_hooks {
    void (*reload)(void *arg, const struct cfg *next);
    void (*stop)(void *arg, int fast);
    void *arg;
    /* CONFIG RESETSTAT, both optional (NULL: nothing to do).  `resetstat`:
     * the master says zero the counters; the worker has zeroed the
     * process's scoreboard counters (gauges stay) and tells the master once
     * the hook returns.  `resetstat_done`: a RESETSTAT this process asked
     * for (worker_send CTL_RESETSTAT) is done in every process; one call per
     * request, in the order they were sent. */
    void (*resetstat)(void *arg);
    void (*resetstat_done)(void *arg);
    /* Optional: a CTL_CACHE_FORGET this process sent is applied to every
     * colo segment; one call per message, in the order they were sent. */
    void (*cache_forgotten)(void *arg);
};

struct worker;

/* Installs signal handling, the control channel and the heartbeat on `base`.
 * NULL on failure.  The worker does not own ctx or base. */
struct worker *worker_create(struct worker_ctx *ctx, struct event_base *base,
                             const struct worker_hooks *hooks);
void worker_destroy(struct worker **w);
/* Any other control message from the master (the agent's CTL_OWNER_DIED)
 * goes to fn(arg, ...) as it came (payload valid during the call); NULL:
 * dropped, as before. */
typedef void (*worker_msg_fn)(void *arg, uint8_t type, const char *payload, size_t len);
void worker_on_message(struct worker *w, worker_msg_fn fn, void *arg);
/* Tells the master this process serves (CTL_READY) and marks the board. */
void worker_ready(struct worker *w);
/* Drops the control channel and signal handlers, so the loop can end once the
 * role has closed its own events. */
void worker_quiesce(struct worker *w);
/* Makes `next` (validated; the worker takes its reference) the config in
 * effect in this process now, through the role's reload hook, and drops the
 * process's reference to the old one (freed unless something holds one).  For CONFIG SET, which must
 * hold in the process that answered OK before the master's broadcast. */
void worker_install(struct worker *w, struct cfg *next);
/* Sends one control message to the master.  HKV_OK, HKV_EIO (no channel). */
hkv_status worker_send(struct worker *w, uint8_t type, const void *payload, size_t len);
/* True once a stop was requested. */
int worker_stopping(const struct worker *w);

/* Common process setup right after fork: parent-death signal, process title,
 * log role.  Returns -1 if the master already died (the caller exits). */
int worker_prepare(struct worker_ctx *ctx, const char *title);

/* The bytes this process holds for its heap, what each heartbeat publishes
 * in its board slot (INFO used_memory, hotkvd_process_heap_bytes).  Called
 * on the event loop every HEARTBEAT_MS: it must cost the same whatever the
 * heap holds. */
uint64_t worker_heap_bytes(void);

#endif

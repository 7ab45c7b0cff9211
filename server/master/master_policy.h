/*
 * master_policy.h - the master's supervision decisions as pure functions:
 * how long a child that died waits before it is forked again (a backoff that
 * doubles from MASTER_BACKOFF_MIN_MS to MASTER_BACKOFF_MAX_MS and starts over
 * once a process stayed up MASTER_STABLE_MS), what a child's exit leads to
 * while the master stops (edges first, then owners and the agent), which
 * children a stop phase signals, which children a new config generation is
 * sent to, and when a child counts as stuck for the systemd watchdog.
 * master.c and master_reload.c act on the answers (fork, kill, send); the
 * rules are unit tests (tests/unit/check_master_supervise.c), no fork needed.
 */
#ifndef HKV_MASTER_POLICY_H
#define HKV_MASTER_POLICY_H

#include <stdint.h>

#include "server/core/board.h"

#define MASTER_BACKOFF_MIN_MS 100
#define MASTER_BACKOFF_MAX_MS 5000
#define MASTER_STABLE_MS 10000 /* a child up this long has its backoff reset */

/* A child whose process ended after up_ms (not while stopping): the delay
 * before it is forked again, from its slot's *backoff_ms, which moves on to
 * the next step (doubled, capped).  A process that stayed up
 * MASTER_STABLE_MS or longer starts the sequence over. */
int64_t master_restart_delay(int64_t *backoff_ms, int64_t up_ms);

/* What a child's exit leads to. */
enum master_after {
    MASTER_RESTART,     /* running: fork it again after master_restart_delay */
    MASTER_WAIT,        /* stopping: others of this phase are still running */
    MASTER_STOP_OWNERS, /* stopping: the last edge is gone, owners and agent next */
    MASTER_STOPPED,     /* stopping: the last child is gone */
};
/* stopping: 0 running, 1 stopping edges, 2 stopping owners (struct
 * master's); edges, all: the children still running after this exit. */
enum master_after master_after_exit(int stopping, int edges, int all);

/* Whether stop phase `stopping` (1 edges, 2 owners) sends SIGTERM to a
 * running child of role. */
int master_stop_signals(int stopping, enum board_role role);

/* Whether a child gets a new config generation now: only over its control
 * channel (has_ctl); one not running gets the live config when it is next
 * forked, so it is skipped, whatever its role. */
int master_reload_sends(int has_ctl);

/* Whether a child makes the master skip the watchdog ping: running, ready,
 * and its heartbeat (mono ms) older than limit_ms at now.  A child starting
 * or restarting is the master doing its job, not a hang. */
int master_child_stuck(int running, int ready, int64_t heartbeat_ms, int64_t now,
                       int64_t limit_ms);

#endif

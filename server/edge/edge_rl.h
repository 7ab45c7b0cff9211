/*
 * edge_rl.h - how the edge uses the colo's rate limiter
 * (server/colo/ratelimit.h): the segment attached and configured (again on
 * reload), and the check the dispatch pipeline makes before it runs a
 * limited command.
 */
#ifndef HKV_EDGE_RL_H
#define HKV_EDGE_RL_H

#include "config/cfg.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/colo/ratelimit.h"
#include "server/edge/edge_conn.h"

/* e->rl: the colo's limiter and the limit class of each command id, which
 * the dispatch pipeline tests first (map[id] == RL_CLS_NONE: unlimited). */
struct edge_rl {
    struct rl *lim;               /* the colo's limiter; NULL: none */
    struct rl *app;               /* the colo's CL.THROTTLE table; NULL: none (fails open) */
    const uint16_t *map;          /* limit class of each command id, 0 = unlimited */
};

/* e->rl, configured from cfg's rules (the process hands them down, at
 * setup and at each reload); never fails (a bad segment, or no memory,
 * fails open: nothing is limited). */
void edge_rl_setup(struct edge *e, const struct cfg *cfg);
void edge_rl_reload(struct edge_rl *r, const struct edge *e, const struct cfg *next);
void edge_rl_teardown(struct edge_rl **r);
/* For a command whose e->rl->map entry is set: 1 when it is over its limit
 * (-RATELIMITED written: do not run it), else 0. */
int edge_rl_refuse(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv);
/* The charge itself, for a front door that answers in its own form (HTTP):
 * 1 when c (its address, and its user once named) is over d's limit (*retry_ms:
 * when the next token comes), else 0.  Writes nothing. */
int edge_rl_over(struct conn *c, const struct cmd_def *d, int64_t *retry_ms);

#endif

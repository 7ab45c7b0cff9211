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
#include "server/edge/edge_conn.h"

/* e->rl and e->rl_map (the limit class of each command id, RL_CLS_NONE =
 * unlimited); never fails (a bad segment fails open). */
void edge_rl_setup(struct edge *e);
void edge_rl_reload(struct edge *e, const struct cfg *next);
/* For a command whose e->rl_map entry is set: 1 when it is over its limit
 * (-RATELIMITED written: do not run it), else 0. */
int edge_rl_refuse(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv);
/* The charge itself, for a front door that answers in its own form (HTTP):
 * 1 when c (its address, and its user once named) is over d's limit (*retry_ms:
 * when the next token comes), else 0.  Writes nothing. */
int edge_rl_over(struct conn *c, const struct cmd_def *d, int64_t *retry_ms);

#endif

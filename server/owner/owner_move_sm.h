/*
 * owner_move_sm.h - what the two files of the source's move module share
 * (owner_move.c: the steps of a move; owner_move_ctl.c: starting one,
 * settling what a restart found, the tick, setup).  Private to them: one
 * module (scripts/check/layers.py GROUPS).
 */
#ifndef HKV_OWNER_MOVE_SM_H
#define HKV_OWNER_MOVE_SM_H

#include <stdio.h>

#include "server/owner/owner_move_int.h"

#define MOVE_TICK_MS 10
#define SETTLE_MS 250
#define BEGIN_TIMEOUT_MS 5000
#define CATCHUP_MAX_MS 30000      /* the fence waits no longer for the target to catch up */

enum mphase { M_IDLE, M_INTENT, M_RECORDING, M_BEGIN, M_COPY, M_FENCED, M_COMMITTING,
              M_IN_DOUBT, M_ABORTING };
static const char *const PHASES[] __attribute__((unused)) = {"idle", "intent", "recording", "begin", "copy", "fenced",
                                     "committing", "in doubt", "aborting"};

struct omove {
    enum mphase phase;
    struct hand_leaf leaf;
    uint32_t to;
    struct cmap_owner target;
    int64_t e0, e1;
    uint64_t order;               /* the agent's order, 0 none */
    struct hlink *h;
    struct ocopy *copy;
    uint64_t gen_wait;
    int64_t deadline_ms, fence_at_ms, started_ms, next_read_ms;
    int commit_sent;              /* a LEAF_COMMIT went out: only the map knows now */
    int64_t copied_ms;            /* every row sent (0: not yet); the fence waits for the
                                   * target to catch up (HANDOFF_PROGRESS) */
    int call_out;                 /* an agent call of this move is out */
    struct event *tick;
    int64_t settle_ms;
    int64_t stale_abort_epoch;    /* the stale MOVING leaf last aborted */
    struct omove_stats st;
};

static inline struct omove *mv(struct owner *o) { return o->move; }

static inline const char *name(const struct hand_leaf *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u-%08x", topo_pool_name((enum cfg_pool)l->pool), l->bits,
             l->bits ? l->start >> (32 - l->bits) : 0);
    return buf;
}

static inline int64_t agent_timeout(const struct owner *o)
{
    return o->opts.etcd_timeout_ms + 1000;
}

static inline struct own_mark *mark(struct owner *o)
{
    return owner_own_mark(o, mv(o)->leaf.start, mv(o)->leaf.bits);
}

/* The truth says the leaf is T's now (the commit applied). */
static inline int is_targets(const struct omove *m, const struct hand_msg *r)
{
    return r->u.reply.exists && r->u.reply.owner == m->to && r->u.reply.state == CMAP_SERVING &&
           r->u.reply.at > m->e1;
}

static inline int is_moving(const struct owner *o, const struct omove *m, const struct hand_msg *r)
{
    return r->u.reply.exists && r->u.reply.owner == owner_own_number(o) &&
           r->u.reply.state == CMAP_MOVING && r->u.reply.at == m->e1;
}

static inline int is_mine(const struct owner *o, const struct hand_msg *r)
{
    return r->u.reply.exists && r->u.reply.owner == owner_own_number(o) &&
           r->u.reply.state == CMAP_SERVING;
}

/* ---- owner_move.c ---- */
/* The move is over: back to idle, its order answered, parked requests run. */
void omove_finish(struct owner *o, int status, const char *why);
/* Committed at e2 / step 9. */
void omove_gone(struct owner *o, int64_t e2);
void omove_abort(struct owner *o, const char *why);
void omove_on_intent_reply(struct owner *o, void *arg, const struct hand_msg *r);
/* The steps' clock (deadlines, the durable HANDING_OFF, the in-doubt reads). */
void omove_tick(struct owner *o, int64_t now);

#endif

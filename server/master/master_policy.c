/*
 * master_policy.c - the master's supervision decisions (master_policy.h):
 * kept apart from master.c, which forks, reaps and signals, so each rule can
 * be checked without a process to kill.
 */
#include "server/master/master_policy.h"

int64_t master_restart_delay(int64_t *backoff_ms, int64_t up_ms)
{
    if (up_ms >= MASTER_STABLE_MS)
        *backoff_ms = MASTER_BACKOFF_MIN_MS;
    int64_t delay = *backoff_ms;
    *backoff_ms = *backoff_ms * 2 > MASTER_BACKOFF_MAX_MS ? MASTER_BACKOFF_MAX_MS : *backoff_ms * 2;
    return delay;
}

enum master_after master_after_exit(int stopping, int edges, int all)
{
    if (!stopping)
        return MASTER_RESTART;
    if (stopping == 1 && edges == 0)
        return MASTER_STOP_OWNERS;
    if (stopping == 2 && all == 0)
        return MASTER_STOPPED;
    return MASTER_WAIT;
}

int master_stop_signals(int stopping, enum board_role role)
{
    if (stopping == 1)
        return role == BOARD_EDGE;
    if (stopping == 2)
        return role == BOARD_OWNER || role == BOARD_AGENT;
    return 0;
}

int master_reload_sends(int has_ctl)
{
    return has_ctl != 0;
}

int master_child_stuck(int running, int ready, int64_t heartbeat_ms, int64_t now,
                       int64_t limit_ms)
{
    return running && ready && now - heartbeat_ms > limit_ms;
}

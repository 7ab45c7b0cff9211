/*
 * owner_move_hook.c - a test's way to stop an owner at a named step of a
 * move (the fault tests kill -9 the source or the target at each step, and
 * stall them, or cut their hand-off link): HOTKVD_MOVE_HOOK=
 * <pool>/<index>:<step>:kill, ...:pause=<ms> or ...:cut, read once at
 * start.  Steps: intent, recorded, ready,
 * copied, fenced, acked, commit, committed (the source's, owner_move.c);
 * t_ready, t_fence, t_acked (the target's, owner_recv.c).  A hook fires once per
 * data directory (a marker file, so the restarted owner goes on); without
 * the variable nothing here does anything.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/core/log.h"
#include "server/owner/owner_move_int.h"

static char hook_step[32];
static int hook_kill, hook_cut;
static int hook_pause_ms;

void owner_move_hook_setup(struct owner *o)
{
    const char *v = getenv("HOTKVD_MOVE_HOOK");
    char who[32], step[32], act[32];
    hook_step[0] = '\0';
    if (v == NULL || sscanf(v, "%31[^:]:%31[^:]:%31s", who, step, act) != 3)
        return;
    char me[32];
    snprintf(me, sizeof(me), "%s/%d", topo_pool_name(o->pool), o->index);
    if (strcmp(who, me) != 0)
        return;
    hook_kill = strcmp(act, "kill") == 0;
    hook_cut = strcmp(act, "cut") == 0;
    if (!hook_kill && !hook_cut && sscanf(act, "pause=%d", &hook_pause_ms) != 1)
        return;
    snprintf(hook_step, sizeof(hook_step), "%s", step);
}

int owner_move_hook(struct owner *o, const char *step)
{
    if (hook_step[0] == '\0' || strcmp(step, hook_step) != 0)
        return 0;
    char path[TOPO_PATH_MAX];
    snprintf(path, sizeof(path), "%s/move-hook-%s-%d-%s.fired", o->ctx->cfg->dir,
             topo_pool_name(o->pool), o->index, step);
    if (access(path, F_OK) == 0)
        return 0;
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
    hook_step[0] = '\0';
    log_warning("HOTKVD_MOVE_HOOK: %s at step %s",
                hook_kill ? "killed" : hook_cut ? "link cut" : "paused", step);
    if (hook_kill)
        raise(SIGKILL);
    if (hook_cut)
        return 1;
    usleep((useconds_t)hook_pause_ms * 1000);
    return 0;
}

/*
 * owner_move_hook.c - a test's way to stop an owner at a named step of a
 * move (the fault tests kill -9 the source or the target at each step, and
 * stall them, or cut their hand-off link): HOTKVD_MOVE_HOOK=
 * <pool>/<index>:<step>:kill, ...:pause=<ms> or ...:cut, several
 * separated by commas, read once at start.  Steps: intent, recorded, ready,
 * copied, fenced, acked, commit, committed (the source's, owner_move.c);
 * t_ready, t_fence, t_acked (the target's, owner_recv.c); repl_write (a
 * primary, owner_repl_wait.c: its first streamed result of a write goes to
 * the socket, and the hook fires before the rest of the request's frames),
 * repl_record (the same after its completion record).  A hook fires once per
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

/* Up to HOOK_MAX hooks for this owner, comma-separated in the variable (a
 * test that needs the source paused at one step and the target at another). */
#define HOOK_MAX 4
static struct hook {
    char step[32];
    int kill, cut, pause_ms;
} hooks[HOOK_MAX];
static int nhooks; /* 0: every check below is one load */

void owner_move_hook_setup(struct owner *o)
{
    const char *v = getenv("HOTKVD_MOVE_HOOK");
    memset(hooks, 0, sizeof(hooks));
    nhooks = 0;
    if (v == NULL)
        return;
    char me[32];
    snprintf(me, sizeof(me), "%s/%d", topo_pool_name(o->pool), o->index);
    int n = 0;
    for (const char *p = v; *p != '\0' && n < HOOK_MAX;) {
        char who[32], step[32], act[32];
        size_t len = strcspn(p, ",");
        char one[128];
        snprintf(one, sizeof(one), "%.*s", (int)(len < sizeof(one) ? len : sizeof(one) - 1), p);
        p += len + (p[len] == ',');
        if (sscanf(one, "%31[^:]:%31[^:]:%31s", who, step, act) != 3 || strcmp(who, me) != 0)
            continue;
        struct hook *h = &hooks[n];
        h->kill = strcmp(act, "kill") == 0;
        h->cut = strcmp(act, "cut") == 0;
        if (!h->kill && !h->cut && sscanf(act, "pause=%d", &h->pause_ms) != 1)
            continue;
        snprintf(h->step, sizeof(h->step), "%s", step);
        n++;
    }
    nhooks = n;
}

int owner_move_hook_armed(const char *step)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i].step[0] != '\0' && strcmp(step, hooks[i].step) == 0)
            return 1;
    return 0;
}

int owner_move_hook(struct owner *o, const char *step)
{
    struct hook *h = NULL;
    for (int i = 0; i < HOOK_MAX && h == NULL; i++)
        if (hooks[i].step[0] != '\0' && strcmp(step, hooks[i].step) == 0)
            h = &hooks[i];
    if (h == NULL)
        return 0;
    char path[TOPO_PATH_MAX];
    snprintf(path, sizeof(path), "%s/move-hook-%s-%d-%s.fired", o->opts.dir,
             topo_pool_name(o->pool), o->index, step);
    if (access(path, F_OK) == 0)
        return 0;
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
    h->step[0] = '\0';
    log_warning("HOTKVD_MOVE_HOOK: %s at step %s",
                h->kill ? "killed" : h->cut ? "link cut" : "paused", step);
    if (h->kill)
        raise(SIGKILL);
    if (h->cut)
        return 1;
    usleep((useconds_t)h->pause_ms * 1000);
    return 0;
}

/*
 * agent_save.c - the agent's disk writer thread; see agent_save.h.
 *
 * Two slots per kind of file: `pending` (the loop copies into it under the
 * skeleton's lock, storage/bgwriter.h) and the thread's own buffer, swapped
 * under the lock before the thread writes without it.  The thread is the
 * only one that touches the disk after start, and it touches nothing of
 * libevent.
 */
#include "server/agent/agent_save.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/bgwriter.h"
#include "storage/durable.h"

struct agent_saver {
    struct bgw *thread;
    char *map_path, *state_path;
    struct cmap_table *pending, *mine;
    int have_map, have_state;
    struct agent_state state;
    uint64_t failures;
    int last;
    /* the thread's round: what it took, how it went */
    int do_map, do_state;
    struct agent_state st;
    int rc_map, rc_state;
};

/* The used part of t: a table is big and mostly empty. */
static void copy_table(struct cmap_table *dst, const struct cmap_table *src)
{
    memcpy(dst, src, offsetof(struct cmap_table, leaves));
    for (int p = 0; p < CMAP_NPOOLS; p++)
        memcpy(dst->leaves[p], src->leaves[p], src->nleaves[p] * sizeof(struct cmap_leaf));
    memcpy(dst->owners, src->owners, sizeof(dst->owners));
}

static int write_state(const char *path, const struct agent_state *st)
{
    char text[512];
    int n = snprintf(text, sizeof(text), "hotkvd-agent-state 1\nhost %s\nhost_number %u\n"
                     "lease %" PRId64 "\n", st->host, st->host_number, st->lease_id);
    if (n < 0 || n >= (int)sizeof(text))
        return HKV_EINVAL;
    return durable_replace_buf(path, text, (size_t)n, DURABLE_TMP_PID | DURABLE_DIR_LAX);
}

static int saver_take(void *arg)
{
    struct agent_saver *s = arg;
    if (!s->have_map && !s->have_state)
        return 0;
    s->do_map = s->have_map;
    s->do_state = s->have_state;
    s->st = s->state;
    if (s->do_map) {
        struct cmap_table *t = s->pending;
        s->pending = s->mine;
        s->mine = t;
    }
    s->have_map = s->have_state = 0;
    return 1;
}

static void saver_work(void *arg)
{
    struct agent_saver *s = arg;
    s->rc_map = s->do_map ? cmap_save(s->mine, s->map_path) : HKV_OK;
    s->rc_state = s->do_state ? write_state(s->state_path, &s->st) : HKV_OK;
}

static void saver_done(void *arg)
{
    struct agent_saver *s = arg;
    if (s->rc_map != HKV_OK || s->rc_state != HKV_OK) {
        s->failures++;
        s->last = s->rc_map != HKV_OK ? s->rc_map : s->rc_state;
    }
}

static void saver_free(struct agent_saver *s)
{
    free(s->map_path);
    free(s->state_path);
    free(s->pending);
    free(s->mine);
    free(s);
}

struct agent_saver *agent_saver_start(const char *map_path, const char *state_path)
{
    static const struct bgw_ops ops = {saver_take, saver_work, saver_done};
    struct agent_saver *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->map_path = strdup(map_path);
    s->state_path = strdup(state_path);
    s->pending = malloc(sizeof(*s->pending));
    s->mine = malloc(sizeof(*s->mine));
    if (s->map_path == NULL || s->state_path == NULL || s->pending == NULL || s->mine == NULL ||
        bgw_start(&s->thread, &ops, s, -1) != HKV_OK) {
        saver_free(s);
        return NULL;
    }
    return s;
}

void agent_saver_stop(struct agent_saver **sp)
{
    struct agent_saver *s = *sp;
    if (s == NULL)
        return;
    bgw_stop(&s->thread);
    saver_free(s);
    *sp = NULL;
}

void agent_saver_post_map(struct agent_saver *s, const struct cmap_table *t)
{
    bgw_lock(s->thread);
    copy_table(s->pending, t);
    s->have_map = 1;
    bgw_signal(s->thread);
    bgw_unlock(s->thread);
}

void agent_saver_post_state(struct agent_saver *s, const struct agent_state *st)
{
    bgw_lock(s->thread);
    s->state = *st;
    s->have_state = 1;
    bgw_signal(s->thread);
    bgw_unlock(s->thread);
}

uint64_t agent_saver_failures(struct agent_saver *s, int *last)
{
    bgw_lock(s->thread);
    uint64_t n = s->failures;
    s->failures = 0;
    *last = s->last;
    bgw_unlock(s->thread);
    return n;
}

int agent_state_load(const char *path, struct agent_state *st)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return errno == ENOENT ? HKV_ENOENT : HKV_EIO;
    char line[512];
    int version = 0, have = 0;
    memset(st, 0, sizeof(*st));
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        unsigned h;
        long long id;
        if (sscanf(line, "hotkvd-agent-state %d", &version) == 1)
            continue;
        if (strncmp(line, "host ", 5) == 0 && strlen(line + 5) < sizeof(st->host)) {
            memcpy(st->host, line + 5, strlen(line + 5) + 1);
            have |= 1;
        } else if (sscanf(line, "host_number %u", &h) == 1 && h <= 4095) {
            st->host_number = h;
            have |= 2;
        } else if (sscanf(line, "lease %lld", &id) == 1) {
            st->lease_id = id;
            have |= 4;
        }
    }
    fclose(f);
    return version == 1 && have == 7 ? HKV_OK : HKV_EINVAL;
}

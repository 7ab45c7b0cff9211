/*
 * agent_save.c - the agent's disk writer thread; see agent_save.h.
 *
 * Two slots per kind of file: `pending` (the loop copies into it under the
 * mutex) and the thread's own buffer, swapped under the mutex before the
 * thread writes with the mutex released.  The thread is the only one that
 * touches the disk after start, and it touches nothing of libevent.
 */
#include "server/agent/agent_save.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"

struct agent_saver {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *map_path, *state_path;
    struct cmap_table *pending, *mine;
    int have_map, have_state;
    struct agent_state state;
    uint64_t failures;
    int last;
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
    char tmp[4200], text[512], dir[4200];
    int n = snprintf(text, sizeof(text), "hotkvd-agent-state 1\nhost %s\nhost_number %u\n"
                     "lease %" PRId64 "\n", st->host, st->host_number, st->lease_id);
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp) ||
        n < 0 || n >= (int)sizeof(text))
        return HKV_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return HKV_EIO;
    int ok = write(fd, text, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return HKV_EIO;
    }
    snprintf(dir, sizeof(dir), "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return HKV_OK;
}

static void *saver_main(void *arg)
{
    struct agent_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && !s->have_map && !s->have_state)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->have_map && !s->have_state)
            break; /* stopping, nothing left */
        int do_map = s->have_map, do_state = s->have_state;
        struct agent_state st = s->state;
        if (do_map) {
            struct cmap_table *t = s->pending;
            s->pending = s->mine;
            s->mine = t;
        }
        s->have_map = s->have_state = 0;
        pthread_mutex_unlock(&s->mu);
        int rc1 = do_map ? cmap_save(s->mine, s->map_path) : HKV_OK;
        int rc2 = do_state ? write_state(s->state_path, &st) : HKV_OK;
        pthread_mutex_lock(&s->mu);
        if (rc1 != HKV_OK || rc2 != HKV_OK) {
            s->failures++;
            s->last = rc1 != HKV_OK ? rc1 : rc2;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

struct agent_saver *agent_saver_start(const char *map_path, const char *state_path)
{
    struct agent_saver *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->map_path = strdup(map_path);
    s->state_path = strdup(state_path);
    s->pending = malloc(sizeof(*s->pending));
    s->mine = malloc(sizeof(*s->mine));
    if (s->map_path == NULL || s->state_path == NULL || s->pending == NULL || s->mine == NULL)
        goto fail;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    /* signals are the loop's (libevent's evsignal): the thread takes none */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, saver_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        goto fail;
    }
    return s;
fail:
    free(s->map_path);
    free(s->state_path);
    free(s->pending);
    free(s->mine);
    free(s);
    return NULL;
}

void agent_saver_stop(struct agent_saver **sp)
{
    struct agent_saver *s = *sp;
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->map_path);
    free(s->state_path);
    free(s->pending);
    free(s->mine);
    free(s);
    *sp = NULL;
}

void agent_saver_post_map(struct agent_saver *s, const struct cmap_table *t)
{
    pthread_mutex_lock(&s->mu);
    copy_table(s->pending, t);
    s->have_map = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void agent_saver_post_state(struct agent_saver *s, const struct agent_state *st)
{
    pthread_mutex_lock(&s->mu);
    s->state = *st;
    s->have_state = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

uint64_t agent_saver_failures(struct agent_saver *s, int *last)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->failures;
    s->failures = 0;
    *last = s->last;
    pthread_mutex_unlock(&s->mu);
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

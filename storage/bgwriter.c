/*
 * bgwriter.c - the writer-thread skeleton; see bgwriter.h.
 *
 * One mutex and one condvar.  The thread holds the mutex except while it
 * works, so take and done see the owner's state as the loop left it, and the
 * loop blocks only for the time of a take or a done (copies and pointer
 * swaps), never for I/O.
 */
#include "storage/bgwriter.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "proto/hkv.h"

struct bgw {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int wake_fd;
    struct bgw_ops ops;
    void *arg;
};

void bgw_wake(int fd)
{
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof(one)); /* EAGAIN: already readable */
    (void)n;
}

int bgw_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void *bgw_main(void *arg)
{
    struct bgw *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int took;
        while (!(took = w->ops.take(w->arg)) && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!took)
            break; /* stopping, nothing left */
        pthread_mutex_unlock(&w->mu);
        w->ops.work(w->arg);
        pthread_mutex_lock(&w->mu);
        if (w->ops.done != NULL)
            w->ops.done(w->arg);
        if (w->wake_fd >= 0)
            bgw_wake(w->wake_fd);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int bgw_start(struct bgw **out, const struct bgw_ops *ops, void *arg, int wake_fd)
{
    *out = NULL;
    struct bgw *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return HKV_ENOMEM;
    w->ops = *ops;
    w->arg = arg;
    w->wake_fd = wake_fd;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return HKV_ENOMEM;
    }
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return HKV_ENOMEM;
    }
    if (bgw_spawn(&w->thread, bgw_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return HKV_ENOMEM;
    }
    *out = w;
    return HKV_OK;
}

void bgw_stop(struct bgw **wp)
{
    struct bgw *w = *wp;
    if (w == NULL)
        return;
    *wp = NULL;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void bgw_lock(struct bgw *w)
{
    pthread_mutex_lock(&w->mu);
}

void bgw_unlock(struct bgw *w)
{
    pthread_mutex_unlock(&w->mu);
}

void bgw_signal(struct bgw *w)
{
    pthread_cond_signal(&w->cv);
}

/*
 * bgwriter.h - the skeleton of a thread that does an event loop's blocking
 * writes: the loop posts work under a lock and never waits for the disk; the
 * thread takes everything posted so far in one go (so a burst costs one
 * fsync: group commit), works without the lock, publishes the outcome under
 * the lock again and pokes the loop's eventfd.  Stopping drains: everything
 * posted before bgw_stop is worked on before the thread is joined.
 *
 * The owner of the work keeps its own queue or slots (a list of records, a
 * "latest map" slot); the skeleton knows only the three steps below, the
 * lock that guards them, and the wake-up fd.  Threads start with every signal
 * blocked: signals are the loop's (libevent's evsignal), never a writer's.
 *
 * Users: the agent's saver (server/agent/agent_save.c) and the local store's
 * log (storage/lstore_log.c); the persister, whose writer and reader share one
 * lock and wait with deadlines, starts its threads with bgw_spawn and wakes
 * its loop with bgw_wake.
 */
#ifndef HKV_BGWRITER_H
#define HKV_BGWRITER_H

#include <pthread.h>

struct bgw;

struct bgw_ops {
    /* Under the lock: moves what was posted into the thread's own hands;
     * 0 when nothing was posted (the thread waits, or ends if stopping). */
    int (*take)(void *arg);
    /* Without the lock: the blocking work on what take moved. */
    void (*work)(void *arg);
    /* Under the lock: the outcome published (NULL: nothing to publish). */
    void (*done)(void *arg);
};

/* Starts the thread; wake_fd (an eventfd, or -1 for none) is written after
 * every round.  HKV_OK, HKV_ENOMEM (no memory or no thread). */
int bgw_start(struct bgw **out, const struct bgw_ops *ops, void *arg, int wake_fd);
/* Drains what was posted, joins the thread, frees; *w NULL after. */
void bgw_stop(struct bgw **w);

/* The loop's side of posting: lock, change the owner's queue or slots,
 * bgw_signal, unlock.  bgw_lock also guards what done publishes. */
void bgw_lock(struct bgw *w);
void bgw_unlock(struct bgw *w);
void bgw_signal(struct bgw *w);

/* pthread_create with every signal blocked in the new thread: 0 or errno. */
int bgw_spawn(pthread_t *t, void *(*fn)(void *), void *arg);
/* Adds 1 to the eventfd fd (non-blocking: a full counter is already readable). */
void bgw_wake(int fd);

#endif

/*
 * shm.h - the two primitives every shared segment of the daemon is built
 * from (the scoreboard, each colo's cache, each colo's rate limiter): a
 * zeroed anonymous shared mapping the master makes before it forks, and a
 * process-shared robust mutex to live inside one.
 *
 * The mapping is a memfd mapped MAP_SHARED and never named: children inherit
 * it across fork, nothing outside the process tree can open it, and systemd's
 * RemoveIPC cannot delete it under us.
 */
#ifndef HKV_SHM_H
#define HKV_SHM_H

#include <pthread.h>
#include <stddef.h>

/* A new zero-filled shared mapping of `bytes` (name shows in /proc/PID/maps).
 * NULL on failure, errno set. */
void *shm_map(const char *name, size_t bytes);
void shm_unmap(void *p, size_t bytes);

/* Initialises a PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST mutex: a holder
 * that dies hands the next locker EOWNERDEAD instead of a deadlock.  0 or -1. */
int shm_mutex_init(pthread_mutex_t *mu);

#endif

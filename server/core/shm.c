/* shm.c - shared mappings and robust mutexes; see shm.h. */
#include "shm.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

void *shm_map(const char *name, size_t bytes)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the memory alive */
    errno = e;
    return p == MAP_FAILED ? NULL : p;
}

void shm_unmap(void *p, size_t bytes)
{
    if (p != NULL)
        munmap(p, bytes);
}

int shm_mutex_init(pthread_mutex_t *mu)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0)
        rc = pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc == 0 ? 0 : -1;
}

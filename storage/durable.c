/*
 * durable.c - crash-safe file replacement and appends; see durable.h.
 *
 * The order is the whole point: data fsynced before the rename (else a crash
 * may leave the new name on an empty or partial file), rename, then the
 * directory fsynced (else the rename may not be on disk).  Paths are copied
 * into fixed buffers: a path that does not fit is refused, never cut.
 */
#include "storage/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"

#define PATH_ROOM 4200

int durable_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return HKV_EIO;
        c += w;
        n -= (size_t)w;
    }
    return HKV_OK;
}

int durable_sync(int fd)
{
    return fdatasync(fd) == 0 ? HKV_OK : HKV_EIO;
}

int durable_sync_dir(const char *path)
{
    char copy[PATH_ROOM];
    int n = snprintf(copy, sizeof(copy), "%s", path);
    if (n < 0 || (size_t)n >= sizeof(copy))
        return HKV_EINVAL;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return HKV_EIO;
    int rc = fsync(fd) == 0 ? HKV_OK : HKV_EIO;
    close(fd);
    return rc;
}

int durable_replace(const char *path, const struct iovec *parts, int nparts, unsigned flags)
{
    char tmp[PATH_ROOM];
    int n = flags & DURABLE_TMP_PID ? snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid())
                                    : snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return HKV_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return HKV_EIO;
    int rc = HKV_OK;
    for (int i = 0; i < nparts && rc == HKV_OK; i++)
        rc = durable_write_all(fd, parts[i].iov_base, parts[i].iov_len);
    if (rc == HKV_OK && fsync(fd) != 0)
        rc = HKV_EIO;
    if (close(fd) != 0)
        rc = HKV_EIO;
    if (rc == HKV_OK && rename(tmp, path) != 0)
        rc = HKV_EIO;
    if (rc != HKV_OK) {
        unlink(tmp);
        return rc;
    }
    rc = durable_sync_dir(path);
    return rc == HKV_OK || (flags & DURABLE_DIR_LAX) ? HKV_OK : rc;
}

int durable_replace_buf(const char *path, const void *p, size_t n, unsigned flags)
{
    struct iovec part = {.iov_base = (void *)p, .iov_len = n};
    return durable_replace(path, &part, 1, flags);
}

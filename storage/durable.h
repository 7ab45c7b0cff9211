/*
 * durable.h - writing a file so that a crash leaves either the old contents
 * or the new, never a mix: the one way hotkvd puts a small file on disk (the
 * cluster map, the agent's state, the local store's snapshot) and appends to
 * a log it must not lose (the local store's records).
 *
 * Replace: the bytes go to a temporary file beside the target (same
 * directory, so the rename is atomic), which is fsynced, renamed over the
 * target, and then the directory is fsynced so the rename itself survives a
 * power cut.  A failure before the rename removes the temporary and leaves
 * the old file as it was.
 *
 * Append: a write loop that survives EINTR and short writes, and a data sync
 * after a group of them (group commit is the caller's: one sync per batch).
 *
 * Blocking calls, for writer threads and tools, never for an event loop.
 * Results are hkv_status values: HKV_OK, HKV_EINVAL (a path too long for the
 * temporary's name), HKV_EIO (errno says why).
 */
#ifndef HKV_DURABLE_H
#define HKV_DURABLE_H

#include <stddef.h>
#include <sys/uio.h>

enum durable_flags {
    /* The temporary is "<path>.tmp.<pid>", not "<path>.tmp": for a file
     * that more than one process may write (each writes its own temporary,
     * the last rename wins). */
    DURABLE_TMP_PID = 1,
    /* A failed fsync of the directory after the rename is not an error (the
     * new contents are in place and fsynced; only the rename may be lost to
     * a power cut, which leaves the old file: still a whole file). */
    DURABLE_DIR_LAX = 2,
};

/* path's contents become the nparts pieces of parts, concatenated. */
int durable_replace(const char *path, const struct iovec *parts, int nparts, unsigned flags);
/* durable_replace of one piece. */
int durable_replace_buf(const char *path, const void *p, size_t n, unsigned flags);

/* Every byte of p written to fd (at its offset, or its end with O_APPEND). */
int durable_write_all(int fd, const void *p, size_t n);
/* fdatasync(fd): what was written to fd is on disk. */
int durable_sync(int fd);
/* fsync of the directory that holds path (after a rename or a create in it). */
int durable_sync_dir(const char *path);

#endif

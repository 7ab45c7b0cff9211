/*
 * stallfs.c - an LD_PRELOAD shim that makes a disk "stall" on demand, for the
 * fault tests (tests/fault/check_disk.c).
 *
 * While the file named by env HOTKVD_STALL_FLAG exists, every call below on a
 * REGULAR file blocks (polling the flag every 10 ms) before it is passed on to
 * libc; when the flag is removed the call proceeds normally.  This is what a
 * disk that stops answering for a while looks like to a process: its writes
 * and syncs hang, nothing fails.
 *
 *   fsync, fdatasync      the commit point: SQLite's unix VFS syncs the WAL
 *                         and database with fdatasync on Linux; the persister
 *                         itself fsyncs a database file it creates
 *                         (persist_db.c fsync_path)
 *   pwrite, pwrite64      SQLite's unix VFS writes pages, WAL frames and the
 *                         -shm file with pwrite64 (Debian's libsqlite3 imports
 *                         pwrite64, fdatasync and write, nothing else that
 *                         writes: `nm -D libsqlite3.so.0`).
 *
 * SQLite keeps these in its own syscall table (os_unix.c aSyscall[]), which is
 * initialised with the ADDRESSES of the libc functions: in a shared
 * libsqlite3 those are resolved by the dynamic linker through the global
 * scope, where a preloaded library comes first, so the table holds these
 * wrappers.  (Verified: a SQLite commit with synchronous=FULL in a program run
 * under this shim blocks while the flag exists and completes once it is gone.)
 *
 * Not wrapped: write(2).  SQLite only uses it when built without pwrite, and
 * the daemon's log is written with write(2) from the event loop: stalling it
 * would make the test measure the log, not the persister.  Sockets, pipes and
 * ttys are never blocked anyway (fstat: only S_ISREG files stall; a directory
 * fsync, done once when a file is created, passes through too).
 *
 * A second flag, the same path with ".eio" appended, makes the disk fail
 * instead: while it exists, fsync and fdatasync on a regular file return -1
 * with errno EIO without syncing (what a dying disk or a lost write-back
 * looks like to SQLite).  An empty ".eio" file fails every file; one that
 * holds text fails only the files whose path (/proc/self/fd) contains that
 * text, so one file of a process can fail while the rest of the disk works
 * (check_local_store_eio: the leaf map store, not the owners' databases).
 *
 * With HOTKVD_STALL_FLAG unset or empty each wrapper is one load and one
 * branch in front of the real call.  Under AddressSanitizer the ASan runtime
 * must be first in LD_PRELOAD (libasan.so:stallfs.so): its interceptors then
 * call into these wrappers through RTLD_NEXT, which call libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* A copy of the flag's path: the daemon rewrites its argv/environ area for
 * its process titles, so a pointer into the environment would not last. */
static char flag_buf[4096];
static const char *flag_path;   /* NULL: pass-through */
static char eio_buf[4100];      /* flag_buf + ".eio" */

__attribute__((constructor)) static void stallfs_init(void)
{
    const char *f = getenv("HOTKVD_STALL_FLAG");
    if (f != NULL && f[0] != '\0' && strlen(f) < sizeof(flag_buf)) {
        memcpy(flag_buf, f, strlen(f) + 1);
        memcpy(eio_buf, f, strlen(f));
        memcpy(eio_buf + strlen(f), ".eio", 5);
        flag_path = flag_buf;
    }
}

/* The next definition of `name` after this library (libc, normally). */
static void *next_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL)
        abort(); /* the test's premise is broken: fail loudly */
    return p;
}

/* Blocks while the flag file exists, if fd is a regular file. */
static void maybe_stall(int fd)
{
    const char *flag = flag_path;
    if (flag == NULL)
        return;
    int saved = errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        struct stat fs;
        while (stat(flag, &fs) == 0) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    errno = saved;
}

/* Declares real_<name>, the libc function, resolved on first use (a racing
 * first call resolves it twice to the same address: harmless). */
#define REAL(type, name, args)                                                  \
    static type(*real_##name) args;                                             \
    type(*fn_##name) args = __atomic_load_n(&real_##name, __ATOMIC_RELAXED);    \
    if (__builtin_expect(fn_##name == NULL, 0)) {                               \
        fn_##name = (type(*) args)next_sym(#name);                              \
        __atomic_store_n(&real_##name, fn_##name, __ATOMIC_RELAXED);            \
    }

/* 1 if fd's path contains the text the ".eio" flag holds (read through
 * open/read/close, none of which is wrapped), or the flag is empty. */
static int path_matches(int fd)
{
    char want[256], link[64], path[4096];
    int f = open(eio_buf, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return 0;
    ssize_t n = read(f, want, sizeof(want) - 1);
    close(f);
    if (n <= 0)
        return 1;
    want[n] = '\0';
    want[strcspn(want, "\n")] = '\0';
    if (want[0] == '\0')
        return 1;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t l = readlink(link, path, sizeof(path) - 1);
    if (l < 0)
        return 0;
    path[l] = '\0';
    return strstr(path, want) != NULL;
}

/* 1 if syncs of fd must fail: the ".eio" flag exists, fd is a file and its
 * path is the one the flag names (if it names one). */
static int must_fail(int fd)
{
    if (flag_path == NULL)
        return 0;
    int saved = errno;
    struct stat st, fs;
    int fail = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && stat(eio_buf, &fs) == 0 &&
               path_matches(fd);
    errno = saved;
    return fail;
}

int fsync(int fd)
{
    REAL(int, fsync, (int));
    maybe_stall(fd);
    if (must_fail(fd)) {
        errno = EIO;
        return -1;
    }
    return fn_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(int, fdatasync, (int));
    maybe_stall(fd);
    if (must_fail(fd)) {
        errno = EIO;
        return -1;
    }
    return fn_fdatasync(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(ssize_t, pwrite, (int, const void *, size_t, off_t));
    maybe_stall(fd);
    return fn_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    REAL(ssize_t, pwrite64, (int, const void *, size_t, off64_t));
    maybe_stall(fd);
    return fn_pwrite64(fd, buf, n, off);
}

/*
 * clockshift.c - an LD_PRELOAD shim that shifts the wall clock of chosen
 * processes, for the history runner's clock_shift fault (tests/history/run.py).
 *
 * The control file named by env HKV_CLOCKSHIFT_FILE holds lines "PID OFFSET_MS"
 * (OFFSET_MS may be negative; anything else on a line is ignored).  A process
 * whose pid is listed sees CLOCK_REALTIME moved by its offset; every other
 * process, and every process while the file is absent, sees the real clock.
 * The file is re-read at most every 50 ms (by whichever thread asks for the
 * time first after that), so a shift starts and ends within 50 ms of the
 * runner writing or removing the file.  The whole daemon runs under the shim
 * (it forks its children without exec, so they all share the one preload);
 * the pid is what picks the one edge that is shifted.
 *
 * Which clocks: only the wall clock, that is clock_gettime(CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE), gettimeofday and time.  hotkvd uses the wall clock
 * for what a host's clock decides in a real deployment: the owners' write
 * versions (owner_clock.c), absolute expiries (cache.c, edge_write.c), TIME,
 * INFO's uptime and the log's timestamps.  CLOCK_MONOTONIC is left alone on
 * purpose: it is system-wide, the colo segment compares monotonic times
 * written by different processes (cache.h: entry ages, refresh-lock
 * expiries, rate-limit buckets), and libevent's timers run on it.  Two hosts
 * whose wall clocks disagree by 10 s still each have a sane monotonic clock,
 * and edges of one colo share a host, so shifting it would model no real
 * fault, only break timers.
 *
 * Thread safety: the offset and the next re-read time are atomics; one thread
 * at a time re-reads (a try-lock), the others use the offset they see.  The
 * file is read with open/read/close into a stack buffer: no malloc, no stdio.
 * The pid is asked of the kernel at each re-read, not cached, so a forked
 * child never uses its parent's identity.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define RECHECK_NS (50 * 1000000LL)

/* A copy of the path: the daemon rewrites its environment area for its
 * process titles (proctitle.c), so a pointer into environ would not last. */
static char file_buf[4096];
static int enabled;

static int64_t offset_ns;       /* atomic: this process's shift */
static int64_t next_check_ns;   /* atomic: real CLOCK_MONOTONIC of the next re-read */
static int reading;             /* atomic try-lock over the re-read */

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;

static void *next_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL)
        abort(); /* the fault's premise is broken: fail loudly */
    return p;
}

static clock_gettime_fn get_real_clock_gettime(void)
{
    clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_RELAXED);
    if (__builtin_expect(f == NULL, 0)) {
        f = (clock_gettime_fn)next_sym("clock_gettime");
        __atomic_store_n(&real_clock_gettime, f, __ATOMIC_RELAXED);
    }
    return f;
}

static gettimeofday_fn get_real_gettimeofday(void)
{
    gettimeofday_fn f = __atomic_load_n(&real_gettimeofday, __ATOMIC_RELAXED);
    if (__builtin_expect(f == NULL, 0)) {
        f = (gettimeofday_fn)next_sym("gettimeofday");
        __atomic_store_n(&real_gettimeofday, f, __ATOMIC_RELAXED);
    }
    return f;
}

__attribute__((constructor)) static void clockshift_init(void)
{
    const char *f = getenv("HKV_CLOCKSHIFT_FILE");
    if (f != NULL && f[0] != '\0' && strlen(f) < sizeof(file_buf)) {
        memcpy(file_buf, f, strlen(f) + 1);
        enabled = 1;
    }
}

/* Parses a signed decimal at *p, moving *p past it; 0 if there is none. */
static int parse_ll(const char **p, const char *end, long long *out)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    int neg = 0;
    if (s < end && (*s == '-' || *s == '+'))
        neg = *s++ == '-';
    if (s >= end || *s < '0' || *s > '9')
        return 0;
    long long v = 0;
    while (s < end && *s >= '0' && *s <= '9' && v < 1000000000000LL)
        v = v * 10 + (*s++ - '0');
    *out = neg ? -v : v;
    *p = s;
    return 1;
}

/* The offset the control file gives this process, in ns (0 if not listed). */
static int64_t read_offset(void)
{
    char buf[8192];
    int fd = open(file_buf, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof(buf))
            break;
    }
    close(fd);
    long long me = (long long)getpid();
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        long long pid, ms;
        const char *q = p;
        if (parse_ll(&q, eol, &pid) && parse_ll(&q, eol, &ms) && pid == me)
            return (int64_t)ms * 1000000LL;
        p = eol + 1;
    }
    return 0;
}

/* This process's current offset in ns, re-reading the file when it is due. */
static int64_t current_offset(void)
{
    if (!enabled)
        return 0;
    struct timespec m;
    get_real_clock_gettime()(CLOCK_MONOTONIC, &m);
    int64_t now = (int64_t)m.tv_sec * 1000000000LL + m.tv_nsec;
    if (now >= __atomic_load_n(&next_check_ns, __ATOMIC_ACQUIRE) &&
        !__atomic_exchange_n(&reading, 1, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&offset_ns, read_offset(), __ATOMIC_RELEASE);
        __atomic_store_n(&next_check_ns, now + RECHECK_NS, __ATOMIC_RELEASE);
        __atomic_store_n(&reading, 0, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&offset_ns, __ATOMIC_ACQUIRE);
}

static void shift_ts(struct timespec *ts, int64_t off)
{
    int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + off;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int rc = get_real_clock_gettime()(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        int64_t off = current_offset();
        if (off != 0)
            shift_ts(ts, off);
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    int rc = get_real_gettimeofday()(tv, tz);
    if (rc == 0) {
        int64_t off = current_offset();
        if (off != 0) {
            struct timespec ts = {tv->tv_sec, (long)tv->tv_usec * 1000};
            shift_ts(&ts, off);
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
    }
    return rc;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

/*
 * log.c - line-oriented logging shared by every role.  A line is formatted
 * into one buffer and written with a single write(2), so lines from several
 * processes appending to one file never interleave mid-line.
 */
#include "log.h"

#include <event2/event.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum cfg_loglevel log_level = CFG_LOG_NOTICE;
static int log_fd = STDERR_FILENO;
static char log_path[4096];
static char log_role[64] = "hotkvd";

void log_set_role(const char *role)
{
    snprintf(log_role, sizeof(log_role), "%s", role);
}

static int open_log(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

hkv_status log_setup(enum cfg_loglevel level, const char *path)
{
    log_level = level;
    if (path == NULL || path[0] == '\0') {
        if (log_fd != STDERR_FILENO)
            close(log_fd);
        log_fd = STDERR_FILENO;
        log_path[0] = '\0';
        return HKV_OK;
    }
    if (strcmp(path, log_path) == 0 && log_fd != STDERR_FILENO)
        return HKV_OK;
    int fd = open_log(path);
    if (fd < 0)
        return HKV_EIO;
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = fd;
    snprintf(log_path, sizeof(log_path), "%s", path);
    return HKV_OK;
}

void log_reopen(void)
{
    if (log_path[0] == '\0')
        return;
    int fd = open_log(log_path);
    if (fd < 0)
        return;
    close(log_fd);
    log_fd = fd;
}

int log_enabled(enum cfg_loglevel level)
{
    return level >= log_level && log_level != CFG_LOG_NOTHING;
}

void log_write(enum cfg_loglevel level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "verbose", "notice", "warning", "nothing"};
    char line[2048];
    struct timeval tv;
    struct tm tm;
    int saved = errno;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s %s[%d]: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), names[level], log_role, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(log_fd, line, len);
    (void)w;
    errno = saved;
}

void log_libevent(int severity, const char *msg)
{
    /* After fork the child frees the master's loop and makes its own; libevent
     * then warns that signals were "already added to event_base (nil)". */
    if (strstr(msg, "already added to event_base (nil)") != NULL)
        return;
    log_at(severity >= EVENT_LOG_WARN ? CFG_LOG_VERBOSE : CFG_LOG_DEBUG, "libevent: %s", msg);
}

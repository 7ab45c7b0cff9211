/*
 * log.h - the process log: one line per event, "time level role[pid]: text".
 *
 * Each process calls log_setup once its role is known (and again after a
 * reload changes the file or level).  The level is checked before anything is
 * formatted, so a disabled debug line costs one compare.  Nothing logs from a
 * signal handler.  Writes go to stderr (journald under systemd) or `logfile`,
 * opened O_APPEND so that every process of the daemon may share it.
 */
#ifndef HKV_LOG_H
#define HKV_LOG_H

#include "config/cfg.h"

/* Sets the role shown in every line ("master", "edge a/0", "owner hot/1"). */
void log_set_role(const char *role);
/* Switches level and destination.  path NULL or "" = stderr.  On failure to
 * open the file, keeps the previous destination and returns HKV_EIO. */
hkv_status log_setup(enum cfg_loglevel level, const char *path);
/* Reopens the current file (after logrotate moved it). */
void log_reopen(void);
int log_enabled(enum cfg_loglevel level);
void log_write(enum cfg_loglevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* libevent's log callback (event_set_log_callback): its messages become
 * verbose lines, except the known-harmless warning a forked child triggers. */
void log_libevent(int severity, const char *msg);

#define log_at(lvl, ...)                 \
    do {                                 \
        if (log_enabled(lvl))            \
            log_write(lvl, __VA_ARGS__); \
    } while (0)
#define log_debug(...) log_at(CFG_LOG_DEBUG, __VA_ARGS__)
#define log_verbose(...) log_at(CFG_LOG_VERBOSE, __VA_ARGS__)
#define log_notice(...) log_at(CFG_LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_at(CFG_LOG_WARNING, __VA_ARGS__)

#endif

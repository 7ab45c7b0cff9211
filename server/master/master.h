/*
 * master.h - the master process: it reads and validates the config, opens the
 * listening sockets and the shared memory, forks owners then edges, restarts a
 * child that dies (with backoff), reloads on SIGHUP, stops on SIGTERM, and
 * talks to systemd.  It never handles client bytes.
 */
#ifndef HKV_MASTER_H
#define HKV_MASTER_H

#include "config/cfg.h"

/* How the config is built: the file (or none), then command-line directives
 * in order.  The same recipe is replayed on every reload. */
struct master_opts {
    const char *config_path;  /* NULL = defaults only */
    int noverrides;
    int *override_argc;       /* per directive: word count */
    char ***override_argv;    /* per directive: words, [0] = name */
};

/* Builds and validates a config from opts.  A new cfg, or NULL with err. */
struct cfg *master_load_config(const struct master_opts *o, struct cfg_error *err);

/* Runs the daemon until it is stopped.  Returns the process exit code
 * (0 after an orderly stop, 1 when it could not start). */
int master_run(const struct master_opts *o, struct cfg *cfg);

#endif

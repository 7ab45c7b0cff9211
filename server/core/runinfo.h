/*
 * runinfo.h - what INFO's Server section says of this run that the master
 * knows before it forks: the run id (40 hex digits, random at each start of
 * the master, as Redis's run_id: a client that sees it change knows the
 * daemon restarted) and the config file's absolute path.  The children get
 * them with the memory they inherit, so every edge, restarted or not,
 * answers the same.
 */
#ifndef HKV_RUNINFO_H
#define HKV_RUNINFO_H

/* Call once in the master before it forks; config_path NULL: none. */
void runinfo_init(const char *config_path);
const char *runinfo_run_id(void);
/* The absolute path, or "" (no config file, or it could not be resolved). */
const char *runinfo_config_file(void);

#endif

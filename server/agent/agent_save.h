/*
 * agent_save.h - the agent's disk, off its loop: a thread that writes the
 * last map handed to it (cmap_save: temporary file, fsync, rename) and the
 * agent's small state file (host number, lease id), each time the loop
 * posts a newer one.  The loop only copies under a mutex the thread holds
 * for a pointer swap, so a slow disk delays the file, never the loop; a map
 * posted while one is being written replaces the one waiting (only the
 * newest matters).  Errors are counted for the loop to log (the thread
 * does not log).
 *
 * The state file is text ("hotkvd-agent-state 1", then "host NAME",
 * "host_number H", "lease ID" lines), read once at start, before the loop.
 */
#ifndef HKV_AGENT_SAVE_H
#define HKV_AGENT_SAVE_H

#include <stdint.h>

#include "server/core/cmap.h"

struct agent_state {
    char host[CMAP_NAME_MAX];
    unsigned host_number;
    int64_t lease_id;
};

struct agent_saver;

/* Starts the thread.  NULL on failure (memory, thread). */
struct agent_saver *agent_saver_start(const char *map_path, const char *state_path);
/* Writes what is still waiting, stops the thread, frees s. */
void agent_saver_stop(struct agent_saver **s);
/* Hand over a copy of t (valid) / of st to be written. */
void agent_saver_post_map(struct agent_saver *s, const struct cmap_table *t);
void agent_saver_post_state(struct agent_saver *s, const struct agent_state *st);
/* Writes that failed since the last call, and the last status (hkv_status). */
uint64_t agent_saver_failures(struct agent_saver *s, int *last);

/* Reads a state file: HKV_OK, HKV_ENOENT, HKV_EINVAL (not one of ours). */
int agent_state_load(const char *path, struct agent_state *st);

#endif

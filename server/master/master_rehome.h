/*
 * master_rehome.h - before the owners start, every stored key is put in the
 * file of the owner that serves it (storage/persist_rehome.h says how and
 * why it is crash-safe).  Needed when placement changed for stored keys: the
 * hash tags of this release, or a new hot-owners / cold-owners count.
 */
#ifndef HKV_MASTER_REHOME_H
#define HKV_MASTER_REHOME_H

#include <stddef.h>

#include "config/cfg.h"

/* Rehomes both pools' files in cfg->dir.  0, or -1 with `err` (the daemon
 * must not start: a key could be answered by an owner that does not hold
 * it).  Blocks on disk: call before the loop runs and before owners fork. */
int master_rehome(const struct cfg *cfg, char *err, size_t len);

#endif

/*
 * topo.h - the names of this host's pieces, spelled in one place: pools,
 * colos, owner numbering and the files an owner has in `dir`.  The master,
 * edges, owners, INFO and the log all print these, and tests and operators
 * grep for them, so no other file builds one by hand.
 */
#ifndef HKV_TOPO_H
#define HKV_TOPO_H

#include <stddef.h>

#include "config/cfg.h"

/* Big enough for any path built from `dir` plus a file name (the config
 * refuses a longer `dir`). */
#define TOPO_PATH_MAX 4200
/* Big enough for a colo name ("<colo>" or "<colo>-<k>"). */
#define TOPO_COLO_NAME_MAX 64

/* "hot" or "cold". */
const char *topo_pool_name(enum cfg_pool p);
/* Colo k of this host: the configured name, or "<colo>-<k>" when the host
 * runs several colos. */
void topo_colo_name(const struct cfg *cfg, int k, char *buf, size_t len);
/* Where owner `index` of `pool` listens: "<dir>/owner-<pool>-<index>.sock". */
/* The same, under data directory dir (for a module handed the directory,
 * not the config). */
void topo_owner_socket_in(const char *dir, enum cfg_pool pool, int index, char *buf, size_t len);
void topo_owner_socket(const struct cfg *cfg, enum cfg_pool pool, int index, char *buf,
                       size_t len);
/* Its SQLite file: "<dir>/owner-<pool>-<index>.db". */
void topo_owner_db(const struct cfg *cfg, enum cfg_pool pool, int index, char *buf, size_t len);
/* A cluster host's agent control channel (server/agent/agent_ctl.h), the
 * socket owners ask for leaf txns on: "<dir>/agent.sock". */
void topo_agent_socket(const struct cfg *cfg, char *buf, size_t len);

#endif

/*
 * agent_map.h - what the agent knows of the cluster's keys, and the cluster
 * map it makes of them: the agent's pure logic, fed with etcd's events (or
 * the kvs of a full read) and asked, once every event of a revision is in,
 * for the table to publish.  No I/O, no etcd, no clock: unit-testable with
 * the events etcd sends.
 *
 * The map is kept as the keys say, even when they do not make a valid map:
 * a revision that leaves a gap or an overlap (a split half done by hand, a
 * bad value) is refused at commit (the caller keeps publishing the old
 * table and counts it), and a later revision that repairs it is accepted.
 * A pool's leaves are published only once its pools/<pool> key says ready
 * (`--cluster-init` writes it last), so a half-initialised pool is an empty
 * pool, not a map with gaps.
 *
 * Owners: owners/<n> names owner n; members/<id> says it is live and where
 * it listens.  A member counts for owner n only if owners/<n> names the same
 * id.  A member that goes (its host's lease expired) leaves its owner in the
 * table, not live, with its last address.
 */
#ifndef HKV_AGENT_MAP_H
#define HKV_AGENT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent/agent_keys.h"
#include "server/core/cmap.h"

struct agent_map;

struct agent_map_stats {
    uint64_t events;          /* keys applied */
    uint64_t ignored;         /* keys under the prefix that name nothing we know */
    uint64_t bad_values;      /* values that did not parse (a bad leaf refuses the map) */
};

/* For cluster `cluster` (keys under "/hotkvd/<cluster>/").  NULL: memory. */
struct agent_map *agent_map_create(const char *cluster);
void agent_map_destroy(struct agent_map **m);

/* Forgets every key: a full read follows. */
void agent_map_reset(struct agent_map *m);

/* One key's new state: value NULL = deleted; mod_revision its revision
 * (a leaf's epoch).  Returns what the key names (AGENT_K_OTHER: ignored). */
enum agent_key_kind agent_map_apply(struct agent_map *m, const char *key, size_t klen,
                                    const char *val, size_t vlen, int64_t mod_revision);

/* Every event of revision rev is in: HKV_OK and *out = the table to publish
 * (owned by the map, valid until the next call on it), or HKV_EINVAL with
 * the reason in why: the leaves do not partition the hash space (then *out
 * is the table as the keys say, to show, never to publish). */
int agent_map_commit(struct agent_map *m, int64_t rev, const struct cmap_table **out, char *why,
                     size_t whylen);

/* Host numbers (hostnums/<h>): host's number or 0; the lowest free one or 0. */
unsigned agent_map_host_number(const struct agent_map *m, const char *host);
unsigned agent_map_free_host_number(const struct agent_map *m);
/* Owner numbers (owners/<n>): the number naming id, or 0; the lowest free
 * one above `after` (0 for the lowest), or 0 when none is left. */
unsigned agent_map_owner_number(const struct agent_map *m, const char *id);
unsigned agent_map_free_owner_number(const struct agent_map *m, unsigned after);

/* The zone hosts/<host> last said (kept once the host is gone), "" = none. */
const char *agent_map_host_zone(const struct agent_map *m, const char *host);

void agent_map_stats(const struct agent_map *m, struct agent_map_stats *out);

#endif

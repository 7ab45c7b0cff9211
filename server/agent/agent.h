/*
 * agent.h - the agent, `hotkvd: agent`: on a cluster host (`cluster` set)
 * the host's only etcd client and the only writer of the cluster map
 * segment (server/core/cmap.h).  The master forks it first and starts
 * owners and edges once it has published a map and the host's number.
 *
 * What it does, on one libevent loop:
 *  - at start, publishes the map saved in `dir` (AGENT_MAP_FILE) when the
 *    segment has none yet (a daemon restarting while etcd is down routes as
 *    before: map_from_disk 1), with the host number saved beside it;
 *  - reads every key of the cluster (in pages, at one revision), then
 *    watches the prefix from the next revision with progress notifications;
 *    the events of each revision become a new table (agent_map), which is
 *    validated (a map with a gap or an overlap is refused: the old one
 *    stays, refused_maps counts it, the log says why), published, and saved
 *    to `dir` by a thread of its own (the loop never waits for the disk);
 *    a watch cancelled by a compaction is followed by a new full read, a
 *    broken one resumes from the last revision seen + 1, with backoff;
 *  - holds the host lease (keepalive every TTL/3; a keepalive answered
 *    without TTL means the lease is gone: a new one, and everything is
 *    registered again) and registers under it hosts/<host>, members/<id> for
 *    each local owner and writers/<edge_id> for each local edge, after
 *    finding or creating the host's number (hostnums/) and each owner's
 *    number (owners/), both permanent;
 *  - refuses the host when another live hotkvd holds one of those keys (the
 *    same host name or owner id in another process): it tells the master
 *    (CTL_REFUSED) with the reason, and the master stops with status 1;
 *  - keeps the segment's health current (INFO # Cluster, hotkvd-admin).
 * A restarted agent takes over the lease of the one before it (its id is in
 * the segment, and in AGENT_STATE_FILE for a restarted daemon) when etcd
 * still keeps it alive, so a restart changes no registration.
 */
#ifndef HKV_AGENT_H
#define HKV_AGENT_H

#include "server/agent/agent_init.h"
#include "server/agent/etcd.h"
#include "server/core/worker.h"

struct cfg;

#define AGENT_MAP_FILE "cluster-map.bin"      /* in `dir`: the last applied map */
#define AGENT_STATE_FILE "cluster-agent.state" /* in `dir`: host number, lease id */

/* The agent's process body (after fork; ctx->cmap set).  Returns the exit
 * code. */
int agent_main(struct worker_ctx *ctx);

/* The etcd client's options a config gives: endpoints, credentials, CA,
 * timeout.  Where the store is (local_path, local_socket) and the body limit
 * are the caller's to add: the agent's own client and the tools' differ. */
struct etcd_opts agent_etcd_opts(const struct cfg *cfg);

/* What a cluster's first keys need of the config (agent_init.h), for
 * `hotkvd --cluster-init` and for a single host's agent alike. */
struct agent_init_opts agent_init_opts_of(const struct cfg *cfg);

#endif

/*
 * agent_init.h - a cluster's first keys (CLUSTER.md §2), written through an
 * etcd client: `cluster`, owners/<n> for each owner id, 2^bits leaves per
 * pool dealt round-robin, pools/<pool> last, each key created only if absent.
 * Two callers: `hotkvd --cluster-init` (server/admin/admin.h, on a cluster's
 * etcd) and the agent of a single host with leaf-moves, on its local store
 * at first start; both print the same lines.
 */
#ifndef HKV_AGENT_INIT_H
#define HKV_AGENT_INIT_H

#include <stdio.h>


#define AGENT_INIT_BATCH 64        /* keys per txn: 64 compares + 64 puts */
#define AGENT_INIT_BITS 6          /* 64 leaves per pool */

/* What it needs of the config (the caller's to read). */
struct agent_init_opts {
    const char *cluster, *host;
    int hot_owners, cold_owners;   /* the host's own owners, the default list */
    const char *endpoint;          /* for the message when etcd is not reached */
};

struct agent_sync;
/* Through s (agent_sync.h); owners: "ID,ID,..." or NULL for the host's own;
 * bits: leaf depth.  The exit code: 0, or 1 with the reason on err. */
int agent_cluster_init_with(struct agent_sync *s, const struct agent_init_opts *o,
                            const char *owners, int bits, FILE *out, FILE *err);

#endif

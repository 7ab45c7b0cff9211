/*
 * admin.h - the command-line tools' room: the cluster's operator commands,
 * run by a command line program (never by a daemon process), each its own
 * short-lived etcd client on a private loop (server/agent/agent_sync.h).
 * It sits above the agent (whose key, map and txn code it reuses, so a tool
 * sees what every agent sees) and the master (whose config loading it
 * shares); server/main.c and server/hotkvd_admin.c only hand it argv:
 *
 *   hotkvd --cluster-init CONFIG [--owners ID,ID,...] [--bits N]
 *       creates the cluster's keys (CLUSTER.md §2): `cluster`, owners/<n>
 *       for each owner id (default: the config's host's own owners; an id
 *       that already has a number keeps it), 2^N leaves per pool (N = 6 by
 *       default) dealt round-robin to the pool's owners in number order,
 *       and pools/<pool> last, in txns of at most AGENT_INIT_BATCH keys,
 *       each key created only if absent (create_revision == 0).  On a
 *       cluster already initialised it says so and changes nothing.
 *
 *   hotkvd-admin CONFIG status
 *       prints what etcd holds, one fact a line:
 *         cluster <name> revision <etcd revision> etcd <endpoint>
 *         host <name> number <h> addr <addr> lease <id> [zone <z>] (registered)
 *         host <name> number <h> down                          (hostnums only)
 *         owner <n> <id> live|down <addr>:<port> leaves <hot+cold count>
 *         leaf <pool> <bits>-<prefix> primary <n> isr <m,...>|-   (each leaf)
 *         pool <pool> leaves <count> ready|not-ready min_bits <b>
 *         map ok | map INVALID: <why>
 *         leases <registered hosts> live
 *
 *   hotkvd-admin CONFIG leaf list
 *       leaf <pool> <bits>-<prefix> owner <n> <id> state serving|moving [to <m>]
 *       epoch <e> [isr <m,...>], one line per leaf (after "revision <r>")
 *   hotkvd-admin CONFIG leaf split POOL LEAF
 *       the split txn (agent_txn.h) at the epoch read: "split ... into ..."
 *   hotkvd-admin CONFIG leaf move POOL LEAF TO [--wait MS]
 *       puts requests/move/POOL/LEAF {"to":TO} (TO an owner number or id);
 *       the source host's agent hands it to the owner, which deletes it when
 *       the move ended; --wait waits for that and exits 0 if TO serves the
 *       leaf, 2 if not (aborted, or not over within MS)
 *
 * All print their result on `out` and return the exit code: 0, or 1 with
 * a one-line reason on `err` (etcd not reached within etcd-timeout, a
 * refused key, a bad argument).
 */
#ifndef HKV_ADMIN_H
#define HKV_ADMIN_H

#include <stdio.h>

#include "config/cfg.h"

/* ---- the programs' entry points (admin_cli.c): argv as main has it ---- */
/* `hotkvd --cluster-init CONFIG [--owners LIST] [--bits N]` (argv[1] is
 * "--cluster-init"). */
int admin_cluster_init_main(int argc, char **argv);
/* `hotkvd-admin ...` whole. */
int admin_main(int argc, char **argv);

/* ---- the commands, on a loaded config ---- */
/* The tools' etcd client (agent_sync.h) for cfg: its etcd, or a single
 * host's agent's store through its socket.  NULL on failure. */
struct agent_sync;
struct agent_sync *admin_sync_create(const struct cfg *cfg);
/* owners: "ID,ID,..." or NULL for the config's own; bits: leaf depth.  The
 * keys' plan is the agent's (server/agent/agent_init.h: a single host's
 * agent makes the same map on its local store at first start). */
int admin_cluster_init(const struct cfg *cfg, const char *owners, int bits, FILE *out,
                       FILE *err);
int admin_status(const struct cfg *cfg, FILE *out, FILE *err);
/* argv[0..argc): "list" | "split" POOL LEAF | "move" POOL LEAF TO [--wait MS]. */
int admin_leaf(const struct cfg *cfg, int argc, char **argv, FILE *out, FILE *err);
/* "leaf failover POOL LEAF [--wait MS]" (argv as admin_leaf's, the leaf
 * parsed): a planned hand-over of the leaf to an in-sync follower; 0 handed
 * over (or asked, without --wait), 2 not, 1 etcd (admin_handover.c). */
int admin_failover(const struct cfg *cfg, int pool, uint32_t start, int bits, int argc,
                   char **argv, FILE *out, FILE *err);
/* argv[0..argc): "drain" HOST [--wait MS]: every leaf whose primary is an
 * owner of HOST, handed over one after another; 0 all, 2 not all, 1 etcd. */
int admin_host(const struct cfg *cfg, int argc, char **argv, FILE *out, FILE *err);

#endif

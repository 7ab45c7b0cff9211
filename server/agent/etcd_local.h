/*
 * etcd_local.h - a local store with etcd's semantics, for a single host that
 * moves leaves without etcd (`leaf-moves yes` and no `cluster`: the issue's
 * "single-host mode keeps its map in a local durable file owned by the
 * master").  The agent reaches it through the etcd client's own interface
 * (etcd.h: etcd_create with etcd_opts.local_path), so agent_reg, agent_watch
 * and agent_leaf run unchanged; etcd.c forwards each call here.
 *
 * What it keeps of etcd, for the subset the agent uses:
 *  - range / put / delete / txn (compares on MOD, CREATE, VERSION and VALUE;
 *    at most ETCD_MAX_OPS ops a branch, one key at most once: etcd's code 3),
 *    one global revision (a write txn takes the next one for all its
 *    changes), create/mod revisions and versions per key, ranges at an older
 *    revision while the history still holds it (else code 11, compacted);
 *  - leases that never expire while the process lives: grant, keepalive and
 *    revoke answer as etcd does (a keepalive of an unknown id: TTL 0, gone);
 *    revoke deletes the keys attached.  A lease does not outlive its
 *    process: at load, every key that was under a lease is deleted (one
 *    logged change), as etcd would once the TTL passed;
 *  - watches from a revision: CREATED, then one EVENTS message per revision
 *    (in revision order, only the keys of the watch's range), PROGRESS every
 *    progress interval; a start older than the history kept in memory (the
 *    revision at load, or a trimmed history) is CANCELED with
 *    compact_revision, as a compacted etcd does.
 *
 * Durability: every change is one record appended to the store file
 * (storage/lstore_log.c: length, checksum, payload) by a writer thread, and
 * fsync'd BEFORE anything that depends on it is reported: an answer (even
 * a read, which may have seen the change) and a watch event wait until the
 * file holds every revision up to theirs.  The writer groups what is
 * waiting into one fsync.  When the file grows past its snapshot several
 * times over, the loop hands the writer a snapshot, which it writes to a
 * temporary file, fsyncs and renames over the store.  A record cut short by
 * a crash (or failing its checksum) ends the file at load: it and anything
 * after it are dropped (the file is truncated there).  A write that fails
 * poisons the store: pending and later calls (leases too) answer HKV_EIO
 * and watches break with HKV_EIO; the agent then exits, and the master's
 * restart reloads what the file holds (as an owner restarts from its
 * database after a failed fsync), while the host routes with the map it
 * has.
 *
 * Callbacks run on the loop, never from inside the call that registered
 * them, in the order the calls were made (the answers of one store are
 * delivered in order).  The result is valid only during the callback.
 */
#ifndef HKV_ETCD_LOCAL_H
#define HKV_ETCD_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "server/agent/etcd.h"

#define ETCD_LOCAL_FILE "leaf-map.store"    /* in `dir` */
#define ETCD_LOCAL_PROGRESS_MS 1000         /* watch progress notifications */
/* changes kept for watches and old ranges: LSTORE_HISTORY (storage/lstore.h) */

struct etcd_local;
struct etcd_lwatch;

/* Loads (or creates) the store at path, starts its writer thread.  NULL
 * with a one-line reason in err (a file that is not a store, memory, a
 * thread, a directory that cannot be written). */
struct etcd_local *etcd_local_create(struct event_base *base, const char *path, char *err,
                                     size_t errlen);
/* Writes what is waiting, stops the thread, frees the store; no pending
 * callback runs.  Watches still held are cut loose (their cancel frees
 * them). */
void etcd_local_destroy(struct etcd_local **l);
/* The revision the file holds (every answer up to it may be given). */
int64_t etcd_local_revision(const struct etcd_local *l);
/* 1 once a write of the file failed (the store is poisoned). */
int etcd_local_failed(const struct etcd_local *l);
/* Progress interval of the watches (tests use a short one). */
void etcd_local_set_progress_ms(struct etcd_local *l, int64_t ms);

/* As etcd.h's calls. */
int etcd_local_range(struct etcd_local *l, const char *key, size_t klen, const char *end,
                     size_t elen, int64_t revision, int64_t limit, etcd_cb cb, void *arg);
int etcd_local_put(struct etcd_local *l, const char *key, size_t klen, const char *val,
                   size_t vlen, int64_t lease, etcd_cb cb, void *arg);
int etcd_local_delete(struct etcd_local *l, const char *key, size_t klen, const char *end,
                      size_t elen, etcd_cb cb, void *arg);
int etcd_local_txn(struct etcd_local *l, const struct etcd_cmp *cmp, size_t ncmp,
                   const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail,
                   etcd_cb cb, void *arg);
int etcd_local_lease_grant(struct etcd_local *l, int64_t ttl_s, etcd_cb cb, void *arg);
int etcd_local_lease_keepalive(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg);
int etcd_local_lease_revoke(struct etcd_local *l, int64_t id, etcd_cb cb, void *arg);
struct etcd_lwatch *etcd_local_watch(struct etcd_local *l, const char *key, size_t klen,
                                     const char *end, size_t elen, int64_t start_revision,
                                     etcd_watch_cb cb, void *arg);
void etcd_local_watch_cancel(struct etcd_lwatch **w);

#endif

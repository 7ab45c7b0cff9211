/*
 * edge_track.h - CLIENT TRACKING (Redis 7.0's server-assisted client-side
 * caching): which keys each tracking client of this edge read, and the
 * invalidations they are sent when those keys change anywhere in the colo.
 *
 * Where invalidations come from.  Every version that reaches the colo's
 * cache (a write's own answer on any edge, an owner's push, a fill) is
 * noted in the colo's change ring with the key (server/colo/changes.h);
 * this edge reads the ring through edge_feed.h while it has tracking
 * clients, and each record costs a hash lookup in this edge's table plus
 * the BCAST prefixes: the work of a write grows with the tracking clients
 * of that key, not with all clients.  A key leaves the table when it is
 * invalidated (the client reads it again to be told again), as in Redis.
 *
 * The ordering promise (README).  An invalidation is placed after every
 * reply its client is owed when the change is read (slot_tail_out): an
 * answer computed from an older version that was still on its way (a
 * fill from the owner) reaches the client BEFORE the invalidation that
 * supersedes it, so the client drops it.  And before every command of a
 * tracking client the ring is read (edge_feed_drain), so a reply computed
 * after a version reached the colo never overtakes that version's
 * invalidation.  Keys are remembered before the command runs, so a change
 * that lands while its answer is on the way is seen.
 *
 * What cannot be seen is said, never guessed: a stretch of the ring this
 * edge lost, a FLUSH record (FLUSHALL; a push link from an owner that went
 * down or came back, when pushes may have been missed; an owner marked
 * silent, whose pushes a cut link holds) and a full table each send the
 * clients concerned a flush (RESP3: ">2 invalidate _"; RESP2 through a
 * redirect: a message with a null payload), which client libraries handle
 * by emptying their cache.  A key read while its owner's push link is not
 * up, or whose class the colo does not get pushes for, or while an owner is
 * marked silent, cannot be trusted to a push: it is told one `fresh` of its
 * class after the read instead (the value read was at most the class's
 * bound old, so the client's copy is at most that plus `fresh`).
 *
 * Modes: default (keys read), BCAST with PREFIX (every change whose key
 * starts with a prefix; records carry CHANGES_KEY_MAX key bytes, and a
 * longer key matching on them is sent in full from this edge's table when
 * known, else as a flush), OPTIN / OPTOUT with CLIENT CACHING, NOLOOP (a
 * client's own writes are not sent back), REDIRECT id (RESP2's
 * __redis__:invalidate channel on another connection of this edge; a
 * RESP3 target gets pushes).  Memory: one table entry per key (its bytes
 * and 24, naming its first reader) plus 8 bytes per further (client, key)
 * (edge_track_table.c); bounded by tracking-table-max-keys per edge.
 */
#ifndef HKV_EDGE_TRACK_H
#define HKV_EDGE_TRACK_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"

struct track_sess;

/* What the module reads of the config (edge.c builds it at setup and at
 * each reload). */
struct track_opts {
    int64_t max_keys;             /* tracking-table-max-keys (0: no bound) */
    uint32_t max_prefixes;        /* tracking-max-prefixes */
};
void edge_track_opts(const struct cfg *cfg, struct track_opts *o);

/* The edge's table (e->track); 0 or -1 out of memory. */
int edge_track_setup(struct edge *e, const struct track_opts *o);
void edge_track_teardown(struct edge *e);
void edge_track_reload(struct edge *e, const struct track_opts *o);

/* Before a tracking client's command d runs (queued in MULTI or not):
 * pending invalidations go out first; its keys are remembered when d
 * reads.  Costs nothing to other clients (the caller tests sess->track). */
void edge_track_before(struct conn *c, const struct cmd_def *d, int argc,
                       const struct resp_slice *argv);
/* A key read while its owner does not push to this colo: invalidated at
 * until_ms (unix ms) if still tracked for anyone. */
void edge_track_unpushed(struct edge *e, const char *key, size_t klen, int64_t until_ms);

/* CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO (argv as CLIENT's). */
void edge_track_cmd_tracking(struct conn *c, int argc, const struct resp_slice *argv);
void edge_track_cmd_caching(struct conn *c, int argc, const struct resp_slice *argv);
void edge_track_cmd_getredir(struct conn *c);
void edge_track_cmd_trackinginfo(struct conn *c);
/* RESET: tracking off. */
void edge_track_reset(struct conn *c);
/* c is closing: its pairs go, and clients redirecting to it are broken. */
void edge_track_conn_gone(struct conn *c);

/* INFO: tracking_clients, tracked keys, (client, key) pairs, prefixes, and
 * what was sent. */
struct track_stats {
    uint64_t clients, keys, items, prefixes;
    uint64_t invalidations, flushes, evicted;
};
void edge_track_stats(const struct edge *e, struct track_stats *out);

#endif

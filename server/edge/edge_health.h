/*
 * edge_health.h - owner health for the read path: whether a key's owner is
 * marked silent in the colo (server/colo/cache_health.h), which lets a
 * stale entry be answered at once; the reports that set and clear the mark;
 * and this edge's share of the probing.
 *
 * The allowance is the miss-wait (flight_allowance, edge_flight.h): an
 * owner is marked silent once a fetch to it has gone unanswered for that
 * long (or for its link's whole timeout, when write-timeout is shorter), or
 * a write to it went unacknowledged for write-deadline, with no answer from
 * it reaching any edge of the colo meanwhile.  Marking
 * notes a flush in the colo's change ring: its pushes do not come either,
 * so the colo's tracking clients are told everything (edge_track.h).
 * While it is marked, each edge that has seen the mark ticks every
 * owner-probe-interval; one tick per interval in the whole colo claims the
 * owner's probe (cache_health_probe_claim) and sends a PING on this edge's
 * READ link to it unless this edge has one out already (at most one per
 * edge and owner).  Any answer from the owner (a fetch's, a probe's)
 * clears the mark.  A mark is trusted while a probe was claimed within
 * 3 x owner-probe-interval.
 *
 * Owners are named by their owner_ref; the slot in the colo is its index
 * in e->owners.  With no colo cache (e->cache->cache NULL) nothing is marked.
 */
#ifndef HKV_EDGE_HEALTH_H
#define HKV_EDGE_HEALTH_H

#include <stdint.h>

#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"

/* e->health (after owners_setup: it sizes itself by e->owners->n).  0, or -1
 * on allocation failure. */
int edge_health_setup(struct edge *e, int64_t probe_interval_ms);
/* A reload: owner-probe-interval from the new config. */
void edge_health_reload(struct ehealth *h, int64_t probe_interval_ms);
/* Frees it (no probe callback runs after: links are torn down unanswered). */
void edge_health_teardown(struct edge *e);

/* Is o marked silent in the colo, the mark trusted?  Two atomic loads; a
 * mark seen (trusted or not) also starts this edge's probing of o. */
int edge_owner_silent(struct edge *e, const struct owner_ref *o, int64_t now);
/* o answered a request of this edge (any answer, on its READ link). */
void edge_health_answered(struct edge *e, const struct owner_ref *o);
/* A request to o sent at sent_ms is unanswered at now, the allowance
 * past: marks o silent (cache_health_unanswered).  1 if this call marked
 * it (a new episode), else 0. */
int edge_health_unanswered(struct edge *e, const struct owner_ref *o, int64_t sent_ms,
                            int64_t now);
/* Owners marked silent now (trusted or not), for INFO. */
int edge_health_silent_count(struct edge *e);
/* Whether any owner is marked silent, read from the slots at most every
 * EDGE_SILENT_CHECK_MS (a tracking client's every read asks: one scan of
 * every owner's slot per read would be the cost of a cluster's 256); this
 * edge's own mark counts at once, another edge's within that. */
#define EDGE_SILENT_CHECK_MS 10
int edge_health_any_silent(struct edge *e, int64_t now);

#endif

/*
 * edge_pubsub.h - pub/sub on an edge: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
 * PUNSUBSCRIBE, PUBLISH, PUBSUB CHANNELS|NUMSUB|NUMPAT|HELP, with Redis 7.0's
 * replies, RESP2's subscribed-mode rules and RESP3's pushes.
 *
 * Where a message goes.  A PUBLISH is routed like a key: WIRE_PUBLISH to the
 * channel's owner, which puts a WIRE_PUBMSG on one push link of every colo
 * (owner_pushq.c); the edge holding that link appends (channel, message) to
 * its colo's message bus (server/colo/bus.h: a lossy byte ring in shared
 * memory, one eventfd per edge; pubsub_pushed).  Without that route
 * (owner-push off, a link down) the publisher's edge appends to every bus of
 * its host itself.  Every edge that holds subscribers (an "armed" edge) is
 * signalled, reads the new records and writes each message to its own
 * subscribers of the channel and of the patterns matching it, in the bus's
 * order.  A subscriber that does
 * not read is bounded by client-output-buffer-limit pubsub and closed; an
 * edge lapped by the bus's writers (it missed records) closes its
 * subscribers rather than deliver a stream with a hole in it, as Redis
 * closes a client it cannot keep up with.
 *
 * The per-connection state (its channels and patterns) hangs off struct
 * sess (sess->pubsub), allocated by the first SUBSCRIBE/PSUBSCRIBE and freed
 * by pubsub_conn_gone when the client goes; a RESET unsubscribes everything.
 *
 * For other modules (CLIENT TRACKING's RESP2 redirect):
 */
#ifndef HKV_EDGE_PUBSUB_H
#define HKV_EDGE_PUBSUB_H

#include <stddef.h>
#include <stdint.h>

#include "proto/resp.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"

struct edge_pubsub;   /* the edge's tables (e->pubsub) */
struct pubsub_sess;   /* one client's channels and patterns (sess->pubsub) */

/* Delivers a message to ONE client, whatever it is subscribed to: a
 * message on `channel` whose payload raw_resp[0..rlen) is an already encoded
 * RESP value, embedded as the message's third element as-is (RESP2:
 * *3 $7 message $<clen> <channel> <raw>; RESP3: >3 ... likewise).
 *   - client_id is a client of this edge: written at once into its output,
 *     after the replies it is owed, counted against its pubsub output limit
 *     (past the hard limit it is closed and HKV_OK is still answered);
 *   - client_id is not on this edge: appended to the colo's bus with
 *     target = client_id; the edge that holds it delivers it (a client that
 *     is nowhere drops it silently).  HKV_OK.
 * HKV_ENOENT: no such client known locally and no bus to reach the others
 * (a colo of one edge, or the bus is off); HKV_EFULL: the message does not
 * fit the bus (larger than its per-record bound). */
int pubsub_send_to_client(struct edge *e, uint64_t client_id, const char *channel, size_t clen,
                          const char *raw_resp, size_t rlen);

/* 1 if c is subscribed (SUBSCRIBE, not a pattern) to exactly this channel. */
int pubsub_conn_subscribed(const struct conn *c, const char *channel, size_t clen);

/* 1 while c is in subscribed mode (it holds a channel or a pattern): under
 * RESP2 only (P)(UN)SUBSCRIBE, PING, QUIT and RESET are allowed then. */
int pubsub_active(const struct conn *c);

/* ---- the edge's wiring (edge.c, edge_registry.c, edge_cmd.c) ---------------------- */

/* The commands (edge_registry.c's table). */
void edge_cmd_subscribe(struct conn *c, int argc, const struct resp_slice *argv);
void edge_cmd_unsubscribe(struct conn *c, int argc, const struct resp_slice *argv);
void edge_cmd_psubscribe(struct conn *c, int argc, const struct resp_slice *argv);
void edge_cmd_punsubscribe(struct conn *c, int argc, const struct resp_slice *argv);
void edge_cmd_publish(struct conn *c, int argc, const struct resp_slice *argv);
void edge_cmd_pubsub(struct conn *c, int argc, const struct resp_slice *argv);

/* The dispatcher's gate: 1 if c may not run `name` now (RESP2, subscribed
 * mode, not one of the allowed commands); the error has been sent. */
int pubsub_gate(struct conn *c, const char *name, size_t len);

/* c's channels (returned) and patterns (*npat): CLIENT LIST's sub= psub=. */
size_t pubsub_conn_counts(const struct conn *c, size_t *npat);

/* A message an owner pushed (WIRE_PUBMSG on a push link): appended to this
 * colo's bus, for every edge of the colo to deliver. */
void pubsub_pushed(struct edge *e, const char *ch, size_t clen, const char *msg, size_t mlen);

/* INFO's pubsub_channels and pubsub_patterns: distinct channels and
 * patterns with a subscriber in the colo (every edge's, from the bus's
 * count table; this edge's alone without a bus). */
void pubsub_info_counts(struct edge *e, uint64_t *channels, uint64_t *patterns);

/* c leaves every channel and pattern (RESET: no replies are sent; closing). */
void pubsub_conn_gone(struct conn *c);

/* Setup after the connection layer and the colo segments (0 / -1); teardown
 * at exit (*e->pubsub NULL after). */
int pubsub_setup(struct edge *e);
void pubsub_teardown(struct edge *e);

#endif

/*
 * edge_pubsub_int.h - what edge_pubsub.c (the tables and the commands) and
 * edge_pubsub_deliver.c (the bus and the messages' framing) share.  Private
 * to those two files.
 *
 * The edge's tables: channels in a chained hash table, patterns in a list,
 * each entry with the connections subscribed to it (in subscription order).
 * A connection's own lists (struct pubsub_sess) hold the same names in the
 * order it subscribed, for UNSUBSCRIBE without arguments and for the counts
 * its confirmations carry.
 */
#ifndef HKV_EDGE_PUBSUB_INT_H
#define HKV_EDGE_PUBSUB_INT_H

#include <event2/event.h>

#include "proto/buf.h"
#include "server/edge/edge_pubsub.h"

#define PS_BUCKETS 1024

struct ps_entry {
    struct ps_entry *next;
    uint64_t hash;
    struct conn **subs;
    size_t nsubs, cap;
    size_t len;
    char name[];
};

struct edge_pubsub {
    struct ps_entry *chans[PS_BUCKETS];
    struct ps_entry *pats;
    size_t nchans, npats;          /* entries (distinct names) on this edge */
    size_t nsubscribed;            /* connections with a subscription */
    struct bus *bus;               /* the colo's (edge_ctx), NULL when it failed its check */
    struct event *signal, *retry;  /* the bus's eventfd; a record being written */
    int armed;
    uint64_t cursor;
    uint64_t pending_at;
    int64_t pending_since;
};

uint64_t ps_hash(const char *p, size_t n);
struct ps_entry *ps_channel(struct edge_pubsub *ps, const char *p, size_t n);

/* edge_pubsub_deliver.c */
/* A message (pattern NULL) or pmessage written to c after every reply it is
 * owed; raw: msg is a RESP value embedded as-is. */
void ps_write_message(struct conn *c, const char *pat, size_t plen, const char *ch, size_t clen,
                      const char *msg, size_t mlen, int raw);
/* Every local subscriber of ch (and of the patterns matching it) gets msg. */
void ps_deliver(struct edge *e, const char *ch, size_t clen, const char *msg, size_t mlen);
/* The first subscription of this edge arms the bus, the last disarms it. */
void ps_arm(struct edge *e, int on);
int ps_bus_setup(struct edge *e);
void ps_bus_teardown(struct edge *e);

#endif

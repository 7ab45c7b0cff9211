/*
 * edge_feed.h - this edge's one reader of the colo's change ring
 * (server/colo/changes.h), shared by the modules that react to a key
 * changing anywhere in the colo: the HTTP door's held readers (long polls,
 * watch streams) and CLIENT TRACKING's invalidations.
 *
 * Why one reader: the ring gives each edge one eventfd, one armed flag and
 * one cursor; two readers would each drain the eventfd and starve the
 * other.  A module joins with its hooks at setup and says when it wants
 * records (it holds readers / tracking clients); the ring is armed while
 * any module wants it, and each record goes to every module that wants
 * records then.  A lost stretch (the ring lapped this edge, a writer died
 * inside a record) and a FLUSH record both reach the modules as `lost`:
 * "any key may have changed".
 *
 * Arming.  edge_feed_want(on) arms the ring and reads it at once from
 * where this edge left it: a change that raced with the caller's own read
 * of the cache is either in the ring already or signalled (changes.c).
 * edge_feed_drain reads what is there now for one user, synchronously: CLIENT TRACKING
 * calls it before it answers a tracking client, so that an invalidation of
 * a version already in the colo goes out before that answer.
 *
 * Hooks run from the loop; they may answer and close connections, and may
 * call edge_feed_want (never edge_feed_drain: no re-entry).
 */
#ifndef HKV_EDGE_FEED_H
#define HKV_EDGE_FEED_H

#include "server/colo/changes.h"
#include "server/edge/edge_int.h"

enum feed_user { FEED_HTTP = 0, FEED_TRACK = 1, FEED_USERS = 2 };

struct feed_hooks {
    void (*changed)(void *arg, const struct change *c);
    void (*lost)(void *arg);      /* every key may have changed */
    void (*caught_up)(void *arg); /* optional: a read reached the ring's head */
};

/* The edge's reader (e->feed); 0, or -1 out of memory.  Without a ring (the
 * colo segment did not attach) it works and delivers nothing. */
int edge_feed_setup(struct edge *e);
void edge_feed_teardown(struct edge *e);
/* Module `u` gets records through h (arg is its own). */
void edge_feed_join(struct edge *e, enum feed_user u, const struct feed_hooks *h, void *arg);
/* Module `u` wants records (on) or no longer (off). */
void edge_feed_want(struct edge *e, enum feed_user u, int on);
/* Reads the records there are now for user u alone (a no-op while it
 * does not want them). */
void edge_feed_drain(struct edge *e, enum feed_user u);
/* 1 when the ring works on this edge (records are delivered). */
int edge_feed_live(const struct edge *e);

#endif

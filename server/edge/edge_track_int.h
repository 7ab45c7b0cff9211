/*
 * edge_track_int.h - CLIENT TRACKING's structures, shared by its table
 * (edge_track.c) and its commands (edge_track_cmd.c).  Private to them.
 */
#ifndef HKV_EDGE_TRACK_INT_H
#define HKV_EDGE_TRACK_INT_H

#include <stdint.h>

#include "proto/buf.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_int.h"

#define TRACK_BUCKETS_MIN 1024
#define TRACK_DUE_TICK_MS 10      /* unpushed keys are looked at this often */
#define TRACK_SEEN 256            /* BCAST: the last version broadcast, by key hash */

struct tseen {
    uint64_t hash, version;
};

struct track_sess;

/* A tracked key.  Its readers are named by session id (track_sess.sid),
 * never by pointer: a session that goes leaves its ids behind, skipped
 * when the key is told and dropped by the sweep (edge_track_table.c), so a
 * (client, key) pair costs 8 bytes of an id array, or nothing beyond the
 * key's own entry while the key has one reader. */
struct tkey {
    struct tkey *bnext;           /* the bucket's chain */
    uint64_t u;                   /* one reader: sid << 1 | 1; several: a struct tids * */
    uint32_t hash;                /* router_hash's low bits (the bucket, a first compare) */
    uint32_t klen;
    char key[];
};

struct tids {                     /* a key's readers, in the order they read it */
    uint32_t n, cap;
    uint64_t id[];
};

struct tprefix {
    char *p;
    uint32_t len;
};

struct tdue {                     /* a key read while its changes are not pushed here */
    int64_t at;                   /* mono ms: invalidated then */
    uint32_t klen;
    char key[];
};

struct tdefer {                   /* NOLOOP: a push of a key while the client's own write
                                   * may be the one pushed (edge_track.c) */
    struct tdefer *next;
    uint64_t hash, version;
    uint32_t klen;
    char key[];
};

#define TRACK_DEFER_MAX 64        /* past this a NOLOOP client is sent a flush instead */

struct track_sess {
    struct conn *c;
    struct track_sess *next, **prev;   /* the edge's tracking clients */
    struct track_sess *bnext, **bprev; /* ... its BCAST ones */
    uint64_t sid;                 /* this session's id in the table (never reused) */
    uint8_t remembered;           /* it has ids in the table */
    uint8_t on, bcast, optin, optout, noloop, broken;
    uint8_t flushed;              /* sent a flush, read nothing since */
    uint8_t flush_after;          /* a flush is due after this turn's dispatch (no memory) */
    uint8_t caching;              /* CLIENT CACHING for the next command: 0, 1 yes, 2 no */
    uint64_t redirect;            /* 0: none */
    struct conn *redir;           /* its connection on this edge; NULL: gone or remote */
    uint8_t remote;               /* the target is on another edge of the colo: */
    uint32_t rslot, ridx;         /* its row in the clients board (gone: broken) */
    struct tprefix *prefix;
    uint32_t nprefix;
    struct tdefer *deferred;
    uint32_t ndeferred;
};

struct edge_track {
    struct edge *e;
    struct tkey **table;
    size_t nbuckets;              /* a power of two */
    uint64_t nkeys, nitems;       /* items: ids in the table, gone sessions' too */
    struct track_sess **smap;     /* sessions by sid: open addressing, linear probes */
    size_t smap_cap;              /* a power of two, at least twice nsessions */
    uint64_t next_sid;
    size_t sweep_pos, sweep_left; /* buckets still to sweep of gone sessions' ids */
    struct track_sess *sessions, *bcasts;
    uint64_t nsessions, nbcast, nprefixes;
    struct event *flush;          /* flushes the marked connections, once per turn */
    struct conn **dirty;          /* ... which are these (NULL: closed since) */
    size_t ndirty, dirty_cap;
    uint8_t dirty_all;            /* the array could not grow: every connection is looked at */
    uint64_t nflush_after;        /* sessions with flush_after set */
    struct tdue **heap;           /* edge_track_due.c: by deadline */
    size_t ndue, cap;
    uint64_t max_due;
    struct tseen duemap[TRACK_SEEN]; /* ... pending deadlines by key hash */
    uint64_t ndeferring;          /* sessions with deferred pushes */
    struct event *due_timer;
    int64_t max_keys;
    uint32_t max_prefixes;
    uint64_t rnd;
    uint64_t invalidations, flushes, evicted;
    struct hkv_buf scratch;
    struct tseen seen[TRACK_SEEN];
};

/* The table (edge_track_table.c). */
struct tkey *track_key_find(struct edge_track *t, const char *key, size_t klen, uint64_t hash);
/* s read key: 0, or -1 out of memory. */
int track_remember(struct edge_track *t, struct track_sess *s, const char *key, size_t klen);
/* k's readers, in order: *n ids at the returned address (valid until the
 * table changes; one reader: *one holds it). */
const uint64_t *track_key_ids(const struct tkey *k, uint64_t *one, uint32_t *n);
void track_key_free(struct edge_track *t, struct tkey *k);
/* Every key goes (every session was sent a flush); the buckets stay. */
void track_table_clear(struct edge_track *t);
/* Every key, and the buckets (teardown). */
void track_table_free(struct edge_track *t);
/* Sessions by sid: 0, or -1 out of memory (add); find is NULL for a gone one. */
int track_sess_add(struct edge_track *t, struct track_sess *s);
void track_sess_del(struct edge_track *t, struct track_sess *s);
struct track_sess *track_sess_find(const struct edge_track *t, uint64_t sid);
/* A session with ids in the table went: the sweep starts (again). */
void track_sweep_start(struct edge_track *t);
/* Drops gone sessions' ids from the next buckets; 1 while more are left. */
int track_sweep_step(struct edge_track *t);

/* The events (edge_track.c; made by edge_track_setup, edge_track_cmd.c):
 * flush the marked connections (evictions first), the 10 ms timer; the
 * feed's hooks; evictions down to tracking-table-max-keys. */
void track_on_flush(evutil_socket_t fd, short what, void *arg);
void track_on_due(evutil_socket_t fd, short what, void *arg);
extern const struct feed_hooks track_feed_hooks;
void track_limit(struct edge_track *t);
/* INFO's figures to the scoreboard (after a change of the counts). */
void track_publish(struct edge_track *t);
/* Timed invalidations (edge_track_due.c): key told at `at` (mono ms).  0,
 * or -1 (full, out of memory: tell it now). */
int track_due_add(struct edge_track *t, const char *key, size_t klen, uint64_t hash,
                  int64_t at, int64_t now);
/* The next entry due by now (the caller frees it), or NULL. */
struct tdue *track_due_pop(struct edge_track *t, int64_t now);
void track_due_free(struct edge_track *t);
/* Sending (edge_track.c): one key's invalidation, a flush (not twice in a
 * row), after what the target is owed. */
void track_send_key(struct edge_track *t, struct track_sess *s, const char *key, size_t klen);
/* ... whose invalidation message (an encoded [key]) is msg[0..n). */
void track_send_msg(struct edge_track *t, struct track_sess *s, const char *msg, size_t n);
/* c is closing: it leaves the connections to flush. */
void track_dirty_gone(struct edge_track *t, struct conn *c);
void track_send_flush(struct edge_track *t, struct track_sess *s);
/* The 10 ms timer runs (timed keys, held-back pushes). */
void track_due_arm(struct edge_track *t);
/* NOLOOP (edge_track_noloop.c): 1 if a push (origin 0) for s was held
 * back; the record of client origin's own write drops what it supersedes;
 * held-back pushes of clients with no write in flight are sent (call once
 * the ring was read to its head). */
int track_defer(struct edge_track *t, struct track_sess *s, uint64_t hash, uint64_t version,
                const char *key, size_t klen);
void track_own_write(struct edge_track *t, uint64_t origin, uint64_t hash, uint64_t version);
void track_release(struct edge_track *t);
/* Frees s's deferred pushes (it is going). */
void track_defer_drop(struct edge_track *t, struct track_sess *s);

#endif

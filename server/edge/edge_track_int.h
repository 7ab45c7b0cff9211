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
struct tkey;

struct tpair {                    /* client s may cache key k */
    struct tkey *k;
    struct track_sess *s;
    struct tpair *knext, **kprev; /* in k's list */
    struct tpair *cnext, **cprev; /* in s's list */
};

struct tkey {
    struct tkey *bnext;           /* the bucket's chain */
    uint64_t hash;                /* router_hash */
    struct tpair *pairs;
    uint32_t klen;
    char key[];
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
    struct tpair *pairs;
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
    uint64_t nkeys, nitems;
    struct track_sess *sessions, *bcasts;
    uint64_t nsessions, nbcast, nprefixes;
    struct event *flush;          /* flushes the marked connections, once per turn */
    uint64_t ndirty;
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

/* The events (edge_track.c; made by edge_track_setup, edge_track_cmd.c):
 * flush the marked connections (evictions first), the 10 ms timer; the
 * feed's hooks; evictions down to tracking-table-max-keys. */
void track_on_flush(evutil_socket_t fd, short what, void *arg);
void track_on_due(evutil_socket_t fd, short what, void *arg);
extern const struct feed_hooks track_feed_hooks;
void track_limit(struct edge_track *t);
/* s's (client, key) pairs go, and the keys no one else tracks. */
void track_forget_pairs(struct edge_track *t, struct track_sess *s);
/* Every key of the table, and the table (teardown). */
void track_table_free(struct edge_track *t);
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

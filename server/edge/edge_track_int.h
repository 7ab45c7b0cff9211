/*
 * edge_track_int.h - CLIENT TRACKING's structures, shared by its table
 * (edge_track.c) and its commands (edge_track_cmd.c).  Private to them.
 */
#ifndef HKV_EDGE_TRACK_INT_H
#define HKV_EDGE_TRACK_INT_H

#include <stdint.h>

#include "proto/buf.h"
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
    struct tdue *next;
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
    uint8_t caching;              /* CLIENT CACHING for the next command: 0, 1 yes, 2 no */
    uint64_t redirect;            /* 0: none */
    struct conn *redir;           /* its connection on this edge; NULL: gone */
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
    struct tdue *due;
    uint64_t ndue, max_due;
    uint64_t ndeferring;          /* sessions with deferred pushes */
    struct event *due_timer;
    int64_t max_keys;
    uint32_t max_prefixes;
    uint64_t rnd;
    uint64_t invalidations, flushes, evicted;
    struct hkv_buf scratch;
    struct tseen seen[TRACK_SEEN];
};

/* INFO's figures to the scoreboard (after a change of the counts). */
void track_publish(struct edge_track *t);
/* Frees s's deferred pushes (it is going). */
void track_defer_drop(struct edge_track *t, struct track_sess *s);

#endif

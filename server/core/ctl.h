/*
 * ctl.h - the control channel between the master and each child: a stream
 * socketpair carrying small framed messages, [u32 big-endian length][u8
 * type][payload].  The master sends validated configs; a child reports that it
 * serves; CONFIG RESETSTAT goes up to the master and back down to everyone;
 * FLUSHALL's "forget what each owner stamped before its flush" goes up to the
 * master, which applies it to every colo segment; in a cluster, the agent
 * tells the master when the host must not start.
 * The channel doubles as the child's lifeline: EOF on it means the
 * master is gone, which a child notices at once without polling.
 */
#ifndef HKV_CTL_H
#define HKV_CTL_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "proto/hkv.h"

enum ctl_type {
    CTL_READY = 1,   /* child -> master: serving; payload empty */
    CTL_CONFIG = 2,  /* master -> child: u64 generation + cfg_serialize() text */
    CTL_APPLIED = 3, /* child -> master: u64 generation now in effect */
    CTL_SET = 4,     /* child -> master: CONFIG SET, "name\0value\0" pairs */
    /* CONFIG RESETSTAT; payloads empty.  child -> master: a client asked;
     * master -> child: zero your counters now (worker.c does the board
     * slot, the role's hook the rest). */
    CTL_RESETSTAT = 5,
    /* child -> master: my counters are zeroed; master -> child: the
     * RESETSTAT you asked for is done in every process (one per request,
     * in order). */
    CTL_RESETSTAT_DONE = 6,
    /* FLUSHALL.  child -> master: every owner of these versions flushed;
     * payload: n u64 big-endian stamps, each an owner's flush version (its
     * writer in the low bits): make every colo segment forget what that
     * owner stamped before it (cache_forget_below).  master -> child:
     * done in every colo; payload empty (one per request, in order). */
    CTL_CACHE_FORGET = 7,
    CTL_CACHE_FORGOTTEN = 8,
    /* agent -> master (a cluster host only): this host must not start; the
     * payload is the one-line reason (another live hotkvd holds the host
     * name or an owner id).  The master logs it and exits with status 1. */
    CTL_REFUSED = 9,
    /* master -> agent (a cluster host, or a single host with leaf-moves):
     * an owner process ended (SIGCHLD); payload: u8 pool, u32 big-endian
     * index.  The agent promotes an in-sync follower of each of its leaves
     * at once (CLUSTER.md §7 "Single host"), without waiting for a lease. */
    CTL_OWNER_DIED = 10,
};

#define CTL_MAX_MSG (64u << 20)

/* Appends one message to `out`.  HKV_OK or HKV_ENOMEM. */
hkv_status ctl_put(struct evbuffer *out, uint8_t type, const void *payload, size_t len);
/* Takes one whole message from `in`: HKV_OK with *type and a malloc'd *payload
 * (NUL-terminated for convenience; the caller frees it) and *len; HKV_EAGAIN
 * if incomplete; HKV_EPROTO if the length is over CTL_MAX_MSG or zero. */
hkv_status ctl_take(struct evbuffer *in, uint8_t *type, char **payload, size_t *len);

/* Calls fn(arg, type, payload, len) for every whole message in `in` (the
 * payload is valid during the call only).  HKV_OK when all were taken,
 * HKV_EPROTO on a malformed message (stop trusting the peer), HKV_ENOMEM. */
typedef void (*ctl_fn)(void *arg, uint8_t type, const char *payload, size_t len);
hkv_status ctl_each(struct evbuffer *in, ctl_fn fn, void *arg);

/* u64 helpers for CTL_CONFIG / CTL_APPLIED payloads. */
void ctl_put_u64(unsigned char *p, uint64_t v);
uint64_t ctl_get_u64(const unsigned char *p);

#endif

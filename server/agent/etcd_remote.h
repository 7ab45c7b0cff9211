/*
 * etcd_remote.h - the local store of a single host's agent (etcd_local.h),
 * reached from another process: hotkvd-admin's leaf list / split / move and
 * status on a host with `leaf-moves yes` and no cluster.  The agent owns
 * the store's file and is its only writer, so the tool does not open the
 * file: it sends each call to the agent over a Unix socket in `dir`
 * (ETCD_REMOTE_SOCKET), and the agent runs it on its store and answers.
 * The admin commands go through the etcd client's interface (etcd.h with
 * etcd_opts.local_socket) and so stay the same code as on a cluster.
 *
 * Wire: one request and one answer per connection, each a u32 length
 * (little endian) and a body (proto/etcd_remote_msg.h: the call's kind and
 * arguments; the answer's status, code, message, revision, succeeded,
 * more, count, deleted, lease id, TTL and keys).  Unary calls only: a watch
 * is refused (NULL).  Bodies over ETCD_REMOTE_MAX are refused both ways.
 *
 * Client side (etcd_remote_*): the calls are queued and run from an event of
 * the caller's loop, one at a time, each a blocking exchange bounded by the
 * timeout (the tool has nothing else to do meanwhile); callbacks as etcd.h.
 * Server side (etcd_remote_serve_*): connections on the agent's loop.
 */
#ifndef HKV_ETCD_REMOTE_H
#define HKV_ETCD_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "proto/buf.h"
#include "proto/etcd_remote_msg.h"   /* the bodies, ETCD_REMOTE_MAX */
#include "server/agent/etcd.h"

#define ETCD_REMOTE_SOCKET "leaf-map.sock"

struct etcd_remote;

struct etcd_remote *etcd_remote_create(struct event_base *base, const char *sock,
                                       int64_t timeout_ms);
void etcd_remote_destroy(struct etcd_remote **r);
/* A request body (encoded by etcd.c's forwarding with etcd_remote_req_*)
 * sent; cb hears the answer.  HKV_OK or HKV_ENOMEM (cb never called). */
int etcd_remote_call(struct etcd_remote *r, struct hkv_buf *req, etcd_cb cb, void *arg);

/* ---- the agent's side (etcd_remote_serve.c) ---- */
struct etcd_rserver;
/* Listens on path (a stale socket file is replaced); calls go to e.  NULL
 * with why on failure. */
struct etcd_rserver *etcd_remote_serve(struct event_base *base, struct etcd *e, const char *path,
                                       char *why, size_t len);
void etcd_remote_serve_stop(struct etcd_rserver **s);

#endif

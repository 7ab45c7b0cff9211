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
 * (little endian) and a body (etcd_remote_msg.c: the call's kind and
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
#include "server/agent/etcd.h"

#define ETCD_REMOTE_SOCKET "leaf-map.sock"
#define ETCD_REMOTE_MAX (16u << 20)

enum etcd_rkind { ETCD_R_RANGE = 1, ETCD_R_PUT, ETCD_R_DELETE, ETCD_R_TXN, ETCD_R_GRANT,
                  ETCD_R_KEEPALIVE, ETCD_R_REVOKE };

struct etcd_remote;

struct etcd_remote *etcd_remote_create(struct event_base *base, const char *sock,
                                       int64_t timeout_ms);
void etcd_remote_destroy(struct etcd_remote **r);
/* A request body (encoded by etcd.c's forwarding with etcd_remote_req_*)
 * sent; cb hears the answer.  HKV_OK or HKV_ENOMEM (cb never called). */
int etcd_remote_call(struct etcd_remote *r, struct hkv_buf *req, etcd_cb cb, void *arg);

/* ---- messages (etcd_remote_msg.c) ---- */
int etcd_remote_req_range(struct hkv_buf *b, const char *key, size_t klen, const char *end,
                          size_t elen, int64_t revision, int64_t limit);
int etcd_remote_req_txn(struct hkv_buf *b, const struct etcd_cmp *cmp, size_t ncmp,
                        const struct etcd_op *ok, size_t nok, const struct etcd_op *fail,
                        size_t nfail);
int etcd_remote_req_int(struct hkv_buf *b, enum etcd_rkind kind, int64_t v);
int etcd_remote_ans_encode(struct hkv_buf *b, const struct etcd_result *r);

/* A decoded request: its arrays point into the body and into mem. */
struct etcd_rreq {
    enum etcd_rkind kind;
    const char *key, *end;
    size_t klen, elen;
    int64_t revision, limit, n;
    struct etcd_cmp *cmp;
    struct etcd_op *ok, *fail;
    size_t ncmp, nok, nfail;
};
/* HKV_OK, HKV_EPROTO, HKV_ENOMEM; free with etcd_remote_req_free. */
int etcd_remote_req_decode(const char *p, size_t n, struct etcd_rreq *q);
void etcd_remote_req_free(struct etcd_rreq *q);
/* The answer into r (pointing into p and *mem: free(*mem) after). */
int etcd_remote_ans_decode(const char *p, size_t n, struct etcd_result *r, void **mem);

/* ---- the agent's side (etcd_remote_serve.c) ---- */
struct etcd_rserver;
/* Listens on path (a stale socket file is replaced); calls go to e.  NULL
 * with why on failure. */
struct etcd_rserver *etcd_remote_serve(struct event_base *base, struct etcd *e, const char *path,
                                       char *why, size_t len);
void etcd_remote_serve_stop(struct etcd_rserver **s);

#endif

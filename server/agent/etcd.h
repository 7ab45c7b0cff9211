/*
 * etcd.h - an asynchronous etcd v3 client for the agent, over etcd's JSON
 * gateway on HTTP/1.1 (../shared/CLUSTER.md §3), on the agent's libevent loop.
 *
 * One client holds two connections to the current endpoint: one for unary
 * calls (pipelined in order, one at a time on the wire) and one per watch
 * stream (the gateway's watch is half-duplex: everything goes in the first
 * body; changing a watch means a new stream).  A call that fails to connect
 * or times out moves the client to the next endpoint for later calls.  With
 * etcd-user set, the client authenticates (/v3/auth/authenticate) before its
 * first call and again when etcd says the token is invalid, transparently.
 *
 * Every call has a deadline (etcd-timeout); a watch stream that is silent for
 * longer than its idle timeout (a few progress-notify intervals) is reported
 * broken.  Sizes are bounded (etcd_opts.max_body): a longer answer is a
 * protocol error, never an allocation as big as the peer asks.
 *
 * Callbacks run on the loop, exactly once per call, never from inside the
 * call that registered them; the result and everything it points to is valid
 * only during the callback.  Keys and values are bytes (the gateway's base64
 * is this module's business).  Every int64 of the answers (revisions, lease
 * ids, TTLs) is parsed from JSON strings exactly, never through a double.
 */
#ifndef HKV_ETCD_H
#define HKV_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "proto/etcd_types.h"   /* the keys, results, compares, ops and events */

struct etcd;
struct etcd_watch;

struct etcd_opts {
    char *const *endpoints;        /* "http://host:port" or "https://host:port" */
    size_t nendpoints;
    const char *user;              /* "" or NULL = no auth */
    const char *password;
    const char *ca_file;           /* https: CA file, "" or NULL = the system's */
    int64_t timeout_ms;            /* one unary call, connect included (<= 0: 2000) */
    size_t max_body;               /* largest answer (and watch line) accepted (0: 4 MiB) */
    /* Not NULL: no etcd at all, the local store in this file instead
     * (etcd_local.h: a single host moving leaves); the endpoints and the
     * rest are ignored.  The calls and watches below behave the same. */
    const char *local_path;
    /* Not NULL (and no local_path): the local store of the agent listening
     * on this Unix socket (etcd_remote.h: hotkvd-admin on such a host). */
    const char *local_socket;
};

/* NULL on a bad option (etcd_opts_check says which) or out of memory. */
struct etcd *etcd_create(struct event_base *base, const struct etcd_opts *o);
/* HKV_OK, or HKV_EINVAL with a one-line reason in err (an endpoint that is
 * not http(s)://host[:port], no endpoint, a CA file that does not load). */
int etcd_opts_check(const struct etcd_opts *o, char *err, size_t errlen);
/* Frees the client; no pending callback runs. */
void etcd_destroy(struct etcd **e);
/* New options (a reload); calls in flight finish under the old ones. */
int etcd_set_opts(struct etcd *e, const struct etcd_opts *o);
/* The endpoint later calls go to (for log lines and INFO). */
const char *etcd_endpoint(const struct etcd *e);
/* 1 when the client is a local store (etcd_local.h) that failed a write:
 * it answers nothing but errors until the process loads its file again. */
int etcd_store_failed(const struct etcd *e);

/* A prefix's range end for the calls below: etcd_prefix_end (proto/etcd_msg.h). */

/* Unary calls: 0, or HKV_ENOMEM / HKV_EINVAL (bad arguments) and then cb is
 * never called.  end NULL = just key; revision 0 = the newest;
 * limit 0 = no limit. */
int etcd_range(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
               int64_t revision, int64_t limit, etcd_cb cb, void *arg);
int etcd_put(struct etcd *e, const char *key, size_t klen, const char *val, size_t vlen,
             int64_t lease, etcd_cb cb, void *arg);
int etcd_delete(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
                etcd_cb cb, void *arg);

/* At most 128 ops per branch (etcd's limit).  r->succeeded says which branch
 * ran; r->kvs holds the first RANGE op's answer of that branch. */
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok,
             size_t nok, const struct etcd_op *fail, size_t nfail, etcd_cb cb, void *arg);

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, etcd_cb cb, void *arg);
int etcd_lease_keepalive(struct etcd *e, int64_t id, etcd_cb cb, void *arg);
int etcd_lease_revoke(struct etcd *e, int64_t id, etcd_cb cb, void *arg);

/* Watch.  One stream on [key, end) from start_revision (0 = now), with
 * progress notifications.  Events with one mod_revision are one message.
 * ETCD_W_CANCELED carries compact_revision when the start was compacted
 * away: read everything at the current revision and watch again from it.
 * ETCD_W_BROKEN: the stream ended, failed or was idle past idle_timeout_ms;
 * it is over (no callback follows): start a new one from the last revision
 * seen + 1.  The caller frees the handle (etcd_watch_cancel) in any case,
 * from the callback or later.  ETCD_W_BROKEN with HKV_EINVAL: etcd refused
 * or cancelled the watch for another reason than compaction (permission).
 * For ETCD_W_EVENTS, `revision` is the events' mod_revision (one message per
 * revision), so "last revision seen" is always the last message's revision.
 * idle_timeout_ms <= 0: 15 s.  NULL on bad arguments or out of memory. */
struct etcd_watch *etcd_watch(struct etcd *e, const char *key, size_t klen, const char *end,
                              size_t elen, int64_t start_revision, int64_t idle_timeout_ms,
                              etcd_watch_cb cb, void *arg);
void etcd_watch_cancel(struct etcd_watch **w);

#endif

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

struct etcd_kv {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
    int64_t create_revision, mod_revision, version, lease;
};

/* status: HKV_OK; HKV_ETIMEDOUT; HKV_EIO (no connection, broken stream);
 * HKV_EPROTO (an answer that is not what etcd sends); HKV_EINVAL (etcd said
 * no: `code` and `message` are its gRPC code and text).  For the other
 * failures `message` (when not NULL) says why, for a log line ("connect
 * 10.0.0.1:2379: Connection refused", "TLS ...: certificate verify failed").
 * Keys and values are NUL-terminated (beyond their length) for convenience. */
struct etcd_result {
    int status;
    int code;
    const char *message;
    int64_t revision;              /* header.revision */
    /* range, and the first range of a txn's taken branch */
    const struct etcd_kv *kvs;
    size_t nkvs;
    int64_t count;
    int more;
    /* txn */
    int succeeded;
    /* lease grant / keepalive: ttl_s 0 after a keepalive = the lease is gone */
    int64_t lease_id;
    int64_t ttl_s;
    /* put / delete: prev_kv is not asked for; delete: how many went */
    int64_t deleted;
};
typedef void (*etcd_cb)(void *arg, const struct etcd_result *r);

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

/* The end of the range of every key starting with prefix (etcd's range_end
 * for a prefix), into out (room for plen bytes, at least 1); its length. */
size_t etcd_prefix_end(const char *prefix, size_t plen, char *out);

/* Unary calls: 0, or HKV_ENOMEM / HKV_EINVAL (bad arguments) and then cb is
 * never called.  end NULL = just key; revision 0 = the newest;
 * limit 0 = no limit. */
int etcd_range(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
               int64_t revision, int64_t limit, etcd_cb cb, void *arg);
int etcd_put(struct etcd *e, const char *key, size_t klen, const char *val, size_t vlen,
             int64_t lease, etcd_cb cb, void *arg);
int etcd_delete(struct etcd *e, const char *key, size_t klen, const char *end, size_t elen,
                etcd_cb cb, void *arg);

enum etcd_target { ETCD_MOD, ETCD_CREATE, ETCD_VERSION, ETCD_VALUE };
enum etcd_cmp_result { ETCD_EQUAL, ETCD_GREATER, ETCD_LESS, ETCD_NOT_EQUAL };
struct etcd_cmp {
    enum etcd_target target;
    enum etcd_cmp_result result;
    const char *key;
    size_t klen;
    int64_t n;                     /* MOD / CREATE / VERSION */
    const char *value;             /* VALUE */
    size_t vlen;
};
enum etcd_op_kind { ETCD_OP_PUT, ETCD_OP_DELETE, ETCD_OP_RANGE };
struct etcd_op {
    enum etcd_op_kind kind;
    const char *key;
    size_t klen;
    const char *end;               /* DELETE / RANGE: range end, NULL = just key */
    size_t elen;
    const char *value;             /* PUT */
    size_t vlen;
    int64_t lease;                 /* PUT: 0 = none */
};
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
enum etcd_ev_type { ETCD_EV_PUT, ETCD_EV_DELETE };
struct etcd_event {
    enum etcd_ev_type type;
    struct etcd_kv kv;
};
enum etcd_wkind { ETCD_W_CREATED, ETCD_W_EVENTS, ETCD_W_PROGRESS, ETCD_W_CANCELED,
                  ETCD_W_BROKEN };
struct etcd_watch_msg {
    enum etcd_wkind kind;
    int status;                    /* ETCD_W_BROKEN: why (HKV_EIO, HKV_ETIMEDOUT, HKV_EPROTO) */
    int64_t revision;              /* header.revision (EVENTS: their mod_revision) */
    int64_t compact_revision;
    const struct etcd_event *events;
    size_t nevents;
};
typedef void (*etcd_watch_cb)(void *arg, const struct etcd_watch_msg *m);
struct etcd_watch *etcd_watch(struct etcd *e, const char *key, size_t klen, const char *end,
                              size_t elen, int64_t start_revision, int64_t idle_timeout_ms,
                              etcd_watch_cb cb, void *arg);
void etcd_watch_cancel(struct etcd_watch **w);

#endif

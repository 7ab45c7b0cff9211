/*
 * etcd_types.h - the data of etcd's v3 calls as hotkvd speaks them: a key's
 * record, a call's result, a txn's compares and ops, a watch's events.  No
 * client, no loop: the codecs of proto/ (etcd_msg.h for the JSON gateway,
 * etcd_remote_msg.h for the local store's socket) and the agent's client
 * (server/agent/etcd.h) and local store (storage/) share these types, so a
 * result means the same whichever path produced it.
 *
 * Keys and values are bytes, NUL-terminated beyond their length for
 * convenience; every int64 (revisions, lease ids, TTLs) is exact.
 */
#ifndef HKV_ETCD_TYPES_H
#define HKV_ETCD_TYPES_H

#include <stddef.h>
#include <stdint.h>

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

#endif

/*
 * agent_sync.h - etcd calls that wait, for the command line tools only
 * (server/admin/admin.h): each call runs a private loop until its answer, which is
 * copied (keys, values, the txn's outcome) so it outlives the callback.
 * Never used in a daemon process once its loop runs: it blocks.  A call's wait is bounded by
 * the client's own deadline (etcd-timeout) and, whatever happens, by twice
 * that plus a second.
 */
#ifndef HKV_AGENT_SYNC_H
#define HKV_AGENT_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent/etcd.h"

struct sync_kv {
    char *key, *value;             /* NUL-terminated copies */
    size_t key_len, value_len;
    int64_t create_revision, mod_revision, lease;
};

struct sync_res {
    int status, code;
    char message[256];
    int64_t revision;
    int succeeded, more;
    struct sync_kv *kvs;
    size_t nkvs;
};

struct agent_sync;

/* A private loop and client with o (etcd.h; o->local_socket: a single
 * host's agent's store, etcd_remote.h).  NULL on failure. */
struct agent_sync *agent_sync_create(const struct etcd_opts *o);
/* The same over a client and loop the caller owns (and keeps: destroy
 * frees only the wrapper); guard_ms bounds each wait.  The agent uses it
 * once, before its loop runs, to make a local store's first map. */
struct agent_sync *agent_sync_wrap(struct event_base *base, struct etcd *e, int64_t guard_ms);
void agent_sync_destroy(struct agent_sync **s);
/* The client, to issue a call with agent_sync_cb / the sync as cb/arg;
 * then agent_sync_wait. */
struct etcd *agent_sync_etcd(struct agent_sync *s);
void agent_sync_cb(void *arg, const struct etcd_result *r);
/* Waits for the call's answer (into *out; free with agent_sync_free).
 * HKV_OK when etcd answered, else the failure (out->status too). */
int agent_sync_wait(struct agent_sync *s, struct sync_res *out);
void agent_sync_free(struct sync_res *r);

/* Every key under prefix, paged at one revision (into *out, appended). */
int agent_sync_read_all(struct agent_sync *s, const char *prefix, size_t plen,
                        struct sync_res *out);
/* "timed out", "no connection", or etcd's message. */
const char *agent_sync_why(const struct sync_res *r);

#endif

/*
 * agent_sync.c - blocking etcd calls for the command line tools; see
 * agent_sync.h.  One call at a time: the callback copies the answer and
 * breaks the private loop.  A guard timer ends the wait if the client's own
 * deadline never fires (it should): the tool then reports a timeout, and
 * agent_sync_destroy frees the client, after which no callback runs.
 */
#include "server/agent/agent_sync.h"

#include <stdlib.h>
#include <string.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/etcd_remote.h"
#include "storage/lstore.h"

#define PAGE 1000

struct agent_sync {
    struct event_base *base;
    struct etcd *etcd;
    int64_t guard_ms;
    int done;
    int borrowed;                  /* base and etcd are the caller's */
    char sock[4200];
    struct sync_res res;
};

struct agent_sync *agent_sync_create(const struct etcd_opts *opts)
{
    struct agent_sync *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    struct etcd_opts o = *opts;
    if (o.local_socket != NULL) { /* kept here: the client keeps the pointer */
        snprintf(s->sock, sizeof(s->sock), "%s", o.local_socket);
        o.local_socket = s->sock;
    }
    s->guard_ms = 2 * o.timeout_ms + 1000;
    s->base = event_base_new();
    if (s->base != NULL)
        s->etcd = etcd_create(s->base, &o);
    if (s->etcd == NULL) {
        agent_sync_destroy(&s);
        return NULL;
    }
    return s;
}

struct agent_sync *agent_sync_wrap(struct event_base *base, struct etcd *e, int64_t guard_ms)
{
    struct agent_sync *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->base = base;
    s->etcd = e;
    s->guard_ms = guard_ms;
    s->borrowed = 1;
    return s;
}

void agent_sync_destroy(struct agent_sync **sp)
{
    struct agent_sync *s = *sp;
    if (s == NULL)
        return;
    if (s->borrowed) {
        s->etcd = NULL;
        s->base = NULL;
    }
    if (s->etcd != NULL)
        etcd_destroy(&s->etcd);
    if (s->base != NULL)
        event_base_free(s->base);
    agent_sync_free(&s->res);
    free(s);
    *sp = NULL;
}

struct etcd *agent_sync_etcd(struct agent_sync *s)
{
    return s->etcd;
}

void agent_sync_free(struct sync_res *r)
{
    for (size_t i = 0; i < r->nkvs; i++) {
        free(r->kvs[i].key);
        free(r->kvs[i].value);
    }
    free(r->kvs);
    r->kvs = NULL;
    r->nkvs = 0;
}

/* Appends r's kvs to out; 0, or -1 (memory). */
static int take_kvs(struct sync_res *out, const struct etcd_result *r)
{
    if (r->nkvs == 0)
        return 0;
    struct sync_kv *kvs = realloc(out->kvs, (out->nkvs + r->nkvs) * sizeof(*kvs));
    if (kvs == NULL)
        return -1;
    out->kvs = kvs;
    for (size_t i = 0; i < r->nkvs; i++) {
        struct sync_kv *k = &out->kvs[out->nkvs];
        k->key = lstore_bytes_dup(r->kvs[i].key, r->kvs[i].key_len);
        k->value = lstore_bytes_dup(r->kvs[i].value, r->kvs[i].value_len);
        if (k->key == NULL || k->value == NULL) {
            free(k->key);
            free(k->value);
            return -1;
        }
        k->key_len = r->kvs[i].key_len;
        k->value_len = r->kvs[i].value_len;
        k->create_revision = r->kvs[i].create_revision;
        k->mod_revision = r->kvs[i].mod_revision;
        k->lease = r->kvs[i].lease;
        out->nkvs++;
    }
    return 0;
}

void agent_sync_cb(void *arg, const struct etcd_result *r)
{
    struct agent_sync *s = arg;
    struct sync_res *o = &s->res;
    o->status = r->status;
    o->code = r->code;
    snprintf(o->message, sizeof(o->message), "%s", r->message != NULL ? r->message : "");
    o->revision = r->revision;
    o->succeeded = r->succeeded;
    o->more = r->more;
    if (r->status == HKV_OK && take_kvs(o, r) != 0)
        o->status = HKV_ENOMEM;
    s->done = 1;
    event_base_loopbreak(s->base);
}

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
    struct agent_sync *s = arg;
    s->res.status = HKV_ETIMEDOUT;
    s->done = 1;
    event_base_loopbreak(s->base);
}

int agent_sync_wait(struct agent_sync *s, struct sync_res *out)
{
    struct event *guard = evtimer_new(s->base, on_guard, s);
    if (guard == NULL)
        return HKV_ENOMEM;
    struct timeval tv = {s->guard_ms / 1000, (s->guard_ms % 1000) * 1000};
    evtimer_add(guard, &tv);
    while (!s->done)
        if (event_base_loop(s->base, EVLOOP_ONCE) < 0)
            break;
    event_free(guard);
    if (!s->done)
        s->res.status = HKV_EIO;
    *out = s->res;
    memset(&s->res, 0, sizeof(s->res));
    s->done = 0;
    return out->status;
}

int agent_sync_read_all(struct agent_sync *s, const char *prefix, size_t plen,
                        struct sync_res *out)
{
    char end[512], next[512];
    size_t elen, nlen = 0;
    int64_t rev = 0;
    if (plen >= sizeof(end) || plen + 1 >= sizeof(next))
        return HKV_EINVAL;
    elen = etcd_prefix_end(prefix, plen, end);
    memset(out, 0, sizeof(*out));
    for (int page = 0; page < 100000; page++) {
        int rc = nlen == 0 ? etcd_range(s->etcd, prefix, plen, end, elen, 0, PAGE, agent_sync_cb, s)
                           : etcd_range(s->etcd, next, nlen, end, elen, rev, PAGE, agent_sync_cb, s);
        struct sync_res r;
        if (rc != HKV_OK)
            return out->status = rc;
        if (agent_sync_wait(s, &r) != HKV_OK) {
            snprintf(out->message, sizeof(out->message), "%s", agent_sync_why(&r));
            out->status = r.status;
            agent_sync_free(&r);
            return out->status;
        }
        if (rev == 0)
            rev = out->revision = r.revision;
        size_t first = out->nkvs;
        struct sync_kv *more = realloc(out->kvs, (out->nkvs + r.nkvs + 1) * sizeof(*more));
        if (more == NULL) {
            agent_sync_free(&r);
            return out->status = HKV_ENOMEM;
        }
        out->kvs = more;
        if (r.nkvs > 0) /* an empty page has no array to copy from */
            memcpy(out->kvs + first, r.kvs, r.nkvs * sizeof(*r.kvs));
        out->nkvs += r.nkvs;
        free(r.kvs); /* the strings moved to out */
        const struct sync_kv *last = out->nkvs > first ? &out->kvs[out->nkvs - 1] : NULL;
        if (!r.more || last == NULL || last->key_len + 1 >= sizeof(next))
            break;
        memcpy(next, last->key, last->key_len);
        next[last->key_len] = '\0';
        nlen = last->key_len + 1;
    }
    out->status = HKV_OK;
    return HKV_OK;
}

const char *agent_sync_why(const struct sync_res *r)
{
    switch (r->status) {
    case HKV_OK:
        return "ok";
    case HKV_ETIMEDOUT:
        return "etcd did not answer in time";
    case HKV_EIO:
        return "cannot connect to etcd";
    case HKV_EPROTO:
        return "the answer was not etcd's";
    case HKV_ENOMEM:
        return "out of memory";
    default:
        return r->message[0] ? r->message : "etcd refused the request";
    }
}

/*
 * etcd_loop.h - what the etcd client's integration suites (check_etcd.c,
 * check_etcd_net.c) share: the etcd under test (started by an unchecked
 * fixture, stopped by PID), an event loop per test, and synchronous wrappers
 * that wait for a callback with a bounded loop.  Static inline: each suite
 * is its own file and uses a part of it.
 */
#ifndef HKV_TEST_ETCD_LOOP_H
#define HKV_TEST_ETCD_LOOP_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/etcd.h"
#include "tests/harness.h"

static struct h_etcd etcd;
static int etcd_up;

static inline void etcd_setup(void)
{
    etcd_up = harness_etcd_available() && harness_etcd_start(&etcd, NULL) == 0;
}

static inline void etcd_teardown(void)
{
    if (etcd_up)
        harness_etcd_stop(&etcd);
    etcd_up = 0;
}

#define NEED_ETCD()                                                             \
    do {                                                                        \
        ck_assert_msg(harness_etcd_available(), "etcd-server/etcd-client not installed"); \
        ck_assert_msg(etcd_up, "etcd did not start");                           \
    } while (0)

/* ---- a loop and synchronous wrappers ---- */

struct got {
    int done;
    int status, code;
    char message[256];
    int64_t revision, count, lease_id, ttl_s, deleted;
    int more, succeeded;
    size_t nkvs;
    char keys[8][64], vals[8][64];
    int64_t mod[8];
};

static struct event_base *base;
static struct event *tick;

static inline void on_tick(evutil_socket_t fd, short what, void *arg)
{
}

static inline void loop_setup(void)
{
    base = event_base_new();
    tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 20000};
    event_add(tick, &tv);
}

static inline void loop_teardown(void)
{
    event_free(tick);
    event_base_free(base);
}

/* Runs the loop until *flag is set or ms passed; 1 if set. */
static inline int run_until(int *flag, int ms)
{
    int64_t end = h_now_ms() + ms;
    while (!*flag && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    return *flag;
}

static inline void on_result(void *arg, const struct etcd_result *r)
{
    struct got *g = arg;
    ck_assert_int_eq(g->done, 0); /* exactly once */
    memset(g, 0, sizeof(*g));
    g->done = 1;
    g->status = r->status;
    g->code = r->code;
    snprintf(g->message, sizeof(g->message), "%s", r->message != NULL ? r->message : "");
    g->revision = r->revision;
    g->count = r->count;
    g->more = r->more;
    g->succeeded = r->succeeded;
    g->lease_id = r->lease_id;
    g->ttl_s = r->ttl_s;
    g->deleted = r->deleted;
    g->nkvs = r->nkvs;
    for (size_t k = 0; k < r->nkvs && k < 8; k++) {
        snprintf(g->keys[k], 64, "%.*s", (int)r->kvs[k].key_len, r->kvs[k].key);
        snprintf(g->vals[k], 64, "%.*s", (int)r->kvs[k].value_len, r->kvs[k].value);
        g->mod[k] = r->kvs[k].mod_revision;
    }
}

static inline struct got wait_got(struct got *g, int ms)
{
    ck_assert_msg(run_until(&g->done, ms), "no answer within %d ms", ms);
    return *g;
}

static inline struct etcd *client(const char *const *eps, size_t n, const char *user, const char *pw,
                           const char *ca, int64_t timeout_ms)
{
    struct etcd_opts o = {(char *const *)eps, n, user, pw, ca, timeout_ms, 1 << 20, NULL, NULL};
    char err[256];
    ck_assert_msg(etcd_opts_check(&o, err, sizeof(err)) == HKV_OK, "%s", err);
    struct etcd *e = etcd_create(base, &o);
    ck_assert_ptr_nonnull(e);
    return e;
}

static inline struct etcd *local_client(void)
{
    const char *eps[] = {etcd.url};
    return client(eps, 1, NULL, NULL, NULL, 5000);
}

static inline struct got put(struct etcd *e, const char *k, const char *v, int64_t lease)
{
    struct got g = {0};
    ck_assert_int_eq(etcd_put(e, k, strlen(k), v, strlen(v), lease, on_result, &g), HKV_OK);
    ck_assert_int_eq(g.done, 0); /* never from inside the call */
    return wait_got(&g, 8000);
}

static inline struct got get(struct etcd *e, const char *k, const char *end)
{
    struct got g = {0};
    ck_assert_int_eq(etcd_range(e, k, strlen(k), end, end ? strlen(end) : 0, 0, 0, on_result, &g),
                     HKV_OK);
    return wait_got(&g, 8000);
}

/* ---- watches: every message recorded ---- */

#define WMAX 64

struct wrec {
    int n;
    int kind[WMAX], status[WMAX], nev[WMAX];
    int64_t rev[WMAX], compact[WMAX];
    char ev[WMAX][160];        /* "P:key=val D:key " */
    int created, events, progress, over;
    struct etcd_watch **cancel_on_created;
};

static inline void on_watch(void *arg, const struct etcd_watch_msg *m)
{
    struct wrec *w = arg;
    ck_assert_int_eq(w->over, 0); /* nothing after the end */
    ck_assert_int_lt(w->n, WMAX);
    int i = w->n++;
    w->kind[i] = m->kind;
    w->status[i] = m->status;
    w->rev[i] = m->revision;
    w->compact[i] = m->compact_revision;
    w->nev[i] = (int)m->nevents;
    size_t off = 0;
    w->ev[i][0] = '\0';
    for (size_t k = 0; k < m->nevents && off < sizeof(w->ev[i]); k++) {
        const struct etcd_kv *kv = &m->events[k].kv;
        ck_assert_int_eq(kv->mod_revision, m->revision); /* one revision per message */
        if (m->events[k].type == ETCD_EV_PUT)
            off += (size_t)snprintf(w->ev[i] + off, sizeof(w->ev[i]) - off, "P:%.*s=%.*s ",
                                    (int)kv->key_len, kv->key, (int)kv->value_len, kv->value);
        else
            off += (size_t)snprintf(w->ev[i] + off, sizeof(w->ev[i]) - off, "D:%.*s ",
                                    (int)kv->key_len, kv->key);
    }
    if (m->kind == ETCD_W_CREATED) {
        w->created = 1;
        if (w->cancel_on_created != NULL)
            etcd_watch_cancel(w->cancel_on_created);
    }
    w->events += m->kind == ETCD_W_EVENTS;
    w->progress += m->kind == ETCD_W_PROGRESS;
    if (m->kind == ETCD_W_CANCELED || m->kind == ETCD_W_BROKEN)
        w->over = 1;
}

static inline struct etcd_watch *watch_prefix(struct etcd *e, const char *prefix, int64_t start,
                                       int64_t idle_ms, struct wrec *w)
{
    static char end[64];
    size_t elen = etcd_prefix_end(prefix, strlen(prefix), end);
    struct etcd_watch *h =
        etcd_watch(e, prefix, strlen(prefix), end, elen, start, idle_ms, on_watch, w);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(w->n, 0); /* never from inside the call */
    return h;
}

#endif

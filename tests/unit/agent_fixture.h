/* agent_fixture.h - a minimal agent in the test's own process, for the
 * agent's unit suites that drive one of its modules (check_agent_ctl,
 * check_agent_leaf, check_agent_watch): a config of cluster c1, host h1 in a
 * temporary dir, the agent's options filled from it as agent.c fills them, a
 * real map segment, a loop the test runs, and the agent's etcd client over
 * the local store (the same calls as over etcd, in a file of that dir).  The
 * module under test, and anything else it needs (map, saver, lease), are the
 * suite's to add after af_start and to stop before af_stop.  af_put writes a
 * key of the cluster and waits for the store's answer.  Header-only:
 * each suite includes it once. */
#ifndef HKV_TEST_AGENT_FIXTURE_H
#define HKV_TEST_AGENT_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config/cfg.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_keys.h"
#include "server/core/cmap.h"
#include "tests/harness.h"

struct agent_fixture {
    char dir[256], store[320];
    struct event_base *base;
    struct worker_ctx ctx;        /* ctx.cfg, ctx.cmap: the fixture's */
    struct agent a;               /* a.ctx, a.base, a.opt, a.etcd set */
    struct cmap_table *t;         /* a table for the suite's maps, zeroed */
    int done, status;             /* af_on_sync's: the last call answered, its status */
};

static inline void af_start(struct agent_fixture *f)
{
    memset(f, 0, sizeof(*f));
    h_tmpdir(f->dir, sizeof(f->dir));
    snprintf(f->store, sizeof(f->store), "%s/store", f->dir);
    struct cfg *cfg = cfg_create();
    ck_assert_ptr_nonnull(cfg);
    free(cfg->dir);
    cfg->dir = strdup(f->dir);
    free(cfg->cluster);
    cfg->cluster = strdup("c1");
    free(cfg->host);
    cfg->host = strdup("h1");
    f->ctx.cfg = cfg;
    agent_opts_fill(&f->a.opt, cfg); /* what the agent's files read, as agent.c fills it */
    f->ctx.cmap = cmap_create();
    ck_assert_ptr_nonnull(f->ctx.cmap);
    f->base = event_base_new();
    ck_assert_ptr_nonnull(f->base);
    f->a.ctx = &f->ctx;
    f->a.base = f->base;
    struct etcd_opts o = {.local_path = f->store};
    f->a.etcd = etcd_create(f->base, &o);
    ck_assert_ptr_nonnull(f->a.etcd);
    f->t = calloc(1, sizeof(*f->t));
    ck_assert_ptr_nonnull(f->t);
}

/* Runs the loop until *done (at most 5 s; fails the test then). */
static inline void af_wait(struct agent_fixture *f, const int *done)
{
    for (int64_t end = h_now_ms() + 5000; !*done && h_now_ms() < end;)
        if (event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK) != 0 || !*done)
            h_sleep_ms(1); /* the store answers from its own thread's work */
    ck_assert(*done);
}

/* An etcd callback for calls whose answer is only a status (arg: the fixture). */
static inline void af_on_sync(void *arg, const struct etcd_result *r)
{
    struct agent_fixture *f = arg;
    f->status = r->status;
    f->done = 1;
}

/* Puts cluster c1's key_tail = val and waits until the store says it is done. */
static inline void af_put(struct agent_fixture *f, const char *key_tail, const char *val)
{
    char k[AGENT_KEY_MAX];
    int n = agent_key(k, sizeof(k), "c1", "%s", key_tail);
    ck_assert_int_gt(n, 0);
    f->done = 0;
    ck_assert_int_eq(etcd_put(f->a.etcd, k, (size_t)n, val, strlen(val), 0, af_on_sync, f), HKV_OK);
    af_wait(f, &f->done);
    ck_assert_int_eq(f->status, HKV_OK);
}

/* Frees what af_start made and removes the dir (the suite's modules first). */
static inline void af_stop(struct agent_fixture *f)
{
    etcd_destroy(&f->a.etcd);
    event_base_free(f->base);
    cmap_destroy(&f->ctx.cmap);
    cfg_destroy(&f->ctx.cfg);
    free(f->t);
    h_rmtree(f->dir);
}

#endif

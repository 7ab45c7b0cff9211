/*
 * owner.c - the shard owner process; see owner.h.
 */
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/log.h"

struct owner {
    struct worker_ctx *ctx;
    struct event_base *base;
    struct worker *worker;
};

void owner_socket_path(const struct cfg *cfg, enum cfg_pool pool, int index, char *buf, size_t len)
{
    snprintf(buf, len, "%s/owner-%s-%d.sock", cfg->dir, pool == CFG_POOL_HOT ? "hot" : "cold",
             index);
}

static void on_stop(void *arg, int fast)
{
    struct owner *o = arg;
    worker_quiesce(o->worker);
    event_base_loopexit(o->base, NULL);
}

static void on_reload(void *arg, const struct cfg *next)
{
}

int owner_main(struct worker_ctx *ctx)
{
    char title[64];
    snprintf(title, sizeof(title), "owner %s/%d", ctx->pool == CFG_POOL_HOT ? "hot" : "cold",
             ctx->index);
    if (worker_prepare(ctx, title) != 0)
        return 1;
    struct owner own = {.ctx = ctx};
    struct owner *o = &own;
    int code = 1;
    o->base = event_base_new();
    if (o->base == NULL)
        return 1;
    struct worker_hooks hooks = {on_reload, on_stop, o};
    o->worker = worker_create(ctx, o->base, &hooks);
    if (o->worker == NULL)
        goto out;
    worker_ready(o->worker);
    event_base_dispatch(o->base);
    code = 0;
out:
    worker_destroy(&o->worker);
    event_base_free(o->base);
    for (size_t i = 0; i < ctx->nowner_fds; i++)
        close(ctx->owner_fds[i]);
    cfg_destroy(&ctx->cfg);
    return code;
}

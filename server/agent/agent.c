/*
 * agent.c - the agent process; see agent.h (what it does) and agent_int.h
 * (how its files divide the work).
 *
 * Everything but the disk runs on one loop, driven by etcd's answers and a
 * tick (TICK_MS) that restarts whatever is due: the full read, the watch,
 * the registration, the keepalive.  The saved map is read once, before the
 * loop starts (the loop does not exist yet, so nothing waits on it); later
 * writes go through the saver thread.
 *
 * Stop: the watch goes, the lease is revoked (this host's members/,
 * hosts/ and writers/ keys vanish at once rather than a TTL later), bounded
 * by STOP_MS whatever etcd does, and the saver writes what is still waiting.
 */
#include "server/agent/agent.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/agent_ctl.h"
#include "server/agent/agent_init.h"
#include "server/agent/agent_promote.h"
#include "server/agent/agent_sync.h"
#include "server/agent/etcd_local.h"
#include "server/core/router.h"
#include "server/agent/agent_int.h"
#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/core/log.h"

#define TICK_MS 100
#define STOP_MS 1000
#define MAX_BODY (16u << 20)

static uint64_t new_incarnation(void)
{
    uint64_t v = 0;
    while (v == 0)
        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
            v = ((uint64_t)time(NULL) << 32) ^ ((uint64_t)getpid() << 8) ^ (uint64_t)clock();
    return v;
}

struct etcd_opts agent_etcd_opts(const struct cfg *cfg)
{
    return (struct etcd_opts){
        .endpoints = cfg->etcd_endpoints,
        .nendpoints = cfg->netcd_endpoints,
        .user = cfg->etcd_user,
        .password = cfg->etcd_password,
        .ca_file = cfg->etcd_ca_file,
        .timeout_ms = cfg->etcd_timeout_ms,
    };
}

struct agent_init_opts agent_init_opts_of(const struct cfg *cfg)
{
    return (struct agent_init_opts){
        .cluster = cfg->cluster,
        .host = cfg->host,
        .hot_owners = cfg->hot_owners,
        .cold_owners = cfg->cold_owners,
        .endpoint = cfg->netcd_endpoints ? cfg->etcd_endpoints[0] : "no etcd-endpoints",
    };
}

static struct etcd_opts opts_of(const struct agent *a, const struct cfg *cfg)
{
    struct etcd_opts o = agent_etcd_opts(cfg);
    o.local_path = a->store_path[0] != '\0' ? a->store_path : NULL;
    o.max_body = MAX_BODY;
    return o;
}

void agent_opts_fill(struct agent_opts *o, const struct cfg *cfg)
{
    *o = (struct agent_opts){
        .cluster = cfg->cluster,
        .host = cfg->host,
        .dir = cfg->dir,
        .advertise_addr = cfg->advertise_addr,
        .hot_owners = cfg->hot_owners,
        .cold_owners = cfg->cold_owners,
        .edge_workers = cfg->edge_workers,
        .edge_slot0 = worker_edge_slot(cfg, 0, 0),
        .owner_port = cfg->owner_port,
        .etcd_lease_ttl_ms = cfg->etcd_lease_ttl_ms,
        .replicas = cfg->replicas,
        .zone = cfg->zone != NULL ? cfg->zone : "",
        .local_map = cfg_local_map(cfg),
        .auto_moves = cfg->auto_moves,
        .move_busy_threshold = cfg->move_busy_threshold,
        .move_split_min_share = cfg->move_split_min_share,
        .move_hot_key_share = cfg->move_hot_key_share,
        .move_window_ms = cfg->move_window_ms,
        .move_cooldown_leaf_ms = cfg->move_cooldown_leaf_ms,
        .move_cooldown_owner_ms = cfg->move_cooldown_owner_ms,
    };
    topo_agent_socket(cfg, o->ctl_socket, sizeof(o->ctl_socket));
}

/* ---- the saved map, before the loop ------------------------------------------- */

static void load_saved(struct agent *a, const char *map_path, const char *state_path)
{
    const struct cfg *cfg = a->ctx->cfg;
    struct agent_state st;
    int have_state = agent_state_load(state_path, &st) == HKV_OK && strcmp(st.host, cfg->host) == 0;
    if (have_state && a->h.lease_id == 0)
        a->h.lease_id = st.lease_id; /* taken over if etcd still keeps it */
    if (cmap_revision(a->ctx->cmap) != 0)
        return; /* a restarted agent: the segment is newer than any file */
    int rc = cmap_load(a->scratch, map_path);
    if (rc == HKV_ENOENT)
        return;
    if (rc != HKV_OK) {
        log_warning("saved cluster map %s not used: %s", map_path, hkv_strstatus(rc));
        return;
    }
    if (cmap_publish(a->ctx->cmap, a->scratch) != HKV_OK)
        return;
    a->h.from_disk = 1;
    if (have_state && a->h.host_number == 0 && st.host_number != 0)
        a->h.host_number = st.host_number;
    log_notice("cluster map revision %lld read from %s (host number %u); etcd is asked next",
               (long long)a->scratch->revision, map_path, a->h.host_number);
}

/* ---- the loop ----------------------------------------------------------------- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct agent *a = arg;
    int64_t now = clock_mono_ms();
    if (!a->stopping && etcd_store_failed(a->etcd)) {
        /* Poisoned for good in this process (a failed fsync cannot be
         * retried safely): left as it was, the host could move no leaf and
         * take no follower out of an in-sync set until a restart by hand,
         * and a lagging follower would fail writes all that time. */
        log_warning("the leaf map store %s failed a write; exiting so the master restarts "
                    "the agent from its file (the host routes with the map it has)",
                    a->store_path);
        a->stopping = 1;
        a->exit_code = 1;
        event_del(a->tick);
        event_base_loopexit(a->base, NULL);
        return;
    }
    agent_watch_tick(a, now);
    agent_reg_tick(a, now);
    agent_ctl_tick(a->ctl, now);
    agent_promote_tick(a->promote, now);
    int last;
    uint64_t n = agent_saver_failures(a->saver, &last);
    if (n > 0)
        log_warning("could not save the cluster map or the agent state in %s (%llu failures, "
                    "last: %s); the map in memory is unaffected", a->ctx->cfg->dir,
                    (unsigned long long)n, hkv_strstatus(last));
}

static void on_reload(void *arg, const struct cfg *next)
{
    struct agent *a = arg;
    agent_opts_fill(&a->opt, next);
    struct etcd_opts o = opts_of(a, next);
    if (etcd_set_opts(a->etcd, &o) != HKV_OK)
        log_warning("etcd settings not applied; the previous ones stay");
}

/* CTL_OWNER_DIED (server/core/ctl.h): u8 pool, u32 big-endian index. */
static void on_message(void *arg, uint8_t type, const char *payload, size_t len)
{
    struct agent *a = arg;
    const unsigned char *p = (const unsigned char *)payload;
    if (type != CTL_OWNER_DIED || len != 5 || a->stopping)
        return;
    uint32_t index = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    if (p[0] < CMAP_NPOOLS && index <= INT32_MAX)
        agent_promote_owner_died(a->promote, p[0], (int)index);
}

static void stop_now(void *arg)
{
    struct agent *a = arg;
    event_base_loopexit(a->base, NULL);
}

static void on_stop_timeout(evutil_socket_t fd, short what, void *arg)
{
    stop_now(arg);
}

static void on_stop(void *arg, int fast)
{
    struct agent *a = arg;
    if (a->stopping)
        return;
    a->stopping = 1;
    worker_quiesce(a->w);
    event_del(a->tick);
    agent_watch_stop(a);
    if (!agent_reg_revoke(a, stop_now, a)) {
        stop_now(a);
        return;
    }
    int64_t ms = fast ? STOP_MS / 3 : STOP_MS;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_once(a->base, -1, EV_TIMEOUT, on_stop_timeout, a, &tv);
}

/* A single host with leaf-moves: the store's map made at the first start,
 * as --cluster-init makes it for this host's owners, with the fixed map's
 * leaves (ROUTER_LEAF_BITS): init deals leaf i to the pool's i % n-th owner
 * number, and numbers go to hot/0.., cold/0.. in order, so every leaf is at
 * the owner router.c's fixed map gives it and a dir that ran without
 * leaf-moves keeps every key where it is (with fewer bits a leaf would span
 * prefixes of several owners).  Before the loop runs: the waits below run it
 * themselves.  0, or -1 (logged). */
static int init_local(struct agent *a)
{
    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    FILE *fo = open_memstream(&out, &olen), *fe = open_memstream(&err, &elen);
    struct agent_sync *s = agent_sync_wrap(a->base, a->etcd, 10000);
    struct agent_init_opts io = agent_init_opts_of(a->ctx->cfg);
    int code = 1;
    if (fo != NULL && fe != NULL && s != NULL)
        code = agent_cluster_init_with(s, &io, NULL, ROUTER_LEAF_BITS, fo, fe);
    agent_sync_destroy(&s);
    if (fo != NULL)
        fclose(fo);
    if (fe != NULL)
        fclose(fe);
    if (code == 0 && out != NULL && strstr(out, "already initialised") == NULL)
        log_notice("leaf map made in %s: %s", a->store_path, out);
    else if (code != 0)
        log_warning("cannot make the leaf map in %s: %s", a->store_path,
                    err != NULL && err[0] ? err : "out of memory");
    free(out);
    free(err);
    return code == 0 ? 0 : -1;
}

static int setup(struct agent *a, struct worker_ctx *ctx, char *map_path, char *state_path,
                 size_t len)
{
    const struct cfg *cfg = ctx->cfg;
    a->ctx = ctx;
    agent_opts_fill(&a->opt, cfg);
    a->incarnation = new_incarnation();
    a->nowners = cfg->hot_owners + cfg->cold_owners;
    a->nedges = cfg->colos * cfg->edge_workers;
    if (a->nowners + a->nedges > AGENT_MAX_LOCAL) {
        log_warning("cannot start: %d owners and edges on one host, at most %d in a cluster",
                    a->nowners + a->nedges, AGENT_MAX_LOCAL);
        return -1;
    }
    int n = agent_key(a->prefix, sizeof(a->prefix), cfg->cluster, "%s", "");
    if (n < 0)
        return -1;
    a->plen = (size_t)n;
    a->elen = etcd_prefix_end(a->prefix, a->plen, a->prefix_end);
    snprintf(map_path, len, "%s/%s", cfg->dir, AGENT_MAP_FILE);
    if (cfg_local_map(cfg))
        snprintf(a->store_path, sizeof(a->store_path), "%s/%s", cfg->dir, ETCD_LOCAL_FILE);
    snprintf(state_path, len, "%s/%s", cfg->dir, AGENT_STATE_FILE);
    a->base = event_base_new();
    a->map = agent_map_create(cfg->cluster);
    a->scratch = calloc(1, sizeof(*a->scratch));
    if (a->base == NULL || a->map == NULL || a->scratch == NULL)
        return -1;
    cmap_health_get(ctx->cmap, &a->h); /* a restarted agent goes on from there */
    a->fresh_start = cmap_revision(ctx->cmap) == 0;
    a->h.etcd_up = 0;
    load_saved(a, map_path, state_path);
    agent_health_push(a);
    a->reading = 1;
    a->tick = event_new(a->base, -1, EV_PERSIST, on_tick, a);
    struct etcd_opts o = opts_of(a, cfg);
    a->etcd = etcd_create(a->base, &o);
    if (a->tick == NULL || a->etcd == NULL)
        return -1;
    if (a->store_path[0] != '\0' && init_local(a) != 0)
        return -1;
    a->promote = agent_promote_create(a);
    if (a->promote == NULL)
        return -1;
    if (a->store_path[0] != '\0')
        agent_promote_clear_local(a); /* logged; a failure leaves restarted owners waiting */
    return 0;
}

int agent_main(struct worker_ctx *ctx)
{
    if (worker_prepare(ctx, "agent") != 0)
        return 1;
    struct agent *a = calloc(1, sizeof(*a));
    char map_path[TOPO_PATH_MAX], state_path[TOPO_PATH_MAX];
    int code = 1;
    if (a == NULL)
        goto out;
    if (setup(a, ctx, map_path, state_path, sizeof(map_path)) != 0) {
        log_warning("agent: cannot start (out of memory or a bad setting)");
        goto out;
    }
    struct worker_hooks hooks = {.reload = on_reload, .stop = on_stop, .arg = a};
    a->w = worker_create(ctx, a->base, &hooks);
    if (a->w != NULL)
        worker_on_message(a->w, on_message, a);
    a->saver = a->w != NULL ? agent_saver_start(map_path, state_path) : NULL;
    if (a->saver == NULL)
        goto out;
    a->ctl = agent_ctl_start(a); /* NULL: logged; the host serves, moves nothing */
    if (a->store_path[0] != '\0') {
        char sock[TOPO_PATH_MAX + 32], why[256];
        snprintf(sock, sizeof(sock), "%s/%s", ctx->cfg->dir, ETCD_REMOTE_SOCKET);
        a->rserver = etcd_remote_serve(a->base, a->etcd, sock, why, sizeof(why));
        if (a->rserver == NULL)
            log_warning("agent: hotkvd-admin cannot reach the leaf map (%s): %s", sock, why);
    }
    struct timeval tv = {0, TICK_MS * 1000};
    event_add(a->tick, &tv);
    log_verbose("agent for cluster %s, host %s: %d owner(s), %d edge(s), etcd %s%s", ctx->cfg->cluster,
                ctx->cfg->host, a->nowners, a->nedges, etcd_endpoint(a->etcd),
                ctx->cfg->netcd_endpoints > 1 && a->store_path[0] == '\0' ? " ..." : "");
    worker_ready(a->w);
    on_tick(-1, 0, a);
    event_base_dispatch(a->base);
    code = a->exit_code;
out:
    if (a != NULL) {
        agent_watch_stop(a);
        etcd_remote_serve_stop(&a->rserver);
        if (a->etcd != NULL)
            etcd_destroy(&a->etcd); /* no etcd callback runs after this */
        agent_ctl_stop(&a->ctl);
        agent_promote_destroy(&a->promote);
        agent_saver_stop(&a->saver);
        if (a->tick != NULL)
            event_free(a->tick);
        worker_destroy(&a->w);
        agent_map_destroy(&a->map);
        free(a->scratch);
        if (a->base != NULL)
            event_base_free(a->base);
        free(a);
    }
    cfg_destroy(&ctx->cfg);
    return code;
}

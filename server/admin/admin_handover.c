/*
 * admin_handover.c - `hotkvd-admin CONFIG leaf failover POOL LEAF [--wait MS]`
 * and `hotkvd-admin CONFIG host drain HOST [--wait MS]` (admin.h): planned
 * hand-overs of leaves to their in-sync followers (CLUSTER.md §7), for a
 * rolling restart or upgrade.
 *
 * As with `leaf move`, the protocol is not the tool's: it puts
 * requests/move/<pool>/<leaf> {"handover":true,"to":0} (agent_handover.h),
 * the primary's agent hands it to the primary, which fences the leaf's
 * writes, waits for a follower to hold the tail, runs the CAS and deletes
 * the request when it ended.  The tool waits for that, then reads the leaf:
 * handed over when another owner serves it.  It prints how long the request
 * took (from the put to the request's end: an upper bound of the write
 * pause, which the owner keeps as INFO repl_handover_ms_last/_max).  A drain
 * takes the leaves whose primary is an owner of HOST at one revision and
 * hands them over one after another (a leaf with no in-sync follower stays:
 * reported, and the exit status says so).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/admin/admin.h"
#include "server/agent/agent_handover.h"
#include "server/agent/agent_map.h"
#include "server/agent/agent_sync.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define DRAIN_WAIT_MS 10000          /* per leaf, when --wait is not given */
#define DRAIN_MAX 4096               /* leaves one drain takes */
#define DRAIN_WINDOW 8               /* requests out at once (each primary takes its own in turn) */

/* The whole map at one revision (a fresh agent_map each time). */
static int read_map(struct agent_sync *s, const struct cfg *cfg, struct agent_map **m,
                    struct sync_res *r, const struct cmap_table **t, FILE *err)
{
    char prefix[AGENT_KEY_MAX], why[256];
    agent_sync_free(r);
    agent_map_destroy(m);
    *m = agent_map_create(cfg->cluster);
    int plen = agent_key(prefix, sizeof(prefix), cfg->cluster, "%s", "");
    if (*m == NULL || plen < 0 || agent_sync_read_all(s, prefix, (size_t)plen, r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s\n", *m == NULL ? "out of memory" : agent_sync_why(r));
        return -1;
    }
    for (size_t i = 0; i < r->nkvs; i++)
        agent_map_apply(*m, r->kvs[i].key, r->kvs[i].key_len, r->kvs[i].value,
                        r->kvs[i].value_len, r->kvs[i].mod_revision);
    if (agent_map_commit(*m, r->revision, t, why, sizeof(why)) != HKV_OK)
        fprintf(err, "hotkvd-admin: warning: the map does not validate: %s\n", why);
    return 0;
}

static const struct cmap_leaf *find(const struct cmap_table *t, int pool, uint32_t start, int bits)
{
    const struct cmap_leaf *l = cmap_lookup(t, (enum cfg_pool)pool, (uint64_t)start << 32);
    return l != NULL && l->start == start && l->bits == bits ? l : NULL;
}

static void leaf_name(char *buf, size_t cap, int pool, uint32_t start, int bits)
{
    snprintf(buf, cap, "%s %d-%08x", topo_pool_name((enum cfg_pool)pool), bits,
             bits ? start >> (32 - bits) : 0);
}

/* One leaf asked for, then waited for. */
struct dleaf {
    int pool, bits;
    uint32_t start;
    unsigned from;                   /* its primary when asked */
    char key[AGENT_KEY_MAX];
    size_t klen;
    int64_t t0;                      /* 0: not asked yet */
    int ended;                       /* its request is gone (or timed out: 2) */
};

/* Puts the leaf's request: 0, or 1 (etcd). */
static int ask(struct agent_sync *s, const struct cfg *cfg, struct dleaf *d, FILE *err)
{
    char val[64];
    struct sync_res r = {0};
    int klen = agent_leaf_key(d->key, sizeof(d->key), cfg->cluster, "requests/move", d->pool,
                              d->start, d->bits);
    int vlen = agent_val_handover(val, sizeof(val), 0);
    int rc = klen < 0 || vlen < 0 ||
             etcd_put(agent_sync_etcd(s), d->key, (size_t)klen, val, (size_t)vlen, 0,
                      agent_sync_cb, s) != HKV_OK || agent_sync_wait(s, &r) != HKV_OK;
    if (rc)
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
    d->klen = klen < 0 ? 0 : (size_t)klen;
    d->t0 = clock_mono_ms();
    agent_sync_free(&r);
    return rc;
}

/* 1 when the leaf's request is gone (the primary ended it), 0 not yet, -1 etcd. */
static int gone(struct agent_sync *s, const struct dleaf *d, FILE *err)
{
    struct sync_res r = {0};
    int rc = etcd_range(agent_sync_etcd(s), d->key, d->klen, NULL, 0, 0, 0, agent_sync_cb, s) !=
                     HKV_OK || agent_sync_wait(s, &r) != HKV_OK ? -1 : r.nkvs == 0;
    if (rc < 0)
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
    agent_sync_free(&r);
    return rc;
}

/* The leaf as it ended: 0 handed over, 2 not. */
static int report(const struct cmap_table *t, const struct dleaf *d, int64_t ms, FILE *out)
{
    char name[48];
    leaf_name(name, sizeof(name), d->pool, d->start, d->bits);
    const struct cmap_leaf *l = find(t, d->pool, d->start, d->bits);
    if (l != NULL && l->owner != d->from && l->state == CMAP_SERVING) {
        fprintf(out, "leaf %s owner %u -> %u epoch %" PRId64 " in %lld ms (request to end; the "
                "write pause is INFO repl_handover_ms_last)\n", name, d->from, l->owner,
                l->epoch, (long long)ms);
        return 0;
    }
    if (d->ended == 2)
        fprintf(out, "leaf %s owner %u: not handed over within %lld ms\n", name, d->from,
                (long long)ms);
    else
        fprintf(out, "leaf %s owner %u: not handed over (no live in-sync follower, or the fence "
                "timed out: the owner's log says why)\n", name, d->from);
    return 2;
}

/* Hands leaves d[0..n) over, `window` asked at a time (the primaries take
 * theirs in turn); each waits at most wait_ms.  Counts into *moved. */
static int run(struct agent_sync *s, const struct cfg *cfg, struct dleaf *d, size_t n,
               size_t window, int64_t wait_ms, size_t *moved, FILE *out, FILE *err)
{
    struct agent_map *m = NULL;
    struct sync_res r = {0};
    const struct cmap_table *t;
    size_t next = 0, ended = 0;
    int code = 0;
    while (ended < n) {
        size_t out_now = 0;
        for (size_t i = 0; i < next; i++)
            out_now += !d[i].ended;
        while (next < n && out_now < window) {
            if (ask(s, cfg, &d[next++], err) != 0) {
                code = 1;
                goto done;
            }
            out_now++;
        }
        int any = 0;
        for (size_t i = 0; i < next; i++) {
            if (d[i].ended)
                continue;
            int g = gone(s, &d[i], err);
            if (g < 0) {
                code = 1;
                goto done;
            }
            if (g || clock_mono_ms() - d[i].t0 >= wait_ms) {
                d[i].ended = g ? 1 : 2;
                any = 1;
            }
        }
        if (!any) {
            usleep(20 * 1000);
            continue;
        }
        if (read_map(s, cfg, &m, &r, &t, err) != 0) {
            code = 1;
            goto done;
        }
        for (size_t i = 0; i < next; i++)
            if (d[i].ended && d[i].t0 != 0) {
                int rc = report(t, &d[i], clock_mono_ms() - d[i].t0, out);
                *moved += rc == 0;
                code = rc != 0 ? 2 : code;
                d[i].t0 = 0; /* reported */
                ended++;
            }
    }
done:
    agent_sync_free(&r);
    agent_map_destroy(&m);
    return code;
}

static int64_t wait_arg(int argc, char **argv, int at, int64_t dflt)
{
    return argc == at + 2 && strcmp(argv[at], "--wait") == 0 ? strtoll(argv[at + 1], NULL, 10)
                                                             : dflt;
}

int admin_failover(const struct cfg *cfg, int pool, uint32_t start, int bits, int argc,
                   char **argv, FILE *out, FILE *err)
{
    struct agent_sync *s = admin_sync_create(cfg);
    if (s == NULL) {
        fprintf(err, "hotkvd-admin: out of memory\n");
        return 1;
    }
    struct agent_map *m = NULL;
    struct sync_res r = {0};
    const struct cmap_table *t;
    struct dleaf d = {.pool = pool, .bits = bits, .start = start};
    int64_t wait_ms = wait_arg(argc, argv, 3, 0);
    size_t moved = 0;
    char name[48];
    int code = 1;
    leaf_name(name, sizeof(name), pool, start, bits);
    if (read_map(s, cfg, &m, &r, &t, err) == 0) {
        const struct cmap_leaf *l = find(t, pool, start, bits);
        if (l == NULL) {
            fprintf(err, "hotkvd-admin: no such leaf %s (leaf list shows them)\n", name);
        } else if (wait_ms <= 0) {
            d.from = l->owner;
            code = ask(s, cfg, &d, err);
            if (code == 0)
                fprintf(out, "asked owner %u to hand %s to an in-sync follower\n", d.from, name);
        } else {
            d.from = l->owner;
            code = run(s, cfg, &d, 1, 1, wait_ms, &moved, out, err);
        }
    }
    agent_sync_free(&r);
    agent_map_destroy(&m);
    agent_sync_destroy(&s);
    return code;
}

int admin_host(const struct cfg *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    if ((argc != 2 && argc != 4) || strcmp(argv[0], "drain") != 0 ||
        (argc == 4 && wait_arg(argc, argv, 2, 0) <= 0)) {
        fprintf(err, "hotkvd-admin: host drain HOST [--wait MS]\n");
        return 1;
    }
    int64_t wait_ms = wait_arg(argc, argv, 2, DRAIN_WAIT_MS);
    struct agent_sync *s = admin_sync_create(cfg);
    struct agent_map *m = NULL;
    struct sync_res r = {0};
    const struct cmap_table *t;
    struct dleaf *list = calloc(DRAIN_MAX, sizeof(*list));
    size_t n = 0, moved = 0;
    int code = 1;
    if (s == NULL || list == NULL) {
        fprintf(err, "hotkvd-admin: out of memory\n");
        goto out;
    }
    if (read_map(s, cfg, &m, &r, &t, err) != 0)
        goto out;
    size_t alone = 0;
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < t->nleaves[p] && n < DRAIN_MAX; i++) {
            const struct cmap_leaf *l = &t->leaves[p][i];
            const struct cmap_owner *o = cmap_owner(t, l->owner);
            if (o == NULL || strcmp(o->host, argv[1]) != 0 || l->state != CMAP_SERVING)
                continue;
            if (l->nisr == 0)
                alone++; /* no follower to hand it to: it stays, and is down while HOST restarts */
            else
                list[n++] = (struct dleaf){.pool = p, .bits = l->bits, .start = l->start,
                                           .from = l->owner};
        }
    fprintf(out, "draining host %s: %zu leaves with in-sync followers, %zu without (they stay)\n",
            argv[1], n, alone);
    code = run(s, cfg, list, n, DRAIN_WINDOW, wait_ms, &moved, out, err);
    if (code != 1)
        fprintf(out, "host %s: %zu leaves handed over, %zu not, %zu without followers\n", argv[1],
                moved, n - moved, alone);
    if (code == 0 && alone > 0)
        code = 2;
out:
    free(list);
    agent_sync_free(&r);
    agent_map_destroy(&m);
    agent_sync_destroy(&s);
    return code;
}

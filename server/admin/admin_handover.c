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

/* One leaf: 0 handed over, 2 not (or not known within wait_ms), 1 etcd. */
static int one(struct agent_sync *s, const struct cfg *cfg, int pool, uint32_t start, int bits,
               int64_t wait_ms, FILE *out, FILE *err)
{
    struct agent_map *m = NULL;
    struct sync_res r = {0};
    const struct cmap_table *t;
    char key[AGENT_KEY_MAX], val[64], name[48];
    int code = 1;
    snprintf(name, sizeof(name), "%s %d-%08x", topo_pool_name((enum cfg_pool)pool), bits,
             bits ? start >> (32 - bits) : 0);
    if (read_map(s, cfg, &m, &r, &t, err) != 0)
        goto out;
    const struct cmap_leaf *l = find(t, pool, start, bits);
    if (l == NULL) {
        fprintf(err, "hotkvd-admin: no such leaf %s (leaf list shows them)\n", name);
        goto out;
    }
    unsigned from = l->owner;
    int klen = agent_leaf_key(key, sizeof(key), cfg->cluster, "requests/move", pool, start, bits);
    int vlen = agent_val_handover(val, sizeof(val), 0);
    int64_t t0 = clock_mono_ms();
    agent_sync_free(&r);
    if (klen < 0 || vlen < 0 ||
        etcd_put(agent_sync_etcd(s), key, (size_t)klen, val, (size_t)vlen, 0, agent_sync_cb, s) !=
            HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
        goto out;
    }
    if (wait_ms <= 0) {
        fprintf(out, "asked owner %u to hand %s to an in-sync follower\n", from, name);
        code = 0;
        goto out;
    }
    code = 2;
    while (clock_mono_ms() - t0 < wait_ms) {
        agent_sync_free(&r);
        if (etcd_range(agent_sync_etcd(s), key, (size_t)klen, NULL, 0, 0, 0, agent_sync_cb, s) !=
                HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
            fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
            code = 1;
            goto out;
        }
        if (r.nkvs == 0)
            break; /* the primary ended it */
        usleep(20 * 1000);
    }
    int64_t ms = clock_mono_ms() - t0;
    if (read_map(s, cfg, &m, &r, &t, err) != 0) {
        code = 1;
        goto out;
    }
    l = find(t, pool, start, bits);
    if (l != NULL && l->owner != from && l->state == CMAP_SERVING) {
        fprintf(out, "leaf %s owner %u -> %u epoch %" PRId64 " in %lld ms (request to end; "
                "the write pause is INFO repl_handover_ms_last)\n", name, from, l->owner,
                l->epoch, (long long)ms);
        code = 0;
    } else if (ms >= wait_ms) {
        fprintf(out, "leaf %s owner %u: not handed over within %lld ms\n", name, from,
                (long long)wait_ms);
    } else {
        fprintf(out, "leaf %s owner %u: not handed over (no in-sync follower, or the fence "
                "timed out: the owner's log says why)\n", name, from);
    }
out:
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
    int code = one(s, cfg, pool, start, bits, wait_arg(argc, argv, 3, 0), out, err);
    agent_sync_destroy(&s);
    return code;
}

struct dleaf { int pool; uint32_t start; int bits; };

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
    size_t n = 0, moved = 0, failed = 0;
    int code = 1;
    if (s == NULL || list == NULL) {
        fprintf(err, "hotkvd-admin: out of memory\n");
        goto out;
    }
    if (read_map(s, cfg, &m, &r, &t, err) != 0)
        goto out;
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < t->nleaves[p] && n < DRAIN_MAX; i++) {
            const struct cmap_leaf *l = &t->leaves[p][i];
            const struct cmap_owner *o = cmap_owner(t, l->owner);
            if (o != NULL && strcmp(o->host, argv[1]) == 0 && l->state == CMAP_SERVING)
                list[n++] = (struct dleaf){p, l->start, l->bits};
        }
    fprintf(out, "draining host %s: %zu leaves\n", argv[1], n);
    for (size_t i = 0; i < n; i++) {
        int rc = one(s, cfg, list[i].pool, list[i].start, list[i].bits, wait_ms, out, err);
        if (rc == 1)
            goto out;
        moved += rc == 0;
        failed += rc != 0;
    }
    fprintf(out, "host %s: %zu leaves handed over, %zu not\n", argv[1], moved, failed);
    code = failed == 0 ? 0 : 2;
out:
    free(list);
    agent_sync_free(&r);
    agent_map_destroy(&m);
    agent_sync_destroy(&s);
    return code;
}

/*
 * admin_leaf.c - `hotkvd-admin CONFIG leaf list|split|move` (admin.h).
 *
 * A split is metadata only, so the tool does it itself: it reads the leaf,
 * and runs the split txn (agent_txn.h) against the epoch it read; a lost
 * race says what the leaf is now.  A move is not the tool's to run (it is
 * the source owner's protocol, CLUSTER.md §5): the tool puts
 * requests/move/<pool>/<leaf> {"to":T} and the source host's agent hands it
 * to the owner, which deletes the request when the move ended (committed or
 * aborted); with --wait the tool waits for that and prints the leaf as it
 * ended.  `leaf list` is one read at one revision through the agents' own
 * map code, so it shows what every agent routes from.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/admin/admin.h"
#include "server/agent/agent_map.h"
#include "server/agent/agent_sync.h"
#include "server/agent/agent_txn.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

static int pool_arg(const char *s)
{
    return strcmp(s, "hot") == 0 ? CFG_POOL_HOT : strcmp(s, "cold") == 0 ? CFG_POOL_COLD : -1;
}

static const char *state_name(int s) { return s == CMAP_MOVING ? "moving" : "serving"; }

/* The whole cluster at one revision, as a table (valid or not: shown). */
static int read_table(struct agent_sync *s, const struct cfg *cfg, struct agent_map *m,
                      struct sync_res *r, const struct cmap_table **t, FILE *err)
{
    char prefix[AGENT_KEY_MAX], why[256];
    int plen = agent_key(prefix, sizeof(prefix), cfg->cluster, "%s", "");
    if (plen < 0 || agent_sync_read_all(s, prefix, (size_t)plen, r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(r));
        return -1;
    }
    for (size_t i = 0; i < r->nkvs; i++)
        agent_map_apply(m, r->kvs[i].key, r->kvs[i].key_len, r->kvs[i].value,
                        r->kvs[i].value_len, r->kvs[i].mod_revision);
    if (agent_map_commit(m, r->revision, t, why, sizeof(why)) != HKV_OK)
        fprintf(err, "hotkvd-admin: warning: the map does not validate: %s\n", why);
    return 0;
}

static int leaf_list(struct agent_sync *s, const struct cfg *cfg, FILE *out, FILE *err)
{
    struct agent_map *m = agent_map_create(cfg->cluster);
    struct sync_res r = {0};
    const struct cmap_table *t;
    int code = 1;
    if (m != NULL && read_table(s, cfg, m, &r, &t, err) == 0) {
        fprintf(out, "revision %" PRId64 "\n", r.revision);
        for (int p = 0; p < CMAP_NPOOLS; p++)
            for (uint32_t i = 0; i < t->nleaves[p]; i++) {
                const struct cmap_leaf *l = &t->leaves[p][i];
                uint32_t prefix = l->bits ? l->start >> (32 - l->bits) : 0;
                const struct cmap_owner *o = cmap_owner(t, l->owner);
                fprintf(out, "leaf %s %u-%08x owner %u %s state %s", topo_pool_name((enum cfg_pool)p),
                        l->bits, prefix, l->owner, o != NULL ? o->id : "?", state_name(l->state));
                if (l->state == CMAP_MOVING)
                    fprintf(out, " to %u", l->to);
                fprintf(out, " epoch %" PRId64, l->epoch);
                for (unsigned k = 0; k < l->nisr && k < CMAP_MAX_ISR; k++)
                    fprintf(out, "%s%u", k == 0 ? " isr " : ",", l->isr[k]);
                fprintf(out, "\n");
            }
        code = 0;
    }
    agent_sync_free(&r);
    agent_map_destroy(&m);
    return code;
}

/* map/L now: 1 found (owner, state, to, mod), 0 absent, -1 no answer. */
static int read_leaf(struct agent_sync *s, const struct cfg *cfg, int pool, uint32_t start,
                     int bits, unsigned *owner, int *state, unsigned *to, int64_t *mod, FILE *err)
{
    char key[AGENT_KEY_MAX];
    struct sync_res r = {0};
    int klen = agent_leaf_key(key, sizeof(key), cfg->cluster, "map", pool, start, bits);
    if (klen < 0 || etcd_range(agent_sync_etcd(s), key, (size_t)klen, NULL, 0, 0, 0, agent_sync_cb,
                               s) != HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
        agent_sync_free(&r);
        return -1;
    }
    struct agent_leaf_v v;
    int found = r.nkvs > 0 && agent_parse_leaf(r.kvs[0].value, r.kvs[0].value_len, &v) == HKV_OK;
    if (found) {
        *owner = v.owner;
        *state = v.state;
        *to = v.to;
        *mod = r.kvs[0].mod_revision;
    }
    agent_sync_free(&r);
    return found;
}

static int leaf_split(struct agent_sync *s, const struct cfg *cfg, int pool, uint32_t start,
                      int bits, FILE *out, FILE *err)
{
    unsigned owner, to;
    int state;
    int64_t mod;
    int rc = read_leaf(s, cfg, pool, start, bits, &owner, &state, &to, &mod, err);
    if (rc <= 0) {
        if (rc == 0)
            fprintf(err, "hotkvd-admin: no such leaf (leaf list shows them)\n");
        return 1;
    }
    if (state != CMAP_SERVING) {
        fprintf(err, "hotkvd-admin: the leaf is moving to owner %u: split it after the move\n", to);
        return 1;
    }
    struct agent_txn t;
    struct sync_res r = {0};
    if (agent_txn_split(&t, cfg->cluster, pool, start, bits, mod, owner) != HKV_OK) {
        fprintf(err, "hotkvd-admin: the leaf is %d bits deep: it cannot split further\n", bits);
        return 1;
    }
    if (etcd_txn(agent_sync_etcd(s), t.cmp, t.ncmp, t.ok, t.nok, t.fail, t.nfail, agent_sync_cb,
                 s) != HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: split: %s (it may or may not have applied: leaf list)\n",
                agent_sync_why(&r));
        agent_sync_free(&r);
        return 1;
    }
    int ok = r.succeeded;
    uint32_t half = 1u << (31 - bits), p0 = start >> (31 - bits);
    if (ok)
        fprintf(out, "split %s %d-%08x into %d-%08x %d-%08x owner %u at revision %" PRId64 "\n",
                topo_pool_name((enum cfg_pool)pool), bits, bits ? start >> (32 - bits) : 0,
                bits + 1, p0, bits + 1, (start + half) >> (31 - bits), owner, r.revision);
    else
        fprintf(err, "hotkvd-admin: the leaf changed meanwhile (it is %s now): nothing split\n",
                r.nkvs > 0 ? r.kvs[0].value : "gone");
    agent_sync_free(&r);
    return ok ? 0 : 1;
}

/* TO: an owner number or an owner id, of pool. */
static unsigned owner_arg(const struct cmap_table *t, int pool, const char *s)
{
    char *end;
    unsigned long n = strtoul(s, &end, 10);
    if (*end == '\0' && n >= 1 && n <= CMAP_MAX_OWNERS) {
        const struct cmap_owner *o = cmap_owner(t, (unsigned)n);
        return o != NULL && o->pool == pool ? (unsigned)n : 0;
    }
    for (unsigned k = 1; k <= CMAP_MAX_OWNERS; k++) {
        const struct cmap_owner *o = cmap_owner(t, k);
        if (o != NULL && o->pool == pool && strcmp(o->id, s) == 0)
            return k;
    }
    return 0;
}

static int leaf_move(struct agent_sync *s, const struct cfg *cfg, int pool, uint32_t start,
                     int bits, const char *to_arg, int64_t wait_ms, FILE *out, FILE *err)
{
    struct agent_map *m = agent_map_create(cfg->cluster);
    struct sync_res r = {0};
    const struct cmap_table *t;
    char key[AGENT_KEY_MAX], val[64];
    int code = 1;
    if (m == NULL || read_table(s, cfg, m, &r, &t, err) != 0)
        goto out;
    unsigned to = owner_arg(t, pool, to_arg);
    const struct cmap_leaf *l = cmap_lookup(t, (enum cfg_pool)pool, (uint64_t)start << 32);
    if (to == 0) {
        fprintf(err, "hotkvd-admin: '%s' is no owner of pool %s\n", to_arg,
                topo_pool_name((enum cfg_pool)pool));
        goto out;
    }
    if (l == NULL || l->start != start || l->bits != bits) {
        fprintf(err, "hotkvd-admin: no such leaf (leaf list shows them)\n");
        goto out;
    }
    if (l->owner == to && l->state == CMAP_SERVING) {
        fprintf(out, "leaf already served by owner %u\n", to);
        code = 0;
        goto out;
    }
    int klen = agent_leaf_key(key, sizeof(key), cfg->cluster, "requests/move", pool, start, bits);
    int vlen = agent_val_request(val, sizeof(val), to);
    agent_sync_free(&r);
    if (klen < 0 || vlen < 0 ||
        etcd_put(agent_sync_etcd(s), key, (size_t)klen, val, (size_t)vlen, 0, agent_sync_cb, s) !=
            HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s\n", agent_sync_why(&r));
        goto out;
    }
    fprintf(out, "asked owner %u to move %s %d-%08x to owner %u\n", l->owner,
            topo_pool_name((enum cfg_pool)pool), bits, bits ? start >> (32 - bits) : 0, to);
    code = 0;
    int64_t end = clock_mono_ms() + wait_ms;
    while (wait_ms > 0 && clock_mono_ms() < end) {
        agent_sync_free(&r);
        if (etcd_range(agent_sync_etcd(s), key, (size_t)klen, NULL, 0, 0, 0, agent_sync_cb, s) !=
                HKV_OK || agent_sync_wait(s, &r) != HKV_OK)
            break;
        if (r.nkvs == 0) {
            unsigned owner, t2;
            int state;
            int64_t mod;
            if (read_leaf(s, cfg, pool, start, bits, &owner, &state, &t2, &mod, err) > 0) {
                fprintf(out, "leaf owner %u state %s epoch %" PRId64 "\n", owner, state_name(state),
                        mod);
                code = owner == to && state == CMAP_SERVING ? 0 : 2;
            }
            goto out;
        }
        usleep(100 * 1000);
    }
    if (wait_ms > 0) {
        fprintf(err, "hotkvd-admin: the move did not end within %lld ms\n", (long long)wait_ms);
        code = 2;
    }
out:
    agent_sync_free(&r);
    agent_map_destroy(&m);
    return code;
}

int admin_leaf(const struct cfg *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    uint32_t start = 0;
    int bits = 0, pool = -1, code = 1;
    int64_t wait_ms = 0;
    if (argc >= 3) {
        pool = pool_arg(argv[1]);
        if (pool < 0 || agent_leaf_parse(argv[2], &start, &bits) != HKV_OK) {
            fprintf(err, "hotkvd-admin: '%s %s' is not a leaf (POOL BITS-PREFIX: hot 6-0000002c)\n",
                    argv[1], argv[2]);
            return 1;
        }
    }
    if (argc == 6 && strcmp(argv[4], "--wait") == 0)
        wait_ms = strtoll(argv[5], NULL, 10);
    if ((argc == 3 || argc == 5) && strcmp(argv[0], "failover") == 0)
        return admin_failover(cfg, pool, start, bits, argc, argv, out, err);
    struct agent_sync *s = admin_sync_create(cfg);
    if (s == NULL) {
        fprintf(err, "hotkvd-admin: out of memory\n");
        return 1;
    }
    if (argc == 1 && strcmp(argv[0], "list") == 0)
        code = leaf_list(s, cfg, out, err);
    else if (argc == 3 && strcmp(argv[0], "split") == 0)
        code = leaf_split(s, cfg, pool, start, bits, out, err);
    else if ((argc == 4 || (argc == 6 && wait_ms > 0)) && strcmp(argv[0], "move") == 0)
        code = leaf_move(s, cfg, pool, start, bits, argv[3], wait_ms, out, err);
    else
        fprintf(err, "hotkvd-admin: leaf list | leaf split POOL LEAF | leaf move POOL LEAF TO "
                     "[--wait MS] | leaf failover POOL LEAF [--wait MS]\n");
    agent_sync_destroy(&s);
    return code;
}

/*
 * admin_status.c - `hotkvd-admin CONFIG status`; see admin.h for the
 * lines it prints.
 *
 * One full read at one revision, fed to the same agent_map the agents use,
 * so the status shows the map every agent would publish (or why it would
 * refuse it); hosts come from hosts/ (registered, with their lease) and
 * hostnums/ (known, maybe down).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/admin/admin.h"
#include "server/agent/agent_keys.h"
#include "server/agent/agent_map.h"
#include "server/agent/agent_sync.h"
#include "server/core/topo.h"

struct host_row {
    char name[CMAP_NAME_MAX];
    char addr[CMAP_NAME_MAX];
    char zone[CMAP_NAME_MAX];
    unsigned number;
    int64_t lease;
    int registered;
};

static struct host_row *host_find(struct host_row *rows, int *n, int cap, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    if (*n == cap)
        return NULL;
    struct host_row *h = &rows[(*n)++];
    memset(h, 0, sizeof(*h));
    snprintf(h->name, sizeof(h->name), "%s", name);
    return h;
}

static void print_hosts(FILE *out, struct host_row *rows, int n)
{
    int live = 0;
    for (int i = 0; i < n; i++) {
        const struct host_row *h = &rows[i];
        if (h->registered) {
            live++;
            fprintf(out, "host %s number %u addr %s lease %" PRId64 "%s%s\n", h->name, h->number,
                    h->addr[0] ? h->addr : "-", h->lease, h->zone[0] ? " zone " : "", h->zone);
        } else {
            fprintf(out, "host %s number %u down\n", h->name, h->number);
        }
    }
    fprintf(out, "leases %d live\n", live);
}

static void print_table(FILE *out, const struct cmap_table *t)
{
    unsigned leaves[CMAP_MAX_OWNERS + 1] = {0};
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < t->nleaves[p]; i++)
            if (t->leaves[p][i].owner <= CMAP_MAX_OWNERS)
                leaves[t->leaves[p][i].owner]++;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        const struct cmap_owner *o = cmap_owner(t, n);
        if (o == NULL)
            continue;
        fprintf(out, "owner %u %s %s %s:%u leaves %u\n", n, o->id, o->live ? "live" : "down",
                o->addr[0] ? o->addr : "-", o->port, leaves[n]);
    }
    /* each leaf's primary and in-sync followers (CLUSTER.md §7) */
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < t->nleaves[p]; i++) {
            const struct cmap_leaf *l = &t->leaves[p][i];
            fprintf(out, "leaf %s %u-%08x primary %u isr ", topo_pool_name((enum cfg_pool)p),
                    l->bits, l->bits ? l->start >> (32 - l->bits) : 0, l->owner);
            for (unsigned k = 0; k < l->nisr && k < CMAP_MAX_ISR; k++)
                fprintf(out, "%s%u", k ? "," : "", l->isr[k]);
            fprintf(out, "%s\n", l->nisr == 0 ? "-" : "");
        }
}

int admin_status(const struct cfg *cfg, FILE *out, FILE *err)
{
    struct agent_sync *s = admin_sync_create(cfg);
    struct agent_map *m = agent_map_create(cfg->cluster);
    struct host_row *hosts = calloc(AGENT_HOSTNUM_MAX, sizeof(*hosts));
    struct sync_res r = {0};
    char prefix[AGENT_KEY_MAX], why[256];
    int code = 1, nhosts = 0, ready[CMAP_NPOOLS] = {0}, bits[CMAP_NPOOLS] = {0};
    if (s == NULL || m == NULL || hosts == NULL) {
        fprintf(err, "hotkvd-admin: out of memory\n");
        goto out;
    }
    int plen = agent_key(prefix, sizeof(prefix), cfg->cluster, "%s", "");
    if (plen < 0 || agent_sync_read_all(s, prefix, (size_t)plen, &r) != HKV_OK) {
        fprintf(err, "hotkvd-admin: %s (%s, etcd-timeout %lld ms)\n", agent_sync_why(&r),
                cfg->netcd_endpoints ? cfg->etcd_endpoints[0] : "no etcd-endpoints",
                (long long)cfg->etcd_timeout_ms);
        goto out;
    }
    int initialised = 0;
    for (size_t i = 0; i < r.nkvs; i++) {
        const struct sync_kv *kv = &r.kvs[i];
        struct agent_key_info k;
        struct host_row *h;
        char name[CMAP_NAME_MAX];
        unsigned num;
        switch (agent_map_apply(m, kv->key, kv->key_len, kv->value, kv->value_len,
                                kv->mod_revision)) {
        case AGENT_K_CLUSTER:
            initialised = 1;
            break;
        case AGENT_K_HOST:
            agent_key_parse(kv->key, kv->key_len, prefix, (size_t)plen, &k);
            if ((h = host_find(hosts, &nhosts, AGENT_HOSTNUM_MAX, k.name)) == NULL)
                break;
            h->registered = 1;
            h->lease = kv->lease;
            if (agent_parse_host(kv->value, kv->value_len, h->addr, sizeof(h->addr), &num, h->zone,
                                 sizeof(h->zone)) == HKV_OK)
                h->number = num;
            break;
        case AGENT_K_HOSTNUM:
            agent_key_parse(kv->key, kv->key_len, prefix, (size_t)plen, &k);
            if (agent_parse_hostnum(kv->value, kv->value_len, name, sizeof(name)) == HKV_OK &&
                (h = host_find(hosts, &nhosts, AGENT_HOSTNUM_MAX, name)) != NULL)
                h->number = k.number;
            break;
        case AGENT_K_POOL:
            agent_key_parse(kv->key, kv->key_len, prefix, (size_t)plen, &k);
            agent_parse_pool(kv->value, kv->value_len, &bits[k.pool], &ready[k.pool]);
            break;
        default:
            break;
        }
    }
    fprintf(out, "cluster %s revision %lld etcd %s%s\n", cfg->cluster, (long long)r.revision,
            etcd_endpoint(agent_sync_etcd(s)), initialised ? "" : " (not initialised: hotkvd --cluster-init)");
    print_hosts(out, hosts, nhosts);
    const struct cmap_table *t;
    /* a map that does not validate is still shown, as the keys say */
    int valid = agent_map_commit(m, r.revision, &t, why, sizeof(why)) == HKV_OK;
    print_table(out, t);
    for (int p = 0; p < CMAP_NPOOLS; p++)
        fprintf(out, "pool %s leaves %u %s min_bits %d\n", topo_pool_name((enum cfg_pool)p),
                t->nleaves[p], ready[p] ? "ready" : "not-ready", bits[p]);
    if (valid)
        fprintf(out, "map ok\n");
    else
        fprintf(out, "map INVALID: %s\n", why);
    code = 0;
out:
    agent_sync_free(&r);
    agent_sync_destroy(&s);
    agent_map_destroy(&m);
    free(hosts);
    return code;
}

/*
 * agent_init.c - a cluster's first keys; see agent_init.h.
 *
 * The keys go in the order that keeps a half-done init harmless: `cluster`
 * and the new owner numbers first (a second init stops at `cluster`), the
 * leaves next, pools/<pool> last (an agent publishes a pool's leaves only
 * once its pools/ key says ready, so it never routes from half a pool).
 * Every key is created only if absent: a txn whose compare fails changed
 * nothing, and the tool says which key was in the way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_init.h"
#include "server/agent/agent_keys.h"
#include "server/agent/agent_sync.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define MAX_INIT_BITS 14           /* 16384 leaves: CMAP_MAX_LEAVES */

struct item {
    char key[AGENT_KEY_MAX];
    char val[AGENT_VAL_MAX];
    size_t klen, vlen;
};

struct plan {
    struct item *items;
    size_t n, cap;
    unsigned number[CMAP_MAX_OWNERS + 1];    /* owners to deal leaves to, by pool */
    char ids[CMAP_MAX_OWNERS + 1][CMAP_NAME_MAX]; /* every owner number's id */
    int npool[CMAP_NPOOLS];
    unsigned pool_owners[CMAP_NPOOLS][CMAP_MAX_OWNERS];
};

static struct item *add(struct plan *p)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        struct item *it = realloc(p->items, cap * sizeof(*it));
        if (it == NULL)
            return NULL;
        p->items = it;
        p->cap = cap;
    }
    return &p->items[p->n++];
}

/* The owner ids asked for (or the config's own) get numbers: the ones they
 * have, else the lowest free.  0, or -1 with why. */
static int number_owners(struct plan *p, const struct agent_init_opts *o, const char *list,
                         char *why, size_t len)
{
    char ids[CMAP_MAX_OWNERS][CMAP_NAME_MAX];
    int n = 0;
    if (list == NULL) {
        for (int g = 0; g < o->hot_owners + o->cold_owners && n < CMAP_MAX_OWNERS; g++)
            snprintf(ids[n++], CMAP_NAME_MAX, "%s/%s/%d", o->host,
                     g < o->hot_owners ? "hot" : "cold",
                     g < o->hot_owners ? g : g - o->hot_owners);
    } else {
        const char *s = list;
        while (*s != '\0') {
            size_t w = strcspn(s, ",");
            if (w == 0 || w >= CMAP_NAME_MAX || n == CMAP_MAX_OWNERS) {
                snprintf(why, len, "--owners: '%.*s' is not an owner id", (int)w, s);
                return -1;
            }
            memcpy(ids[n], s, w);
            ids[n++][w] = '\0';
            s += w + (s[w] == ',');
        }
    }
    if (n == 0) {
        snprintf(why, len, "no owners: this host has none; name them with --owners");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char host[CMAP_NAME_MAX];
        int pool, k;
        unsigned num = 0;
        if (agent_owner_id_parse(ids[i], host, sizeof(host), &pool, &k) != HKV_OK) {
            snprintf(why, len, "'%.96s' is not an owner id (HOST/hot/K or HOST/cold/K)", ids[i]);
            return -1;
        }
        for (unsigned x = 1; x <= CMAP_MAX_OWNERS && num == 0; x++)
            if (strcmp(p->ids[x], ids[i]) == 0)
                num = x;
        if (num != 0 && p->number[num]) {
            snprintf(why, len, "owner %.96s is named twice", ids[i]);
            return -1;
        }
        for (unsigned x = 1; x <= CMAP_MAX_OWNERS && num == 0; x++)
            if (p->ids[x][0] == '\0') {
                num = x;
                memcpy(p->ids[x], ids[i], sizeof(p->ids[x]));
                struct item *it = add(p);
                if (it == NULL)
                    return -1;
                it->klen = (size_t)agent_key(it->key, sizeof(it->key), o->cluster, "owners/%u", x);
                it->vlen = (size_t)agent_val_owner(it->val, sizeof(it->val), ids[i]);
            }
        if (num == 0) {
            snprintf(why, len, "no owner number left for %.96s", ids[i]);
            return -1;
        }
        p->number[num] = 1;
        p->pool_owners[pool][p->npool[pool]++] = num;
    }
    return 0;
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

static int plan_leaves(struct plan *p, const struct agent_init_opts *o, int bits)
{
    for (int pool = 0; pool < CMAP_NPOOLS; pool++) {
        int n = p->npool[pool];
        if (n == 0)
            continue;
        qsort(p->pool_owners[pool], (size_t)n, sizeof(unsigned), cmp_unsigned);
        for (uint32_t i = 0; i < (1u << bits); i++) {
            struct item *it = add(p);
            if (it == NULL)
                return -1;
            it->klen = (size_t)agent_key(it->key, sizeof(it->key), o->cluster, "map/%s/%d-%08x",
                                         topo_pool_name((enum cfg_pool)pool), bits, i);
            /* a new leaf has no follower yet: the agents place them */
            struct agent_leaf_v v = {.owner = p->pool_owners[pool][i % (uint32_t)n],
                                     .state = CMAP_SERVING};
            it->vlen = (size_t)agent_val_leaf(it->val, sizeof(it->val), &v);
        }
    }
    for (int pool = 0; pool < CMAP_NPOOLS; pool++) {
        if (p->npool[pool] == 0)
            continue;
        struct item *it = add(p);
        if (it == NULL)
            return -1;
        it->klen = (size_t)agent_key(it->key, sizeof(it->key), o->cluster, "pools/%s",
                                     topo_pool_name((enum cfg_pool)pool));
        it->vlen = (size_t)agent_val_pool(it->val, sizeof(it->val), bits);
    }
    return 0;
}

/* items[from, to) in one txn, each created if absent.  HKV_OK; HKV_EEXIST
 * (one was there: nothing changed; *which says which); or the failure. */
static int create_batch(struct agent_sync *s, const struct plan *p, size_t from, size_t to,
                        const char **which, struct sync_res *r)
{
    struct etcd_cmp cmp[AGENT_INIT_BATCH];
    struct etcd_op ops[AGENT_INIT_BATCH], reads[AGENT_INIT_BATCH];
    size_t n = to - from;
    for (size_t i = 0; i < n; i++) {
        const struct item *it = &p->items[from + i];
        cmp[i] = (struct etcd_cmp){.target = ETCD_CREATE, .result = ETCD_EQUAL, .key = it->key,
                                   .klen = it->klen, .n = 0};
        ops[i] = (struct etcd_op){.kind = ETCD_OP_PUT, .key = it->key, .klen = it->klen,
                                  .value = it->val, .vlen = it->vlen};
        reads[i] = (struct etcd_op){.kind = ETCD_OP_RANGE, .key = it->key, .klen = it->klen};
    }
    /* the failure branch reads the first key only; which one was in the way
     * is found by reading each if it comes to that */
    if (etcd_txn(agent_sync_etcd(s), cmp, n, ops, n, reads, 1, agent_sync_cb, s) != HKV_OK)
        return r->status = HKV_EINVAL;
    if (agent_sync_wait(s, r) != HKV_OK)
        return r->status;
    if (r->succeeded)
        return HKV_OK;
    for (size_t i = 0; i < n; i++) {
        struct sync_res one;
        const struct item *it = &p->items[from + i];
        if (etcd_range(agent_sync_etcd(s), it->key, it->klen, NULL, 0, 0, 0, agent_sync_cb, s) !=
                HKV_OK || agent_sync_wait(s, &one) != HKV_OK)
            break;
        int there = one.nkvs > 0;
        agent_sync_free(&one);
        if (there) {
            *which = it->key;
            break;
        }
    }
    return HKV_EEXIST;
}

int agent_cluster_init_with(struct agent_sync *s, const struct agent_init_opts *o,
                            const char *owners, int bits, FILE *out, FILE *err)
{
    char why[512], key[AGENT_KEY_MAX];
    struct plan *p = calloc(1, sizeof(*p));
    struct sync_res r = {0};
    int code = 1;
    if (p == NULL || s == NULL) {
        fprintf(err, "hotkvd: --cluster-init: out of memory\n");
        goto out;
    }
    if (bits < 0 || bits > MAX_INIT_BITS) {
        fprintf(err, "hotkvd: --bits %d: 0..%d\n", bits, MAX_INIT_BITS);
        goto out;
    }
    int klen = agent_key(key, sizeof(key), o->cluster, "cluster");
    if (etcd_range(agent_sync_etcd(s), key, (size_t)klen, NULL, 0, 0, 0, agent_sync_cb, s) !=
            HKV_OK || agent_sync_wait(s, &r) != HKV_OK) {
        fprintf(err, "hotkvd: --cluster-init: %s (%s)\n", agent_sync_why(&r),
                o->endpoint);
        goto out;
    }
    if (r.nkvs > 0) {
        fprintf(out, "cluster %s is already initialised (%s created at revision %lld); nothing "
                "changed\n", o->cluster, key, (long long)r.kvs[0].create_revision);
        code = 0;
        goto out;
    }
    agent_sync_free(&r);
    /* the numbers owners have already (agents of running hosts make them) */
    klen = agent_key(key, sizeof(key), o->cluster, "owners/");
    if (agent_sync_read_all(s, key, (size_t)klen, &r) != HKV_OK) {
        fprintf(err, "hotkvd: --cluster-init: %s\n", agent_sync_why(&r));
        goto out;
    }
    char prefix[AGENT_KEY_MAX];
    size_t plen = (size_t)agent_key(prefix, sizeof(prefix), o->cluster, "%s", "");
    for (size_t i = 0; i < r.nkvs; i++) {
        struct agent_key_info k;
        if (agent_key_parse(r.kvs[i].key, r.kvs[i].key_len, prefix, plen, &k) == AGENT_K_OWNER)
            agent_parse_owner(r.kvs[i].value, r.kvs[i].value_len, p->ids[k.number],
                              sizeof(p->ids[0]));
    }
    agent_sync_free(&r);
    struct item *first = add(p);
    if (first == NULL)
        goto out;
    first->klen = (size_t)agent_key(first->key, sizeof(first->key), o->cluster, "cluster");
    first->vlen = (size_t)agent_val_cluster(first->val, sizeof(first->val), clock_unix_ms());
    if (number_owners(p, o, owners, why, sizeof(why)) != 0 || plan_leaves(p, o, bits) != 0) {
        fprintf(err, "hotkvd: --cluster-init: %s\n", why);
        goto out;
    }
    size_t npools = (size_t)(p->npool[0] > 0) + (size_t)(p->npool[1] > 0);
    for (size_t from = 0; from < p->n;) {
        /* pools/ keys alone in the last txn */
        size_t stop = from < p->n - npools ? p->n - npools : p->n;
        size_t to = from + AGENT_INIT_BATCH < stop ? from + AGENT_INIT_BATCH : stop;
        const char *which = "?";
        int rc = create_batch(s, p, from, to, &which, &r);
        agent_sync_free(&r);
        if (rc == HKV_EEXIST) {
            fprintf(err, "hotkvd: --cluster-init: %s exists already (another init, or an agent, "
                    "wrote it meanwhile); %s; run it again\n", which,
                    from == 0 ? "nothing changed" : "the keys before it are written");
            goto out;
        }
        if (rc != HKV_OK) {
            fprintf(err, "hotkvd: --cluster-init: %s\n", agent_sync_why(&r));
            goto out;
        }
        from = to;
    }
    fprintf(out, "cluster %s initialised:", o->cluster);
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (p->number[n])
            fprintf(out, " owner %u=%s", n, p->ids[n]);
    for (int pool = 0; pool < CMAP_NPOOLS; pool++)
        if (p->npool[pool] > 0)
            fprintf(out, ", %u %s leaves", 1u << bits, topo_pool_name((enum cfg_pool)pool));
    fprintf(out, "\n");
    code = 0;
out:
    agent_sync_free(&r);
    if (p != NULL)
        free(p->items);
    free(p);
    return code;
}

/*
 * agent_txn.c - the leaf txns; see agent_txn.h.  Each builder fills the
 * compares and operations into the struct, with every key and value in the
 * struct's own buffers, so the caller hands the arrays to etcd_txn as they
 * are and nothing points outside the struct.
 */
#include "server/agent/agent_txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/json.h"
#include "server/core/cmap.h"
#include "server/core/topo.h"

static int leaf_ok(uint32_t start, int bits)
{
    if (bits < 0 || bits > CMAP_MAX_BITS)
        return 0;
    return bits == 0 ? start == 0 : ((uint64_t)start & ((1ULL << (32 - bits)) - 1)) == 0;
}

int agent_leaf_key(char *buf, size_t cap, const char *cluster, const char *dir, int pool,
                   uint32_t start, int bits)
{
    if (!leaf_ok(start, bits) || (pool != CFG_POOL_HOT && pool != CFG_POOL_COLD))
        return -1;
    uint32_t prefix = bits == 0 ? 0 : start >> (32 - bits);
    return agent_key(buf, cap, cluster, "%s/%s/%d-%08x", dir, topo_pool_name((enum cfg_pool)pool),
                     bits, prefix);
}

int agent_leaf_parse(const char *s, uint32_t *start, int *bits)
{
    unsigned b;
    char hex[9];
    int used = 0;
    if (sscanf(s, "%2u-%8[0-9a-f]%n", &b, hex, &used) != 2 || s[used] != '\0' ||
        strlen(hex) != 8 || b > CMAP_MAX_BITS)
        return HKV_EINVAL;
    unsigned long p = strtoul(hex, NULL, 16);
    if ((uint64_t)p >> b != 0)
        return HKV_EINVAL;
    *bits = (int)b;
    *start = b == 0 ? 0 : (uint32_t)(p << (32 - b));
    return HKV_OK;
}

/* Key slot i of t: the leaf key in dir, or a formatted one. */
static const char *leaf_slot(struct agent_txn *t, int i, const char *cluster, const char *dir,
                             int pool, uint32_t start, int bits, size_t *len)
{
    int n = agent_leaf_key(t->key[i], sizeof(t->key[i]), cluster, dir, pool, start, bits);
    *len = n < 0 ? 0 : (size_t)n;
    return n < 0 ? NULL : t->key[i];
}

static void cmp(struct agent_txn *t, enum etcd_target target, enum etcd_cmp_result r,
                const char *key, size_t klen, int64_t n)
{
    t->cmp[t->ncmp++] = (struct etcd_cmp){.target = target, .result = r, .key = key,
                                         .klen = klen, .n = n};
}

static void put(struct agent_txn *t, const char *key, size_t klen, const char *val, int vlen,
                int64_t lease)
{
    t->ok[t->nok++] = (struct etcd_op){.kind = ETCD_OP_PUT, .key = key, .klen = klen,
                                      .value = val, .vlen = (size_t)vlen, .lease = lease};
}

static void del(struct agent_txn *t, const char *key, size_t klen)
{
    t->ok[t->nok++] = (struct etcd_op){.kind = ETCD_OP_DELETE, .key = key, .klen = klen};
}

/* Starts t on leaf L: key[0] is map/L, the failure branch reads it. */
static const char *begin(struct agent_txn *t, const char *cluster, int pool, uint32_t start,
                         int bits, size_t *len)
{
    memset(t, 0, sizeof(*t));
    const char *k = leaf_slot(t, 0, cluster, "map", pool, start, bits, len);
    if (k != NULL)
        t->fail[t->nfail++] = (struct etcd_op){.kind = ETCD_OP_RANGE, .key = k, .klen = *len};
    return k;
}

int agent_txn_split(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                    int64_t e0, unsigned owner)
{
    size_t l0, l1, l2;
    const char *parent = begin(t, cluster, pool, start, bits, &l0);
    if (parent == NULL || bits >= CMAP_MAX_BITS)
        return HKV_EINVAL;
    uint32_t half = 1u << (31 - bits);
    const char *a = leaf_slot(t, 1, cluster, "map", pool, start, bits + 1, &l1);
    const char *b = leaf_slot(t, 2, cluster, "map", pool, start + half, bits + 1, &l2);
    /* the halves start with no follower: the old stream's followers drop
     * their copies (the map no longer names the leaf they follow) and are
     * seeded again per half */
    struct agent_leaf_v v = {.owner = owner, .state = CMAP_SERVING};
    int vlen = agent_val_leaf(t->val[0], sizeof(t->val[0]), &v);
    if (a == NULL || b == NULL || vlen < 0)
        return HKV_EINVAL;
    cmp(t, ETCD_MOD, ETCD_EQUAL, parent, l0, e0);
    cmp(t, ETCD_CREATE, ETCD_EQUAL, a, l1, 0);
    cmp(t, ETCD_CREATE, ETCD_EQUAL, b, l2, 0);
    del(t, parent, l0);
    put(t, a, l1, t->val[0], vlen, 0);
    put(t, b, l2, t->val[0], vlen, 0);
    return HKV_OK;
}

/* key[i] = members/<id> or slots/<id>/<k>: its length, 0 if it does not fit. */
static size_t id_key(struct agent_txn *t, int i, const char *cluster, const char *what,
                     const char *id, int slot)
{
    int n = slot < 0 ? agent_key(t->key[i], sizeof(t->key[i]), cluster, "%s/%s", what, id)
                     : agent_key(t->key[i], sizeof(t->key[i]), cluster, "%s/%s/%d", what, id, slot);
    return n < 0 ? 0 : (size_t)n;
}

int agent_txn_intent(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                     int64_t e0, unsigned from, unsigned to, const char *to_id, int slot,
                     int64_t lease, const struct agent_leaf_v *now)
{
    struct agent_leaf_v v = *now; /* the followers stay through the copy */
    v.owner = from;
    v.state = CMAP_MOVING;
    v.to = to;
    agent_isr_without(&v, from);
    size_t lm, lmv;
    const char *map = begin(t, cluster, pool, start, bits, &lm);
    const char *mv = leaf_slot(t, 1, cluster, "moves", pool, start, bits, &lmv);
    size_t lmem = id_key(t, 2, cluster, "members", to_id, -1);
    size_t lslot = id_key(t, 3, cluster, "slots", to_id, slot);
    int v0 = agent_val_leaf(t->val[0], sizeof(t->val[0]), &v);
    int v1 = snprintf(t->val[1], sizeof(t->val[1]), "{\"from\":%u,\"to\":%u,\"slot\":%d}", from,
                      to, slot);
    int v2 = snprintf(t->val[2], sizeof(t->val[2]), "{\"pool\":%d,\"bits\":%d,\"start\":%u}",
                      pool, bits, start);
    if (map == NULL || mv == NULL || lmem == 0 || lslot == 0 || v0 < 0 || slot < 0 ||
        slot >= AGENT_SLOTS || from == to || to == 0 || lease == 0)
        return HKV_EINVAL;
    cmp(t, ETCD_MOD, ETCD_EQUAL, map, lm, e0);
    cmp(t, ETCD_VERSION, ETCD_GREATER, t->key[2], lmem, 0);
    cmp(t, ETCD_CREATE, ETCD_EQUAL, t->key[3], lslot, 0);
    put(t, map, lm, t->val[0], v0, 0);
    put(t, mv, lmv, t->val[1], v1, lease);
    put(t, t->key[3], lslot, t->val[2], v2, lease);
    return HKV_OK;
}

int agent_txn_commit(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                     int64_t e1, unsigned to, const char *to_id, int slot)
{
    size_t lm, lmv;
    const char *map = begin(t, cluster, pool, start, bits, &lm);
    const char *mv = leaf_slot(t, 1, cluster, "moves", pool, start, bits, &lmv);
    size_t lmem = id_key(t, 2, cluster, "members", to_id, -1);
    size_t lslot = slot >= 0 ? id_key(t, 3, cluster, "slots", to_id, slot) : 0;
    /* the new primary starts with no follower: the old stream's drop their
     * copies and are seeded again from T */
    struct agent_leaf_v v = {.owner = to, .state = CMAP_SERVING};
    int v0 = agent_val_leaf(t->val[0], sizeof(t->val[0]), &v);
    if (map == NULL || mv == NULL || lmem == 0 || v0 < 0 || to == 0)
        return HKV_EINVAL;
    cmp(t, ETCD_MOD, ETCD_EQUAL, map, lm, e1);
    cmp(t, ETCD_VERSION, ETCD_GREATER, t->key[2], lmem, 0);
    put(t, map, lm, t->val[0], v0, 0);
    del(t, mv, lmv);
    if (lslot > 0)
        del(t, t->key[3], lslot);
    return HKV_OK;
}

int agent_txn_abort(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                    int64_t e1, unsigned from, const char *to_id, int slot,
                    const struct agent_leaf_v *now)
{
    struct agent_leaf_v v = *now; /* S's followers never stopped following */
    v.owner = from;
    v.state = CMAP_SERVING;
    v.to = 0;
    agent_isr_without(&v, from);
    size_t lm, lmv;
    const char *map = begin(t, cluster, pool, start, bits, &lm);
    const char *mv = leaf_slot(t, 1, cluster, "moves", pool, start, bits, &lmv);
    size_t lslot = slot >= 0 && to_id != NULL ? id_key(t, 3, cluster, "slots", to_id, slot) : 0;
    int v0 = agent_val_leaf(t->val[0], sizeof(t->val[0]), &v);
    if (map == NULL || mv == NULL || v0 < 0 || from == 0)
        return HKV_EINVAL;
    cmp(t, ETCD_MOD, ETCD_EQUAL, map, lm, e1);
    put(t, map, lm, t->val[0], v0, 0);
    del(t, mv, lmv);
    if (lslot > 0)
        del(t, t->key[3], lslot);
    return HKV_OK;
}

int agent_txn_set(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                  int64_t e, const struct agent_leaf_v *v, const char *live_id,
                  const char *gone_id)
{
    size_t lm;
    const char *map = begin(t, cluster, pool, start, bits, &lm);
    size_t llive = live_id != NULL ? id_key(t, 2, cluster, "members", live_id, -1) : 0;
    size_t lgone = gone_id != NULL ? id_key(t, 3, cluster, "members", gone_id, -1) : 0;
    int v0 = agent_val_leaf(t->val[0], sizeof(t->val[0]), v);
    if (map == NULL || v0 < 0 || e <= 0 || v->owner == 0 || (live_id != NULL && llive == 0) ||
        (gone_id != NULL && lgone == 0))
        return HKV_EINVAL;
    cmp(t, ETCD_MOD, ETCD_EQUAL, map, lm, e);
    if (llive > 0)
        cmp(t, ETCD_VERSION, ETCD_GREATER, t->key[2], llive, 0);
    if (lgone > 0)
        cmp(t, ETCD_CREATE, ETCD_EQUAL, t->key[3], lgone, 0);
    put(t, map, lm, t->val[0], v0, 0);
    return HKV_OK;
}

void agent_batch_reset(struct agent_batch *b)
{
    b->ncmp = b->nok = b->nkey = 0;
}

int agent_batch_set(struct agent_batch *b, const char *cluster, int pool, uint32_t start,
                    int bits, int64_t e, const struct agent_leaf_v *v, const char *gone_id)
{
    if (b->nok >= AGENT_BATCH || b->nkey + 2 > 2 * AGENT_BATCH)
        return HKV_EFULL;
    char *mk = b->key[b->nkey], *vk = b->val[b->nok];
    int lm = agent_leaf_key(mk, AGENT_KEY_MAX, cluster, "map", pool, start, bits);
    int lv = agent_val_leaf(vk, AGENT_VAL_MAX, v);
    if (lm < 0 || lv < 0 || e <= 0 || v->owner == 0 || gone_id == NULL)
        return HKV_EINVAL;
    char *gk = b->key[b->nkey + 1];
    int lg = agent_key(gk, AGENT_KEY_MAX, cluster, "members/%s", gone_id);
    if (lg < 0)
        return HKV_EINVAL;
    int seen = 0; /* the gone member's absence: compared once */
    for (size_t i = 0; i < b->ncmp && !seen; i++)
        seen = b->cmp[i].target == ETCD_CREATE && b->cmp[i].klen == (size_t)lg &&
               memcmp(b->cmp[i].key, gk, (size_t)lg) == 0;
    b->cmp[b->ncmp++] = (struct etcd_cmp){.target = ETCD_MOD, .result = ETCD_EQUAL, .key = mk,
                                          .klen = (size_t)lm, .n = e};
    if (!seen)
        b->cmp[b->ncmp++] = (struct etcd_cmp){.target = ETCD_CREATE, .result = ETCD_EQUAL,
                                              .key = gk, .klen = (size_t)lg, .n = 0};
    b->ok[b->nok++] = (struct etcd_op){.kind = ETCD_OP_PUT, .key = mk, .klen = (size_t)lm,
                                      .value = vk, .vlen = (size_t)lv};
    b->nkey += seen ? 1 : 2;
    return HKV_OK;
}

/* ---- the move's own values ---------------------------------------------------- */

static int int_member(const char *v, const struct json_tok *t, const char *name, int64_t lo,
                      int64_t hi, int64_t *out)
{
    int i = json_member(v, t, 0, name);
    return i >= 0 && json_int64(v, t, i, out) == HKV_OK && *out >= lo && *out <= hi ? 0 : -1;
}

int agent_parse_move(const char *v, size_t n, unsigned *from, unsigned *to, int *slot)
{
    struct json_tok t[16];
    int64_t f, o, s;
    if (n > 1024 || json_parse(v, n, t, 16) < 1 || t[0].type != JSON_OBJECT ||
        int_member(v, t, "from", 1, CMAP_MAX_OWNERS, &f) != 0 ||
        int_member(v, t, "to", 1, CMAP_MAX_OWNERS, &o) != 0 ||
        int_member(v, t, "slot", 0, AGENT_SLOTS - 1, &s) != 0)
        return HKV_EINVAL;
    *from = (unsigned)f;
    *to = (unsigned)o;
    *slot = (int)s;
    return HKV_OK;
}

int agent_val_request(char *buf, size_t cap, unsigned to)
{
    int n = snprintf(buf, cap, "{\"to\":%u}", to);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int agent_parse_request(const char *v, size_t n, unsigned *to)
{
    struct json_tok t[16];
    int64_t o;
    if (n > 1024 || json_parse(v, n, t, 16) < 1 || t[0].type != JSON_OBJECT ||
        int_member(v, t, "to", 1, CMAP_MAX_OWNERS, &o) != 0)
        return HKV_EINVAL;
    *to = (unsigned)o;
    return HKV_OK;
}

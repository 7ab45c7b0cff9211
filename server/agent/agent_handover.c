/*
 * agent_handover.c - the request value, the check and the CAS of a planned
 * hand-over (agent_handover.h): what the agent needs beyond its move code to
 * make an in-sync follower the primary of a leaf on its primary's word.
 * Pure functions; the value written is the map's own form (agent_keys.h:
 * "isr" left out when empty), so the agents' map code reads it back.
 */
#include "server/agent/agent_handover.h"

#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/json.h"
#include "proto/wire_hand.h"
#include "server/core/cmap.h"

int agent_val_handover(char *buf, size_t cap, unsigned to)
{
    int n = snprintf(buf, cap, "{\"handover\":true,\"to\":%u}", to);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int agent_parse_order(const char *v, size_t n, int *kind, unsigned *to)
{
    struct json_tok t[16];
    int64_t x;
    int ho = 0;
    if (n > 1024 || json_parse(v, n, t, 16) < 1 || t[0].type != JSON_OBJECT)
        return HKV_EINVAL;
    int i = json_member(v, t, 0, "to"), h = json_member(v, t, 0, "handover");
    if (i < 0 || json_int64(v, t, i, &x) != HKV_OK || (h >= 0 && json_bool(t, h, &ho) != HKV_OK))
        return HKV_EINVAL;
    if (x < (ho ? 0 : 1) || x > CMAP_MAX_OWNERS)
        return HKV_EINVAL;
    *kind = ho ? LEAF_ORDER_HANDOVER : LEAF_ORDER_MOVE;
    *to = (unsigned)x;
    return HKV_OK;
}

static int has(const uint16_t *isr, unsigned nisr, unsigned n)
{
    for (unsigned i = 0; i < nisr && i < CMAP_MAX_ISR; i++)
        if (isr[i] == n)
            return 1;
    return 0;
}

const char *agent_handover_check(unsigned owner, int state, const uint16_t *isr, unsigned nisr,
                                 unsigned from, unsigned to, int to_live)
{
    if (state != CMAP_SERVING)
        return "the leaf is moving";
    if (owner != from)
        return "the asking owner is not the leaf's primary";
    if (to == 0 || to == owner || !to_live)
        return "the follower is no other live owner of the pool";
    if (!has(isr, nisr, to))
        return "the follower is not in the in-sync set";
    return NULL;
}

unsigned agent_handover_isr(const uint16_t *isr, unsigned nisr, unsigned to, uint16_t *out)
{
    unsigned k = 0;
    for (unsigned i = 0; i < nisr && i < CMAP_MAX_ISR; i++)
        if (isr[i] != to)
            out[k++] = isr[i];
    return k;
}

int agent_txn_handover(struct agent_txn *t, const char *cluster, int pool, uint32_t start,
                       int bits, int64_t e, unsigned to, const char *to_id, const uint16_t *isr,
                       unsigned nisr)
{
    memset(t, 0, sizeof(*t));
    int lm = agent_leaf_key(t->key[0], sizeof(t->key[0]), cluster, "map", pool, start, bits);
    int lmem = to_id != NULL ? agent_key(t->key[1], sizeof(t->key[1]), cluster, "members/%s",
                                         to_id) : -1;
    size_t n = 0;
    int w = snprintf(t->val[0], sizeof(t->val[0]), "{\"owner\":%u,\"state\":\"serving\"", to);
    n = w > 0 ? (size_t)w : 0;
    for (unsigned i = 0; i < nisr && i < CMAP_MAX_ISR && n < sizeof(t->val[0]); i++) {
        w = snprintf(t->val[0] + n, sizeof(t->val[0]) - n, "%s%u", i ? "," : ",\"isr\":[", isr[i]);
        n += w > 0 ? (size_t)w : 0;
    }
    if (n < sizeof(t->val[0])) {
        w = snprintf(t->val[0] + n, sizeof(t->val[0]) - n, "%s}", nisr > 0 ? "]" : "");
        n += w > 0 ? (size_t)w : 0;
    }
    if (lm < 0 || lmem < 0 || e <= 0 || to == 0 || nisr > CMAP_MAX_ISR ||
        n >= sizeof(t->val[0]))
        return HKV_EINVAL;
    t->cmp[t->ncmp++] = (struct etcd_cmp){.target = ETCD_MOD, .result = ETCD_EQUAL,
                                         .key = t->key[0], .klen = (size_t)lm, .n = e};
    t->cmp[t->ncmp++] = (struct etcd_cmp){.target = ETCD_VERSION, .result = ETCD_GREATER,
                                         .key = t->key[1], .klen = (size_t)lmem, .n = 0};
    t->ok[t->nok++] = (struct etcd_op){.kind = ETCD_OP_PUT, .key = t->key[0], .klen = (size_t)lm,
                                      .value = t->val[0], .vlen = n};
    t->fail[t->nfail++] = (struct etcd_op){.kind = ETCD_OP_RANGE, .key = t->key[0],
                                          .klen = (size_t)lm};
    return HKV_OK;
}

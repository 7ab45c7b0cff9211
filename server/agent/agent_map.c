/*
 * agent_map.c - etcd's keys -> the cluster map; see agent_map.h.
 *
 * Leaves are kept per pool in one array sorted by (start, bits), which is
 * what cmap_validate and cmap_lookup want, so a commit copies it as it is;
 * a leaf key that comes and goes is a binary search and a memmove (a pool
 * has at most CMAP_MAX_LEAVES leaves; a map with more is refused until a
 * full read starts again from nothing).  Two leaves with the same start and
 * different depths (a split applied halfway) can sit side by side here:
 * validation says they overlap.  A leaf whose value does not parse is kept
 * with owner 0, so it refuses the map instead of leaving a silent gap.
 *
 * Owners are two tables by number: what owners/<n> says (the id) and what
 * members/<id> says (address, port, incarnation; keyed by the number in
 * its value, found again by id when it is deleted).  A commit joins them.
 */
#include "server/agent/agent_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"

struct member {
    int present;
    char id[CMAP_NAME_MAX];
    struct agent_member m;
};

struct agent_map {
    char prefix[AGENT_KEY_MAX];
    size_t plen;
    struct cmap_table *cand;                   /* leaves as the keys say; owners unused */
    struct cmap_table *pub;                    /* what commit returns */
    uint32_t overflow[CMAP_NPOOLS];            /* leaves that did not fit */
    int ready[CMAP_NPOOLS];
    char ids[CMAP_MAX_OWNERS + 1][CMAP_NAME_MAX];          /* owners/<n> */
    struct member members[CMAP_MAX_OWNERS + 1];            /* by the number in the value */
    char (*hostnums)[CMAP_NAME_MAX];                       /* [AGENT_HOSTNUM_MAX + 1] */
    char (*zones)[CMAP_NAME_MAX];  /* by host number, from hosts/<host> (kept when it goes) */
    struct agent_map_stats stats;
};

struct agent_map *agent_map_create(const char *cluster)
{
    struct agent_map *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->cand = calloc(1, sizeof(*m->cand));
    m->pub = calloc(1, sizeof(*m->pub));
    m->hostnums = calloc(AGENT_HOSTNUM_MAX + 1, sizeof(*m->hostnums));
    m->zones = calloc(AGENT_HOSTNUM_MAX + 1, sizeof(*m->zones));
    int n = agent_key(m->prefix, sizeof(m->prefix), cluster, "%s", "");
    if (m->cand == NULL || m->pub == NULL || m->hostnums == NULL || m->zones == NULL || n < 0) {
        agent_map_destroy(&m);
        return NULL;
    }
    m->plen = (size_t)n;
    return m;
}

void agent_map_destroy(struct agent_map **mp)
{
    struct agent_map *m = *mp;
    if (m == NULL)
        return;
    free(m->cand);
    free(m->pub);
    free(m->hostnums);
    free(m->zones);
    free(m);
    *mp = NULL;
}

void agent_map_reset(struct agent_map *m)
{
    m->cand->nleaves[0] = m->cand->nleaves[1] = 0;
    memset(m->overflow, 0, sizeof(m->overflow));
    memset(m->ready, 0, sizeof(m->ready));
    memset(m->ids, 0, sizeof(m->ids));
    memset(m->members, 0, sizeof(m->members));
    memset(m->hostnums, 0, (AGENT_HOSTNUM_MAX + 1) * sizeof(*m->hostnums));
    memset(m->zones, 0, (AGENT_HOSTNUM_MAX + 1) * sizeof(*m->zones));
}

/* ---- leaves ------------------------------------------------------------------- */

/* Index of the first leaf not below (start, bits); *hit if it is that one. */
static uint32_t leaf_find(const struct cmap_table *t, int p, uint32_t start, uint8_t bits,
                          int *hit)
{
    uint32_t lo = 0, hi = t->nleaves[p];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct cmap_leaf *l = &t->leaves[p][mid];
        if (l->start < start || (l->start == start && l->bits < bits))
            lo = mid + 1;
        else
            hi = mid;
    }
    *hit = lo < t->nleaves[p] && t->leaves[p][lo].start == start && t->leaves[p][lo].bits == bits;
    return lo;
}

static void leaf_event(struct agent_map *m, const struct agent_key_info *k, const char *val,
                       size_t vlen, int64_t rev)
{
    struct cmap_table *t = m->cand;
    int p = k->pool, hit;
    uint8_t bits = (uint8_t)k->bits;
    uint32_t start = bits == 0 ? 0 : k->prefix << (32 - bits);
    uint32_t i = leaf_find(t, p, start, bits, &hit);
    if (val == NULL) {
        if (hit) {
            memmove(&t->leaves[p][i], &t->leaves[p][i + 1],
                    (t->nleaves[p] - i - 1) * sizeof(struct cmap_leaf));
            t->nleaves[p]--;
        }
        return;
    }
    struct cmap_leaf l = {.start = start, .bits = bits, .epoch = rev};
    struct agent_leaf_v v;
    if (agent_parse_leaf(val, vlen, &v) != HKV_OK) {
        m->stats.bad_values++;
        memset(&v, 0, sizeof(v)); /* owner 0 refuses the map: see the top of the file */
    }
    l.owner = (uint16_t)v.owner;
    l.state = (uint8_t)v.state;
    l.to = (uint16_t)v.to;
    l.nisr = (uint8_t)v.nisr;
    memcpy(l.isr, v.isr, sizeof(l.isr));
    if (!hit) {
        if (t->nleaves[p] >= CMAP_MAX_LEAVES) {
            m->overflow[p]++;
            return;
        }
        memmove(&t->leaves[p][i + 1], &t->leaves[p][i],
                (t->nleaves[p] - i) * sizeof(struct cmap_leaf));
        t->nleaves[p]++;
    }
    t->leaves[p][i] = l;
}

/* ---- owners, members, hosts, pools -------------------------------------------- */

static void member_event(struct agent_map *m, const struct agent_key_info *k, const char *val,
                         size_t vlen)
{
    /* the key's old entry goes either way (a put may move it to another number) */
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (m->members[n].present && strcmp(m->members[n].id, k->name) == 0)
            m->members[n].present = 0;
    if (val == NULL)
        return;
    struct agent_member am;
    if (agent_parse_member(val, vlen, &am) != HKV_OK) {
        m->stats.bad_values++;
        return;
    }
    struct member *x = &m->members[am.number];
    x->present = 1;
    snprintf(x->id, sizeof(x->id), "%s", k->name);
    x->m = am;
}

enum agent_key_kind agent_map_apply(struct agent_map *m, const char *key, size_t klen,
                                    const char *val, size_t vlen, int64_t rev)
{
    struct agent_key_info k;
    enum agent_key_kind kind = agent_key_parse(key, klen, m->prefix, m->plen, &k);
    m->stats.events++;
    switch (kind) {
    case AGENT_K_LEAF:
        leaf_event(m, &k, val, vlen, rev);
        break;
    case AGENT_K_OWNER:
        m->ids[k.number][0] = '\0';
        if (val != NULL &&
            agent_parse_owner(val, vlen, m->ids[k.number], sizeof(m->ids[0])) != HKV_OK) {
            m->ids[k.number][0] = '\0';
            m->stats.bad_values++;
        }
        break;
    case AGENT_K_MEMBER:
        member_event(m, &k, val, vlen);
        break;
    case AGENT_K_HOSTNUM:
        m->hostnums[k.number][0] = '\0';
        if (val != NULL && agent_parse_hostnum(val, vlen, m->hostnums[k.number],
                                               sizeof(m->hostnums[0])) != HKV_OK) {
            m->hostnums[k.number][0] = '\0';
            m->stats.bad_values++;
        }
        break;
    case AGENT_K_POOL: {
        int bits, ready = 0;
        if (val != NULL && agent_parse_pool(val, vlen, &bits, &ready) != HKV_OK)
            m->stats.bad_values++;
        m->ready[k.pool] = val != NULL && ready;
        break;
    }
    case AGENT_K_HOST: {
        char addr[CMAP_NAME_MAX], zone[CMAP_NAME_MAX];
        unsigned h;
        if (val != NULL && agent_parse_host(val, vlen, addr, sizeof(addr), &h, zone,
                                            sizeof(zone)) == HKV_OK)
            memcpy(m->zones[h], zone, sizeof(zone)); /* a deleted one keeps its zone */
        break;
    }
    case AGENT_K_CLUSTER:
    case AGENT_K_WRITER:
        break; /* registrations: the map does not need them */
    case AGENT_K_OTHER:
        m->stats.ignored++;
        break;
    }
    return kind;
}

/* ---- commit ------------------------------------------------------------------- */

static void owner_row(const struct agent_map *m, unsigned n, struct cmap_owner *o)
{
    memset(o, 0, sizeof(*o));
    int pool, k;
    if (m->ids[n][0] == '\0' ||
        agent_owner_id_parse(m->ids[n], o->host, sizeof(o->host), &pool, &k) != HKV_OK)
        return;
    o->number = (uint16_t)n;
    o->pool = (uint8_t)pool;
    o->index = (uint16_t)k;
    snprintf(o->id, sizeof(o->id), "%s", m->ids[n]);
    const struct member *x = &m->members[n];
    if (strcmp(x->id, m->ids[n]) != 0)
        return; /* never registered, or another id claimed the number */
    /* gone members keep their last address: links made stay in use */
    snprintf(o->addr, sizeof(o->addr), "%s", x->m.addr);
    o->port = (uint16_t)x->m.port;
    if (x->present && x->m.pool == pool) {
        o->live = 1;
        o->incarnation = x->m.incarnation;
    }
}

int agent_map_commit(struct agent_map *m, int64_t rev, const struct cmap_table **out, char *why,
                     size_t whylen)
{
    struct cmap_table *t = m->pub;
    t->revision = rev;
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        if (m->overflow[p] > 0) {
            snprintf(why, whylen, "pool %d: more than %u leaves", p, CMAP_MAX_LEAVES);
            t->nleaves[0] = t->nleaves[1] = 0;
            *out = t;
            return HKV_EINVAL;
        }
        t->nleaves[p] = m->ready[p] ? m->cand->nleaves[p] : 0;
        memcpy(t->leaves[p], m->cand->leaves[p], t->nleaves[p] * sizeof(struct cmap_leaf));
    }
    for (unsigned n = 0; n <= CMAP_MAX_OWNERS; n++)
        owner_row(m, n, &t->owners[n]);
    memset(&t->owners[0], 0, sizeof(t->owners[0]));
    *out = t;
    return cmap_validate(t, why, whylen);
}

/* ---- numbers ------------------------------------------------------------------ */

unsigned agent_map_host_number(const struct agent_map *m, const char *host)
{
    if (host == NULL || host[0] == '\0')
        return 0;
    for (unsigned h = 1; h <= AGENT_HOSTNUM_MAX; h++)
        if (strcmp(m->hostnums[h], host) == 0)
            return h;
    return 0;
}

unsigned agent_map_free_host_number(const struct agent_map *m)
{
    for (unsigned h = 1; h <= AGENT_HOSTNUM_MAX; h++)
        if (m->hostnums[h][0] == '\0')
            return h;
    return 0;
}

unsigned agent_map_owner_number(const struct agent_map *m, const char *id)
{
    if (id == NULL || id[0] == '\0')
        return 0;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        if (strcmp(m->ids[n], id) == 0)
            return n;
    return 0;
}

unsigned agent_map_free_owner_number(const struct agent_map *m, unsigned after)
{
    for (unsigned n = after + 1; n <= CMAP_MAX_OWNERS; n++)
        if (m->ids[n][0] == '\0')
            return n;
    return 0;
}

const char *agent_map_host_zone(const struct agent_map *m, const char *host)
{
    unsigned h = agent_map_host_number(m, host);
    return h != 0 ? m->zones[h] : "";
}

void agent_map_stats(const struct agent_map *m, struct agent_map_stats *out)
{
    *out = m->stats;
}

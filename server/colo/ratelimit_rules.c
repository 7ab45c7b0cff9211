/*
 * ratelimit_rules.c - what a request is charged to and how much a class may
 * take, per process (server/colo/ratelimit.h): the rules from the config
 * (ratelimit read/write/admin and ratelimit-command lines), the map from
 * command id to limit class that the edge reads before anything else, and
 * the client key made from a peer address.
 *
 * The design choice: nothing here is shared.  Each edge turns its own
 * config into rules (rl_configure, again at every reload), so a reload
 * changes limits without touching the segment, and the buckets there keep
 * who used what.  A rule is kept in the form the charge needs (ns per token
 * and the burst in ns: struct rl_rule), so rl_check does no division.
 */
#include "server/colo/ratelimit.h"

#include <netinet/in.h>
#include <string.h>

#include "server/colo/ratelimit_int.h"

static const uint16_t no_map[CMD_COUNT];

/* ---- rules ---- */

static void set_rule(struct rl *rl, int cls, const struct cfg_rate *r)
{
    if (r == NULL || r->rate <= 0 || r->period_ms <= 0 || r->burst <= 0) {
        rl->rules[cls] = (struct rl_rule){0, 0};
        return;
    }
    int64_t period_ns = r->period_ms * 1000000LL;
    int64_t t = (period_ns + r->rate / 2) / r->rate, limit;
    if (t < 1)
        t = 1;
    if (__builtin_mul_overflow(t, r->burst, &limit) || limit > (1LL << 61))
        limit = 1LL << 61; /* cfg refuses these; never wrap */
    rl->rules[cls] = (struct rl_rule){t, limit};
}

int rl_configure(struct rl *rl, const struct cfg *cfg)
{
    if (rl == NULL)
        return 0;
    int unknown = 0;
    uint8_t exempt[CMD_COUNT] = {0};
    memset(rl->rules, 0, sizeof(rl->rules));
    set_rule(rl, RL_CLS_READ, &cfg->ratelimit[CFG_RL_READ]);
    set_rule(rl, RL_CLS_WRITE, &cfg->ratelimit[CFG_RL_WRITE]);
    set_rule(rl, RL_CLS_ADMIN, &cfg->ratelimit[CFG_RL_ADMIN]);
    for (size_t i = 0; i < cfg->nratelimit_cmds; i++) {
        const struct cfg_rate_cmd *rc = &cfg->ratelimit_cmds[i];
        const struct cmd_def *d = cmd_lookup(rc->name, strlen(rc->name));
        if (d == NULL) {
            unknown++;
            continue;
        }
        set_rule(rl, RL_CLS_CMD0 + (int)d->id, &rc->r);
        if (rc->r.rate == 0)
            exempt[d->id] = 1; /* `ratelimit-command NAME off`: not its class's either */
    }
    rl->nrules = 0;
    for (int k = 0; k < RL_NCLS; k++)
        rl->nrules += rl->rules[k].t != 0;
    for (int id = 0; id < CMD_COUNT; id++) {
        const struct cmd_def *d = cmd_get((enum cmd_id)id);
        uint16_t k = RL_CLS_NONE;
        if (rl->rules[RL_CLS_CMD0 + id].t != 0)
            k = (uint16_t)(RL_CLS_CMD0 + id);
        else if (exempt[id])
            k = RL_CLS_NONE;
        else if ((d->flags & CMD_F_WRITE) && rl->rules[RL_CLS_WRITE].t != 0)
            k = RL_CLS_WRITE;
        else if ((d->flags & CMD_F_READ) && rl->rules[RL_CLS_READ].t != 0)
            k = RL_CLS_READ;
        else if ((d->flags & CMD_F_ADMIN) && rl->rules[RL_CLS_ADMIN].t != 0)
            k = RL_CLS_ADMIN;
        rl->map[id] = k;
    }
    /* HELLO ... AUTH user pass tries a password too: charged to AUTH's own
     * limit unless HELLO has a line of its own (the caller skips a HELLO
     * that carries no AUTH: ratelimit.h) */
    const struct cmd_def *auth = cmd_lookup("auth", 4), *hello = cmd_lookup("hello", 5);
    if (auth != NULL && hello != NULL && rl->map[auth->id] == RL_CLS_CMD0 + auth->id &&
        rl->map[hello->id] == RL_CLS_NONE && !exempt[hello->id])
        rl->map[hello->id] = rl->map[auth->id];
    return unknown;
}

const uint16_t *rl_class_map(const struct rl *rl)
{
    return rl != NULL ? rl->map : no_map;
}

int rl_test_rule(struct rl *rl, int cls, int64_t rate, int64_t period_ms, int64_t burst)
{
    if (rl == NULL || cls <= RL_CLS_NONE || cls >= RL_NCLS)
        return HKV_EINVAL;
    struct cfg_rate r = {rate, period_ms, burst};
    set_rule(rl, cls, &r);
    return HKV_OK;
}

/* ---- keys ---- */

void rl_key_addr(struct rl_key *k, const struct sockaddr *sa, socklen_t len)
{
    memset(k, 0, sizeof(*k));
    if (sa == NULL)
        return;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        k->family = 4;
        memcpy(k->addr, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            k->family = 4; /* the same client as over IPv4 */
            memcpy(k->addr, &in6->sin6_addr.s6_addr[12], 4);
        } else {
            k->family = 6;
            memcpy(k->addr, &in6->sin6_addr, 8); /* /64: one site's hosts share it */
        }
    }
}

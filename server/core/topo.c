/*
 * topo.c - names of pools, colos and owner files (see topo.h).
 */
#include <stdio.h>

#include "server/core/topo.h"

const char *topo_pool_name(enum cfg_pool p)
{
    return p == CFG_POOL_HOT ? "hot" : "cold";
}

void topo_colo_name(const struct cfg *cfg, int k, char *buf, size_t len)
{
    if (cfg->colos <= 1)
        snprintf(buf, len, "%s", cfg->colo);
    else
        snprintf(buf, len, "%s-%d", cfg->colo, k);
}

void topo_owner_socket_in(const char *dir, enum cfg_pool pool, int index, char *buf, size_t len)
{
    snprintf(buf, len, "%s/owner-%s-%d.sock", dir, topo_pool_name(pool), index);
}

void topo_owner_socket(const struct cfg *cfg, enum cfg_pool pool, int index, char *buf,
                       size_t len)
{
    topo_owner_socket_in(cfg->dir, pool, index, buf, len);
}

void topo_owner_db(const struct cfg *cfg, enum cfg_pool pool, int index, char *buf, size_t len)
{
    snprintf(buf, len, "%s/owner-%s-%d.db", cfg->dir, topo_pool_name(pool), index);
}

void topo_agent_socket(const struct cfg *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%s/agent.sock", cfg->dir);
}

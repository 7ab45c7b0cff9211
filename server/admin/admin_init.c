/*
 * admin_init.c - `hotkvd --cluster-init` on a loaded config (admin.h): the
 * plan of keys is the agent's (server/agent/agent_init.h), run through the
 * tools' client against the cluster's etcd.
 */
#include <stdio.h>

#include "config/cfg.h"
#include "server/admin/admin.h"
#include "server/agent/agent.h"
#include "server/agent/agent_init.h"
#include "server/agent/agent_sync.h"

int admin_cluster_init(const struct cfg *cfg, const char *owners, int bits, FILE *out, FILE *err)
{
    struct agent_init_opts o = agent_init_opts_of(cfg);
    struct agent_sync *s = admin_sync_create(cfg);
    int code = agent_cluster_init_with(s, &o, owners, bits, out, err);
    agent_sync_destroy(&s);
    return code;
}

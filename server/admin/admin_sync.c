/*
 * admin_sync.c - the tools' etcd client for a config (admin.h): the same
 * options the agent gives its client, on a private loop (agent_sync.h), or,
 * on a single host with leaf-moves, the agent's local store through its
 * socket (the agent is the store's only writer: a tool never opens the file).
 */
#include <stdio.h>

#include "config/cfg.h"
#include "server/admin/admin.h"
#include "server/agent/agent.h"
#include "server/agent/agent_sync.h"
#include "server/agent/etcd_remote.h"
#include "server/core/topo.h"

struct agent_sync *admin_sync_create(const struct cfg *cfg)
{
    char sock[TOPO_PATH_MAX];
    struct etcd_opts o = agent_etcd_opts(cfg);
    o.max_body = 64u << 20;
    if (cfg_local_map(cfg)) { /* no etcd: the agent's local store, through its socket */
        snprintf(sock, sizeof(sock), "%s/%s", cfg->dir, ETCD_REMOTE_SOCKET);
        o.local_socket = sock;
    }
    return agent_sync_create(&o);
}

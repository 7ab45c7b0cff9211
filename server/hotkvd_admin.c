/*
 * hotkvd_admin.c - `hotkvd-admin CONFIG status`: the cluster as etcd holds
 * it (hosts, owners, leaves per owner, leases), for operators; and `leaf
 * list|split|move`; the lines are listed in server/agent/agent_admin.h.  A second program built from
 * the same library as the daemon; it only reads etcd.
 */
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "server/agent/agent_admin.h"
#include "server/core/version.h"
#include "server/master/master.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: hotkvd-admin CONFIG status\n"
               "       hotkvd-admin CONFIG leaf list\n"
               "       hotkvd-admin CONFIG leaf split POOL LEAF\n"
               "       hotkvd-admin CONFIG leaf move POOL LEAF TO [--wait MS]\n"
               "       hotkvd-admin --version | --help\n\n"
               "CONFIG is the hotkvd.conf of a cluster host (cluster, etcd-endpoints, etcd-*),\n"
               "or of a single host with leaf-moves yes (its agent's store, via DIR/leaf-map.sock).\n"
               "LEAF is BITS-PREFIX as `leaf list` prints it (6-0000002c); TO an owner number or id.\n"
               "Exit status 0, or 1 with the reason when etcd cannot be reached.\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-v") == 0)) {
        printf("hotkvd-admin %s\n", HOTKVD_VERSION);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    int leaf = argc >= 4 && strcmp(argv[2], "leaf") == 0;
    if (!leaf && (argc != 3 || strcmp(argv[2], "status") != 0)) {
        usage(stderr);
        return 1;
    }
    struct master_opts o = {.config_path = argv[1]};
    struct cfg_error err;
    struct cfg *cfg = master_load_config(&o, &err);
    if (cfg == NULL) {
        fprintf(stderr, "hotkvd-admin: %s\n", err.msg);
        return 1;
    }
    int code;
    if (cfg->cluster == NULL || cfg->cluster[0] == '\0') {
        fprintf(stderr, "hotkvd-admin: '%s' names no `cluster` (nor leaf-moves yes): a single host has no cluster "
                "status\n", argv[1]);
        code = 1;
    } else {
        code = leaf ? agent_admin_leaf(cfg, argc - 3, argv + 3, stdout, stderr)
                    : agent_admin_status(cfg, stdout, stderr);
    }
    cfg_destroy(&cfg);
    return code;
}

/*
 * admin_cli.c - the command lines of the tools (admin.h): `hotkvd
 * --cluster-init` and `hotkvd-admin`, from argv to a loaded config to one
 * command and its exit code.  The daemon's own command line stays in
 * server/main.c; it hands --cluster-init here, so the daemon binary starts
 * no daemon for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "server/admin/admin.h"
#include "server/agent/agent_init.h"
#include "server/core/version.h"
#include "server/master/master.h"

/* --cluster-init CONFIG [--owners LIST] [--bits N]: the cluster's keys in
 * etcd; the config names the cluster, etcd and the host. */
int admin_cluster_init_main(int argc, char **argv)
{
    const char *owners = NULL;
    int bits = AGENT_INIT_BITS;
    if (argc < 3 || strncmp(argv[2], "--", 2) == 0) {
        fprintf(stderr, "hotkvd: --cluster-init needs a config file\n");
        return 1;
    }
    for (int i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "hotkvd: --cluster-init: %s needs a value\n", argv[i]);
            return 1;
        }
        if (strcmp(argv[i], "--owners") == 0) {
            owners = argv[i + 1];
        } else if (strcmp(argv[i], "--bits") == 0) {
            char *end;
            long b = strtol(argv[i + 1], &end, 10);
            if (*end != '\0' || end == argv[i + 1] || b < 0 || b > 14) {
                fprintf(stderr, "hotkvd: --bits '%s': a leaf depth, 0..14\n", argv[i + 1]);
                return 1;
            }
            bits = (int)b;
        } else {
            fprintf(stderr, "hotkvd: --cluster-init: unknown option '%s' (--owners, --bits)\n",
                    argv[i]);
            return 1;
        }
    }
    struct master_opts o = {.config_path = argv[2]};
    struct cfg_error err;
    struct cfg *cfg = master_load_config(&o, &err);
    if (cfg == NULL) {
        fprintf(stderr, "hotkvd: %s\n", err.msg);
        return 1;
    }
    int code;
    if (cfg->cluster == NULL || cfg->cluster[0] == '\0') {
        fprintf(stderr, "hotkvd: --cluster-init: '%s' names no `cluster`\n", argv[2]);
        code = 1;
    } else if (cfg_local_map(cfg)) {
        fprintf(stderr, "hotkvd: --cluster-init: '%s' is a single host with leaf-moves: its "
                "agent makes the map at its first start\n", argv[2]);
        code = 1;
    } else {
        code = admin_cluster_init(cfg, owners, bits, stdout, stderr);
    }
    cfg_destroy(&cfg);
    return code;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: hotkvd-admin CONFIG status\n"
               "       hotkvd-admin CONFIG leaf list\n"
               "       hotkvd-admin CONFIG leaf split POOL LEAF\n"
               "       hotkvd-admin CONFIG leaf move POOL LEAF TO [--wait MS]\n"
               "       hotkvd-admin CONFIG leaf failover POOL LEAF [--wait MS]\n"
               "       hotkvd-admin CONFIG host drain HOST [--wait MS]\n"
               "       hotkvd-admin --version | --help\n\n"
               "CONFIG is the hotkvd.conf of a cluster host (cluster, etcd-endpoints, etcd-*),\n"
               "or of a single host with leaf-moves yes (its agent's store, via DIR/leaf-map.sock).\n"
               "LEAF is BITS-PREFIX as `leaf list` prints it (6-0000002c); TO an owner number or id.\n"
               "Exit status 0, or 1 with the reason when etcd cannot be reached.\n");
}

int admin_main(int argc, char **argv)
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
    int host = argc >= 4 && strcmp(argv[2], "host") == 0;
    if (!leaf && !host && (argc != 3 || strcmp(argv[2], "status") != 0)) {
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
        fprintf(stderr, "hotkvd-admin: '%s' names no `cluster` (nor leaf-moves yes): a single host "
                "has no cluster status\n", argv[1]);
        code = 1;
    } else {
        code = leaf ? admin_leaf(cfg, argc - 3, argv + 3, stdout, stderr)
               : host ? admin_host(cfg, argc - 3, argv + 3, stdout, stderr)
                      : admin_status(cfg, stdout, stderr);
    }
    cfg_destroy(&cfg);
    return code;
}

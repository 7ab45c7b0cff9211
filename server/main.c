/*
 * main.c - the command line: `hotkvd [CONFIG] [--directive value ...]`,
 * `hotkvd --test-config CONFIG [--directive value ...]`, --version, --help,
 * and a cluster's bootstrap, `hotkvd --cluster-init CONFIG [--owners
 * ID,...] [--bits N]` (server/admin/admin.h).
 * Command-line directives override the file, as redis-server's do, and are
 * replayed on every reload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "server/admin/admin.h"
#include "server/master/master.h"
#include "server/core/proctitle.h"
#include "server/core/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: hotkvd [CONFIG] [--directive value ...]\n"
            "       hotkvd --test-config CONFIG [--directive value ...]\n"
            "       hotkvd --cluster-init CONFIG [--owners HOST/POOL/K,...] [--bits N]\n"
            "       hotkvd --version | --help\n\n"
            "Examples:\n"
            "       hotkvd /etc/hotkvd/hotkvd.conf\n"
            "       hotkvd hotkvd.conf --port 7000 --loglevel verbose\n"
            "       hotkvd --port 6380 --dir /var/lib/hotkvd\n\n"
            "Directives are those of hotkvd.conf.example.  SIGHUP reloads the file,\n"
            "SIGTERM stops.\n");
}

int main(int argc, char **argv)
{
    proctitle_init(argc, argv);
    struct master_opts o = {0};
    int test_only = 0;
    int i = 1;

    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-v") == 0)) {
        printf("hotkvd %s\n", HOTKVD_VERSION);
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--cluster-init") == 0)
        return admin_cluster_init_main(argc, argv); /* a tool, not the daemon */
    if (argc >= 2 && strcmp(argv[1], "--test-config") == 0) {
        if (argc < 3 || strncmp(argv[2], "--", 2) == 0) {
            fprintf(stderr, "hotkvd: --test-config needs a config file\n");
            return 1;
        }
        test_only = 1;
        o.config_path = argv[2];
        i = 3;
    } else if (argc >= 2 && strncmp(argv[1], "--", 2) != 0) {
        o.config_path = argv[1];
        i = 2;
    }

    /* Each "--name" starts a directive; the words up to the next "--name"
     * are its arguments. */
    o.override_argc = calloc((size_t)argc, sizeof(int));
    o.override_argv = calloc((size_t)argc, sizeof(char **));
    if (o.override_argc == NULL || o.override_argv == NULL)
        return 1;
    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
            fprintf(stderr, "hotkvd: unexpected argument '%s' (directives are --name value)\n",
                    argv[i]);
            free(o.override_argc);
            free(o.override_argv);
            return 1;
        }
        argv[i] += 2;
        int start = i++;
        while (i < argc && strncmp(argv[i], "--", 2) != 0)
            i++;
        o.override_argc[o.noverrides] = i - start;
        o.override_argv[o.noverrides] = &argv[start];
        o.noverrides++;
    }

    struct cfg_error err;
    int code;
    struct cfg *cfg = master_load_config(&o, &err);
    if (cfg == NULL) {
        fprintf(stderr, "hotkvd: %s\n", err.msg);
        code = 1;
    } else if (test_only) {
        printf("hotkvd: configuration '%s' is valid\n", o.config_path);
        cfg_destroy(&cfg);
        code = 0;
    } else {
        code = master_run(&o, cfg); /* takes cfg */
    }
    free(o.override_argc);
    free(o.override_argv);
    return code;
}

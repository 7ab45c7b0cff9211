/* storm_cli.c - storm's command line; see storm_int.h. */
#include "scripts/bench/storm_int.h"

/* ---- main --------------------------------------------------------------------- */

void usage(FILE *f)
{
    fprintf(f,
            "usage: storm [options]\n"
            "  --host ADDR             loopback address (default 127.0.0.1; others refused)\n"
            "  --port N                server port (default 6379)\n"
            "  --writer-port N         the writer's port (hotkvd's writer-port; default --port)\n"
            "  --readers N             reader connections (default 200; readers+writer <= %d)\n"
            "  --pipeline P            GETs in flight per reader (default 1)\n"
            "  --keys K                keys read; rank 0 is --key, rank i is KEY:i (default 1)\n"
            "  --zipf S                Zipf skew over the K keys (default 0.99)\n"
            "  --duration SECS         run time (default 10; the process ends by SECS+5)\n"
            "  --write-interval-ms I   the writer SETs the hot key every I ms; 0 = no writer (default 10)\n"
            "  --write-timeout-ms T    a write without reply after T ms is a timeout (default 1000)\n"
            "  --value-size B          bytes per written value (default 64)\n"
            "  --key NAME              the hot key (default bench:hot)\n"
            "  --latency-log FILE      per-write log: t_s latency_us status\n"
            "  --info-owner-reads      print owner read calls/s from INFO owner_reads (hotkvd)\n"
            "  --load N                loading mode: SET KEY and KEY:1..KEY:N-1 over the\n"
            "                          reader connections (pipeline P), then exit\n",
            MAX_CONNS);
}

static long parse_long(const char *name, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "storm: --%s must be an integer in %ld..%ld, not '%s'\n", name, lo, hi, v);
        exit(2);
    }
    return x;
}

static double parse_double(const char *name, const char *v, double lo, double hi)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !(x >= lo && x <= hi)) {
        fprintf(stderr, "storm: --%s must be a number in %g..%g, not '%s'\n", name, lo, hi, v);
        exit(2);
    }
    return x;
}

void parse_opts(struct opts *o, int argc, char **argv)
{
    *o = (struct opts){.host = "127.0.0.1", .port = 6379, .readers = 200, .pipeline = 1,
                       .keys = 1, .zipf = 0.99, .duration = 10, .write_interval_ms = 10,
                       .write_timeout_ms = 1000, .value_size = 64, .key = "bench:hot"};
    static const struct option lo[] = {
        {"host", required_argument, 0, 'h'},
        {"port", required_argument, 0, 'p'},
        {"writer-port", required_argument, 0, 'W'},
        {"readers", required_argument, 0, 'r'},
        {"pipeline", required_argument, 0, 'P'},
        {"keys", required_argument, 0, 'k'},
        {"zipf", required_argument, 0, 'z'},
        {"duration", required_argument, 0, 'd'},
        {"write-interval-ms", required_argument, 0, 'i'},
        {"write-timeout-ms", required_argument, 0, 't'},
        {"value-size", required_argument, 0, 'v'},
        {"latency-log", required_argument, 0, 'l'},
        {"info-owner-reads", no_argument, 0, 'o'},
        {"key", required_argument, 0, 'K'},
        {"load", required_argument, 0, 'L'},
        {"help", no_argument, 0, 'H'},
        {0, 0, 0, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': o->host = optarg; break;
        case 'p': o->port = (int)parse_long("port", optarg, 1, 65535); break;
        case 'W': o->writer_port = (int)parse_long("writer-port", optarg, 1, 65535); break;
        case 'r': o->readers = (int)parse_long("readers", optarg, 0, MAX_CONNS - 1); break;
        case 'P': o->pipeline = (int)parse_long("pipeline", optarg, 1, 100000); break;
        case 'k': o->keys = parse_long("keys", optarg, 1, 100000000); break;
        case 'z': o->zipf = parse_double("zipf", optarg, 0, 10); break;
        case 'd': o->duration = parse_double("duration", optarg, 0.05, 3600); break;
        case 'i': o->write_interval_ms = (int)parse_long("write-interval-ms", optarg, 0, 3600000); break;
        case 't': o->write_timeout_ms = (int)parse_long("write-timeout-ms", optarg, 1, 3600000); break;
        case 'v': o->value_size = (int)parse_long("value-size", optarg, 1, 64 << 20); break;
        case 'l': o->latency_log = optarg; break;
        case 'o': o->info_owner_reads = 1; break;
        case 'K':
            if (strlen(optarg) == 0 || strlen(optarg) > 256)
                die("--key must be 1..256 bytes: '%s'", optarg);
            o->key = optarg;
            break;
        case 'L': o->load = parse_long("load", optarg, 1, 100000000); break;
        case 'H': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc)
        die("unexpected argument '%s'", argv[optind]);
    if (o->load > 0 && o->readers < 1)
        die("--load needs --readers >= 1 (%s)", "loading connections");
    if (o->readers == 0 && o->write_interval_ms == 0)
        die("nothing to do: no readers and no writer%s", "");
}


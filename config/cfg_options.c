/*
 * cfg_options.c - the option table: the one place a directive is defined.
 *
 * CFG_OPTIONS is an X-macro list.  Each row names the directive, its type, the
 * struct cfg field it fills (and the count field for lists), its default as
 * config text, its bounds, its flags, one extra (a checker, enum names or a
 * special handler) and a one-line doc.  The defaults are text on purpose:
 * cfg_create parses them with the same code that parses a file, so a default
 * cannot disagree with what the parser would accept or how it would store it.
 * Table order is the order of cfg_serialize's output and of CONFIG GET *.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"
#include "proto/notify.h"

const char *const cfg_loglevel_names[] = { "debug", "verbose", "notice", "warning", "nothing",
                                           NULL };

static const char *check_nonempty(const char *s)
{
    return s[0] != '\0' ? NULL : "needs a non-empty value";
}

static const char *check_colo(const char *s)
{
    return cfg_name_ok(s, 32) ? NULL : "needs 1 to 32 characters of [A-Za-z0-9_-]";
}

static const char *check_cluster(const char *s)
{
    return s[0] == '\0' || cfg_name_ok(s, 32) ? NULL : "needs 0 to 32 characters of [A-Za-z0-9_-]";
}

static const char *check_cidr(const char *s)
{
    struct cfg_cidr c;
    return cfg_cidr_parse(s, &c) == HKV_OK ? NULL
                                           : "needs addresses or CIDR ranges (10.0.0.0/8, ::1), or any";
}

static const char *check_notify(const char *s)
{
    unsigned f;
    return notify_parse(s, &f) == 0 ? NULL
                                    : "needs Redis's classes: any of K E g $ l s h z x e t m d n A";
}

const char *const cfg_tls_auth_names[] = { "no", "yes", "optional", NULL };

/* tls-protocols: one or more of TLSv1.2 TLSv1.3, space-separated. */
static const char *check_tls_protocols(const char *s)
{
    int n = 0;
    while (*s != '\0') {
        size_t w = strcspn(s, " \t");
        if (w == 0) {
            s++;
            continue;
        }
        if (!((w == 7 && strncasecmp(s, "TLSv1.2", 7) == 0) ||
              (w == 7 && strncasecmp(s, "TLSv1.3", 7) == 0)))
            return "needs one or more of TLSv1.2 TLSv1.3";
        n++;
        s += w;
    }
    return n > 0 ? NULL : "needs one or more of TLSv1.2 TLSv1.3";
}

#define R CFG_F_RELOADABLE
#define M CFG_F_MULTI
#define P CFG_F_PATH
#define S CFG_F_SECRET
#define NOX .check = NULL

/*  X(name, type, field, count field, default, min, max, flags, extra, doc)
 *  For scalars the count field repeats the field; it is not used. */
#define CFG_OPTIONS(X)                                                                          \
    X("bind", STRLIST, bind, nbind, "127.0.0.1", 1, 16, 0, .check = check_nonempty,              \
      "addresses to listen on, one or more")                                                    \
    X("port", INT, port, port, "6380", 0, 65535, 0, NOX, "TCP port for clients")                 \
    X("dir", PATH, dir, dir, ".", 0, 0, P, .check = check_nonempty,                              \
      "data directory (SQLite files, pid file when relative)")                                 \
    X("pidfile", PATH, pidfile, pidfile, "\"\"", 0, 0, P, NOX, "pid file; \"\" = none")          \
    X("logfile", PATH, logfile, logfile, "\"\"", 0, 0, R | P, NOX, "log file; \"\" = stderr")    \
    X("loglevel", ENUM, loglevel, loglevel, "notice", 0, 0, R, .enums = cfg_loglevel_names,      \
      "debug | verbose | notice | warning | nothing")                                           \
    X("colo", STRING, colo, colo, "a", 0, 0, 0, .check = check_colo,                             \
      "this host's colo name, [A-Za-z0-9_-]{1,32}")                                             \
    X("edge-workers", INT, edge_workers, edge_workers, "2", 1, 256, 0, NOX,                      \
      "edge worker processes in each colo")                                                     \
    X("writer-port", INT, writer_port, writer_port, "0", 0, 65535, 0, NOX,                       \
      "a port served by writer edges only (point writers here: they never wait behind a read "  \
      "storm's clients); 0 = off")                                                              \
    X("writer-edges", INT, writer_edges, writer_edges, "1", 1, 255, 0, NOX,                      \
      "with writer-port: how many of each colo's edge-workers serve it (and nothing else)")    \
    X("colos", INT, colos, colos, "1", 1, 16, 0, NOX,                                            \
      "colos on this host (e.g. one per NUMA node), each with its own cache segment")           \
    X("owner-push", BOOL, owner_push, owner_push, "yes", 0, 0, R, NOX,                           \
      "owners push each write to every colo (hot: the value; cold: an invalidation)")           \
    X("notify-keyspace-events", STRING, notify_keyspace_events, notify_keyspace_events, "\"\"",  \
      0, 0, R, .check = check_notify,                                                            \
      "keyspace notifications' classes, Redis's letters (K E g $ x A ...; \"\" = none)")      \
    X("hot-owners", INT, hot_owners, hot_owners, "2", 0, 256, 0, NOX,                            \
      "owner processes in the hot pool")                                                        \
    X("cold-owners", INT, cold_owners, cold_owners, "1", 0, 256, 0, NOX,                         \
      "owner processes in the cold pool")                                                       \
    X("maxclients", INT, maxclients, maxclients, "10000", 1, 1000000, R, NOX,                    \
      "client connections, all edges together")                                                     \
    X("timeout", DURATION, timeout_ms, timeout_ms, "0", 0, 365 * CFG_DAY, R, NOX,                \
      "close a client idle this long; 0 = never")                                               \
    X("tcp-keepalive", DURATION, tcp_keepalive_ms, tcp_keepalive_ms, "300s", 0, CFG_DAY, R, NOX, \
      "TCP keepalive interval for clients; 0 = off")                                            \
    X("proto-max-bulk-len", SIZE, proto_max_bulk_len, proto_max_bulk_len, "16mb", CFG_MB,      \
      4 * CFG_GB, R, NOX, "largest bulk string a client may send")                              \
    X("proto-max-args", INT, proto_max_args, proto_max_args, "1048576", 1, INT32_MAX, R, NOX,    \
      "most arguments in one command")                                                          \
    X("keys-max", INT, keys_max, keys_max, "100000", 1, 100000000, R, NOX,                       \
      "most keys one KEYS may answer; past it KEYS is refused (use SCAN)")                      \
    X("tracking-table-max-keys", INT, tracking_table_max_keys, tracking_table_max_keys,        \
      "1000000", 0, 100000000, R, NOX,                                                          \
      "keys CLIENT TRACKING remembers per edge; past it random ones are invalidated; 0 = no "   \
      "limit")                                                                                  \
    X("tracking-max-prefixes", INT, tracking_max_prefixes, tracking_max_prefixes, "1024", 1,   \
      1000000, R, NOX, "BCAST prefixes one tracking client may register")                        \
    X("acllog-max-len", INT, acllog_max_len, acllog_max_len, "128", 0, 1024, R, NOX,            \
      "denied attempts ACL LOG keeps for the host; 0 = none kept")                              \
    X("client-query-buffer-limit", SIZE, client_query_buffer_limit, client_query_buffer_limit,  \
      "1gb", CFG_MB, 64 * CFG_GB, R, NOX, "largest unparsed input kept for one client")        \
    X("client-output-buffer-limit", SPECIAL, client_output_hard, client_output_hard,            \
      "256mb 64mb 60s pubsub 32mb 8mb 60s", 0, 0, R, .special = &cfg_cobl_special,              \
      "[CLASS] HARD SOFT SOFT-DURATION ...: drop a client over HARD, or over SOFT that long "  \
      "(class normal, or pubsub for a client in subscribed mode)")                            \
    X("pubsub-bus-size", SIZE, pubsub_bus_size, pubsub_bus_size, "4mb", 64 * 1024,             \
      CFG_GB, 0, NOX, "each colo's shared message ring (PUBLISH across its edges; restart)")            \
    X("client-max-pending", INT, client_max_pending, client_max_pending, "1024", 1, 1000000, R,  \
      NOX, "replies one client may be owed; past it its input is not read")                  \
    X("client-max-pending-bytes", SIZE, client_max_pending_bytes, client_max_pending_bytes,    \
      "64mb", CFG_MB, 64 * CFG_GB, R, NOX,                                                      \
      "bytes of arguments one client's requests waiting for owners may keep; past it its "     \
      "input is not read")                                                                      \
    X("multi-max-commands", INT, multi_max_commands, multi_max_commands, "10000", 1, 65536, R, \
      NOX, "commands one MULTI may queue (and keys one connection may WATCH)")                 \
    X("multi-max-bytes", SIZE, multi_max_bytes, multi_max_bytes, "32mb", 1, 4 * CFG_GB, R, NOX, \
      "bytes of arguments one MULTI may queue (and of keys one connection may WATCH)")        \
    X("protected-mode", BOOL, protected_mode, protected_mode, "yes", 0, 0, R, NOX,              \
      "with no password and no users, serve loopback clients only")                            \
    X("requirepass", SPECIAL, users, nusers, "\"\"", 0, 0, R | S,                                \
      .special = &cfg_requirepass_special, "password of the user default; \"\" = none")        \
    X("user", SPECIAL, users, nusers, "", 0, 0, R | M | S, .special = &cfg_user_special,         \
      "NAME [on|off] [>password|#sha256hex|nopass]... [~glob|allkeys]... "                     \
      "[+@read|+@write|+@admin|+@all]...")                                                      \
    X("shutdown-timeout", DURATION, shutdown_timeout_ms, shutdown_timeout_ms, "10s", 0,          \
      CFG_HOUR, R, NOX, "longest a graceful stop waits before it forces")                       \
    X("wire-max-frame", SIZE, wire_max_frame, wire_max_frame, "64mb", 64 * CFG_KB, 4 * CFG_GB,   \
      0, NOX, "largest frame on an owner link")                                                 \
    X("write-timeout", DURATION, write_timeout_ms, write_timeout_ms, "8s", 1, CFG_HOUR, R, NOX,  \
      "one write attempt to an owner gives up after this")                                      \
    X("write-retry-backoff", DURLIST, write_retry_backoff_ms, nwrite_retry_backoff,              \
      "1500ms 3000ms", 0, 16, R, NOX, "waits before each retry of a timed-out write (0..16)")   \
    X("write-deadline", DURATION, write_deadline_ms, write_deadline_ms, "28.5s", 1, CFG_DAY, R,  \
      NOX, "a write fails explicitly once this has passed, retries included")                  \
    X("write-completions-max", INT, write_completions_max, write_completions_max, "100000", 1,  \
      INT32_MAX, R, NOX, "results an owner keeps per edge for exactly-once retries")          \
    X("owner-maxmemory", SIZE, owner_maxmemory, owner_maxmemory, "0", 0, INT64_MAX, 0, NOX,      \
      "ledger memory per owner before clean keys are evicted; 0 = unbounded")                   \
    X("persist-interval", DURATION, persist_interval_ms, persist_interval_ms, "100ms", 1,        \
      CFG_HOUR, R, NOX, "a ledger write reaches SQLite within this")                            \
    X("persist-max-dirty", SIZE, persist_max_dirty, persist_max_dirty, "256mb", CFG_MB,          \
      INT64_MAX, R, NOX, "dirty bytes per owner before writes are refused")                     \
    X("persist-batch-max", INT, persist_batch_max, persist_batch_max, "20000", 1, 10000000, R,   \
      NOX, "rows per SQLite transaction of the persister")                                     \
    X("durable-timeout", DURATION, durable_timeout_ms, durable_timeout_ms, "5s", 1, CFG_HOUR, R, \
      NOX, "a durable write waits this long for its commit")                                    \
    X("tombstone-ttl", DURATION, tombstone_ttl_ms, tombstone_ttl_ms, "10m", 1, 365 * CFG_DAY, 0, \
      NOX, "how long a deleted key's tombstone is kept")                                        \
    X("cache-memory", SIZE, cache_memory, cache_memory, "256mb", CFG_MB, 64 * CFG_GB, 0, NOX,    \
      "size of the colo cache segment shared by the colo's edges")                               \
    X("cache-max-value", SIZE, cache_max_value, cache_max_value, "1mb", 64, 64 * CFG_MB, 0, NOX, \
      "larger values are not cached (every read asks the owner)")                               \
    X("miss-wait", DURATION, miss_wait_ms, miss_wait_ms, "1200ms", 1, CFG_HOUR, R, NOX,          \
      "longest a reader waits on a cache miss before its class's on-timeout answer")            \
    X("owner-probe-interval", DURATION, owner_probe_interval_ms, owner_probe_interval_ms,         \
      "100ms", 10, CFG_MIN, R, NOX,                                                             \
      "how often a colo probes an owner marked silent (one probe per colo per interval)")       \
    X("negative-ttl", DURATION, negative_ttl_ms, negative_ttl_ms, "1s", 0, CFG_HOUR, R, NOX,     \
      "how long an authoritative not-found is cached")                                          \
    X("hotkey-threshold", INT, hotkey_threshold, hotkey_threshold, "1000", 1, INT32_MAX, R, NOX, \
      "reads/s past which a key is hot (cached with its class's keep even if fresh is 0)")      \
    X("ratelimit", SPECIAL, ratelimit, ratelimit, "read off", 0, 0, R | M,                       \
      .special = &cfg_rl_class_special,                                                         \
      "read|write|admin RATE/PERIOD [burst N] | off: per client and colo; no line = unlimited") \
    X("ratelimit-command", SPECIAL, ratelimit_cmds, nratelimit_cmds, "auth 10/1s burst 20", 0,   \
      0, R | M, .special = &cfg_rl_cmd_special,                                                 \
      "NAME RATE/PERIOD [burst N] | off: one command's own limit, instead of its class's")     \
    X("ratelimit-buckets", INT, ratelimit_buckets, ratelimit_buckets, "65536", 64, 16777216, 0,  \
      NOX, "rate-limit buckets per colo (clients x classes tracked at once)")                   \
    X("app-ratelimit-memory", SIZE, app_ratelimit_memory, app_ratelimit_memory, "64mb", CFG_MB, \
      256 * CFG_MB, 0, NOX, "CL.THROTTLE's buckets per colo, 16 bytes each (its own segment)")  \
    X("app-ratelimit-key-max", INT, app_ratelimit_key_max, app_ratelimit_key_max, "1024", 1,    \
      1048576, R, NOX, "longest key CL.THROTTLE accepts, in bytes")                             \
    X("tls-port", INT, tls_port, tls_port, "0", 0, 65535, 0, NOX,                               \
      "TLS port for clients, on the bind addresses; 0 = no TLS")                                \
    X("tls-cert-file", PATH, tls_cert_file, tls_cert_file, "\"\"", 0, 0, R | P, NOX,              \
      "server certificate (PEM, may hold the chain); re-read on SIGHUP")                        \
    X("tls-key-file", PATH, tls_key_file, tls_key_file, "\"\"", 0, 0, R | P, NOX,                 \
      "private key of tls-cert-file (PEM, unencrypted)")                                        \
    X("tls-ca-cert-file", PATH, tls_ca_cert_file, tls_ca_cert_file, "\"\"", 0, 0, R | P, NOX,     \
      "CA certificates that client certificates are verified against")                          \
    X("tls-auth-clients", ENUM, tls_auth_clients, tls_auth_clients, "yes", 0, 0, R,              \
      .enums = cfg_tls_auth_names, "yes | no | optional: must a TLS client present a certificate") \
    X("tls-protocols", STRING, tls_protocols, tls_protocols, "\"TLSv1.2 TLSv1.3\"", 0, 0, R,      \
      .check = check_tls_protocols, "TLS versions accepted: TLSv1.2 and/or TLSv1.3")           \
    X("tls-handshake-timeout", DURATION, tls_handshake_timeout_ms, tls_handshake_timeout_ms,     \
      "5s", 1, CFG_HOUR, R, NOX, "close a TLS client whose handshake has not finished by then") \
    X("http-port", INT, http_port, http_port, "0", 0, 65535, 0, NOX,                             \
      "HTTP port (GET /v1/kv, /v1/watch, /healthz, /metrics), on the bind addresses; 0 = off")  \
    X("https-port", INT, https_port, https_port, "0", 0, 65535, 0, NOX,                          \
      "HTTPS port, with tls-port's certificate and client checks; 0 = off")                     \
    X("http-metrics-allow", STRLIST, http_metrics_allow, nhttp_metrics_allow,                     \
      "127.0.0.0/8 ::1", 1, 64, R, .check = check_cidr,                                          \
      "who may GET /metrics: addresses or CIDR ranges, or any")                                 \
    X("http-max-polls", INT, http_max_polls, http_max_polls, "10000", 0, 10000000, R, NOX,       \
      "long polls and watch streams one edge holds at once; past it 503 Retry-After")           \
    X("http-poll-max-wait", DURATION, http_poll_max_wait_ms, http_poll_max_wait_ms, "5m", 100,   \
      CFG_HOUR, R, NOX, "the longest wait= a long poll holds (plus up to 1/16 of jitter)")      \
    X("http-header-timeout", DURATION, http_header_timeout_ms, http_header_timeout_ms, "10s",    \
      100, CFG_HOUR, R, NOX, "a request's header section must arrive within this (slowloris)")  \
    X("http-body-timeout", DURATION, http_body_timeout_ms, http_body_timeout_ms, "10s", 100,     \
      CFG_HOUR, R, NOX, "a PUT's body must arrive within this after its headers, else close")   \
    X("http-idempotency-ttl", DURATION, http_idempotency_ttl_ms, http_idempotency_ttl_ms, "24h", \
      1000, 30 * CFG_DAY, R, NOX, "how long a write's Idempotency-Key answer is kept for retries") \
    X("http-keepalive-timeout", DURATION, http_keepalive_timeout_ms, http_keepalive_timeout_ms,  \
      "60s", 100, CFG_DAY, R, NOX, "close an HTTP connection idle this long between requests")   \
    X("http-heartbeat", DURATION, http_heartbeat_ms, http_heartbeat_ms, "5s", 100, CFG_HOUR, R,  \
      NOX, "watch streams send a heartbeat (SSE comment, NDJSON empty line) this often")        \
    X("cluster", STRING, cluster, cluster, "\"\"", 0, 0, 0, .check = check_cluster,              \
      "cluster name, [A-Za-z0-9_-]{0,32}; \"\" = a single host, no etcd")                         \
    X("host", STRING, host, host, "\"\"", 0, 0, 0, .check = check_cluster,                        \
      "this host's name in the cluster, [A-Za-z0-9_-]{1,32} (needed with cluster)")             \
    X("leaf-moves", BOOL, leaf_moves, leaf_moves, "no", 0, 0, 0, NOX,                            \
      "a single host moves and splits leaves (map in dir/leaf-map.store, no etcd)")             \
    X("etcd-endpoints", STRLIST, etcd_endpoints, netcd_endpoints, "http://127.0.0.1:2379", 1, 16, \
      R, .check = check_nonempty, "etcd client URLs (http:// or https://), tried in order")      \
    X("etcd-user", STRING, etcd_user, etcd_user, "\"\"", 0, 0, R, NOX,                           \
      "etcd user name; \"\" = etcd without authentication")                                    \
    X("etcd-password", STRING, etcd_password, etcd_password, "\"\"", 0, 0, R | S, NOX,           \
      "password of etcd-user")                                                                  \
    X("etcd-ca-file", PATH, etcd_ca_file, etcd_ca_file, "\"\"", 0, 0, R | P, NOX,                \
      "CA certificates for https etcd endpoints; \"\" = the system's")                          \
    X("etcd-lease-ttl", DURATION, etcd_lease_ttl_ms, etcd_lease_ttl_ms, "4s", 2000, CFG_HOUR, 0,  \
      NOX, "the host lease: its registrations vanish this long after the host stops")           \
    X("etcd-timeout", DURATION, etcd_timeout_ms, etcd_timeout_ms, "2s", 10, CFG_HOUR, R, NOX,    \
      "one etcd request (not the watch) gives up after this")                                   \
    X("move-fence-timeout", DURATION, move_fence_timeout_ms, move_fence_timeout_ms, "500ms", 10, \
      CFG_HOUR, R, NOX, "a leaf move's fence: writes to the leaf wait at most this long for the "  \
      "target's acknowledgment, then the move aborts")                                          \
    X("replicas", INT, replicas, replicas, "0", 0, CFG_MAX_REPLICAS, R, NOX,                 \
      "followers per leaf (another owner, on another host and zone when there is one); 0 = "  \
      "one copy")                                                                               \
    X("replica-timeout", DURATION, replica_timeout_ms, replica_timeout_ms, "1s", 10, CFG_HOUR, \
      R, NOX, "a follower that holds a write no sooner is taken out of the in-sync set (a CAS "  \
      "first), then writes go on without it")                                                   \
    X("zone", STRING, zone, zone, "\"\"", 0, 0, 0, NOX,                                          \
      "this host's failure zone: followers go to another zone first; \"\" = none")            \
    X("auto-moves", BOOL, auto_moves, auto_moves, "yes", 0, 0, R, NOX,                           \
      "the agent moves (and splits) leaves away from owners busy for move-window")              \
    X("move-busy-threshold", RATIO, move_busy_threshold, move_busy_threshold, "0.7", 10, 1000,  \
      R, NOX, "an owner whose loop is busy more than this fraction of move-window sheds a leaf") \
    X("move-window", DURATION, move_window_ms, move_window_ms, "10s", 100, CFG_HOUR, R, NOX,    \
      "owners measure and report their load over this window; busy means busy for all of it")  \
    X("move-split-min-share", INT, move_split_min_share, move_split_min_share, "25", 1, 50, R, \
      NOX, "split the busiest leaf before moving it only if each half carries this % of its work") \
    X("move-hot-key-share", INT, move_hot_key_share, move_hot_key_share, "50", 1, 100, R, NOX, \
      "a leaf one key carries this % of is neither split nor moved (counted, key in INFO)")    \
    X("move-cooldown-leaf", DURATION, move_cooldown_leaf_ms, move_cooldown_leaf_ms, "5m", 0,    \
      CFG_DAY, R, NOX, "a leaf moved, split or refused automatically is left alone this long") \
    X("move-cooldown-owner", DURATION, move_cooldown_owner_ms, move_cooldown_owner_ms, "30s", 0, \
      CFG_DAY, R, NOX, "an owner that shed a leaf automatically sheds no other for this long")  \
    X("owner-port", INT, owner_port, owner_port, "0", 0, 65535, 0, NOX,                          \
      "owner k of this host listens on TCP owner-port + k for other hosts; 0 = none")           \
    X("advertise-addr", STRING, advertise_addr, advertise_addr, "\"\"", 0, 0, 0, NOX,            \
      "the address other hosts reach this host's owners at (needed with owner-port)")           \
    X("cluster-tls-cert-file", PATH, cluster_tls_cert_file, cluster_tls_cert_file, "\"\"", 0, 0, \
      R | P, NOX, "this host's certificate for links between hosts (PEM, from the cluster CA)")  \
    X("cluster-tls-key-file", PATH, cluster_tls_key_file, cluster_tls_key_file, "\"\"", 0, 0,    \
      R | P, NOX, "private key of cluster-tls-cert-file (PEM, unencrypted)")                    \
    X("cluster-tls-ca-file", PATH, cluster_tls_ca_file, cluster_tls_ca_file, "\"\"", 0, 0,       \
      R | P, NOX, "the cluster CA: peers between hosts must present a certificate it signed")   \
    X("class", SPECIAL, classes, nclasses, "default", 0, 0, R | M,                               \
      .special = &cfg_class_special, "NAME [pattern GLOB]... [pool hot|cold] [fresh D] [keep D] " \
      "[durability ledger|durable] [on-timeout degrade|error] [content-type TYPE]")

#define CFG_ROW(n, t, f, cnt, d, lo, hi, fl, x, dc)                                             \
    { .name = n, .type = CFG_T_##t, .off = offsetof(struct cfg, f),                             \
      .size = sizeof(((struct cfg *)0)->f), .noff = offsetof(struct cfg, cnt), .def = d,        \
      .min = lo, .max = hi, .flags = fl, x, .doc = dc },

const struct cfg_option cfg_options[] = { CFG_OPTIONS(CFG_ROW) };
const size_t cfg_noptions = sizeof(cfg_options) / sizeof(cfg_options[0]);

#undef CFG_ROW
#undef R
#undef M
#undef P
#undef S
#undef NOX

const struct cfg_option *cfg_option_find(const char *name)
{
    for (size_t i = 0; i < cfg_noptions; i++)
        if (strcasecmp(cfg_options[i].name, name) == 0)
            return &cfg_options[i];
    return NULL;
}

size_t cfg_option_count(void)
{
    return cfg_noptions;
}

const char *cfg_option_name(size_t i)
{
    return i < cfg_noptions ? cfg_options[i].name : NULL;
}

int cfg_option_flags(size_t i)
{
    return i < cfg_noptions ? cfg_options[i].flags : 0;
}

const char *cfg_tls_auth_name(enum cfg_tls_auth a)
{
    if ((int)a < 0 || (int)a > CFG_TLS_AUTH_OPTIONAL)
        return "unknown";
    return cfg_tls_auth_names[a];
}

const char *cfg_loglevel_name(enum cfg_loglevel l)
{
    if ((int)l < 0 || (int)l > CFG_LOG_NOTHING)
        return "unknown";
    return cfg_loglevel_names[l];
}

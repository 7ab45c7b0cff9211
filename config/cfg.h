/*
 * cfg.h - hotkvd's configuration: one option table, a redis.conf-style parser,
 * validation, and the diff a reload needs.
 *
 * A struct cfg is a plain value: it is built whole (defaults, then a file, then
 * command-line overrides), validated, and only then handed to the running
 * processes.  A reload builds a new one and keeps the old one if anything
 * fails, so no half-applied configuration ever exists.  Every directive is
 * defined in exactly one place, the table in cfg_options.c: its type, default,
 * bounds, whether a reload may change it, and where it lives in struct cfg.
 *
 * Syntax (as redis.conf): `directive arg ...` per line, `#` comments, "double"
 * or 'single' quoted arguments with \n \t \\ \" \xHH escapes in double quotes,
 * `include FILE` (relative to the including file's directory, depth-limited).
 * Sizes take k kb m mb g gb (1k = 1000, 1kb = 1024).  Durations take ms s m h
 * and decimals ("1.5s"); a bare number means seconds.  Booleans: yes|no.
 * Directive names are case-insensitive.  Unknown directives are errors.
 *
 * Errors come back in a struct cfg_error formatted "FILE:LINE: reason"; the
 * library never prints.  None of these functions keeps a pointer to its inputs.
 */
#ifndef HKV_CFG_H
#define HKV_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define CFG_NAME_MAX 64

enum cfg_pool { CFG_POOL_HOT = 0, CFG_POOL_COLD = 1 };
enum cfg_durability { CFG_DUR_LEDGER = 0, CFG_DUR_DURABLE = 1 };
enum cfg_on_timeout { CFG_ONTO_DEGRADE = 0, CFG_ONTO_ERROR = 1 };
/* Redis's level names, in increasing severity. */
enum cfg_loglevel { CFG_LOG_DEBUG = 0, CFG_LOG_VERBOSE, CFG_LOG_NOTICE, CFG_LOG_WARNING,
                    CFG_LOG_NOTHING };
/* tls-auth-clients: whether a TLS client must present a certificate. */
enum cfg_tls_auth { CFG_TLS_AUTH_NO = 0, CFG_TLS_AUTH_YES = 1, CFG_TLS_AUTH_OPTIONAL = 2 };

#define CFG_CTYPE_MAX 128       /* a class's content-type, NUL included */
#define CFG_CTYPE_DEFAULT "application/octet-stream"

/* A key class: which pool holds its keys and how they are cached and stored.
 * `patterns` are globs (Redis glob syntax: * ? [a-z] [^x] \x); the class named
 * "default" has none and catches every key no other class matches. */
struct cfg_class {
    char name[CFG_NAME_MAX];
    char **patterns;
    size_t npatterns;
    enum cfg_pool pool;
    int64_t fresh_ms;
    int64_t keep_ms;
    enum cfg_durability durability;
    enum cfg_on_timeout on_timeout;
    char content_type[CFG_CTYPE_MAX]; /* HTTP Content-Type of its values */
};

/* A user, as `user NAME on|off [rule]...` states it (cfg_user.c).  Passwords
 * exist here only as SHA-256 digests: the parser hashes `>password` and wipes
 * the word.  `keys` are globs (`allkeys` is the pattern "*"); `cats` is a set
 * of CFG_ACL_* bits (command categories).  A new user is off, with no
 * password, no keys and no commands, as in Redis. */
#define CFG_DIGEST_LEN 32
#define CFG_ACL_READ  0x1        /* +@read: commands that read keys */
#define CFG_ACL_WRITE 0x2        /* +@write: commands that write keys */
#define CFG_ACL_ADMIN 0x4        /* +@admin: server administration (CONFIG ...) */
#define CFG_ACL_ALL   0x7
struct cfg_user {
    char name[CFG_NAME_MAX];
    int on;
    int nopass;                  /* any password is accepted */
    unsigned char (*digests)[CFG_DIGEST_LEN];
    size_t ndigests;
    char **keys;
    size_t nkeys;
    unsigned cats;
};

/* A rate limit (`ratelimit`, `ratelimit-command`; cfg_ratelimit.c): `rate`
 * requests per `period_ms`, up to `burst` at once; rate 0 = no limit ("off"). */
struct cfg_rate {
    int64_t rate;
    int64_t period_ms;
    int64_t burst;
};
enum cfg_rl_class { CFG_RL_READ = 0, CFG_RL_WRITE = 1, CFG_RL_ADMIN = 2, CFG_RL_NCLASS = 3 };
struct cfg_rate_cmd {
    char name[CFG_NAME_MAX];     /* lower case; may name a command this build lacks */
    struct cfg_rate r;           /* rate 0: "NAME off", not limited, not even by class */
};

struct cfg {
    /* network and process layout (restart-only) */
    char **bind;                 /* addresses to listen on */
    size_t nbind;
    int port;
    char *dir;                   /* data directory */
    char *pidfile;               /* "" = none */
    char *colo;                  /* this host's colo name */
    int edge_workers;            /* per colo */
    int writer_port;             /* restart-only; 0 = off */
    int writer_edges;            /* of edge_workers, per colo: serve writer_port only */
    int colos;                   /* colos on this host; names "<colo>-<k>" when > 1 */
    int hot_owners;
    int cold_owners;
    /* logging (reloadable) */
    char *logfile;               /* "" = stderr */
    enum cfg_loglevel loglevel;
    /* clients (reloadable) */
    int64_t maxclients;
    int64_t timeout_ms;          /* idle client timeout, 0 = never */
    int64_t tcp_keepalive_ms;
    int64_t proto_max_bulk_len;
    int64_t proto_max_args;
    int64_t keys_max;            /* KEYS refuses to answer more keys than this */
    int64_t tracking_table_max_keys; /* CLIENT TRACKING: keys remembered per edge (0: no bound) */
    int64_t tracking_max_prefixes; /* ... BCAST prefixes per client */
    int64_t acllog_max_len;       /* ACL LOG entries the host keeps */
    int64_t client_query_buffer_limit;
    int64_t client_output_hard;  /* client-output-buffer-limit HARD SOFT SECONDS */
    int64_t client_output_soft;
    int64_t client_output_soft_ms;
    int64_t pubsub_output_hard;  /* ... pubsub HARD SOFT SECONDS: subscribed clients */
    int64_t pubsub_output_soft;
    int64_t pubsub_output_soft_ms;
    int64_t pubsub_bus_size;     /* pubsub-bus-size: each colo's message ring */
    int64_t client_max_pending;  /* replies owed to one client before its input pauses */
    int64_t client_max_pending_bytes; /* arguments its waiting requests keep, likewise */
    int64_t multi_max_commands;  /* commands one MULTI queues (edge_tx.c) */
    int64_t multi_max_bytes;     /* bytes of the words one MULTI queues */
    /* security (reloadable) */
    int protected_mode;          /* no password: serve loopback clients only */
    /* users in file order.  `requirepass` is the password of the user
     * "default"; a config with no "default" entry has the implicit one:
     * `on nopass allkeys +@all` when no other user exists, else off. */
    struct cfg_user *users;
    size_t nusers;
    /* shutdown (reloadable) */
    int64_t shutdown_timeout_ms;
    /* owner link and write path */
    int64_t wire_max_frame;      /* restart-only */
    int64_t write_timeout_ms;
    int64_t *write_retry_backoff_ms;
    size_t nwrite_retry_backoff;
    int64_t write_deadline_ms;
    int write_completions_max;   /* per edge process, on each owner */
    /* owner storage */
    int64_t owner_maxmemory;     /* 0 = unbounded */
    int64_t persist_interval_ms;
    int64_t persist_max_dirty;
    int persist_batch_max;       /* rows per transaction */
    int64_t durable_timeout_ms;
    int64_t tombstone_ttl_ms;
    /* the colo cache */
    int64_t cache_memory;        /* restart-only */
    int64_t cache_max_value;     /* restart-only */
    int64_t miss_wait_ms;
    int64_t owner_probe_interval_ms; /* probes of an owner marked silent (edge_health.c) */
    int64_t negative_ttl_ms;
    int64_t hotkey_threshold;    /* reads/s */
    int owner_push;              /* owners push writes to colo caches */
    char *notify_keyspace_events;/* keyspace notifications' classes ("" = none; reloadable) */
    /* TLS for clients (server/core/tls.c); off while tls_port is 0 */
    int tls_port;                /* restart-only */
    char *tls_cert_file;         /* "" = none; the files reload on SIGHUP */
    char *tls_key_file;
    char *tls_ca_cert_file;
    enum cfg_tls_auth tls_auth_clients;
    char *tls_protocols;         /* "TLSv1.2 TLSv1.3": the versions allowed */
    int64_t tls_handshake_timeout_ms;
    /* the HTTP front door (server/edge/edge_http*.c); off while both ports are 0 */
    int http_port;               /* restart-only */
    int https_port;              /* restart-only; the TLS context of tls-port's files */
    char **http_metrics_allow;   /* who may GET /metrics: CIDRs, or "any" */
    size_t nhttp_metrics_allow;
    int64_t http_max_polls;      /* held long polls + watch streams per edge */
    int64_t http_poll_max_wait_ms;
    int64_t http_header_timeout_ms;    /* a request's header section, first byte to last */
    int64_t http_body_timeout_ms;      /* a PUT's body, after its header section */
    int64_t http_idempotency_ttl_ms;   /* an Idempotency-Key's record is kept this long */
    int64_t http_keepalive_timeout_ms; /* idle between requests */
    int64_t http_heartbeat_ms;   /* watch streams: a comment line this often */
    /* rate limiting (server/colo/ratelimit.c), per colo */
    struct cfg_rate ratelimit[CFG_RL_NCLASS];  /* per command class (reloadable) */
    struct cfg_rate_cmd *ratelimit_cmds;       /* per command, file order (reloadable) */
    size_t nratelimit_cmds;
    int64_t ratelimit_buckets;                 /* bucket table size (restart-only) */
    int64_t app_ratelimit_memory;              /* CL.THROTTLE's segment (restart-only) */
    int64_t app_ratelimit_key_max;             /* CL.THROTTLE's longest key */
    /* the cluster (../shared/CLUSTER.md); off while `cluster` is "" */
    char *cluster;               /* cluster name (restart-only); "" = single host, no etcd */
    char *host;                  /* this host's name in the cluster (restart-only) */
    int leaf_moves;              /* a single host moves leaves: the map in a local store */
    char **etcd_endpoints;       /* "http[s]://ADDR:PORT", tried in order (reloadable) */
    size_t netcd_endpoints;
    char *etcd_user;             /* "" = no etcd auth (reloadable) */
    char *etcd_password;
    char *etcd_ca_file;          /* CA for https endpoints; "" = the system's */
    int64_t etcd_lease_ttl_ms;   /* the host lease (restart-only) */
    int64_t etcd_timeout_ms;     /* one unary etcd call (reloadable) */
    int64_t move_fence_timeout_ms; /* a leaf move's fence deadline (reloadable) */
    /* replicas and failover (CLUSTER.md §7) */
    int replicas;                /* followers per leaf (reloadable) */
    int64_t replica_timeout_ms;  /* a follower this late leaves the in-sync set (reloadable) */
    char *zone;                  /* this host's failure zone; "" = none (restart-only) */
    /* automatic moves and splits (server/agent/agent_policy.h), all reloadable */
    int auto_moves;              /* the agent moves and splits leaves of busy owners */
    int move_busy_threshold;     /* an owner's loop busy fraction, per mille, ... */
    int64_t move_window_ms;      /* ... over this window (also the report period) */
    int move_split_min_share;    /* % of a leaf's work each half must carry to split it */
    int move_hot_key_share;      /* % of a leaf's work one key carries: refuse */
    int64_t move_cooldown_leaf_ms;  /* a leaf moved or split is left alone this long */
    int64_t move_cooldown_owner_ms; /* an owner a move left is left alone this long */
    int owner_port;              /* owner k of this host listens on owner-port + k; 0 = none */
    char *advertise_addr;        /* what other hosts dial for this host's owners */
    char *cluster_tls_cert_file; /* mutual TLS between hosts (edges <-> owners) */
    char *cluster_tls_key_file;
    char *cluster_tls_ca_file;
    /* classes, in file order; "default" is always present */
    struct cfg_class *classes;
    size_t nclasses;
    /* References (cfg_ref): not part of the value, never compared, copied
     * or serialized. */
    int refs;
    /* Where each directive was last set, by option-table row ("FILE:LINE",
     * "command line", "CONFIG SET"), so a check that relates several
     * directives can name the line to fix; NULL (array or entry) = the
     * default.  Copied with the config, otherwise not part of its value. */
    char **origins;
};

struct cfg_error {
    char msg[512];               /* "FILE:LINE: reason", or "reason" */
};

/* Option flags, as the table declares them. */
#define CFG_F_RELOADABLE 0x1     /* a SIGHUP or CONFIG SET may change it */
#define CFG_F_MULTI      0x2     /* may repeat; each occurrence adds (class) */
#define CFG_F_PATH       0x4     /* a filesystem path: never set over the network */
#define CFG_F_SECRET     0x8     /* credentials: never set nor shown over the network */

/* A new config holding every default, with one reference (the caller's).
 * NULL on allocation failure. */
struct cfg *cfg_create(void);
/* Drops the caller's reference and sets *c = NULL; the last one frees the
 * config and everything it owns.  NULL-safe. */
void cfg_destroy(struct cfg **c);
/* One more reference to c (returned), dropped with cfg_destroy.  A process
 * replaces its config on every reload and drops its own reference then; so
 * anything that keeps a pointer into a config (a class, a user, a string)
 * past the event-loop callback that read it holds a reference, and the
 * config lives as long as the last holder.  One thread: the count is not
 * atomic. */
struct cfg *cfg_ref(struct cfg *c);
/* A deep copy, with one reference; NULL on allocation failure. */
struct cfg *cfg_dup(const struct cfg *c);

/* Parses the file at `path` into c (over whatever c holds).  A directive given
 * in the file replaces the default; `class` adds a class (or replaces one of
 * the same name, `default` included).  HKV_EINVAL with err filled on the first
 * error: unreadable file, syntax, unknown directive, bad value, include loop. */
hkv_status cfg_load_file(struct cfg *c, const char *path, struct cfg_error *err);

/* Parses `len` bytes of config text; `origin` names it in errors.  `include`
 * is refused here (text has no directory).  Same return codes as load_file. */
hkv_status cfg_load_text(struct cfg *c, const char *text, size_t len, const char *origin,
                         struct cfg_error *err);

/* Applies one directive given as words (argv[0] is the name; a leading "--"
 * on it is ignored), as the command line's `--name arg ...` does.  `origin`
 * names it in errors ("ORIGIN: reason").  `include` reads a file relative to
 * the working directory. */
hkv_status cfg_apply(struct cfg *c, int argc, char **argv, const char *origin,
                     struct cfg_error *err);

/* Whole-config checks that no single directive can make (keep >= fresh, at
 * least one bind address, a default class, pools with owners for every class
 * that uses them ...).  HKV_OK or HKV_EINVAL with err filled. */
hkv_status cfg_validate(const struct cfg *c, struct cfg_error *err);

/* A single host that moves leaves (`leaf-moves yes` without a cluster): its
 * map lives in a local store the agent owns (server/agent/etcd_local.h),
 * not in etcd.  Such a host runs as a cluster of one, named
 * CFG_LOCAL_CLUSTER, whose host is named after its colo:
 * cfg_local_cluster() sets `cluster` and `host` so (the master and
 * hotkvd-admin call it once the file is validated; the children receive the
 * result), and cfg_local_map() says whether a config is such a host (the
 * cluster's own name with `leaf-moves yes`). */
#define CFG_LOCAL_CLUSTER "local"
int cfg_local_map(const struct cfg *c);
hkv_status cfg_local_cluster(struct cfg *c);

/* The whole config as canonical text that cfg_load_text accepts and that
 * reproduces an equal config.  Returns a malloc'd NUL-terminated string the
 * caller frees (length in *len if len != NULL), or NULL on allocation failure.
 * This is how the master hands a validated config to its children. */
char *cfg_serialize(const struct cfg *c, size_t *len);

/* Calls fn once per directive whose value differs between a and b, with the
 * directive's flags.  Returns how many differ. */
typedef void (*cfg_diff_fn)(const char *name, int flags, void *arg);
int cfg_diff(const struct cfg *a, const struct cfg *b, cfg_diff_fn fn, void *arg);

/* What a reload applies: a copy of `next` in which every restart-only
 * directive keeps its value from `live`.  NULL on allocation failure. */
struct cfg *cfg_reload_merge(const struct cfg *live, const struct cfg *next);

/* CONFIG GET/SET support.  cfg_get renders a directive's value as text into
 * buf (Redis's CONFIG GET form); HKV_ENOENT for an unknown name, HKV_EFULL if
 * buf is too small, HKV_EINVAL for a CFG_F_SECRET directive (requirepass,
 * user: CONFIG GET never shows credentials, not even digests).  cfg_set parses `value` (words split as the file would)
 * into a directive marked CFG_F_RELOADABLE and neither CFG_F_PATH nor
 * CFG_F_SECRET; HKV_EINVAL
 * with err filled otherwise (unknown, restart-only, path, bad value).  A SET
 * that would leave the whole config failing cfg_validate is refused too, and a
 * refused SET changes nothing.  `class` SET adds or replaces one class, given
 * as the words after `class` on a file line.
 *
 * GET forms, chosen so that SET of what GET returned sets the same value:
 * integers in decimal ("6380"); sizes in bytes ("536870912"); durations in
 * milliseconds with the unit ("28500ms", "0ms"); enums by name ("notice");
 * strings and paths bare, unquoted ("" when empty); lists space-separated
 * ("127.0.0.1 ::1", "1500ms 3000ms"); client-output-buffer-limit as
 * "HARD SOFT SOFT-DURATION" ("268435456 67108864 60000ms"); class as one line
 * per class, in lookup order, "NAME [pattern GLOB]... pool P fresh Nms keep
 * Nms durability D on-timeout T", patterns quoted as the file would need. */
hkv_status cfg_get(const struct cfg *c, const char *name, char *buf, size_t buflen);
hkv_status cfg_set(struct cfg *c, const char *name, const char *value, struct cfg_error *err);

/* The option table, for iteration (CONFIG GET globs, docs).  Names are the
 * canonical lower-case directive names. */
size_t cfg_option_count(void);
const char *cfg_option_name(size_t i);
int cfg_option_flags(size_t i);
/* The same table for people (cfg_doc.c; hotkvd.conf(5) is generated from
 * it): the one-line doc; the default as config text ("" when the directive
 * has none, `""` for an empty string); and the values the directive takes,
 * from its type and bounds, into buf ("an integer from 0 to 65535", "a size
 * from 1mb to 4gb", "one of debug, verbose, ..."), or "" when the doc itself
 * states the syntax (class, user, ratelimit ...).  NULL or "" past the end. */
const char *cfg_option_doc(size_t i);
const char *cfg_option_default(size_t i);
void cfg_option_syntax(size_t i, char *buf, size_t len);

/* The class of `key`: the first class (file order) with a matching pattern,
 * else the default class.  Never NULL for a validated config. */
const struct cfg_class *cfg_class_for(const struct cfg *c, const char *key, size_t keylen);
const struct cfg_class *cfg_class_named(const struct cfg *c, const char *name);

/* Redis-style glob match over binary-safe strings; 1 on match, else 0. */
int cfg_glob_match(const char *pat, size_t patlen, const char *s, size_t slen, int nocase);

/* The user named `name` as the config states it (NULL if no line names it;
 * see struct cfg for the implicit "default"). */
const struct cfg_user *cfg_user_named(const struct cfg *c, const char *name);
/* out = SHA-256(p[0..len)), the form every password is stored and compared in. */
void cfg_password_digest(const void *p, size_t len, unsigned char out[CFG_DIGEST_LEN]);

/* An address range as http-metrics-allow states it (cfg_cidr.c): "any",
 * an IPv4 or IPv6 address, or one with /prefix. */
struct cfg_cidr {
    int any;
    int family;                  /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int prefix;                  /* bits */
};
/* HKV_OK, or HKV_EINVAL for text that is none of those. */
hkv_status cfg_cidr_parse(const char *s, struct cfg_cidr *out);
/* 1 if the address sa (AF_INET or AF_INET6; an IPv4-mapped IPv6 address
 * matches IPv4 ranges) is in the range, else 0. */
struct sockaddr;
int cfg_cidr_match(const struct cfg_cidr *c, const struct sockaddr *sa);

/* Names for the enums, for logs and CONFIG GET. */
const char *cfg_loglevel_name(enum cfg_loglevel l);
const char *cfg_tls_auth_name(enum cfg_tls_auth a);

/* Rate limits: the name of a class, and the limit a ratelimit-command line
 * gives `name` (NULL if none names it). */
const char *cfg_rl_class_name(enum cfg_rl_class k);
const struct cfg_rate *cfg_ratelimit_command(const struct cfg *c, const char *name);

#endif

/*
 * ratelimit.h - the rate limiter: token buckets in a shared-memory segment
 * per colo, made by the master before it forks and shared by the colo's
 * edges, so a client is limited the same whichever edge of the colo its
 * connection lands on.
 *
 * Limits are PER COLO, NOT GLOBAL: each colo has its own segment, so a
 * client whose connections are spread over k colos (of this host or of
 * other hosts) can make up to k times the configured rate in all.  Nothing
 * of the limiter leaves the segment: no owner, no disk, no network; its
 * buckets and counters are gone when the daemon stops.
 *
 * A bucket is keyed by (client, limit class): the client is its address
 * (IPv4 /32, IPv6 /64, one shared key for Unix-socket clients) plus, once
 * it authenticated as a named user, that user; the limit class is read,
 * write, admin (from the command table's flags) or one command with its own
 * `ratelimit-command` line, which then replaces its class's limit.
 *
 * It FAILS OPEN: whenever it cannot decide - the table has no room within a
 * bounded probe, a stripe lock it cannot take within a bounded try (it
 * never blocks the caller's event loop), a segment that failed validation,
 * any other internal error - the request is allowed and counted in
 * ratelimit_failopen.  A lock whose holder died (EOWNERDEAD) is repaired and
 * the request then decided normally.  A broken stripe affects only clients
 * new to that stripe; every client already in a bucket, and every other
 * stripe, keeps being limited.
 *
 * The algorithm is GCRA (the token bucket written as one number): a bucket is
 * a 64-bit "theoretical arrival time" tat in CLOCK_MONOTONIC ns, the packed
 * form of (tokens, last refill): tokens = (now + burst*T - tat) / T, where T =
 * period/rate.  A request is allowed iff max(tat, now) + T - now <= burst*T,
 * and then tat becomes max(tat, now) + T by one CAS: no lock on the path of
 * a known client.  A rejected request learns when the next token comes.
 *
 * Rules (the RATE/PERIOD/burst of each class) are per process: each edge
 * sets them from its config (rl_configure) and again on every reload; the
 * buckets stay, so a reload changes limits without forgetting who used what.
 *
 * The segment's header, checksum, counter rows and robust stripe locks are
 * segment.h's (shared with the cache); the table and the charge are
 * ratelimit.c's, the per-process rules ratelimit_rules.c's, INFO's
 * numbers ratelimit_stats.c's.
 *
 * All functions are safe to call from any process attached to the segment,
 * concurrently; rl_configure and the rule reads are per process.
 */
#ifndef HKV_RATELIMIT_H
#define HKV_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/cfg.h"
#include "proto/cmd.h"
#include "proto/hkv.h"

struct rl;

struct rl_opts {
    uint32_t buckets;      /* ratelimit-buckets: table size, >= 64 */
};

/* Limit classes.  A command with its own limit has class RL_CLS_CMD0 + id. */
enum {
    RL_CLS_NONE = 0,       /* not limited */
    RL_CLS_READ = 1,
    RL_CLS_WRITE = 2,
    RL_CLS_ADMIN = 3,
    RL_CLS_CMD0 = 4,
    RL_NCLS = RL_CLS_CMD0 + CMD_COUNT
};

/* Who a request is charged to.  Build it with rl_key_addr and set `user`
 * (not copied; only read during rl_check) when the client authenticated. */
struct rl_key {
    uint8_t family;        /* 4, 6, or 0 (Unix socket or unknown: one shared key) */
    uint8_t addr[8];       /* IPv4: 4 bytes; IPv6: the /64 prefix; rest zero */
    const char *user;      /* authenticated user name, NULL = none */
    size_t ulen;
};

/* Counters, declared once.  X(name, help)  Every rl_check counts exactly one of
 * allowed / rejected / failopen; the failopen_* and lock_repairs counters
 * say why, for diagnosis. */
#define RL_COUNTERS(X)                                                                          \
    X(ratelimit_allowed, "Rate-limited commands allowed")                                      \
    X(ratelimit_rejected, "Commands refused over their rate limit (RATELIMITED)")              \
    X(ratelimit_failopen, "Commands allowed without a check (the limiter could not decide)")   \
    X(ratelimit_failopen_full, "Fail-opens because the bucket table was full")                 \
    X(ratelimit_failopen_busy, "Fail-opens because a bucket's lock was busy")                  \
    X(ratelimit_lock_repairs, "Limiter locks recovered from a process that died holding one")

enum rl_counter {
#define X(name, help) RL_CTR_##name,
    RL_COUNTERS(X)
#undef X
    RL_CTR_COUNT
};

struct rl_stats {
    uint64_t counters[RL_CTR_COUNT];
    uint64_t buckets;      /* buckets in use: holding a client not yet refilled to full */
    uint64_t capacity;     /* buckets the table has */
    int rules;             /* limit classes configured in this process */
};

/* Master, before fork: maps a new segment (memfd + MAP_SHARED, never named;
 * the fd is closed once mapped) with a fresh SipHash key from getrandom.
 * HKV_OK, HKV_EINVAL (buckets < 64 or > 2^24; errno EINVAL), HKV_ENOMEM. */
int rl_create(const struct rl_opts *o, struct rl **out);
/* Validates the header of an inherited segment (a child, once after fork).
 * HKV_OK, or HKV_ECORRUPT: the limiter then allows everything and counts
 * each check as failopen in this process (rl_stats still reports it). */
int rl_attach(struct rl *rl);
/* Unmaps (this process's view); sets *rl = NULL.  NULL-safe. */
void rl_destroy(struct rl **rl);

/* Sets this process's rules from cfg: ratelimit read/write/admin and every
 * ratelimit-command whose name the command table knows (`off` lines lift a
 * limit).  Returns how many ratelimit-command names matched no command (the
 * caller may log them; they limit nothing).  NULL rl: nothing, 0. */
int rl_configure(struct rl *rl, const struct cfg *cfg);
/* The limit class of each command id in this process, RL_CLS_NONE for a
 * command without a limit: the caller tests it before anything else, so an
 * unlimited command costs one load and one branch.  Never NULL (a static
 * all-zero map for rl NULL); valid until rl_destroy.  One exception to "the
 * class is all the caller needs": HELLO maps to AUTH's class while AUTH has
 * a limit (HELLO ... AUTH user pass also tries a password), and the caller
 * charges a HELLO only when it carries AUTH. */
const uint16_t *rl_class_map(const struct rl *rl);

/* Fills k from a peer address (AF_INET, AF_INET6 incl. v4-mapped, else the
 * shared key); user NULL. */
void rl_key_addr(struct rl_key *k, const struct sockaddr *sa, socklen_t len);

/* CLOCK_MONOTONIC in ns: the `now` of rl_check. */
int64_t rl_now(void);

enum rl_verdict { RL_ALLOW = 0, RL_REJECT = 1 };

/* Charges one request of class cls (RL_CLS_*, or RL_CLS_CMD0 + cmd id) to
 * key at now (rl_now()).  RL_ALLOW, or RL_REJECT with *retry_ms = whole ms
 * until the bucket has a token again (>= 1).  A class with no rule in this
 * process is allowed and counted nowhere.  Fails open as the file header
 * says (RL_ALLOW, counted in ratelimit_failopen).  Lock-free for a client
 * that has a bucket; a new client takes its stripe's lock with trylock
 * (bounded spin), never a blocking lock.  No allocation, no syscall. */
int rl_check(struct rl *rl, const struct rl_key *key, int cls, int64_t now, int64_t *retry_ms);

/* CL.THROTTLE (server/colo/gcra.h): the same table, keyed by an
 * application's key bytes, each call bringing its own limit; the master
 * makes a segment of its own for it per colo (app-ratelimit-memory), so an
 * application cannot evict the daemon's own buckets.  0: decided (res is
 * gcra_apply's; counted allowed or rejected), 1: failed open (res says
 * allowed, as for a new key; counted in failopen and why).  Lock-free for
 * a key that has a bucket, as rl_check; a look (quantity 0) at a key that
 * has none inserts nothing. */
struct gcra_limit;
struct gcra_result;
int rl_throttle(struct rl *rl, const void *key, size_t klen, const struct gcra_limit *lim,
                int64_t now, struct gcra_result *res);

/* Sums the counter rows (segment.h) and counts the buckets in use at now (a
 * scan of the table: for INFO, not for the request path). */
void rl_stats(struct rl *rl, int64_t now, struct rl_stats *out);
/* rl_stats without the scan (a CL.THROTTLE table is large, and a scan would
 * make all of it resident): out->buckets is the slots holding a key, idle
 * ones included (they are reused as new keys come). */
void rl_stats_fast(struct rl *rl, struct rl_stats *out);
/* Zeroes the colo's ratelimit_* counters, every process's share of them,
 * and this process's own (those counted while the segment was unusable):
 * CONFIG RESETSTAT.  Buckets and rules are untouched.  NULL rl: nothing. */
void rl_reset_counters(struct rl *rl);

/* ---- TEST-ONLY hooks: they break the segment's rules on purpose, to prove
 * the rules hold; the daemon never calls them. ---- */

/* Takes the stripe lock of (key, cls) and returns holding it (HKV_OK); with
 * mid_write, also leaves key's bucket as a dying writer would (claimed,
 * half-written).  The caller is meant to die holding it. */
int rl_test_hold_stripe(struct rl *rl, const struct rl_key *key, int cls, int mid_write);
/* The stripe (key, cls) falls in, and the table's geometry. */
uint32_t rl_test_stripe(struct rl *rl, const struct rl_key *key, int cls);
void rl_test_geometry(struct rl *rl, uint32_t *nstripes, uint32_t *per_stripe, uint32_t *probe);
/* Sets one rule in this process directly (rate 0 = none). */
int rl_test_rule(struct rl *rl, int cls, int64_t rate, int64_t period_ms, int64_t burst);
/* Changes the header's generation without fixing its checksum. */
void rl_test_scribble_header(struct rl *rl);

#endif

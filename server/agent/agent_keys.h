/*
 * agent_keys.h - the cluster's etcd keys and their values (../shared/
 * CLUSTER.md §2), spelled in one place for the agent, `hotkvd
 * --cluster-init` and `hotkvd-admin`.  Pure functions: no I/O.
 *
 * Every key lives under "/hotkvd/<cluster>/":
 *   cluster                  {"format":1,"created":"<unix ms>"}
 *   pools/<pool>             {"min_bits":b,"ready":true}
 *   owners/<n>               {"id":"<host>/<pool>/<k>"}            permanent
 *   hostnums/<h>             {"host":"<host>"}                      permanent
 *   hosts/<host>             {"addr":"...","number":h,"version":"...","zone":"..."}
 *                            (zone: absent = none)                          host lease
 *   members/<host>/<pool>/<k> {"number":n,"addr":"...","port":p,"pool":"hot",
 *                             "incarnation":"<u64>","host":"<host>"}        host lease
 *   writers/<edge_id>        {"host":"<host>","incarnation":"<u64>"}        host lease
 *   map/<pool>/<bits>-<prefix, 8 hex digits>
 *                            {"owner":n,"state":"serving"} or
 *                            {"owner":n,"state":"moving","to":m}, either with
 *                            "isr":[f,...] (CLUSTER.md §7: the in-sync followers,
 *                            the primary `owner` not repeated; absent = none)
 * Values are written with every string JSON-escaped; values read are
 * input from whoever can write to etcd, parsed with the bounded tokenizer
 * (proto/json.h) and checked field by field.
 */
#ifndef HKV_AGENT_KEYS_H
#define HKV_AGENT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "server/core/cmap.h"

#define AGENT_KEY_MAX 512          /* any key of ours */
#define AGENT_VAL_MAX 1024         /* any value of ours */
#define AGENT_HOSTNUM_MAX 4095     /* host numbers 1..4095 (edge id prefixes) */

/* "/hotkvd/<cluster>/" + the formatted rest, into buf.  Its length, or -1
 * when it does not fit. */
int agent_key(char *buf, size_t cap, const char *cluster, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What a key under the prefix names. */
enum agent_key_kind {
    AGENT_K_OTHER = 0,             /* not ours, or malformed */
    AGENT_K_CLUSTER, AGENT_K_POOL, AGENT_K_OWNER, AGENT_K_HOSTNUM, AGENT_K_HOST,
    AGENT_K_MEMBER, AGENT_K_WRITER, AGENT_K_LEAF,
};
struct agent_key_info {
    enum agent_key_kind kind;
    int pool;                      /* POOL, MEMBER, LEAF: enum cfg_pool */
    unsigned number;               /* OWNER, HOSTNUM, WRITER */
    int bits;                      /* LEAF */
    uint32_t prefix;               /* LEAF: the top `bits` bits */
    char name[CMAP_NAME_MAX];      /* HOST: the host; MEMBER: the owner id */
};
/* Classifies key (klen bytes, not NUL-terminated) under prefix
 * "/hotkvd/<cluster>/" (plen bytes).  Unknown pools, numbers out of range,
 * leaves whose prefix does not fit its bits, names that do not fit: OTHER. */
enum agent_key_kind agent_key_parse(const char *key, size_t klen, const char *prefix,
                                    size_t plen, struct agent_key_info *out);

/* An owner id "<host>/<pool>/<k>" into its parts: HKV_OK or HKV_EINVAL. */
int agent_owner_id_parse(const char *id, char *host, size_t cap, int *pool, int *k);

/* ---- values written (into buf of AGENT_VAL_MAX): their length, or -1 ---- */
int agent_val_cluster(char *buf, size_t cap, int64_t created_ms);
int agent_val_pool(char *buf, size_t cap, int min_bits);
int agent_val_owner(char *buf, size_t cap, const char *id);
int agent_val_hostnum(char *buf, size_t cap, const char *host);
/* zone NULL or "": none (the field is left out). */
int agent_val_host(char *buf, size_t cap, const char *addr, unsigned number, const char *version,
                   const char *zone);
struct agent_member {
    unsigned number;
    char addr[CMAP_NAME_MAX];
    unsigned port;
    int pool;                      /* enum cfg_pool */
    uint64_t incarnation;
    char host[CMAP_NAME_MAX];
};
int agent_val_member(char *buf, size_t cap, const struct agent_member *m);
int agent_val_writer(char *buf, size_t cap, const char *host, uint64_t incarnation);
/* A map value: owner (the primary), state (enum cmap_leaf_state), to (the
 * move's target, MOVING only; else 0) and the in-sync followers. */
struct agent_leaf_v {
    unsigned owner;
    int state;
    unsigned to;
    unsigned nisr;                 /* 0..CMAP_MAX_ISR */
    uint16_t isr[CMAP_MAX_ISR];
};
int agent_val_leaf(char *buf, size_t cap, const struct agent_leaf_v *v);

/* ---- values read: HKV_OK, or HKV_EINVAL for anything else ----------------- */
int agent_parse_owner(const char *v, size_t n, char *id, size_t cap);
int agent_parse_hostnum(const char *v, size_t n, char *host, size_t cap);
/* zone (zcap bytes; NULL: not wanted) "" when the value has none. */
int agent_parse_host(const char *v, size_t n, char *addr, size_t cap, unsigned *number,
                     char *zone, size_t zcap);
int agent_parse_member(const char *v, size_t n, struct agent_member *m);
int agent_parse_pool(const char *v, size_t n, int *min_bits, int *ready);
/* to 0 unless moving.  isr: at most CMAP_MAX_ISR owner numbers, each in
 * 1..CMAP_MAX_OWNERS, none repeated and none the owner (else EINVAL). */
int agent_parse_leaf(const char *v, size_t n, struct agent_leaf_v *out);
/* i in v's isr: 1, else 0.  agent_isr_without: v's isr less owner n (kept
 * in order); agent_isr_with: plus n at the end (no-op if there or full). */
int agent_isr_has(const struct agent_leaf_v *v, unsigned n);
void agent_isr_without(struct agent_leaf_v *v, unsigned n);
void agent_isr_with(struct agent_leaf_v *v, unsigned n);

#endif

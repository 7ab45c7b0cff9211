/*
 * agent_txn.h - the compare-and-swaps that change a leaf (../shared/
 * CLUSTER.md §5), spelled once for the agent (asynchronous, on behalf of
 * its owners) and for hotkvd-admin (synchronous): each builder fills a
 * struct agent_txn with the compares and the operations of one etcd txn.
 * Pure: no I/O.  Keys (under "/hotkvd/<cluster>/"):
 *
 *   map/<pool>/<bits>-<prefix>   the leaf; its mod_revision is its epoch
 *   moves/<pool>/<bits>-<prefix> {"from":S,"to":T,"slot":k}   source host's lease
 *   slots/<T's id>/<k>           {"pool":p,"bits":b,"start":s}   source host's lease
 *   requests/move/<pool>/<bits>-<prefix>  {"to":T}  an operator's ask (hotkvd-admin)
 *
 * Every txn's failure branch reads the leaf back (the truth after a lost
 * race: etcd_result.kvs).  A leaf is named by its pool, its bits and its
 * start (prefix << (32 - bits)), as struct cmap_leaf keeps it.
 *
 *   split   mod(map/L) == e0 ∧ both halves absent (create_revision 0)
 *           -> delete map/L, put map/L0 and map/L1 {owner, serving} (no isr:
 *           the halves' followers are seeded again)
 *   intent  mod(map/L) == e0 ∧ members/<T> exists ∧ slots/<T>/<k> absent
 *           -> map/L {S, moving, to T, the isr it had}, moves/L and
 *           slots/<T>/<k> under the lease
 *   commit  mod(map/L) == e1 ∧ members/<T> exists
 *           -> map/L {T, serving} (no isr: T's followers are seeded again),
 *           delete moves/L and slots/<T>/<k>
 *   abort   mod(map/L) == e1 -> map/L {S, serving, the isr it had}, delete
 *           moves/L and the slot
 *   set     mod(map/L) == e [∧ members/<live> exists] [∧ members/<gone>
 *           absent] -> map/L = the value given (CLUSTER.md §7: an isr member
 *           added or removed, a follower promoted)
 */
#ifndef HKV_AGENT_TXN_H
#define HKV_AGENT_TXN_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent/agent_keys.h"
#include "server/agent/etcd.h"

#define AGENT_SLOTS 2              /* incoming moves per target owner */
#define AGENT_BATCH 32             /* leaves promoted by one txn (etcd's max-txn-ops: 128) */

struct agent_txn {
    struct etcd_cmp cmp[4];
    size_t ncmp;
    struct etcd_op ok[4];
    size_t nok;
    struct etcd_op fail[1];
    size_t nfail;
    char key[6][AGENT_KEY_MAX];    /* what the compares and ops point at */
    char val[3][AGENT_VAL_MAX];
};

/* Several `set`s in one txn, each leaf's compare and put, and each gone
 * member's absence compared once: a dead host's leaves promoted in a few
 * round trips instead of one each (the agent's etcd client asks one call at
 * a time).  All or none: a lost race on any leaf fails the whole txn, and
 * the caller asks those leaves one by one (agent_txn_set) after it. */
struct agent_batch {
    struct etcd_cmp cmp[2 * AGENT_BATCH];
    size_t ncmp;
    struct etcd_op ok[AGENT_BATCH];
    size_t nok;
    char key[2 * AGENT_BATCH][AGENT_KEY_MAX];
    char val[AGENT_BATCH][AGENT_VAL_MAX];
    size_t nkey;
};
void agent_batch_reset(struct agent_batch *b);
/* HKV_OK, HKV_EFULL (AGENT_BATCH leaves in it already), HKV_EINVAL. */
int agent_batch_set(struct agent_batch *b, const char *cluster, int pool, uint32_t start,
                    int bits, int64_t e, const struct agent_leaf_v *v, const char *gone_id);

/* "map/<pool>/<bits>-<prefix>" (and the other per-leaf keys) into buf:
 * the key's length, or -1 when it does not fit or the leaf is malformed
 * (start not fitting bits, bits over CMAP_MAX_BITS). */
int agent_leaf_key(char *buf, size_t cap, const char *cluster, const char *dir, int pool,
                   uint32_t start, int bits);
/* The leaf named "<bits>-<prefix hex>" (the tail of its key, as hotkvd-admin
 * takes it) into start and bits: HKV_OK or HKV_EINVAL. */
int agent_leaf_parse(const char *s, uint32_t *start, int *bits);

/* Builders: HKV_OK, or HKV_EINVAL (a key that does not fit, a leaf that
 * cannot split further). */
int agent_txn_split(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                    int64_t e0, unsigned owner);
int agent_txn_intent(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                     int64_t e0, unsigned from, unsigned to, const char *to_id, int slot,
                     int64_t lease, const struct agent_leaf_v *now);
int agent_txn_commit(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                     int64_t e1, unsigned to, const char *to_id, int slot);
int agent_txn_abort(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                    int64_t e1, unsigned from, const char *to_id, int slot,
                    const struct agent_leaf_v *now);
/* now: the leaf's value at the compared epoch (its isr is kept).  set: v is
 * the whole new value; live_id / gone_id NULL: no such compare. */
int agent_txn_set(struct agent_txn *t, const char *cluster, int pool, uint32_t start, int bits,
                  int64_t e, const struct agent_leaf_v *v, const char *live_id,
                  const char *gone_id);

/* moves/L's value: {"from":S,"to":T,"slot":k}.  HKV_OK or HKV_EINVAL. */
int agent_parse_move(const char *v, size_t n, unsigned *from, unsigned *to, int *slot);
/* requests/move/L's value {"to":T} (an owner number); its length or -1, and
 * its parse: HKV_OK or HKV_EINVAL. */
int agent_val_request(char *buf, size_t cap, unsigned to);
int agent_parse_request(const char *v, size_t n, unsigned *to);

#endif

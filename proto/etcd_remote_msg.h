/*
 * etcd_remote_msg.h - the bodies exchanged with the agent's local store over
 * its Unix socket (server/agent/etcd_remote.h: who sends them, when): a
 * call's kind and arguments one way, the etcd_result the other.  Pure
 * encode/decode, no socket, so the decoder the agent runs on whatever a
 * local process sends is fuzzed alone (tests/fuzz/fuzz_etcd_remote.c).
 * Every decoder checks each length against what is left of the body; a body
 * over ETCD_REMOTE_MAX is refused by both ends (etcd_remote.c and _serve.c).
 */
#ifndef HKV_ETCD_REMOTE_MSG_H
#define HKV_ETCD_REMOTE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/etcd_types.h"

#define ETCD_REMOTE_MAX (16u << 20)

enum etcd_rkind { ETCD_R_RANGE = 1, ETCD_R_PUT, ETCD_R_DELETE, ETCD_R_TXN, ETCD_R_GRANT,
                  ETCD_R_KEEPALIVE, ETCD_R_REVOKE };

int etcd_remote_req_range(struct hkv_buf *b, const char *key, size_t klen, const char *end,
                          size_t elen, int64_t revision, int64_t limit);
int etcd_remote_req_txn(struct hkv_buf *b, const struct etcd_cmp *cmp, size_t ncmp,
                        const struct etcd_op *ok, size_t nok, const struct etcd_op *fail,
                        size_t nfail);
int etcd_remote_req_int(struct hkv_buf *b, enum etcd_rkind kind, int64_t v);
int etcd_remote_ans_encode(struct hkv_buf *b, const struct etcd_result *r);

/* A decoded request: its arrays point into the body and into mem. */
struct etcd_rreq {
    enum etcd_rkind kind;
    const char *key, *end;
    size_t klen, elen;
    int64_t revision, limit, n;
    struct etcd_cmp *cmp;
    struct etcd_op *ok, *fail;
    size_t ncmp, nok, nfail;
};
/* HKV_OK, HKV_EPROTO, HKV_ENOMEM; free with etcd_remote_req_free. */
int etcd_remote_req_decode(const char *p, size_t n, struct etcd_rreq *q);
void etcd_remote_req_free(struct etcd_rreq *q);
/* The answer into r (pointing into p and *mem: free(*mem) after). */
int etcd_remote_ans_decode(const char *p, size_t n, struct etcd_result *r, void **mem);

#endif

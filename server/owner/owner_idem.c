/*
 * owner_idem.c - an HTTP write's Idempotency-Key, kept by the key's owner
 * (the IETF draft "The Idempotency-Key HTTP Header Field"; edge_http_cas.c
 * sends it).  The edge's exactly-once retries (owner_rifl.h) are per edge
 * process: a client that retries on a new connection, through another edge
 * or host, is a new writer to them.  So an HTTP write with the header is a
 * transaction that starts with the edge's own word
 *
 *     hkv.idem <record key> <fingerprint: 16 bytes> <ttl ms>
 *
 * and the record key (proto/syskey.h: the target key, the user, the
 * Idempotency-Key) is a key of this ledger, placed and classed as its target:
 *   - a record that holds another request's fingerprint: the reply is the
 *     error "IDEMPOTENCY ..." (422), nothing runs;
 *   - a record of this request: its reply, element 0 saying "replayed",
 *     nothing runs (a retry is never applied twice);
 *   - no record: the transaction runs, and its reply is written under the
 *     record key with the TTL IN THE SAME JOB: one change list, so the
 *     record is persisted with the write (one commit for a durable class,
 *     the same write-behind batch for a ledger class: a crash loses the
 *     record only with the write), carried by a leaf's move and streamed to
 *     the leaf's followers as the write is.
 * Element 0 of the reply is [replayed 0|1, the version the key holds after
 * the write] (the ETag of a replay is the first answer's).  The job's gates
 * (owner_call.c) cover the record key like the others: resident, routed
 * here, and a durable record not yet committed makes a retry wait for that
 * commit instead of answering what a crash could undo.
 */
#include <stdio.h>
#include <string.h>

#include "proto/resp.h"
#include "proto/syskey.h"
#include "server/owner/owner_cmd.h"

#define FP_LEN 16

int owner_idem_is(const struct wire_cmd *cmd)
{
    size_t off, n;
    int64_t ttl;
    return cmd->nargs == 4 && cmd->args[0].len == 8 && memcmp(cmd->args[0].p, "hkv.idem", 8) == 0 &&
           syskey_target(cmd->args[1].p, cmd->args[1].len, &off, &n) &&
           cmd->args[2].len == FP_LEN && ocmd_ll(cmd->args[3], &ttl) && ttl > 0;
}

struct wire_slice owner_idem_target(const struct wire_cmd *idem)
{
    size_t off = 0, n = 0;
    syskey_target(idem->args[1].p, idem->args[1].len, &off, &n);
    return wire_slice(idem->args[1].p + off, n);
}

/* Where element 0's "replayed" digit is in a kept reply, or 0 (a nil
 * reply: the watch broke, there is no element). */
static size_t flag_at(const char *r, size_t n)
{
    const char *crlf = n > 1 && r[0] == '*' ? memchr(r, '\n', n) : NULL;
    size_t at = crlf != NULL ? (size_t)(crlf - r) + 1 : 0;
    return at && n >= at + 8 && memcmp(r + at, "*2\r\n:0\r\n", 8) == 0 ? at + 5 : 0;
}

int owner_idem_replay(struct ocmd *c, const struct wire_cmd *idem, struct hkv_buf *reply)
{
    struct ledger_view v;
    int rc = ocmd_get(c, idem->args[1], &v);
    if (rc == HKV_ENOENT)
        return 0;
    if (rc != HKV_OK)
        return rc;
    if (v.vlen < FP_LEN || memcmp(v.val, idem->args[2].p, FP_LEN) != 0) {
        resp_add_error(reply, "IDEMPOTENCY the Idempotency-Key was used for another request "
                              "(not applied)");
        return 1;
    }
    size_t at = buf_unread(reply), n = v.vlen - FP_LEN;
    if (buf_append(reply, v.val + FP_LEN, n) != HKV_OK)
        return HKV_ENOMEM;
    size_t f = flag_at(buf_head(reply) + at, n);
    if (f != 0)
        ((char *)buf_head(reply))[at + f] = '1';
    return 1;
}

int owner_idem_head(struct ocmd *c, const struct wire_cmd *idem, struct hkv_buf *reply)
{
    struct ledger_view v;
    ledger_get(c->ledger, owner_idem_target(idem).p, owner_idem_target(idem).len, c->now, &v);
    char head[48];
    int n = snprintf(head, sizeof(head), "*2\r\n:0\r\n:%llu\r\n", (unsigned long long)v.stamp);
    return buf_append(reply, head, (size_t)n);
}

int owner_idem_keep(struct ocmd *c, const struct wire_cmd *idem, const struct hkv_buf *reply)
{
    struct hkv_buf val = HKV_BUF_INIT;
    int64_t ttl = 0;
    ocmd_ll(idem->args[3], &ttl);
    int applied = 0, rc = buf_append(&val, idem->args[2].p, FP_LEN);
    if (rc == HKV_OK)
        rc = buf_append(&val, buf_head(reply), buf_unread(reply));
    if (rc == HKV_OK)
        rc = ocmd_set(c, idem->args[1], wire_slice(buf_head(&val), buf_unread(&val)), 0,
                      (struct ledger_expiry){LEDGER_EXP_REL, ttl}, NULL, &applied);
    buf_deinit(&val);
    return rc == HKV_OK && applied ? HKV_OK : rc == HKV_OK ? HKV_ENOMEM : rc;
}

/*
 * edge_render.h - the replies of the one-key reads (GET, STRLEN, TYPE, TTL,
 * PTTL, one-key EXISTS, GETEX without options, GETMETA), from what the read
 * found: the value or its absence, and the facts the cache knows beside it
 * (read_facts).  Used by edge_read.c for answers from the colo cache, a
 * fetch, or the owner itself.  Writes only into the buffer it is given.
 */
#ifndef HKV_EDGE_RENDER_H
#define HKV_EDGE_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/stamp.h"
#include "server/edge/edge_conn.h"

/* The facts a read knows beside the value: its age in the colo, the owner's
 * stamp, served stale (the owner did not answer in time), degraded (the
 * class's on-timeout answer, no value known). */
struct read_facts {
    int64_t age_ms;
    hkv_stamp stamp;
    int stale, degraded;
};

/* One key's answer in the form cmd wants (found, the value v[0..n), its
 * expiry in unix ms or 0). */
void read_render(enum cmd_id cmd, int proto, struct hkv_buf *out, int found, const char *v,
                 size_t n, int64_t expire_at);
/* The same, with its facts: GETMETA's map (RESP2: a flat array), or the
 * command's reply after CLIENT META's attribute (RESP3 clients that asked). */
void read_answer(const struct conn *c, enum cmd_id cmd, struct hkv_buf *out, int found,
                 const char *v, size_t n, int64_t expire_at, const struct read_facts *f);
/* CLIENT META's attribute alone, before a reply computed over the value
 * read (GETRANGE, GETWITHETAG ...): a degraded answer must say so there
 * too, or its nil reads as "no such key". */
void read_meta(const struct conn *c, struct hkv_buf *out, const struct read_facts *f);

#endif

/*
 * etag.h - reading the versioned commands' replies (Garnet's etag shapes,
 * server/owner/owner_cmd_ver.c): [etag, value|nil] or nil, in RESP2 or
 * RESP3.  Pure; the edge's compare-and-set (server/edge/edge_cas.h) reads
 * the owner's SETIFMATCH reply with it, and the tests may too.
 */
#ifndef HKV_ETAG_H
#define HKV_ETAG_H

#include <stddef.h>
#include <stdint.h>

enum etag_reply {
    ETAG_REPLY_BAD = -1,  /* not one of the shapes below (an error reply included) */
    ETAG_REPLY_NIL = 0,   /* nil ($-1, *-1 or _): no key */
    ETAG_REPLY_PAIR = 1,  /* *2 :etag then a bulk or nil: *etag set, *has_value */
};

/* The reply p[0..n) (exactly one complete reply).  *has_value: the pair's
 * second element is a bulk string (not nil). */
enum etag_reply etag_reply_parse(const char *p, size_t n, int64_t *etag, int *has_value);

#endif

/*
 * edge_render.c - the one-key reads' replies (edge_render.h).
 */
#include "server/edge/edge_render.h"
#include "server/edge/edge_sess.h"

#include "server/core/clock.h"

/* Writes one key's answer in the form its command wants. */
void read_render(enum cmd_id cmd, int proto, struct hkv_buf *out, int found, const char *v,
                 size_t n, int64_t expire_at)
{
    switch (cmd) {
    case CMD_GET:
    case CMD_GETEX:
        if (found)
            resp_add_bulk(out, v, n);
        else
            resp_add_null(out, proto);
        break;
    case CMD_STRLEN:
        resp_add_int(out, found ? (int64_t)n : 0);
        break;
    case CMD_TYPE:
        resp_add_simple(out, found ? "string" : "none");
        break;
    case CMD_TTL:
    case CMD_PTTL: {
        int64_t ms = !found ? -2 : expire_at == 0 ? -1 : expire_at - clock_unix_ms();
        if (found && expire_at != 0 && ms < 0)
            ms = 0;
        if (cmd == CMD_TTL && ms >= 0)
            ms = (ms + 500) / 1000; /* Redis rounds */
        resp_add_int(out, ms);
        break;
    }
    default: /* EXISTS of one key */
        resp_add_int(out, found ? 1 : 0);
        break;
    }
}

/* CLIENT META ON, RESP3 only: an attribute before the reply saying how old
 * the value is, its stamp, and whether it was served stale or degraded.
 * Everyone else sees plain Redis replies.  It precedes the replies of the
 * one-key reads answered from the colo cache or a fetch (GET, STRLEN, TYPE,
 * TTL, PTTL, one-key EXISTS, GETEX without options); MGET, EXISTS of several
 * keys and a read behind the client's own writes (answered by the owner
 * itself, so current) carry none.  GETMETA gives the same facts as a plain
 * map, for clients that cannot read attributes. */
static void meta(const struct conn *c, struct hkv_buf *out, int64_t age_ms, hkv_stamp stamp,
                 int stale, int degraded)
{
    if (!sess_of(c)->meta || sess_of(c)->proto != 3)
        return;
    resp_add_attr(out, 4);
    resp_add_bulk_str(out, "age_ms");
    resp_add_int(out, age_ms < 0 ? 0 : age_ms);
    resp_add_bulk_str(out, "stamp");
    resp_add_int(out, (int64_t)stamp);
    resp_add_bulk_str(out, "stale");
    resp_add_bool(out, 3, stale);
    resp_add_bulk_str(out, "degraded");
    resp_add_bool(out, 3, degraded);
}

/* GETMETA: the value and its facts as a map (RESP2: a flat array), for
 * clients that cannot read RESP3 attributes. */
static void getmeta(int proto, struct hkv_buf *out, int found, const char *v, size_t n,
                    const struct read_facts *f)
{
    resp_add_map(out, proto, 5);
    resp_add_bulk_str(out, "value");
    if (found)
        resp_add_bulk(out, v, n);
    else
        resp_add_null(out, proto);
    resp_add_bulk_str(out, "age_ms");
    resp_add_int(out, f->age_ms < 0 ? 0 : f->age_ms);
    resp_add_bulk_str(out, "stamp");
    resp_add_int(out, (int64_t)f->stamp);
    resp_add_bulk_str(out, "stale");
    resp_add_bool(out, proto, f->stale);
    resp_add_bulk_str(out, "degraded");
    resp_add_bool(out, proto, f->degraded);
}

/* One key's answer with its facts: GETMETA's map, or the command's reply
 * (after the CLIENT META attribute, for clients that asked). */
void read_answer(const struct conn *c, enum cmd_id cmd, struct hkv_buf *out, int found,
                 const char *v, size_t n, int64_t expire_at, const struct read_facts *f)
{
    if (cmd == CMD_GETMETA) {
        getmeta(sess_of(c)->proto, out, found, v, n, f);
        return;
    }
    meta(c, out, f->age_ms, f->stamp, f->stale, f->degraded);
    read_render(cmd, sess_of(c)->proto, out, found, v, n, expire_at);
}

void read_meta(const struct conn *c, struct hkv_buf *out, const struct read_facts *f)
{
    meta(c, out, f->age_ms, f->stamp, f->stale, f->degraded);
}

/*
 * edge_ver.c - GETWITHETAG, GETIFNOTMATCH and SETIFMATCH (edge_ver.h).
 * The reads are renderers handed to the read path with the version it
 * found; plain GET's path does not change (edge_read.c).
 */
#include "server/edge/edge_ver.h"

#include "proto/cmd.h"
#include "proto/cmd_opts.h"
#include "proto/num.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_sess.h"

/* [etag, value] (v NULL: nil). */
static void pair(struct hkv_buf *out, int proto, hkv_stamp etag, const struct resp_slice *v)
{
    resp_add_array(out, 2);
    resp_add_int(out, (int64_t)etag);
    if (v != NULL)
        resp_add_bulk(out, v->p, v->len);
    else
        resp_add_null(out, proto);
}

static void getwithetag_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                           hkv_stamp version, const struct resp_slice *args, int nargs)
{
    int proto = sess_of(c)->proto;
    if (v == NULL)
        resp_add_null(out, proto); /* no key (or the class's degraded answer) */
    else
        pair(out, proto, version, v);
}

static void getifnotmatch_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                             hkv_stamp version, const struct resp_slice *args, int nargs)
{
    int proto = sess_of(c)->proto;
    int64_t etag = 0;
    (void)num_parse_ll(args[0].p, args[0].len, &etag); /* checked before the read */
    if (v == NULL)
        resp_add_null(out, proto);
    else
        pair(out, proto, version, (int64_t)version == etag ? NULL : v);
}

void edge_cmd_getwithetag(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_versioned(c, CMD_GETWITHETAG, argc, argv, getwithetag_fn);
}

void edge_cmd_getifnotmatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    int64_t etag;
    if (!num_parse_ll(argv[2].p, argv[2].len, &etag)) {
        reply_error(c, CMD_ERR_INT);
        return;
    }
    edge_read_versioned(c, CMD_GETIFNOTMATCH, argc, argv, getifnotmatch_fn);
}

void edge_cmd_setifmatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    /* the owner reads the words (its grammar, its errors), compares and
     * writes in one step */
    edge_cmd_call(c, argc, argv);
}

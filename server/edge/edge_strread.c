/*
 * edge_strread.c - the computed string reads (edge_strread.h): each is a
 * renderer handed to the read path, which calls it with the key's value
 * (or its absence) when the value is known: at once from the colo cache,
 * or when the key's flight or the owner answers.  The value is never
 * copied for it; proto/strops reads it where it lies.
 *
 * Bounds are the client's: proto-max-bulk-len (hotkvd's default 16mb, as
 * the owner uses for SETBIT) bounds bit offsets and LCS's table, as
 * Redis's own proto-max-bulk-len does.
 */
#include "server/edge/edge_strread.h"

#include "proto/cmd.h"
#include "proto/strops.h"
#include "server/edge/edge_mread.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_sess.h"

static struct strops_env env_of(const struct conn *c, struct hkv_buf *work)
{
    return (struct strops_env){work, c->e->cmd_opts.max_bulk};
}

static void reply(struct conn *c, struct hkv_buf *out, const struct strops_result *res)
{
    if (strops_reply_encode(out, sess_of(c)->proto, &res->reply) != HKV_OK)
        resp_add_error(out, "ERR out of memory");
}

static void getrange_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                        const struct resp_slice *args, int nargs)
{
    struct strops_env env = env_of(c, NULL);
    struct strops_result res;
    strops_getrange(&env, v, &args[0], &args[1], &res);
    reply(c, out, &res);
}

static void getbit_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                      const struct resp_slice *args, int nargs)
{
    struct strops_env env = env_of(c, NULL);
    struct strops_result res;
    strops_getbit(&env, v, &args[0], &res);
    reply(c, out, &res);
}

static void bitcount_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                        const struct resp_slice *args, int nargs)
{
    struct strops_env env = env_of(c, NULL);
    struct strops_result res;
    strops_bitcount(&env, v, args, nargs, &res);
    reply(c, out, &res);
}

static void bitpos_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                      const struct resp_slice *args, int nargs)
{
    struct strops_env env = env_of(c, NULL);
    struct strops_result res;
    strops_bitpos(&env, v, args, nargs, &res);
    reply(c, out, &res);
}

static void lcs_fn(struct conn *c, struct hkv_buf *out, const struct resp_slice *a,
                   const struct resp_slice *b, const struct resp_slice *args, int nargs)
{
    /* LCS's table lives only for the call: a buffer of its own, freed here */
    struct hkv_buf work = HKV_BUF_INIT;
    struct strops_env env = env_of(c, &work);
    struct strops_result res;
    strops_lcs(&env, a, b, args, nargs, &res);
    reply(c, out, &res);
    buf_deinit(&work);
}

void edge_cmd_getrange(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_calc(c, CMD_GETRANGE, argc, argv, getrange_fn);
}

void edge_cmd_substr(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_calc(c, CMD_SUBSTR, argc, argv, getrange_fn);
}

void edge_cmd_getbit(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_calc(c, CMD_GETBIT, argc, argv, getbit_fn);
}

void edge_cmd_bitcount(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_calc(c, CMD_BITCOUNT, argc, argv, bitcount_fn);
}

void edge_cmd_bitpos(struct conn *c, int argc, const struct resp_slice *argv)
{
    edge_read_calc(c, CMD_BITPOS, argc, argv, bitpos_fn);
}

void edge_cmd_lcs(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct owner_ref *o = NULL;
    const char *err;
    if (edge_same_owner(c->e, argv[1].p, argv[1].len, &o, &err) != 0 ||
        edge_same_owner(c->e, argv[2].p, argv[2].len, &o, &err) != 0) {
        reply_error(c, err);
        return;
    }
    edge_read_two(c, CMD_LCS, argc, argv, lcs_fn);
}

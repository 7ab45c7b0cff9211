/*
 * owner_cmds.c - the owner's Redis command table (owner_cmd.h): one row per
 * command the owner runs for CALL and EXEC, with Redis 7.0's arity and key
 * positions (as its COMMAND reply gives them), whether it writes, and the
 * handler.  The handlers live in family files (owner_cmd_str.c,
 * owner_cmd_bits.c, owner_cmd_key.c); this file only names them, so adding
 * a command is one row here plus its handler.
 *
 * Lookup is a linear scan with a case-insensitive compare: forty short rows,
 * cheaper than hashing the name for a table this size.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/owner/owner_cmd.h"

#define R OCMD_READ
#define W OCMD_WRITE

/* {name, arity, first, last, step, flags, handler, variant} */
static const struct ocmd_def table[] = {
    /* strings */
    {"get", 2, 1, 1, 1, R, ocmd_get_cmd, 0},
    {"set", -3, 1, 1, 1, W, ocmd_set_cmd, 0},
    {"setnx", 3, 1, 1, 1, W, ocmd_setnx_cmd, 0},
    {"setex", 4, 1, 1, 1, W, ocmd_setex_cmd, 1000},
    {"psetex", 4, 1, 1, 1, W, ocmd_setex_cmd, 1},
    {"getset", 3, 1, 1, 1, W, ocmd_getset_cmd, 0},
    {"getdel", 2, 1, 1, 1, W, ocmd_getdel_cmd, 0},
    {"getex", -2, 1, 1, 1, W, ocmd_getex_cmd, 0},
    {"mget", -2, 1, -1, 1, R, ocmd_mget_cmd, 0},
    {"mset", -3, 1, -1, 2, W, ocmd_mset_cmd, 0},
    {"msetnx", -3, 1, -1, 2, W, ocmd_mset_cmd, 1},
    {"strlen", 2, 1, 1, 1, R, ocmd_strlen_cmd, 0},
    {"incr", 2, 1, 1, 1, W, ocmd_incr_cmd, 1},
    {"decr", 2, 1, 1, 1, W, ocmd_incr_cmd, 2},
    {"incrby", 3, 1, 1, 1, W, ocmd_incr_cmd, 3},
    {"decrby", 3, 1, 1, 1, W, ocmd_incr_cmd, 4},
    /* strings computed by proto/strops */
    {"append", 3, 1, 1, 1, W, ocmd_append_cmd, 0},
    {"setrange", 4, 1, 1, 1, W, ocmd_setrange_cmd, 0},
    {"getrange", 4, 1, 1, 1, R, ocmd_getrange_cmd, 0},
    {"substr", 4, 1, 1, 1, R, ocmd_getrange_cmd, 0},
    {"incrbyfloat", 3, 1, 1, 1, W, ocmd_incrbyfloat_cmd, 0},
    {"setbit", 4, 1, 1, 1, W, ocmd_setbit_cmd, 0},
    {"getbit", 3, 1, 1, 1, R, ocmd_getbit_cmd, 0},
    {"bitcount", -2, 1, 1, 1, R, ocmd_bitcount_cmd, 0},
    {"bitpos", -3, 1, 1, 1, R, ocmd_bitpos_cmd, 0},
    {"lcs", -3, 1, 2, 1, R, ocmd_lcs_cmd, 0},
    /* keyspace */
    {"del", -2, 1, -1, 1, W, ocmd_del_cmd, 0},
    {"unlink", -2, 1, -1, 1, W, ocmd_del_cmd, 0},
    {"exists", -2, 1, -1, 1, R, ocmd_exists_cmd, 0},
    {"touch", -2, 1, -1, 1, R, ocmd_exists_cmd, 0},
    {"type", 2, 1, 1, 1, R, ocmd_type_cmd, 0},
    {"expire", -3, 1, 1, 1, W, ocmd_expire_cmd, 1},
    {"pexpire", -3, 1, 1, 1, W, ocmd_expire_cmd, 0},
    {"expireat", -3, 1, 1, 1, W, ocmd_expire_cmd, 3},
    {"pexpireat", -3, 1, 1, 1, W, ocmd_expire_cmd, 2},
    {"persist", 2, 1, 1, 1, W, ocmd_persist_cmd, 0},
    {"ttl", 2, 1, 1, 1, R, ocmd_ttl_cmd, 0},
    {"pttl", 2, 1, 1, 1, R, ocmd_ttl_cmd, 1},
    {"expiretime", 2, 1, 1, 1, R, ocmd_ttl_cmd, 2},
    {"pexpiretime", 2, 1, 1, 1, R, ocmd_ttl_cmd, 3},
    {"rename", 3, 1, 2, 1, W, ocmd_rename_cmd, 0},
    {"renamenx", 3, 1, 2, 1, W, ocmd_rename_cmd, 1},
    {"copy", -3, 1, 2, 1, W, ocmd_copy_cmd, 0},
};

const struct ocmd_def *ocmd_lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strlen(table[i].name) == len && strncasecmp(table[i].name, name, len) == 0)
            return &table[i];
    return NULL;
}

int ocmd_arity_ok(const struct ocmd_def *d, uint32_t argc)
{
    return d->arity >= 0 ? argc == (uint32_t)d->arity : argc >= (uint32_t)-d->arity;
}

/* The last key position for argc words (Redis: a negative last counts from
 * the end). */
static uint32_t last_pos(const struct ocmd_def *d, uint32_t argc)
{
    int64_t last = d->last >= 0 ? d->last : (int64_t)argc + d->last;
    return last < 0 ? 0 : (uint32_t)last;
}

uint32_t ocmd_key_count(const struct ocmd_def *d, uint32_t argc)
{
    uint32_t last = last_pos(d, argc);
    if (d->first <= 0 || last < (uint32_t)d->first || (uint32_t)d->first >= argc)
        return 0;
    if (last >= argc)
        last = argc - 1;
    return (last - (uint32_t)d->first) / (uint32_t)d->step + 1;
}

uint32_t ocmd_key_pos(const struct ocmd_def *d, uint32_t argc, uint32_t i)
{
    return (uint32_t)d->first + i * (uint32_t)d->step;
}

/* The length of "%.*s" of s with precision max: up to a NUL, as Redis's
 * printf of a C string. */
static size_t cstr_len(struct wire_slice s, size_t max)
{
    size_t n = s.len < max ? s.len : max;
    return n ? strnlen(s.p, n) : 0;
}

void ocmd_reply_unknown(struct hkv_buf *out, const struct wire_slice *argv, uint32_t argc)
{
    /* Redis's processCommand: at most 128 bytes of the name, and args while
     * their text is under 128 bytes, each cut to what is left of the 128. */
    struct hkv_buf args = HKV_BUF_INIT;
    for (uint32_t i = 1; i < argc && buf_unread(&args) < 128; i++) {
        size_t n = cstr_len(argv[i], 128 - buf_unread(&args));
        buf_append(&args, "'", 1);
        buf_append(&args, argv[i].p, n);
        buf_append(&args, "' ", 2);
    }
    resp_add_errorf(out, "ERR unknown command '%.*s', with args beginning with: %.*s",
                    (int)cstr_len(argv[0], 128), argv[0].p, (int)buf_unread(&args),
                    buf_unread(&args) ? buf_head(&args) : "");
    buf_deinit(&args);
}

void ocmd_reply_arity(struct hkv_buf *out, const struct ocmd_def *d)
{
    resp_add_errorf(out, "ERR wrong number of arguments for '%s' command", d->name);
}

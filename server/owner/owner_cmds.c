/*
 * owner_cmds.c - the owner's command table (owner_cmd.h): which handler runs
 * each command the owner runs for CALL and EXEC, indexed by proto/cmd.h's id.
 * Everything else about a command (name, arity, key positions, whether it
 * writes) is proto/cmd.h's; the handlers live in family files
 * (owner_cmd_str.c, owner_cmd_bits.c, owner_cmd_key.c, owner_cmd_obj.c), so
 * adding a command the owner runs is one row here plus its handler.
 */
#include <stdio.h>
#include <string.h>

#include "server/owner/owner_cmd.h"

#define ROW(ID, fn) [CMD_##ID] = {fn},

const struct ocmd_row ocmd_table[CMD_COUNT] = {
    /* strings */
    ROW(GET, ocmd_get_cmd)
    ROW(SET, ocmd_set_cmd)
    ROW(SETNX, ocmd_setnx_cmd)
    ROW(SETEX, ocmd_setex_cmd)
    ROW(PSETEX, ocmd_setex_cmd)
    ROW(GETSET, ocmd_getset_cmd)
    ROW(GETDEL, ocmd_getdel_cmd)
    ROW(GETEX, ocmd_getex_cmd)
    ROW(MGET, ocmd_mget_cmd)
    ROW(MSET, ocmd_mset_cmd)
    ROW(MSETNX, ocmd_mset_cmd)
    ROW(STRLEN, ocmd_strlen_cmd)
    ROW(INCR, ocmd_incr_cmd)
    ROW(DECR, ocmd_incr_cmd)
    ROW(INCRBY, ocmd_incr_cmd)
    ROW(DECRBY, ocmd_incr_cmd)
    /* strings computed by proto/strops */
    ROW(APPEND, ocmd_append_cmd)
    ROW(SETRANGE, ocmd_setrange_cmd)
    ROW(GETRANGE, ocmd_getrange_cmd)
    ROW(SUBSTR, ocmd_getrange_cmd)
    ROW(INCRBYFLOAT, ocmd_incrbyfloat_cmd)
    ROW(SETBIT, ocmd_setbit_cmd)
    ROW(GETBIT, ocmd_getbit_cmd)
    ROW(BITCOUNT, ocmd_bitcount_cmd)
    ROW(BITPOS, ocmd_bitpos_cmd)
    ROW(LCS, ocmd_lcs_cmd)
    ROW(BITFIELD_RO, ocmd_bitfield_ro_cmd)
    /* keyspace */
    ROW(DEL, ocmd_del_cmd)
    ROW(UNLINK, ocmd_del_cmd)
    ROW(EXISTS, ocmd_exists_cmd)
    ROW(TOUCH, ocmd_exists_cmd)
    ROW(TYPE, ocmd_type_cmd)
    ROW(EXPIRE, ocmd_expire_cmd)
    ROW(PEXPIRE, ocmd_expire_cmd)
    ROW(EXPIREAT, ocmd_expire_cmd)
    ROW(PEXPIREAT, ocmd_expire_cmd)
    ROW(PERSIST, ocmd_persist_cmd)
    ROW(TTL, ocmd_ttl_cmd)
    ROW(PTTL, ocmd_ttl_cmd)
    ROW(EXPIRETIME, ocmd_ttl_cmd)
    ROW(PEXPIRETIME, ocmd_ttl_cmd)
    ROW(RENAME, ocmd_rename_cmd)
    ROW(RENAMENX, ocmd_rename_cmd)
    ROW(COPY, ocmd_copy_cmd)
    ROW(FLUSHALL, ocmd_flushall_cmd)
    ROW(FLUSHDB, ocmd_flushall_cmd)
    ROW(OBJECT, ocmd_object_cmd)
};

#undef ROW

const struct cmd_def *ocmd_lookup(const char *name, size_t len)
{
    const struct cmd_def *d = cmd_lookup(name, len);
    return d != NULL && ocmd_table[d->id].fn != NULL ? d : NULL;
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

void ocmd_reply_arity(struct hkv_buf *out, const struct cmd_def *d)
{
    resp_add_errorf(out, "ERR wrong number of arguments for '%s' command", d->name);
}

/*
 * owner_cmds.c - the owner's command table (owner_cmd.h): which handler runs
 * each command the owner runs for CALL and EXEC, indexed by proto/cmd.h's id,
 * made from owner_cmd.h's OCMD_ROWS list.  Everything else about a command
 * (name, arity, key positions, whether it writes) is proto/cmd.h's; the
 * handlers live in family files (owner_cmd_str.c, owner_cmd_bits.c,
 * owner_cmd_key.c, owner_cmd_obj.c).
 */
#include <stdio.h>
#include <string.h>

#include "server/owner/owner_cmd.h"

#define ROW(id, fn) [CMD_##id] = {ocmd_##fn##_cmd},

const struct ocmd_row ocmd_table[CMD_COUNT] = {OCMD_ROWS(ROW)};

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

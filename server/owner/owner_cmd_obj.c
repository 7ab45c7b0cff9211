/*
 * owner_cmd_obj.c - OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ | HELP for
 * strings, as Redis 7.0 reports them (owner_cmd.h).
 *
 * Redis's encoding of a string depends on how it was made, which the ledger
 * keeps (storage/ledger.h enum ledger_enc): a value stored as SET stores it
 * is "int" when it reads as an integer of at most 20 characters (Redis's
 * tryObjectEncoding), else "embstr" up to 44 bytes, else "raw"; APPEND to a
 * key, SETRANGE and SETBIT leave "raw"; INCRBYFLOAT never "int".  REFCOUNT is
 * 2147483647 for Redis's shared integers (0 to 9999, not copied by COPY),
 * else 1.
 *
 * Access is not tracked: reads are answered by the colo caches, which the
 * key's owner never sees, so there is no honest idle time or access
 * frequency.  FREQ answers Redis's own error for a policy that does not
 * track frequency (hotkvd has no LFU policy); IDLETIME answers an error that
 * says so (Redis tracks idle time under every non-LFU policy, and hotkvd
 * cannot: tests/diff/differences.py lists it).  Both look the key up first
 * (nil for a missing key), as Redis does.
 *
 * The subcommand is looked up before the arity is checked, with Redis's
 * texts for both (an unknown one names itself, cut at 128 bytes or a NUL).
 */
#include <string.h>
#include <strings.h>

#include "server/owner/owner_cmd.h"

#define SHARED_INTEGERS 10000        /* Redis's OBJ_SHARED_INTEGERS */
#define SHARED_REFCOUNT 2147483647   /* Redis's OBJ_SHARED_REFCOUNT (INT_MAX) */
#define EMBSTR_MAX 44                /* Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT */

enum obj_sub { OBJ_HELP, OBJ_ENCODING, OBJ_REFCOUNT, OBJ_IDLETIME, OBJ_FREQ };

static const struct {
    const char *name;
    int arity;
} subs[] = {
    [OBJ_HELP] = {"help", 2},
    [OBJ_ENCODING] = {"encoding", 3},
    [OBJ_REFCOUNT] = {"refcount", 3},
    [OBJ_IDLETIME] = {"idletime", 3},
    [OBJ_FREQ] = {"freq", 3},
};

static const char *const help[] = {
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
};

/* The encoding name of a live value; *shared: Redis would hold a shared
 * integer object. */
static const char *encoding(const struct ledger_view *v, int *shared)
{
    int64_t n;
    *shared = 0;
    if (v->enc == LEDGER_ENC_RAW)
        return "raw";
    if (v->enc != LEDGER_ENC_STR && v->vlen <= 20 && ocmd_ll(wire_slice(v->val, v->vlen), &n)) {
        *shared = v->enc == LEDGER_ENC_AUTO && n >= 0 && n < SHARED_INTEGERS;
        return "int";
    }
    return v->vlen <= EMBSTR_MAX ? "embstr" : "raw";
}

/* Redis's "unknown subcommand" (rejectCommandFormat: the name as a C string,
 * at most 128 bytes, CR and LF made spaces). */
static void unknown_sub(struct ocmd *c, struct wire_slice s)
{
    char name[129];
    size_t n = s.len < 128 ? s.len : 128;
    n = n ? strnlen(s.p, n) : 0;
    memcpy(name, s.p, n);
    name[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (name[i] == '\r' || name[i] == '\n')
            name[i] = ' ';
    ocmd_errorf(c, "ERR unknown subcommand '%s'. Try OBJECT HELP.", name);
}

int ocmd_object_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    int sub = -1;
    for (int i = 0; i < (int)(sizeof(subs) / sizeof(subs[0])); i++)
        if (argv[1].len == strlen(subs[i].name) &&
            strncasecmp(argv[1].p, subs[i].name, argv[1].len) == 0)
            sub = i;
    if (sub < 0) {
        unknown_sub(c, argv[1]);
        return ocmd_done(c);
    }
    if (argc != (uint32_t)subs[sub].arity) {
        ocmd_errorf(c, "ERR wrong number of arguments for 'object|%s' command", subs[sub].name);
        return ocmd_done(c);
    }
    if (sub == OBJ_HELP) {
        ocmd_array(c, (int64_t)(sizeof(help) / sizeof(help[0])));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
            ocmd_simple(c, help[i]);
        return ocmd_done(c);
    }
    struct ledger_view v;
    int rc = ocmd_get(c, argv[2], &v);
    if (rc == HKV_EAGAIN)
        return rc;
    if (rc != HKV_OK) {
        ocmd_null(c);
        return ocmd_done(c);
    }
    int shared;
    const char *name = encoding(&v, &shared);
    switch (sub) {
    case OBJ_ENCODING:
        ocmd_bulk(c, name, strlen(name));
        break;
    case OBJ_REFCOUNT:
        ocmd_int(c, shared ? SHARED_REFCOUNT : 1);
        break;
    case OBJ_IDLETIME:
        ocmd_error(c, "ERR OBJECT IDLETIME is not tracked: reads are answered by the colo "
                      "caches, which the key's owner does not see");
        break;
    default:
        ocmd_error(c, "ERR An LFU maxmemory policy is not selected, access frequency not "
                      "tracked. Please note that when switching between policies at runtime "
                      "LRU and LFU data will take some time to adjust.");
        break;
    }
    return ocmd_done(c);
}

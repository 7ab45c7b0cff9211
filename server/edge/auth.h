/*
 * auth.h - who a client is and what it may do: users, password checks, the
 * ACL decision for one command, and protected mode.
 *
 * A struct auth is built from a validated config (its users, requirepass and
 * protected-mode) and is immutable afterwards; a reload builds a new one and
 * connections re-find their user by name (auth_user_find).  It keeps no
 * pointer into the config.
 *
 * Users are small integers (ids) valid for one struct auth.  The decision
 * path is cheap on purpose: a connection whose user is unrestricted
 * (auth_user_unrestricted: all categories, all keys) needs no check at all;
 * a restricted one costs a flag test and one glob match per key, never a
 * hash or an allocation.  Hashing happens only in auth_check_password.
 *
 * Categories (+@read, +@write, +@admin) map to the command table's
 * CMD_F_READ, CMD_F_WRITE and CMD_F_ADMIN flags.  Connection commands
 * (CMD_F_CONN: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT COMMAND INFO TIME
 * HOTKEYS) are always allowed to an authenticated user; INFO too, which Redis
 * files under @dangerous (it shows no key names here).  SCAN and HOTKEYS name
 * no key but list key names, so they need a user whose patterns include "*".
 */
#ifndef HKV_AUTH_H
#define HKV_AUTH_H

#include <stddef.h>
#include <sys/socket.h>

#include "config/cfg.h"
#include "proto/cmd.h"
#include "proto/resp.h"

struct auth;

/* auth_allowed's answers. */
#define AUTH_OK 0
#define AUTH_NOPERM_CMD 1         /* "-NOPERM User x has no permissions to run the 'y' command" */
#define AUTH_NOPERM_KEY 2         /* "-NOPERM No permissions to access a key" */

/* A new struct auth for cfg's users; NULL on allocation failure. */
struct auth *auth_create(const struct cfg *cfg);
/* Frees *a; sets *a = NULL.  NULL-safe. */
void auth_destroy(struct auth **a);

/* The user a new connection starts as: the default user's id when it is on
 * and nopass (no authentication required), else -1 (the client must AUTH). */
int auth_initial_user(const struct auth *a);
/* 1 when the default user has no password (AUTH with one argument is then
 * Redis's "called without any password configured" error). */
int auth_default_nopass(const struct auth *a);

/* The id of the user `name` if it exists and is on and `pass` is one of its
 * passwords (any password for a nopass user); else -1.  Always hashes pass
 * and compares against every digest of the user (or a dummy when the user is
 * unknown) with CRYPTO_memcmp, so the time taken does not depend on which
 * byte of a digest differs nor much on whether the user exists. */
int auth_check_password(const struct auth *a, const char *user, size_t ulen, const char *pass,
                        size_t plen);

/* The id of `name` (on or off), or -1. */
int auth_user_find(const struct auth *a, const char *name, size_t len);
/* The name of user id (valid while a lives). */
const char *auth_user_name(const struct auth *a, int id);
/* 1 if user id may run every command on every key: no per-command check. */
int auth_user_unrestricted(const struct auth *a, int id);

/* What ACL GETUSER and ACL LIST show of a user (pointers valid while a lives). */
struct auth_user_view {
    const char *name;
    int on, nopass;
    const unsigned char (*digests)[CFG_DIGEST_LEN];
    size_t ndigests;
    char *const *keys;
    const size_t *keylens;
    size_t nkeys;
    unsigned cats;                /* CFG_ACL_* */
};
size_t auth_user_count(const struct auth *a);
/* id in [0, auth_user_count). */
void auth_user_view(const struct auth *a, int id, struct auth_user_view *out);
/* 1 if user id may touch key (ACL DRYRUN names the first key it may not). */
int auth_key_allowed(const struct auth *a, int id, const char *key, size_t len);

/* May user id run d with these arguments?  AUTH_OK, AUTH_NOPERM_CMD or
 * AUTH_NOPERM_KEY.  argv[0] is the command name; keys are found by d's
 * first/last/step. */
int auth_allowed(const struct auth *a, int id, const struct cmd_def *d, int argc,
                 const struct resp_slice *argv);

/* Protected mode: 1 if a client from `peer` must be refused (protected-mode
 * is on, no authentication is required, and peer is not loopback:
 * 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, or a unix socket). */
int auth_protected_refuses(const struct auth *a, const struct sockaddr *peer);
/* 1 if protected mode refuses every non-loopback client under a: the part
 * of the decision above that depends on the config, for connections that
 * are already open when a reload changes it. */
int auth_protected(const struct auth *a);
/* 1 if peer is a loopback address (the part of the decision above that does
 * not depend on the config). */
int auth_is_loopback(const struct sockaddr *peer);

#endif

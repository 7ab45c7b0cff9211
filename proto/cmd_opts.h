/*
 * cmd_opts.h - the option grammar of SET, GETEX and the EXPIRE family, once,
 * for both sides that read it: the edge (server/edge/edge_write.c, before it
 * sends a typed write) and the owner (server/owner/owner_cmd_*.c, running the
 * same words inside CALL or EXEC).  Pure: no replies, no clock; each caller
 * hands in "now" and writes the error reply the status names.
 *
 * It follows Redis 7.0's t_string.c and expire.c step for step, because the
 * order of its checks is visible to clients:
 *   - SET's and GETEX's options are read left to right; an option excludes
 *     the others of its kind but not itself (EX 1 EX 2 takes the last; EX
 *     with PX is a syntax error; KEEPTTL and PERSIST exclude any expiry);
 *     the expiry's value is checked after the whole grammar (not an integer;
 *     <= 0 or overflowing: "invalid expire time in '<cmd>' command");
 *   - EXPIRE's NX XX GT LT are collected, then their conflicts judged, then
 *     the time is read.
 * Option words are compared as Redis compares them: case-insensitively, as
 * C strings (the bytes up to a NUL).
 */
#ifndef HKV_CMD_OPTS_H
#define HKV_CMD_OPTS_H

#include <stddef.h>
#include <stdint.h>

/* Redis's error texts the grammar can cause (the callers' replies). */
#define CMD_ERR_SYNTAX "ERR syntax error"
#define CMD_ERR_INT "ERR value is not an integer or out of range"

/* ---- SET [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL], GETEX [EX..|PERSIST] ---- */

#define CMD_OPT_NX 0x001u
#define CMD_OPT_XX 0x002u
#define CMD_OPT_GET 0x004u
#define CMD_OPT_KEEPTTL 0x008u
#define CMD_OPT_PERSIST 0x010u
#define CMD_OPT_EX 0x020u
#define CMD_OPT_PX 0x040u
#define CMD_OPT_EXAT 0x080u
#define CMD_OPT_PXAT 0x100u
#define CMD_OPT_ANYEXP (CMD_OPT_EX | CMD_OPT_PX | CMD_OPT_EXAT | CMD_OPT_PXAT)
#define CMD_OPT_IFEQ 0x200u /* Valkey 8.1's SET ... IFEQ old: not with NX, XX or itself */

/* The options read so far.  Zero it, then feed it every word after the
 * value (SET) or the key (GETEX). */
struct cmd_xopts {
    unsigned flags;  /* CMD_OPT_* */
    unsigned unit;   /* the expiry given (one of CMD_OPT_EX ... PXAT), 0: none */
};

/* One option word; has_next says whether another word follows.  Returns 0
 * (taken), 1 (taken, and the next word is the expiry's value: the caller
 * skips it and keeps it for cmd_xopts_expiry; the last one given counts),
 * 2 (IFEQ, SET only: the next word is the value to compare with; the caller
 * skips and keeps it), or -1 (a syntax error: CMD_ERR_SYNTAX). */
int cmd_xopts_word(struct cmd_xopts *o, const char *p, size_t n, int has_next, int is_set);

enum cmd_opts_rc {
    CMD_OPTS_OK = 0,
    CMD_OPTS_NOT_INT,   /* CMD_ERR_INT */
    CMD_OPTS_BAD_TIME,  /* "ERR invalid expire time in '<cmd>' command" */
};

/* The expiry's value word for o->unit (nonzero), as Redis's
 * getExpireMillisecondsOrReply: *ms in milliseconds, relative to now
 * (*absolute 0: EX, PX) or unix ms (*absolute 1: EXAT, PXAT).  now_ms (unix
 * ms) only judges overflow of a relative one. */
enum cmd_opts_rc cmd_xopts_expiry(const struct cmd_xopts *o, const char *p, size_t n,
                                  int64_t now_ms, int64_t *ms, int *absolute);

/* ---- EXPIRE PEXPIRE EXPIREAT PEXPIREAT key time [NX|XX|GT|LT] -------------- */

#define CMD_EXPIRE_NX 0x1u
#define CMD_EXPIRE_XX 0x2u
#define CMD_EXPIRE_GT 0x4u
#define CMD_EXPIRE_LT 0x8u

/* The flag one option word names, or 0 ("ERR Unsupported option <word>":
 * Redis prints the word as a C string). */
unsigned cmd_expire_word(const char *p, size_t n);
/* NULL if the flags may go together, else Redis's error text. */
const char *cmd_expire_conflict(unsigned flags);
/* The time word, as Redis's expireGenericCommand: *ms in milliseconds
 * (seconds: the word counts seconds), relative to now (rel) or unix ms.
 * CMD_OPTS_OK, CMD_OPTS_NOT_INT or CMD_OPTS_BAD_TIME (it overflows, now_ms
 * added for a relative one). */
enum cmd_opts_rc cmd_expire_time(const char *p, size_t n, int seconds, int rel, int64_t now_ms,
                                 int64_t *ms);

/* Whether EXPIRE with flags applies to a live key whose deadline is cur
 * (-1: none, else any clock) when the new one is want (the same clock):
 * Redis 7's NX (no deadline yet), XX (one already), GT (later than it; none
 * counts as infinite), LT (earlier). */
int cmd_expire_applies(unsigned flags, int64_t cur, int64_t want);

/* 1 if the word is lit (lower case), compared as Redis's strcasecmp on the
 * word as a C string. */
int cmd_opts_is(const char *p, size_t n, const char *lit);

#endif

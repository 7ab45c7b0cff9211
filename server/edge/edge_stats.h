/*
 * edge_stats.h - INFO commandstats, latencystats and errorstats, counted by
 * this edge in its scoreboard slot (board.h: cmdstats, latency, errstats), so that any edge's INFO
 * sums every edge and CONFIG RESETSTAT zeroes them with the other counters.
 *
 * As Redis 7.0 counts them: a command that ran is one call, its time in
 * usec (here from dispatch to its reply, owners' answers included) and a
 * failed call if its reply is an error; a command refused before it ran
 * (wrong arity, NOAUTH, NOPERM, RATELIMITED) is a rejected call and no
 * call; an unknown command or subcommand counts under no command.  Every
 * error reply counts in total_error_replies and under its prefix (the text
 * before the first space, within 32 bytes; else "ERR").  Single writer (the
 * edge's own loop): plain loads and stores, no locked instruction.
 *
 * For /metrics a call's duration also counts under its kind (read, write,
 * or admin: every other command) and the class of its first key (board.h,
 * classlat): the class is looked up here (cfg_class_for, glob matching)
 * only when the config has more than one class, since a cache hit never
 * needed it.
 */
#ifndef HKV_EDGE_STATS_H
#define HKV_EDGE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "server/edge/edge_int.h"

#define STATS_NONE 0xffffu        /* no command (unknown) */

/* A command (stat id) ran for nsec; its reply begins with reply[0..len)
 * (len 0: not known, not counted as failed). */
void stats_call(struct edge *e, unsigned stat, int64_t nsec, const char *reply, size_t len);
/* The same for a command about key[0..klen), its first key (key NULL: a
 * command without a key, the same as stats_call). */
void stats_call_key(struct edge *e, unsigned stat, int64_t nsec, const char *reply, size_t len,
                    const char *key, size_t klen);
/* The kind of a command stat id (enum board_kind): BOARD_KIND_WRITE for a
 * command that writes keys, BOARD_KIND_READ for one that reads them,
 * BOARD_KIND_ADMIN for the others (subcommands included). */
enum board_kind stats_kind(unsigned stat);
/* A command (stat id, or STATS_NONE) was refused with the error reply
 * text[0..len) (the RESP line, '-' included). */
void stats_rejected(struct edge *e, unsigned stat, const char *text, size_t len);

#endif

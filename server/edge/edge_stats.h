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
/* A command (stat id, or STATS_NONE) was refused with the error reply
 * text[0..len) (the RESP line, '-' included). */
void stats_rejected(struct edge *e, unsigned stat, const char *text, size_t len);

#endif

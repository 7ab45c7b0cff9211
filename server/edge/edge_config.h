/*
 * edge_config.h - CONFIG GET | SET | RESETSTAT | HELP, with Redis 7.0's
 * replies and error texts for the directives Redis also has.
 *
 * GET: a name without glob characters is answered with the name as asked
 * (Redis echoes "MAXCLIENTS"), a pattern with the directives' own names;
 * a directive matched twice is listed once.  SET: checked as Redis checks
 * it (every name first: unknown, not settable, given twice; then every
 * value), in effect in this edge before it answers OK, and sent to the
 * master, which applies it daemon-wide as a new config generation.  A bad
 * value of a directive Redis also has gets Redis's reason ("argument
 * couldn't be parsed into an integer") when Redis would refuse it too, and
 * hotkvd's own reason when only hotkvd's bounds refuse it.  RESETSTAT is
 * daemon-wide, through the master.
 *
 * The handler is called only through the command registry, which has
 * checked the subcommand and its arity (edge_subcmd.h).
 */
#ifndef HKV_EDGE_CONFIG_H
#define HKV_EDGE_CONFIG_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

void edge_cmd_config(struct conn *c, int argc, const struct resp_slice *argv);

/* The master's word that this edge's oldest CONFIG RESETSTAT is done
 * daemon-wide (worker hook, arg the edge): it is answered OK. */
void edge_resetstat_done(void *arg);

#endif

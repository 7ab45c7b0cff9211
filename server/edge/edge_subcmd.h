/*
 * edge_subcmd.h - the subcommands of the container commands (CLIENT, CONFIG,
 * COMMAND) and the one index space that names every command and subcommand.
 *
 * Redis 7 looks a container's subcommand up, and checks its arity, before
 * anything else runs: an unknown one is "unknown subcommand 'X'. Try CLIENT
 * HELP.", a wrong arity "wrong number of arguments for 'client|setname'
 * command", and the subcommand's full name ("client|info") is what CLIENT
 * LIST's cmd= and INFO commandstats show.  This table holds Redis 7.0's
 * arities for those three containers (plus hotkvd's own CLIENT META and 7.2's
 * CLIENT SETINFO, which clients send); `served` says whether the edge's
 * handler does more than refuse it.
 *
 * The index space (a "command stat id"): each command of proto/cmd.h by its
 * cmd_id, then subcommand i as CMD_COUNT + i.  Every edge runs the same
 * binary, so an id means the same thing in every process (the scoreboard's
 * per-command counters are indexed by it).  Pure data: calls nothing.
 */
#ifndef HKV_EDGE_SUBCMD_H
#define HKV_EDGE_SUBCMD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/cmd.h"
#include "proto/resp.h"

struct edge_subcmd {
    enum cmd_id parent;
    const char *name;             /* lower case */
    const char *fullname;         /* "client|list" */
    int arity;                    /* Redis's, counted from the container's name */
    int served;                   /* 0: known to Redis, refused by hotkvd */
    int admin;                    /* Redis flags it admin: never shown to MONITOR */
};

extern const struct edge_subcmd edge_subcmds[];
extern const size_t edge_nsubcmds;

/* How many command stat ids there are (every command, then every
 * subcommand). */
#define EDGE_STAT_IDS (CMD_COUNT + 48)

/* 1 if commands with id `id` take a subcommand (CLIENT, CONFIG, COMMAND). */
int subcmd_is_container(enum cmd_id id);
/* The subcommand `word` of container `parent` (any case), or NULL. */
const struct edge_subcmd *subcmd_lookup(enum cmd_id parent, const struct resp_slice *word);
/* Its command stat id. */
static inline unsigned subcmd_stat_id(const struct edge_subcmd *s)
{
    return (unsigned)CMD_COUNT + (unsigned)(s - edge_subcmds);
}
/* The full name of a command stat id ("get", "client|info"); NULL past the
 * end. */
const char *subcmd_stat_name(unsigned id);

#endif

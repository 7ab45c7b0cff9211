/*
 * edge_call.h - commands the key's owner runs from its own command table:
 * APPEND SETRANGE SETBIT INCRBYFLOAT MSETNX BITOP RENAME RENAMENX COPY TOUCH
 * EXPIRETIME PEXPIRETIME.  The edge sends the client's words as they are
 * (WIRE_CALL, a numbered write on the write link: retried with the same
 * request id until write-deadline, exactly as every other write) and
 * answers with the owner's reply bytes as they are (the owner encoded them
 * for the client's protocol); the owner's change list orders the colo cache
 * as every write's answer does.
 *
 * Several keys: a command is atomic on one owner only, so when its keys
 * live on different owners it is refused before anything is sent with
 * Redis Cluster's "-CROSSSLOT Keys in request don't hash to the same slot";
 * hash tags ({user:1}:a, {user:1}:b: server/core/router.h) put related keys
 * on one owner.  The check compares owners, not Redis's 16384 slots: keys
 * on one owner may be used together whatever their slots.
 */
#ifndef HKV_EDGE_CALL_H
#define HKV_EDGE_CALL_H

#include <stddef.h>

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_owners.h"

struct op;
struct oreq;
/* An owner's WIRE_RESP to a CALL or EXEC: orders the colo cache by its change
 * list (each key tombstoned at its new version) and returns 0, so the caller
 * can pass the reply bytes on; anything else is the op's error (-1). */
int edge_call_taken(struct op *op, struct oreq *r, const struct wire_msg *m);
/* The handler of every command above (edge_registry.h's edge_handler). */
void edge_cmd_call(struct conn *c, int argc, const struct resp_slice *argv);

/* The one owner of every key of command d (argc words, arity satisfied):
 * 0 with *o (NULL when the command names no key), or -1 with *err as
 * edge_same_owner (edge_owners.h). */
int edge_cmd_owner(struct edge *e, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv, struct owner_ref **o, const char **err);

#endif

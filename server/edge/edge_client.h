/*
 * edge_client.h - CLIENT and its subcommands, with Redis 7.0's replies:
 * ID GETNAME SETNAME INFO LIST KILL HELP NO-EVICT GETREDIR TRACKINGINFO
 * UNBLOCK, 7.2's SETINFO (clients send it) and hotkvd's own META.
 *
 * CLIENT INFO and LIST lines carry 7.0's fields in 7.0's order (id addr
 * laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free
 * argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir
 * resp); cmd is the last command's full name ("client|info"), NULL after
 * an unknown one.  The handler is called only through the command registry,
 * which has checked the subcommand and its arity (edge_subcmd.h).
 */
#ifndef HKV_EDGE_CLIENT_H
#define HKV_EDGE_CLIENT_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

void edge_cmd_client(struct conn *c, int argc, const struct resp_slice *argv);

/* Sets c's name (len 0: none).  0, or -1 with Redis's error written (a
 * byte outside '!'..'~'); HELLO SETNAME uses it too. */
int client_set_name(struct conn *c, const struct resp_slice *name);
/* c's CLIENT INFO line, without its line end, appended to b (ACL LOG's
 * client-info); argv is the request being run. */
void client_info_line(struct conn *c, int argc, const struct resp_slice *argv, struct hkv_buf *b);
/* The closing hook's part: frees what the session holds (its name). */
void client_gone(struct conn *c);
/* Every 100 ms: CLIENT KILLs waiting for other edges answer once those
 * clients are gone (or after a second). */
void client_kill_cron(struct edge *e, int64_t now_ms);
/* CLIENT KILL ... (edge_client_kill.c). */
void client_kill_cmd(struct conn *c, int argc, const struct resp_slice *argv);

#endif

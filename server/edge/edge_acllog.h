/*
 * edge_acllog.h - ACL LOG [count | RESET] over the host's log of denied
 * attempts (server/core/acllog.h), and the gates' reports into it: a wrong
 * password (AUTH, HELLO AUTH, the HTTP door's Basic credentials) and a
 * NOPERM (a command, or the first key, outside the user's rules).  NOAUTH
 * is not a denial Redis logs, nor is ACL DRYRUN's answer.
 */
#ifndef HKV_EDGE_ACLLOG_H
#define HKV_EDGE_ACLLOG_H

#include <stddef.h>

#include "proto/cmd.h"
#include "proto/resp.h"

struct conn;

void edge_acllog_cmd(struct conn *c, int argc, const struct resp_slice *argv);

/* A wrong password for user (what the client sent) on the command named
 * word (AUTH, HELLO, or the HTTP method). */
void edge_acllog_auth(struct conn *c, const char *user, size_t ulen, const char *word,
                      size_t wlen);
/* c's user was refused d (key: 1 when a key was outside its patterns, the
 * first such key of argv is the entry's object; multi: while queueing). */
void edge_acllog_denied(struct conn *c, const struct cmd_def *d, int argc,
                        const struct resp_slice *argv, int key, int multi);

#endif

/*
 * edge_acl.h - ACL: the read side over the config file's users
 * (WHOAMI USERS LIST GETUSER DRYRUN CAT GENPASS HELP; edge_acl.c).  Its
 * handler is called through the command registry, after the arity, auth
 * (+@admin) and rate gates.
 */
#ifndef HKV_EDGE_ACL_H
#define HKV_EDGE_ACL_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

void edge_cmd_acl(struct conn *c, int argc, const struct resp_slice *argv);

#endif

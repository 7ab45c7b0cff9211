/*
 * edge_conn_limit.h - the output limits on what is held for a client
 * (edge_conn_limit.c), as the connection layer (edge_conn.c) calls them.
 */
#ifndef HKV_EDGE_CONN_LIMIT_H
#define HKV_EDGE_CONN_LIMIT_H

#include <stdint.h>

#include "server/edge/edge_conn.h"

/* Closes c (counted) when what is held for it (conn_held) is over the hard
 * limit, or over the soft one for its seconds; starts or clears the soft
 * clock otherwise.  1, or 0 if c was closed. */
int conn_check_output(struct conn *c, int64_t now);

#endif

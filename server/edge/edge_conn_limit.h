/*
 * edge_conn_limit.h - the output limits on what is held for a client and
 * the periodic checks (edge_conn_limit.c), as verdicts the connection layer
 * (edge_conn.c) acts on.
 */
#ifndef HKV_EDGE_CONN_LIMIT_H
#define HKV_EDGE_CONN_LIMIT_H

#include <stdint.h>

#include "server/edge/edge_conn.h"

/* 0 (logged and counted: close c) when what is held for c (conn_held) is
 * over the hard limit, or over the soft one for its seconds; else 1, with
 * the soft clock started or cleared. */
int conn_output_ok(struct conn *c, int64_t now);
/* The 100 ms checks of one connection: TLS handshake and idle timeouts,
 * then conn_output_ok.  0: close c. */
int conn_cron_ok(struct conn *c, int64_t now);

#endif

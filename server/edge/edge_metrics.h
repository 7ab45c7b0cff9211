/*
 * edge_metrics.h - GET /metrics: the whole host's numbers in the Prometheus
 * text exposition format 0.0.4 (proto/prom.h), rendered by any edge from
 * shared memory, so every edge answers the same scrape without asking
 * anyone.
 *
 * What it reads: the scoreboard (board.h: every edge's CTR_EDGE counters,
 * command stats and latency histograms), each owner's last STATS
 * (edge_owners.h) and the colo segments.  Names are derived from the one
 * declared counter list (counters.h, through server/core/counters_prom.h);
 * labels come only from bounded sets (colo, pool, owner index, command
 * name from the command table, class), never keys or client addresses.
 * The families are listed in README.md, "Metrics".
 */
#ifndef HKV_EDGE_METRICS_H
#define HKV_EDGE_METRICS_H

#include "proto/buf.h"
#include "proto/hkv.h"

struct edge;

/* The content type of the exposition, for the Content-Type header. */
#define EDGE_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends the whole exposition to out.  0 (HKV_OK), or an hkv_status
 * (HKV_ENOMEM; HKV_EINVAL only for a bad name, a defect the unit test
 * catches); on an error out may hold part of it (the caller answers 500). */
int edge_metrics_render(struct edge *e, struct hkv_buf *out);

#endif

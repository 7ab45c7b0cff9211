/*
 * info.h - INFO: the whole daemon's numbers, in Redis's "# Section" form,
 * from the scoreboard, the colo segments and the owners' last STATS (so any
 * edge answers the same thing, and INFO never waits for an owner).
 */
#ifndef HKV_EDGE_INFO_H
#define HKV_EDGE_INFO_H

#include "proto/buf.h"
#include "proto/resp.h"
#include "server/edge/edge_int.h"

/* Renders the requested sections ("" or "default", "all", or names). */
void info_render(struct hkv_buf *out, struct edge *e, int nsections,
                 const struct resp_slice *sections);

#endif

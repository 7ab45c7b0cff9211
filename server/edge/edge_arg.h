/*
 * edge_arg.h - reading client arguments the way Redis does: a word compared
 * without case, a signed 64-bit integer.  Every command family and gate
 * uses these; they keep no state and call nothing else in server/edge, so
 * any edge module may call them without climbing the layering.
 */
#ifndef HKV_EDGE_ARG_H
#define HKV_EDGE_ARG_H

#include "proto/resp.h"

/* 1 when s equals lit ignoring ASCII case, else 0. */
int edge_arg_is(const struct resp_slice *s, const char *lit);

/* Redis's string2ll: an optional '-', then digits, no leading zeros, no
 * spaces, within long long.  0 with *out set, or -1 (*out untouched). */
int edge_arg_ll(const struct resp_slice *s, long long *out);

#endif

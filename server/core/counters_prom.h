/*
 * counters_prom.h - a declared counter list (counters.h) as Prometheus
 * metric families, so /metrics is driven by the one list INFO and STATS use.
 *
 * Naming (Prometheus conventions): every name gets the "hotkvd_" prefix; a
 * CTR_COUNTER becomes a counter whose name ends in "_total" (added unless the
 * list's name already ends so, and a word "total" elsewhere in it moves to
 * the end: total_commands_processed is hotkvd_commands_processed_total);
 * a CTR_GAUGE a gauge under its own name.
 * Units are base units: a name carrying "ms" as one of its words
 * (persist_last_commit_ms, persist_stall_ms_max) drops that word and ends in
 * "_seconds" instead (hotkvd_persist_stall_max_seconds), its value divided
 * by 1000 and its help's ", ms" read as ", seconds"; a unit already at the
 * end (_bytes, _seconds) is kept as it is, never doubled.
 */
#ifndef HKV_COUNTERS_PROM_H
#define HKV_COUNTERS_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/prom.h"
#include "server/core/counters.h"

#define CTR_PROM_PREFIX "hotkvd_"
#define CTR_PROM_NAME_MAX 128

/* The metric name of d into out[0..CTR_PROM_NAME_MAX) and the factor its
 * values are multiplied by (1, or 0.001 for ms).  HKV_OK, or HKV_EINVAL when
 * the result would not be a valid metric name or would not fit. */
hkv_status ctr_prom_name(const struct ctr_def *d, char *out, double *scale);

/* One label set and its values (values[i] for defs[i]). */
struct ctr_prom_row {
    const struct prom_label *labels;
    size_t nlabels;
    const int64_t *values;
};

/* Appends one family per entry of defs[0..n) (HELP from the list, TYPE from
 * its kind), each with one sample per row, rows in order.  Rows must use the
 * same label names (the caller's bounded set: an edge or owner number, a
 * class), never keys or addresses.  HKV_OK, HKV_EINVAL (a name or label
 * refused by proto/prom), HKV_ENOMEM. */
hkv_status ctr_prom_render(struct hkv_buf *b, const struct ctr_def *defs, size_t n,
                           const struct ctr_prom_row *rows, size_t nrows);

#endif

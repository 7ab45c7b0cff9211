/*
 * prom.h - the Prometheus text exposition format, version 0.0.4, written
 * into a caller's buffer (the body of /metrics).
 *
 * Why a writer of our own: the format is small, but a scrape fails as a
 * whole on one bad byte, so the rules live here once: HELP text escapes '\'
 * and newline; label values escape '\', '"' and newline; floats are written
 * the way Prometheus parses them (+Inf, -Inf, NaN, integral values as plain
 * digits, others in the shortest form that reads back exactly); histogram
 * buckets are cumulative, in increasing `le`, and end with le="+Inf", whose
 * count equals _count.  Names are the caller's: prom_name_ok and
 * prom_label_name_ok say whether one is valid, and every writer refuses an
 * invalid one (HKV_EINVAL), so a typo in a name is a failed test, not a
 * broken scrape.
 *
 * One metric family is written as prom_family (HELP and TYPE) followed by
 * all its samples: the format wants a family's lines together, so a caller
 * with several label sets (one per edge, per class) writes them in a row.
 * Every writer appends to the buffer (growing it: the caller bounds the
 * output by what it writes) and returns HKV_OK, HKV_EINVAL or HKV_ENOMEM; on
 * an error the buffer may hold part of the line.
 */
#ifndef HKV_PROM_H
#define HKV_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/hkv.h"

enum prom_type { PROM_COUNTER = 0, PROM_GAUGE = 1, PROM_HISTOGRAM = 2 };

struct prom_label {
    const char *name;   /* a label name (prom_label_name_ok) */
    const char *value;  /* any bytes but NUL; escaped here */
};

/* 1 when s is a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
int prom_name_ok(const char *s);
/* 1 when s is a label name a caller may use: [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__" (reserved for Prometheus itself). */
int prom_label_name_ok(const char *s);

/* Formats v as a sample value into out (PROM_FLOAT_MAX bytes suffice):
 * "NaN", "+Inf", "-Inf", an integral |v| < 2^63 as digits without exponent,
 * anything else with %.17g shortened to the fewest digits that read back to
 * v.  Returns the length. */
#define PROM_FLOAT_MAX 32
size_t prom_fmt_double(char *out, double v);

/* "# HELP name text\n# TYPE name type\n".  For a counter, name is the
 * family's full name, "_total" included (the sample's name). */
hkv_status prom_family(struct hkv_buf *b, const char *name, enum prom_type type, const char *help);

/* One sample line: name{labels} value.  labels may be NULL when n is 0. */
hkv_status prom_sample(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                       size_t n, double v);
/* The same with an exact integer value (counters past 2^53 stay exact). */
hkv_status prom_sample_i64(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                           size_t n, int64_t v);
hkv_status prom_sample_u64(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                           size_t n, uint64_t v);

/* The samples of one histogram (after prom_family(..., PROM_HISTOGRAM)):
 * name_bucket{labels,le="bound"} for each of the nb upper bounds (strictly
 * increasing and finite, else HKV_EINVAL), name_bucket{labels,le="+Inf"},
 * name_sum and name_count.  counts[0..nb] are per bucket, NOT cumulative:
 * counts[i] observations <= bounds[i] and > bounds[i-1], counts[nb] those
 * above the last bound; they are summed here.  A label named "le" in labels
 * is HKV_EINVAL. */
hkv_status prom_histogram(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                          size_t n, const double *bounds, const uint64_t *counts, size_t nb,
                          double sum);

#endif

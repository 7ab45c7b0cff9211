/*
 * prom.c - the Prometheus text exposition writer; see prom.h.
 *
 * Every line is built by one function (line) so the escaping and the name
 * checks cannot be skipped by a caller that writes a suffix or an extra
 * label: a histogram's _bucket/_sum/_count lines and the le label go through
 * the same path as a plain sample.  Text a scrape reads (HELP, label values)
 * must be UTF-8: invalid sequences are refused rather than passed on to fail
 * the whole scrape.  Floats use printf, which follows LC_NUMERIC: the daemon
 * never calls setlocale, so the decimal point is '.'.
 */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_char(unsigned char c, int first, int colon)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return 1;
    if (c == ':')
        return colon;
    return !first && c >= '0' && c <= '9';
}

int prom_name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0')
        return 0;
    for (size_t i = 0; s[i] != '\0'; i++)
        if (!name_char((unsigned char)s[i], i == 0, 1))
            return 0;
    return 1;
}

int prom_label_name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || (s[0] == '_' && s[1] == '_'))
        return 0;
    for (size_t i = 0; s[i] != '\0'; i++)
        if (!name_char((unsigned char)s[i], i == 0, 0))
            return 0;
    return 1;
}

/* 1 when s is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static int utf8_ok(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s != 0) {
        unsigned char c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }
        int n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        for (int i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += n + 1;
    }
    return 1;
}

size_t prom_fmt_double(char *out, double v)
{
    if (isnan(v))
        return (size_t)snprintf(out, PROM_FLOAT_MAX, "NaN");
    if (isinf(v))
        return (size_t)snprintf(out, PROM_FLOAT_MAX, v > 0 ? "+Inf" : "-Inf");
    if (v == 0)
        return (size_t)snprintf(out, PROM_FLOAT_MAX, "0");     /* also -0 */
    if (v == trunc(v) && fabs(v) < 9223372036854775808.0)
        return (size_t)snprintf(out, PROM_FLOAT_MAX, "%lld", (long long)v);
    int len = 0;
    for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(out, PROM_FLOAT_MAX, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return (size_t)len;
}

/* Appends s with the escapes of a label value (quote = 1) or HELP text. */
static hkv_status escaped(struct hkv_buf *b, const char *s, int quote)
{
    size_t i = 0, start = 0;
    for (; s[i] != '\0'; i++) {
        const char *rep = NULL;
        if (s[i] == '\\')
            rep = "\\\\";
        else if (s[i] == '\n')
            rep = "\\n";
        else if (s[i] == '"' && quote)
            rep = "\\\"";
        if (rep == NULL)
            continue;
        if (buf_append(b, s + start, i - start) != HKV_OK || buf_append_str(b, rep) != HKV_OK)
            return HKV_ENOMEM;
        start = i + 1;
    }
    return buf_append(b, s + start, i - start);
}

static hkv_status label(struct hkv_buf *b, int first, const char *name, const char *value)
{
    if ((!first && buf_append(b, ",", 1) != HKV_OK) || buf_append_str(b, name) != HKV_OK ||
        buf_append(b, "=\"", 2) != HKV_OK || escaped(b, value, 1) != HKV_OK ||
        buf_append(b, "\"", 1) != HKV_OK)
        return HKV_ENOMEM;
    return HKV_OK;
}

/* name+suffix{labels[,le="le"]} value\n, every name and value checked. */
static hkv_status line(struct hkv_buf *b, const char *name, const char *suffix,
                       const struct prom_label *labels, size_t n, const char *le, const char *value)
{
    if (!prom_name_ok(name))
        return HKV_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!prom_label_name_ok(labels[i].name) || labels[i].value == NULL ||
            !utf8_ok(labels[i].value) || (le != NULL && strcmp(labels[i].name, "le") == 0))
            return HKV_EINVAL;
    if (buf_append_str(b, name) != HKV_OK || buf_append_str(b, suffix) != HKV_OK)
        return HKV_ENOMEM;
    if (n > 0 || le != NULL) {
        if (buf_append(b, "{", 1) != HKV_OK)
            return HKV_ENOMEM;
        for (size_t i = 0; i < n; i++)
            if (label(b, i == 0, labels[i].name, labels[i].value) != HKV_OK)
                return HKV_ENOMEM;
        if (le != NULL && label(b, n == 0, "le", le) != HKV_OK)
            return HKV_ENOMEM;
        if (buf_append(b, "}", 1) != HKV_OK)
            return HKV_ENOMEM;
    }
    if (buf_append(b, " ", 1) != HKV_OK || buf_append_str(b, value) != HKV_OK ||
        buf_append(b, "\n", 1) != HKV_OK)
        return HKV_ENOMEM;
    return HKV_OK;
}

hkv_status prom_family(struct hkv_buf *b, const char *name, enum prom_type type, const char *help)
{
    static const char *const types[] = { "counter", "gauge", "histogram" };
    if (!prom_name_ok(name) || (unsigned)type > PROM_HISTOGRAM || help == NULL || !utf8_ok(help))
        return HKV_EINVAL;
    if (buf_append_str(b, "# HELP ") != HKV_OK || buf_append_str(b, name) != HKV_OK ||
        buf_append(b, " ", 1) != HKV_OK || escaped(b, help, 0) != HKV_OK ||
        buf_printf(b, "\n# TYPE %s %s\n", name, types[type]) != HKV_OK)
        return HKV_ENOMEM;
    return HKV_OK;
}

hkv_status prom_sample(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                       size_t n, double v)
{
    char num[PROM_FLOAT_MAX];
    prom_fmt_double(num, v);
    return line(b, name, "", labels, n, NULL, num);
}

hkv_status prom_sample_i64(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                           size_t n, int64_t v)
{
    char num[PROM_FLOAT_MAX];
    snprintf(num, sizeof(num), "%lld", (long long)v);
    return line(b, name, "", labels, n, NULL, num);
}

hkv_status prom_sample_u64(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                           size_t n, uint64_t v)
{
    char num[PROM_FLOAT_MAX];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    return line(b, name, "", labels, n, NULL, num);
}

hkv_status prom_histogram(struct hkv_buf *b, const char *name, const struct prom_label *labels,
                          size_t n, const double *bounds, const uint64_t *counts, size_t nb,
                          double sum)
{
    for (size_t i = 0; i < nb; i++)
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return HKV_EINVAL;
    char le[PROM_FLOAT_MAX], num[PROM_FLOAT_MAX];
    uint64_t cum = 0;
    for (size_t i = 0; i <= nb; i++) {
        cum += counts[i];
        if (i < nb)
            prom_fmt_double(le, bounds[i]);
        else
            strcpy(le, "+Inf");
        snprintf(num, sizeof(num), "%llu", (unsigned long long)cum);
        hkv_status s = line(b, name, "_bucket", labels, n, le, num);
        if (s != HKV_OK)
            return s;
    }
    prom_fmt_double(num, sum);
    hkv_status s = line(b, name, "_sum", labels, n, NULL, num);
    if (s != HKV_OK)
        return s;
    snprintf(num, sizeof(num), "%llu", (unsigned long long)cum);
    return line(b, name, "_count", labels, n, NULL, num);
}

/*
 * cfg_value.c - the scalar value forms: integers, sizes, durations, booleans,
 * and client-output-buffer-limit (three of them in one directive).
 *
 * Everything is integer arithmetic with explicit overflow checks, so
 * "99999999999gb" is refused rather than wrapped, and "1.5s" is exactly 1500
 * ms.  A duration finer than a millisecond ("1.5ms") is refused rather than
 * rounded: a config value should mean what it says.  Rendering picks the
 * largest unit that is exact (512mb, 60s, 1500ms), so a rendered value parses
 * back to the same number.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"

/* Parses leading decimal digits of s into *v; returns the count of digits, or
 * -1 on overflow.  No digits is 0. */
static int digits(const char *s, int64_t *v)
{
    int n = 0;
    int64_t x = 0;
    while (s[n] >= '0' && s[n] <= '9') {
        int d = s[n] - '0';
        if (x > (INT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
        n++;
    }
    *v = x;
    return n;
}

hkv_status cfg_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    int neg = s[0] == '-';
    int64_t v;
    int n = digits(s + neg, &v);
    if (n <= 0 || s[neg + n] != '\0')
        return HKV_EINVAL;
    if (neg)
        v = -v;
    if (v < min || v > max)
        return HKV_EINVAL;
    *out = v;
    return HKV_OK;
}

hkv_status cfg_parse_ratio(const char *s, int64_t min, int64_t max, int64_t *out)
{
    int64_t whole = 0, frac = 0;
    int n = s[0] == '.' ? 0 : digits(s, &whole);
    if (n < 0 || (n == 0 && s[0] != '.') || whole > 1000)
        return HKV_EINVAL;
    const char *p = s + n;
    int nd = 0;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
            if (nd >= 3)
                return HKV_EINVAL;
            frac = frac * 10 + (*p - '0');
        }
        if (nd == 0 && n == 0)
            return HKV_EINVAL;
    }
    if (*p != '\0')
        return HKV_EINVAL;
    for (int i = nd; i < 3; i++)
        frac *= 10;
    int64_t v = whole * 1000 + frac;
    if (v < min || v > max)
        return HKV_EINVAL;
    *out = v;
    return HKV_OK;
}

void cfg_render_ratio(int64_t permille, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%lld.%03lld", (long long)(permille / 1000),
                     (long long)(permille % 1000));
    while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
        buf[--n] = '\0';
    if (n > 0 && (size_t)n < len && buf[n - 1] == '.')
        buf[--n] = '\0';
}

hkv_status cfg_parse_size(const char *s, int64_t min, int64_t max, int64_t *out)
{
    static const struct { const char *u; int64_t mul; } units[] = {
        { "", 1 }, { "k", 1000 }, { "kb", CFG_KB }, { "m", 1000 * 1000 }, { "mb", CFG_MB },
        { "g", 1000 * 1000 * 1000 }, { "gb", CFG_GB },
    };
    int64_t v;
    int n = digits(s, &v);
    if (n <= 0)
        return HKV_EINVAL;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(s + n, units[i].u) != 0)
            continue;
        if (v > INT64_MAX / units[i].mul)
            return HKV_EINVAL;
        v *= units[i].mul;
        if (v < min || v > max)
            return HKV_EINVAL;
        *out = v;
        return HKV_OK;
    }
    return HKV_EINVAL;
}

hkv_status cfg_parse_duration(const char *s, int64_t min, int64_t max, int64_t *out)
{
    static const struct { const char *u; int64_t ms; } units[] = {
        { "", CFG_SEC }, { "ms", 1 }, { "s", CFG_SEC }, { "m", CFG_MIN }, { "h", CFG_HOUR },
    };
    int64_t whole, frac = 0, scale = 1;
    int n = digits(s, &whole);
    if (n <= 0)
        return HKV_EINVAL;
    const char *p = s + n;
    if (*p == '.') {
        int f = digits(p + 1, &frac);
        if (f <= 0 || f > 9)
            return HKV_EINVAL;
        for (int i = 0; i < f; i++)
            scale *= 10;
        p += 1 + f;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(p, units[i].u) != 0)
            continue;
        int64_t mul = units[i].ms;
        if (whole > INT64_MAX / mul - 1)
            return HKV_EINVAL;
        /* frac < 1e9 and mul <= 3.6e6: the product fits in 63 bits */
        if ((frac * mul) % scale != 0)
            return HKV_EINVAL;   /* finer than a millisecond */
        int64_t v = whole * mul + frac * mul / scale;
        if (v < min || v > max)
            return HKV_EINVAL;
        *out = v;
        return HKV_OK;
    }
    return HKV_EINVAL;
}

int cfg_parse_bool(const char *s)
{
    if (strcasecmp(s, "yes") == 0)
        return 1;
    if (strcasecmp(s, "no") == 0)
        return 0;
    return -1;
}

void cfg_render_size(int64_t v, char *buf, size_t len)
{
    if (v != 0 && v % CFG_GB == 0)
        snprintf(buf, len, "%lldgb", (long long)(v / CFG_GB));
    else if (v != 0 && v % CFG_MB == 0)
        snprintf(buf, len, "%lldmb", (long long)(v / CFG_MB));
    else if (v != 0 && v % CFG_KB == 0)
        snprintf(buf, len, "%lldkb", (long long)(v / CFG_KB));
    else
        snprintf(buf, len, "%lld", (long long)v);
}

void cfg_render_duration(int64_t ms, char *buf, size_t len)
{
    if (ms == 0)
        snprintf(buf, len, "0");
    else if (ms % CFG_HOUR == 0)
        snprintf(buf, len, "%lldh", (long long)(ms / CFG_HOUR));
    else if (ms % CFG_MIN == 0)
        snprintf(buf, len, "%lldm", (long long)(ms / CFG_MIN));
    else if (ms % CFG_SEC == 0)
        snprintf(buf, len, "%llds", (long long)(ms / CFG_SEC));
    else
        snprintf(buf, len, "%lldms", (long long)ms);
}

const char *cfg_show(const char *s, char *buf, size_t len)
{
    size_t n = strlen(s), keep = n <= len - 1 ? n : len - 4;
    size_t i;
    for (i = 0; i < keep; i++)
        buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (keep < n) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

void cfg_why_size(char *why, const char *what, const char *got, int64_t min, int64_t max)
{
    char lo[32], hi[32], g[48];
    cfg_render_size(min, lo, sizeof(lo));
    cfg_render_size(max, hi, sizeof(hi));
    snprintf(why, CFG_WHY, "%s needs a size between %s and %s (e.g. 64mb), got '%s'", what, lo,
             hi, cfg_show(got, g, sizeof(g)));
}

void cfg_why_duration(char *why, const char *what, const char *got, int64_t min, int64_t max)
{
    char lo[32], hi[32], g[48];
    cfg_render_duration(min, lo, sizeof(lo));
    cfg_render_duration(max, hi, sizeof(hi));
    snprintf(why, CFG_WHY,
             "%s needs a duration between %s and %s (e.g. 1.5s, 200ms; whole ms), got '%s'", what,
             lo, hi, cfg_show(got, g, sizeof(g)));
}

/* ---- client-output-buffer-limit [CLASS] HARD SOFT SOFT-DURATION ... ---- */

/* One group: CLASS (normal or pubsub, as Redis's; optional for the first)
 * then HARD SOFT SOFT-DURATION.  Several groups may follow each other
 * ("256mb 64mb 60s pubsub 32mb 8mb 60s"); a class not named keeps its value. */
static hkv_status cobl_apply(struct cfg *c, int argc, char **argv, char *why)
{
    int64_t lim[2][3] = {{c->client_output_hard, c->client_output_soft, c->client_output_soft_ms},
                         {c->pubsub_output_hard, c->pubsub_output_soft, c->pubsub_output_soft_ms}};
    int i = 0;
    if (argc == 0) {
        snprintf(why, CFG_WHY, "'client-output-buffer-limit' takes [CLASS] HARD SOFT "
                 "SOFT-DURATION, got nothing");
        return HKV_EINVAL;
    }
    while (i < argc) {
        int cls = 0;
        if (strcasecmp(argv[i], "normal") == 0) {
            i++;
        } else if (strcasecmp(argv[i], "pubsub") == 0) {
            cls = 1;
            i++;
        } else if (i > 0) {
            snprintf(why, CFG_WHY, "'client-output-buffer-limit': unknown class '%s' (normal, "
                     "pubsub)", argv[i]);
            return HKV_EINVAL;
        }
        if (argc - i < 3 || (i == 0 && argc > 3 && argc % 4 != 3)) {
            if (i == 0)
                snprintf(why, CFG_WHY, "'client-output-buffer-limit' takes 3 arguments (HARD "
                         "SOFT SOFT-DURATION), got %d", argc);
            else
                snprintf(why, CFG_WHY, "'client-output-buffer-limit' takes [CLASS] HARD SOFT "
                         "SOFT-DURATION groups, got %d arguments", argc);
            return HKV_EINVAL;
        }
        if (cfg_parse_size(argv[i], 0, INT64_MAX, &lim[cls][0]) != HKV_OK) {
            cfg_why_size(why, "'client-output-buffer-limit' HARD", argv[i], 0, INT64_MAX);
            return HKV_EINVAL;
        }
        if (cfg_parse_size(argv[i + 1], 0, INT64_MAX, &lim[cls][1]) != HKV_OK) {
            cfg_why_size(why, "'client-output-buffer-limit' SOFT", argv[i + 1], 0, INT64_MAX);
            return HKV_EINVAL;
        }
        /* Redis's SOFT-DURATION is in seconds: a bare number is taken as such */
        const char *d = argv[i + 2];
        char secs[40];
        if (strspn(d, "0123456789") == strlen(d) && strlen(d) < 20) {
            snprintf(secs, sizeof(secs), "%ss", d);
            d = secs;
        }
        if (cfg_parse_duration(d, 0, CFG_DAY, &lim[cls][2]) != HKV_OK) {
            cfg_why_duration(why, "'client-output-buffer-limit' SOFT-DURATION", argv[i + 2], 0,
                             CFG_DAY);
            return HKV_EINVAL;
        }
        i += 3;
    }
    c->client_output_hard = lim[0][0];
    c->client_output_soft = lim[0][1];
    c->client_output_soft_ms = lim[0][2];
    c->pubsub_output_hard = lim[1][0];
    c->pubsub_output_soft = lim[1][1];
    c->pubsub_output_soft_ms = lim[1][2];
    return HKV_OK;
}

static void cobl_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                        enum cfg_render_mode mode)
{
    if (mode == CFG_R_GET) {
        /* seconds, as Redis prints the soft duration (whole ms otherwise) */
        int64_t d = c->client_output_soft_ms;
        cfg_out_printf(out, d % 1000 == 0 ? "%lld %lld %lld" : "%lld %lld %lldms",
                       (long long)c->client_output_hard, (long long)c->client_output_soft,
                       (long long)(d % 1000 == 0 ? d / 1000 : d));
        return;
    }
    char h[32], s[32], d[32];
    cfg_render_size(c->client_output_hard, h, sizeof(h));
    cfg_render_size(c->client_output_soft, s, sizeof(s));
    cfg_render_duration(c->client_output_soft_ms, d, sizeof(d));
    /* the pubsub class only when it is not Redis's default (32mb 8mb 60s) */
    if (c->pubsub_output_hard == 32 * CFG_MB && c->pubsub_output_soft == 8 * CFG_MB &&
        c->pubsub_output_soft_ms == 60000) {
        cfg_out_printf(out, "%s %s %s %s\n", o->name, h, s, d);
        return;
    }
    char ph[32], ps[32], pd[32];
    cfg_render_size(c->pubsub_output_hard, ph, sizeof(ph));
    cfg_render_size(c->pubsub_output_soft, ps, sizeof(ps));
    cfg_render_duration(c->pubsub_output_soft_ms, pd, sizeof(pd));
    cfg_out_printf(out, "%s %s %s %s pubsub %s %s %s\n", o->name, h, s, d, ph, ps, pd);
}

static int cobl_equal(const struct cfg *a, const struct cfg *b)
{
    return a->client_output_hard == b->client_output_hard &&
           a->client_output_soft == b->client_output_soft &&
           a->client_output_soft_ms == b->client_output_soft_ms &&
           a->pubsub_output_hard == b->pubsub_output_hard &&
           a->pubsub_output_soft == b->pubsub_output_soft &&
           a->pubsub_output_soft_ms == b->pubsub_output_soft_ms;
}

static hkv_status cobl_copy(struct cfg *dst, const struct cfg *src)
{
    dst->client_output_hard = src->client_output_hard;
    dst->client_output_soft = src->client_output_soft;
    dst->client_output_soft_ms = src->client_output_soft_ms;
    dst->pubsub_output_hard = src->pubsub_output_hard;
    dst->pubsub_output_soft = src->pubsub_output_soft;
    dst->pubsub_output_soft_ms = src->pubsub_output_soft_ms;
    return HKV_OK;
}

static void cobl_release(struct cfg *c)
{
    (void)c;
}

const struct cfg_special cfg_cobl_special = {
    .apply = cobl_apply,
    .render = cobl_render,
    .equal = cobl_equal,
    .copy = cobl_copy,
    .release = cobl_release,
};

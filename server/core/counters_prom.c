/*
 * counters_prom.c - counter lists as Prometheus families; see
 * counters_prom.h.
 *
 * The names are derived, not listed a second time: a rename table would be
 * the second list the issue asks us not to have, and would drift from
 * counters.h the first time someone adds a line there.  The unit rule is
 * narrow on purpose (the word "ms" only) so that it changes no other name;
 * the unit test renders every entry of both lists through promtool's lint.
 */
#include "counters_prom.h"

#include <stdio.h>
#include <string.h>

hkv_status ctr_prom_name(const struct ctr_def *d, char *out, double *scale)
{
    char base[CTR_PROM_NAME_MAX];
    size_t bn = 0;
    int ms = 0;
    /* Copy the words of the name, dropping a word "ms". */
    for (const char *w = d->name; *w != '\0';) {
        size_t len = strcspn(w, "_");
        if (len == 2 && memcmp(w, "ms", 2) == 0) {
            ms = 1;
        } else if (len == 5 && memcmp(w, "total", 5) == 0 && d->kind == CTR_COUNTER) {
            /* moved to the end: total_commands_processed is
             * hotkvd_commands_processed_total */
        } else if (len > 0) {
            if (bn + len + 1 >= sizeof(base))
                return HKV_EINVAL;
            if (bn > 0)
                base[bn++] = '_';
            memcpy(base + bn, w, len);
            bn += len;
        }
        w += len;
        if (*w == '_')
            w++;
    }
    base[bn] = '\0';
    int n = snprintf(out, CTR_PROM_NAME_MAX, "%s%s%s%s", CTR_PROM_PREFIX, base,
                     ms ? "_seconds" : "", d->kind == CTR_COUNTER ? "_total" : "");
    if (bn == 0 || n < 0 || n >= CTR_PROM_NAME_MAX || !prom_name_ok(out))
        return HKV_EINVAL;
    *scale = ms ? 0.001 : 1.0;
    return HKV_OK;
}

/* The help text with ", ms" read as ", seconds" when the values are. */
static void help_of(const struct ctr_def *d, double scale, char *out, size_t cap)
{
    const char *h = d->help, *at = scale != 1.0 ? strstr(h, ", ms") : NULL;
    if (at == NULL)
        snprintf(out, cap, "%s", h);
    else
        snprintf(out, cap, "%.*s, seconds%s", (int)(at - h), h, at + 4);
}

hkv_status ctr_prom_render(struct hkv_buf *b, const struct ctr_def *defs, size_t n,
                           const struct ctr_prom_row *rows, size_t nrows)
{
    for (size_t i = 0; i < n; i++) {
        char name[CTR_PROM_NAME_MAX], help[256];
        double scale;
        hkv_status s = ctr_prom_name(&defs[i], name, &scale);
        if (s != HKV_OK)
            return s;
        help_of(&defs[i], scale, help, sizeof(help));
        s = prom_family(b, name, defs[i].kind == CTR_COUNTER ? PROM_COUNTER : PROM_GAUGE, help);
        for (size_t r = 0; s == HKV_OK && r < nrows; r++) {
            int64_t v = rows[r].values[i];
            if (scale != 1.0)
                s = prom_sample(b, name, rows[r].labels, rows[r].nlabels, (double)v * scale);
            else
                s = prom_sample_i64(b, name, rows[r].labels, rows[r].nlabels, v);
        }
        if (s != HKV_OK)
            return s;
    }
    return HKV_OK;
}

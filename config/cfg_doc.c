/*
 * cfg_doc.c - the option table read by people: each directive's one-line doc,
 * its default as config text, and the values it takes, worded from the row's
 * type and bounds ("an integer from 0 to 65535").
 *
 * hotkvd.conf(5) is generated from these (scripts/packaging/mkconfman.c), so
 * the manual lists exactly the directives the parser knows, with the defaults
 * and bounds the parser enforces.  Bounds are rendered with the parser's own
 * size and duration forms, so what the page says is what a file may write.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg_internal.h"

const char *cfg_option_doc(size_t i)
{
    return i < cfg_noptions ? cfg_options[i].doc : NULL;
}

const char *cfg_option_default(size_t i)
{
    return i < cfg_noptions ? cfg_options[i].def : NULL;
}

/* "from LO to HI", or "of at least LO" when HI is the type's own limit. */
static void range(char *buf, size_t len, const char *what, const char *lo, const char *hi,
                  int open_top)
{
    if (open_top)
        snprintf(buf, len, "%s of at least %s", what, lo);
    else
        snprintf(buf, len, "%s from %s to %s", what, lo, hi);
}

void cfg_option_syntax(size_t i, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (i >= cfg_noptions)
        return;
    const struct cfg_option *o = &cfg_options[i];
    char lo[32], hi[32];
    switch (o->type) {
    case CFG_T_INT:
        snprintf(lo, sizeof(lo), "%lld", (long long)o->min);
        snprintf(hi, sizeof(hi), "%lld", (long long)o->max);
        range(buf, len, "an integer", lo, hi, o->max >= INT32_MAX);
        break;
    case CFG_T_SIZE:
        cfg_render_size(o->min, lo, sizeof(lo));
        cfg_render_size(o->max, hi, sizeof(hi));
        range(buf, len, "a size", lo, hi, o->max == INT64_MAX);
        break;
    case CFG_T_DURATION:
        cfg_render_duration(o->min, lo, sizeof(lo));
        cfg_render_duration(o->max, hi, sizeof(hi));
        range(buf, len, "a duration", lo, hi, o->max == INT64_MAX);
        break;
    case CFG_T_RATIO:
        cfg_render_ratio(o->min, lo, sizeof(lo));
        cfg_render_ratio(o->max, hi, sizeof(hi));
        range(buf, len, "a fraction", lo, hi, 0);
        break;
    case CFG_T_STRING:
        snprintf(buf, len, "a string");
        break;
    case CFG_T_PATH:
        snprintf(buf, len, "a path");
        break;
    case CFG_T_ENUM: {
        size_t n = (size_t)snprintf(buf, len, "one of");
        for (size_t k = 0; o->enums[k] != NULL && n < len; k++)
            n += (size_t)snprintf(buf + n, len - n, "%s %s", k == 0 ? "" : ",", o->enums[k]);
        break;
    }
    case CFG_T_BOOL:
        snprintf(buf, len, "yes or no");
        break;
    case CFG_T_STRLIST:
        snprintf(buf, len, "%lld to %lld words", (long long)o->min, (long long)o->max);
        break;
    case CFG_T_DURLIST:
        snprintf(buf, len, "%lld to %lld durations", (long long)o->min, (long long)o->max);
        break;
    case CFG_T_SPECIAL:
        break; /* its doc states its syntax */
    }
}

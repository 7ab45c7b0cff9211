/*
 * mkconfman.c - writes hotkvd.conf(5): copies the page template from stdin to
 * stdout and replaces its `@DIRECTIVES@` line with one entry per row of the
 * option table, in table order.
 *
 * The entries come from the table itself (config/cfg_doc.c), not from a copy
 * of it, so the manual cannot list a directive the parser lacks, miss one it
 * has, or state another default.  tests/unit/check_cfg.c reads the page this
 * writes and checks exactly that.  Each entry is
 *
 *   .TP
 *   .B name
 *   doc
 *   Value (from the type and bounds), default, and what a reload or CONFIG
 *   SET may do with it, each after a .br
 *
 * and nothing else in the DIRECTIVES section starts with ".B ", so a reader
 * (or the test) finds the directives as the ".B" lines after ".TP".
 */
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"

/* Text as roff reads it literally: backslashes and minus signs escaped, and a
 * leading dot or quote defused. */
static void roff(const char *s, FILE *out)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else
            fputc(*s, out);
    }
}

static void entry(size_t i, FILE *out)
{
    int fl = cfg_option_flags(i);
    char syntax[256];
    cfg_option_syntax(i, syntax, sizeof(syntax));
    const char *def = cfg_option_default(i);
    const char *doc = cfg_option_doc(i);

    fputs(".TP\n.B ", out);
    roff(cfg_option_name(i), out);
    fputc('\n', out);
    roff(doc, out);
    size_t n = strlen(doc);
    fputs(n > 0 && doc[n - 1] == '.' ? "\n" : ".\n", out);
    if (syntax[0] != '\0') {
        fputs(".br\nValue: ", out);
        roff(syntax, out);
        fputc('\n', out);
    }
    fputs(".br\nDefault: ", out);
    if (def[0] == '\0') {
        fputs("none\n", out);
    } else {
        fputs("\\fB", out);
        roff(def, out);
        fputs("\\fR\n", out);
    }
    fputs(".br\n", out);
    if (fl & CFG_F_MULTI)
        fputs("May be repeated; each line adds one.\n.br\n", out);
    if (!(fl & CFG_F_RELOADABLE))
        fputs("Restart\\-only: a reload keeps the running value.\n", out);
    else if (fl & CFG_F_SECRET)
        fputs("Reloadable (SIGHUP); CONFIG GET and CONFIG SET never show or change it.\n", out);
    else if (fl & CFG_F_PATH)
        fputs("Reloadable (SIGHUP); a path, so CONFIG SET cannot change it.\n", out);
    else
        fputs("Reloadable: SIGHUP or CONFIG SET applies a new value.\n", out);
}

int main(void)
{
    char line[4096];
    int done = 0;
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (strcmp(line, "@DIRECTIVES@\n") != 0) {
            fputs(line, stdout);
            continue;
        }
        for (size_t i = 0; i < cfg_option_count(); i++)
            entry(i, stdout);
        done = 1;
    }
    if (!done) {
        fprintf(stderr, "mkconfman: the template has no @DIRECTIVES@ line\n");
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

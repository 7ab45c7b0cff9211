/*
 * cfg_glob.c - Redis glob patterns (* ? [abc] [a-z] [^a] \x), binary-safe.
 *
 * Redis's stringmatchlen recurses on every `*`, so "a*a*a*a*...b" against a
 * long string takes exponential time.  This matcher is iterative and keeps a
 * single backtrack point, the most recent `*`: when a later element fails it
 * lets that star swallow one more byte and retries from just after it.  That
 * is enough because a later star can absorb anything an earlier one could
 * have, so the work is bounded by patlen * slen steps whatever the pattern.
 * Class syntax follows Redis: `^` negates, `\` escapes inside the class, a
 * reversed range a-z is accepted either way round, and a class left open at
 * the end of the pattern ends there.
 */
#include <ctype.h>
#include <stddef.h>

#include "config/cfg_internal.h"

static unsigned char fold(unsigned char ch, int nocase)
{
    return nocase ? (unsigned char)tolower(ch) : ch;
}

/* Matches byte ch against the class starting just after '[' at pat[p].
 * Sets *next to the index after the class's closing ']' (or plen). */
static int class_match(const char *pat, size_t plen, size_t p, unsigned char ch, int nocase,
                       size_t *next)
{
    int neg = 0, hit = 0;
    ch = fold(ch, nocase);
    if (p < plen && pat[p] == '^') {
        neg = 1;
        p++;
    }
    while (p < plen && pat[p] != ']') {
        if (pat[p] == '\\' && p + 1 < plen) {
            if (fold((unsigned char)pat[p + 1], nocase) == ch)
                hit = 1;
            p += 2;
        } else if (p + 2 < plen && pat[p + 1] == '-' && pat[p + 2] != ']') {
            unsigned char lo = fold((unsigned char)pat[p], nocase);
            unsigned char hi = fold((unsigned char)pat[p + 2], nocase);
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            if (ch >= lo && ch <= hi)
                hit = 1;
            p += 3;
        } else {
            if (fold((unsigned char)pat[p], nocase) == ch)
                hit = 1;
            p++;
        }
    }
    *next = p < plen ? p + 1 : plen;
    return neg ? !hit : hit;
}

int cfg_glob_match(const char *pat, size_t plen, const char *s, size_t slen, int nocase)
{
    size_t p = 0, i = 0;
    size_t star_p = 0, star_i = 0;
    int have_star = 0;

    while (i < slen) {
        if (p < plen) {
            char pc = pat[p];
            if (pc == '*') {
                while (p < plen && pat[p] == '*')
                    p++;
                if (p == plen)
                    return 1;
                have_star = 1;
                star_p = p;
                star_i = i;
                continue;
            }
            if (pc == '?') {
                p++;
                i++;
                continue;
            }
            if (pc == '[') {
                size_t next;
                if (class_match(pat, plen, p + 1, (unsigned char)s[i], nocase, &next)) {
                    p = next;
                    i++;
                    continue;
                }
            } else {
                size_t lit = p + 1;
                if (pc == '\\' && p + 1 < plen) {
                    pc = pat[p + 1];
                    lit = p + 2;
                }
                if (fold((unsigned char)pc, nocase) == fold((unsigned char)s[i], nocase)) {
                    p = lit;
                    i++;
                    continue;
                }
            }
        }
        if (!have_star)
            return 0;
        /* the last star takes one more byte; retry from just after it */
        p = star_p;
        i = ++star_i;
    }
    while (p < plen && pat[p] == '*')
        p++;
    return p == plen;
}

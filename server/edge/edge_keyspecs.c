/*
 * edge_keyspecs.c - COMMAND GETKEYSANDFLAGS: the keys of a command line and
 * the access flags of each, read from Redis 7.0's key specifications (the
 * `key_specs` element of the command's COMMAND INFO entry, edge_cmdinfo.c),
 * interpreted as Redis's getKeysUsingKeySpecs does:
 *   begin_search  index N: the spec's first key is argv[N];
 *                 keyword K startfrom S: after the first K found from S
 *                 (S < 0: searching backwards from argc + S); none found,
 *                 the spec names no key;
 *   find_keys     range lastkey L keystep T limit M: keys first, first + T ...
 *                 up to first + L (L >= 0) or argc + L (L < 0), cut to
 *                 1/M of the rest when M >= 2;
 *                 keynum idx I firstkey F keystep T: argv[first + I] keys,
 *                 starting at first + F.
 * The flags are the spec's (RO, RW, OW, RM; access, update, insert,
 * delete ...), one reply entry per key found, in spec order.
 */
#include "server/edge/edge_command.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/resp.h"
#include "server/edge/edge_cmdinfo.h"

/* The value of key `name` in map m, or NULL. */
static const struct resp_value *field(const struct resp_value *m, const char *name)
{
    if (m == NULL || m->type != RESP_MAP)
        return NULL;
    for (size_t i = 0; i + 1 < m->n; i += 2)
        if ((m->elems[i].type == RESP_BULK || m->elems[i].type == RESP_SIMPLE) &&
            m->elems[i].len == strlen(name) && memcmp(m->elems[i].str, name, m->elems[i].len) == 0)
            return &m->elems[i + 1];
    return NULL;
}

static long long num(const struct resp_value *m, const char *name, long long dflt)
{
    const struct resp_value *v = field(m, name);
    return v != NULL && v->type == RESP_INT ? (long long)v->integer : dflt;
}

static int is(const struct resp_value *v, const char *s)
{
    return v != NULL && (v->type == RESP_BULK || v->type == RESP_SIMPLE) && v->len == strlen(s) &&
           memcmp(v->str, s, v->len) == 0;
}

static int eqi(const struct resp_slice *a, const struct resp_value *b)
{
    return a->len == b->len && strncasecmp(a->p, b->str, a->len) == 0 &&
           memchr(a->p, '\0', a->len) == NULL;
}

/* The first and last key positions and the step of spec s over argv; 0,
 * 1 (it names no key here), or -1 (the arguments are not valid for it). */
static int span(const struct resp_value *s, int argc, const struct resp_slice *argv, int *first,
                int *last, int *step)
{
    const struct resp_value *bs = field(s, "begin_search"), *fk = field(s, "find_keys");
    const struct resp_value *bspec = field(bs, "spec"), *fspec = field(fk, "spec");
    if (is(field(bs, "type"), "index")) {
        *first = (int)num(bspec, "index", 0);
    } else if (is(field(bs, "type"), "keyword")) {
        const struct resp_value *kw = field(bspec, "keyword");
        long long from = num(bspec, "startfrom", 1);
        int found = -1;
        if (kw == NULL)
            return -1;
        for (long long i = from >= 0 ? from : argc + from; i > 0 && i < argc;
             i += from >= 0 ? 1 : -1)
            if (eqi(&argv[i], kw)) {
                found = (int)i;
                break;
            }
        if (found < 0)
            return 1;
        *first = found + 1;
    } else {
        return 1;
    }
    if (is(field(fk, "type"), "range")) {
        long long lk = num(fspec, "lastkey", 0), limit = num(fspec, "limit", 0);
        *step = (int)num(fspec, "keystep", 1);
        *last = lk >= 0 ? *first + (int)lk : argc + (int)lk;
        if (limit >= 2 && *last >= *first)
            *last = *first + (*last - *first) / (int)limit;
    } else if (is(field(fk, "type"), "keynum")) {
        long long idx = num(fspec, "keynumidx", 0), fkey = num(fspec, "firstkey", 1);
        *step = (int)num(fspec, "keystep", 1);
        if (*first + idx >= argc)
            return -1;
        char buf[24];
        const struct resp_slice *a = &argv[*first + idx];
        if (a->len == 0 || a->len >= sizeof(buf))
            return -1;
        memcpy(buf, a->p, a->len);
        buf[a->len] = '\0';
        char *e;
        long long n = strtoll(buf, &e, 10);
        if (*e != '\0' || n < 0 || n > argc)
            return -1;
        *first += (int)fkey;
        *last = *first + (int)(n - 1) * *step;
        if (n == 0)
            return 1;
    } else {
        return 1;
    }
    if (*step < 1 || *first < 1 || *last >= argc)
        return -1;
    return *last < *first ? 1 : 0;
}

static int word_is(const struct resp_slice *a, const char *w)
{
    return a->len == strlen(w) && strncasecmp(a->p, w, a->len) == 0;
}

/* A spec flagged variable_flags: the flags this command line gives its key
 * (Redis's setGetKeys, bitfieldGetKeys), space-separated; NULL: the spec's. */
static const char *variable(const struct cmd_def *d, const struct resp_value *flags, int argc,
                            const struct resp_slice *argv)
{
    int vary = 0;
    for (size_t f = 0; flags != NULL && f < flags->n; f++)
        vary |= is(&flags->elems[f], "variable_flags");
    if (!vary)
        return NULL;
    if (d->id == CMD_SET) {
        for (int i = 3; i < argc; i++)
            if (word_is(&argv[i], "get"))
                return "RW access update";
        return "OW update";
    }
    if (d->id == CMD_BITFIELD) {
        for (int i = 2; i < argc; i++)
            if (word_is(&argv[i], "set") || word_is(&argv[i], "incrby"))
                return "RW access update";
        return "RO access";
    }
    return NULL;
}

/* words as a set of simple strings. */
static void add_words(struct hkv_buf *b, int proto, const char *words)
{
    int n = 1;
    for (const char *p = words; *p; p++)
        n += *p == ' ';
    resp_add_set(b, proto, n);
    for (const char *p = words; *p;) {
        size_t len = strcspn(p, " ");
        buf_append(b, "+", 1);
        buf_append(b, p, len);
        buf_append(b, "\r\n", 2);
        p += len + (p[len] == ' ');
    }
}

/* The COMMAND INFO entry of argv (its subcommand's, for a container). */
static const struct resp_value *entry_of(const struct resp_value *top, int argc,
                                         const struct resp_slice *argv)
{
    const struct resp_value *subs = top->n >= 10 ? &top->elems[9] : NULL;
    if (argc < 2 || subs == NULL || subs->n == 0)
        return top;
    for (size_t i = 0; i < subs->n; i++) {
        const struct resp_value *e = &subs->elems[i];
        const char *bar = e->n >= 1 ? memchr(e->elems[0].str, '|', e->elems[0].len) : NULL;
        if (bar == NULL)
            continue;
        struct resp_value sub = {.type = RESP_BULK, .str = bar + 1,
                                 .len = e->elems[0].len - (size_t)(bar + 1 - e->elems[0].str)};
        if (eqi(&argv[1], &sub))
            return e;
    }
    return NULL;
}

int command_keys_and_flags(struct hkv_buf *out, int proto, const struct cmd_def *d, int argc,
                           const struct resp_slice *argv)
{
    const struct cmdinfo *ci = NULL;
    for (size_t i = 0; i < cmdinfo_count && ci == NULL; i++)
        if (strcmp(cmdinfo_table[i].name, d->name) == 0)
            ci = &cmdinfo_table[i];
    struct resp_value *top = NULL;
    size_t used;
    if (ci == NULL || resp_parse_reply(ci->info, ci->info_len, &used, &top) != HKV_OK)
        return -2; /* not one of Redis's commands: no key specs here */
    const struct resp_value *e = entry_of(top, argc, argv);
    const struct resp_value *specs = e != NULL && e->n >= 9 ? &e->elems[8] : NULL;
    int rc = specs == NULL || specs->n == 0 ? -2 : 0;
    struct hkv_buf body = HKV_BUF_INIT;
    int count = 0;
    for (size_t s = 0; rc == 0 && s < specs->n; s++) {
        int first = 0, last = 0, step = 1;
        int r = span(&specs->elems[s], argc, argv, &first, &last, &step);
        if (r < 0) {
            rc = -1;
            break;
        }
        const struct resp_value *flags = field(&specs->elems[s], "flags");
        const char *vary = variable(d, flags, argc, argv);
        for (int i = first; r == 0 && i <= last; i += step, count++) {
            resp_add_array(&body, 2);
            resp_add_bulk(&body, argv[i].p, argv[i].len);
            if (vary != NULL) {
                add_words(&body, proto, vary);
                continue;
            }
            resp_add_set(&body, proto, flags != NULL ? (int64_t)flags->n : 0);
            for (size_t f = 0; flags != NULL && f < flags->n; f++) {
                buf_append(&body, "+", 1); /* the flag's bytes point into the entry: no NUL */
                buf_append(&body, flags->elems[f].str, flags->elems[f].len);
                buf_append(&body, "\r\n", 2);
            }
        }
    }
    if (rc == 0 && count == 0)
        rc = -2;
    if (rc == 0) {
        resp_add_array(out, count);
        buf_append(out, buf_head(&body), buf_unread(&body));
    }
    buf_deinit(&body);
    resp_value_free(&top);
    return rc;
}

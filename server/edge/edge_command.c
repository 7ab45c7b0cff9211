/*
 * edge_command.c - COMMAND's entries (edge_command.h).
 */
#include "server/edge/edge_command.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/resp.h"
#include "server/edge/edge_cmdinfo.h"

static const struct cmdinfo *find(const char *name)
{
    size_t lo = 0, hi = cmdinfo_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(cmdinfo_table[mid].name, name);
        if (c == 0)
            return &cmdinfo_table[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The number after a type byte, up to CRLF; p is moved past the CRLF. */
static long long number(const char **p, const char *end)
{
    char *e;
    long long n = strtoll(*p + 1, &e, 10);
    const char *cr = memchr(*p, '\r', (size_t)(end - *p));
    *p = cr != NULL ? cr + 2 : end;
    (void)e;
    return n;
}

/* Copies one RESP3 value from *p as RESP2 (maps flattened, sets as arrays,
 * booleans as integers, null as a null bulk).  The generated entries hold
 * only these types. */
static void downgrade(const char **p, const char *end, struct hkv_buf *out)
{
    if (*p >= end)
        return;
    const char *start = *p;
    char t = **p;
    long long n;
    const char *cr;
    switch (t) {
    case '%':
        n = number(p, end);
        resp_add_array(out, 2 * n);
        for (long long i = 0; i < 2 * n; i++)
            downgrade(p, end, out);
        return;
    case '~':
    case '*':
        n = number(p, end);
        resp_add_array(out, n);
        for (long long i = 0; i < n; i++)
            downgrade(p, end, out);
        return;
    case '#':
        resp_add_int(out, (*p)[1] == 't');
        number(p, end);
        return;
    case '_':
        buf_append(out, "$-1\r\n", 5);
        *p += 3;
        return;
    case '$':
        n = number(p, end);
        if (n >= 0 && *p + n + 2 <= end)
            *p += n + 2;
        buf_append(out, start, (size_t)(*p - start));
        return;
    default: /* + - : */
        cr = memchr(*p, '\r', (size_t)(end - *p));
        *p = cr != NULL ? cr + 2 : end;
        buf_append(out, start, (size_t)(*p - start));
        return;
    }
}

static void put(struct hkv_buf *out, int proto, const char *p, size_t n)
{
    if (proto == 3) {
        buf_append(out, p, n);
        return;
    }
    const char *q = p;
    downgrade(&q, p + n, out);
}

/* ---- hotkvd's own commands -------------------------------------------------- */

static const char *own_cat(const struct cmd_def *d);

static void own_info(struct hkv_buf *out, int proto, const struct cmd_def *d)
{
    static const struct { uint32_t bit; const char *name; } flags[] = {
        {CMD_F_WRITE, "write"}, {CMD_F_READ, "readonly"}, {CMD_F_ADMIN, "admin"},
        {CMD_F_FAST, "fast"},   {CMD_F_NOAUTH, "no_auth"},
    };
    resp_add_array(out, 10);
    resp_add_bulk_str(out, d->name);
    resp_add_int(out, d->arity);
    int n = 0;
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        n += (d->flags & flags[i].bit) != 0;
    resp_add_set(out, proto, n);
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (d->flags & flags[i].bit)
            resp_add_simple(out, flags[i].name);
    resp_add_int(out, d->first_key);
    resp_add_int(out, d->last_key);
    resp_add_int(out, d->step);
    const char *cats[5];
    int nc = 0;
    if (d->flags & CMD_F_READ)
        cats[nc++] = "@read";
    if (d->flags & CMD_F_WRITE)
        cats[nc++] = "@write";
    if (d->flags & CMD_F_ADMIN)
        cats[nc++] = "@admin";
    if (own_cat(d) != NULL)
        cats[nc++] = own_cat(d);
    cats[nc++] = (d->flags & CMD_F_FAST) ? "@fast" : "@slow";
    resp_add_set(out, proto, nc);
    for (int i = 0; i < nc; i++)
        resp_add_simple(out, cats[i]);
    resp_add_set(out, proto, 0); /* tips */
    if (d->first_key <= 0) {
        resp_add_array(out, 0);
    } else { /* one key spec: from first_key, as far as last_key, every step */
        resp_add_array(out, 1);
        resp_add_map(out, proto, 3);
        resp_add_bulk_str(out, "flags");
        resp_add_set(out, proto, 2);
        resp_add_simple(out, (d->flags & CMD_F_WRITE) ? "RW" : "RO");
        resp_add_simple(out, (d->flags & CMD_F_WRITE) ? "update" : "access");
        resp_add_bulk_str(out, "begin_search");
        resp_add_map(out, proto, 2);
        resp_add_bulk_str(out, "type");
        resp_add_bulk_str(out, "index");
        resp_add_bulk_str(out, "spec");
        resp_add_map(out, proto, 1);
        resp_add_bulk_str(out, "index");
        resp_add_int(out, d->first_key);
        resp_add_bulk_str(out, "find_keys");
        resp_add_map(out, proto, 2);
        resp_add_bulk_str(out, "type");
        resp_add_bulk_str(out, "range");
        resp_add_bulk_str(out, "spec");
        resp_add_map(out, proto, 3);
        resp_add_bulk_str(out, "lastkey");
        resp_add_int(out, d->last_key < 0 ? d->last_key : d->last_key - d->first_key);
        resp_add_bulk_str(out, "keystep");
        resp_add_int(out, d->step);
        resp_add_bulk_str(out, "limit");
        resp_add_int(out, 0);
    }
    resp_add_array(out, 0); /* subcommands */
}

static const struct { const char *name, *summary, *complexity, *cat; } own_docs[] = {
    {"hotkeys", "The hottest keys of this colo with their measured reads per second; "
                "HOTKEYS REFUSED: the last hot key automatic moves refused to split, with the "
                "count of refusals (hotkvd)", "O(COUNT)", NULL},
    {"getmeta", "Get a key's value with its age in the colo cache, its stamp (the owner's "
                "version) and whether it was served stale or degraded (hotkvd)", "O(1)", NULL},
    {"getwithetag", "Get a key's value with its etag, the owner's version (Garnet's)", "O(1)",
     "@string"},
    {"getifnotmatch", "Get a key's value and etag unless its etag is the one given (Garnet's)",
     "O(1)", "@string"},
    {"setifmatch", "Set a key if its etag is the one given or it does not exist, answering "
                   "the new etag (Garnet's)", "O(1)", "@string"},
};

/* The category own_docs gives d beyond read/write/admin, or NULL. */
static const char *own_cat(const struct cmd_def *d)
{
    for (size_t i = 0; i < sizeof(own_docs) / sizeof(own_docs[0]); i++)
        if (strcmp(own_docs[i].name, d->name) == 0)
            return own_docs[i].cat;
    return NULL;
}

/* ---- the entries ---------------------------------------------------------------- */

void command_info_entry(struct hkv_buf *out, int proto, const struct cmd_def *d)
{
    const struct cmdinfo *ci = find(d->name);
    if (ci != NULL)
        put(out, proto, ci->info, ci->info_len);
    else
        own_info(out, proto, d);
}

void command_docs_entry(struct hkv_buf *out, int proto, const struct cmd_def *d)
{
    const struct cmdinfo *ci = find(d->name);
    if (ci != NULL) {
        put(out, proto, ci->docs, ci->docs_len);
        return;
    }
    const char *summary = "A hotkvd command", *complexity = "O(1)";
    for (size_t i = 0; i < sizeof(own_docs) / sizeof(own_docs[0]); i++)
        if (strcmp(own_docs[i].name, d->name) == 0) {
            summary = own_docs[i].summary;
            complexity = own_docs[i].complexity;
        }
    resp_add_map(out, proto, 4);
    resp_add_bulk_str(out, "summary");
    resp_add_bulk_str(out, summary);
    resp_add_bulk_str(out, "since");
    resp_add_bulk_str(out, "0.1.0");
    resp_add_bulk_str(out, "group");
    resp_add_bulk_str(out, "server");
    resp_add_bulk_str(out, "complexity");
    resp_add_bulk_str(out, complexity);
}

int command_in_category(const struct cmd_def *d, const char *cat, size_t len)
{
    char want[64];
    if (len + 4 >= sizeof(want))
        return 0;
    want[0] = '+';
    want[1] = '@';
    memcpy(want + 2, cat, len);
    memcpy(want + 2 + len, "\r\n", 3);
    const struct cmdinfo *ci = find(d->name);
    struct hkv_buf b = HKV_BUF_INIT;
    const char *p;
    size_t n;
    if (ci != NULL) {
        p = ci->info;
        n = ci->info_len;
    } else {
        own_info(&b, 3, d);
        p = buf_head(&b);
        n = buf_unread(&b);
    }
    /* the categories are the entry's 7th element; the first "+@" set is it */
    int found = 0;
    for (const char *q = p; q + len + 4 <= p + n && !found; q++)
        found = strncasecmp(q, want, len + 4) == 0;
    buf_deinit(&b);
    return found;
}

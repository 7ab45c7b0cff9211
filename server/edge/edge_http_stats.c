/*
 * edge_http_stats.c - GET /v1/stats: INFO all as one JSON object, for
 * programs (a status page polling every second, a script) that would
 * otherwise parse INFO's text.  Its names are INFO's, so the list cannot
 * drift from INFO and /metrics: {"server": {"redis_version": "7.0.15",
 * "uptime_in_seconds": 12, ...}, "clients": {...}, ...}, a section by its
 * INFO name in lower case, a field by its INFO name; a value that is a
 * plain decimal number (no leading zero) is a JSON number, anything else a
 * string (bytes that are not UTF-8, as a key's in Hotkeys may be:
 * {"base64": "..."}).  Rendered from what the edge knows now: the owners'
 * part is their last STATS answer (at most a second old, stats_age_ms in
 * "owners" says), so a poll never waits for an owner.  Access as /metrics
 * (http-metrics-allow).
 */
#include <string.h>

#include "server/edge/edge_http_int.h"
#include "server/edge/info.h"

/* 1 if p[0..n) is a JSON number as INFO writes one: -?digits[.digits],
 * no leading zero but "0" itself (00000000 stays a string). */
static int is_number(const char *p, size_t n)
{
    size_t i = n > 0 && p[0] == '-';
    size_t d0 = i;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++;
    if (i == d0 || (i - d0 > 1 && p[d0] == '0') || i - d0 > 18)
        return 0;
    if (i < n && p[i] == '.') {
        size_t f0 = ++i;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++;
        if (i == f0)
            return 0;
    }
    return i == n;
}

static void json_value(struct hkv_buf *out, const char *p, size_t n)
{
    if (is_number(p, n)) {
        buf_append(out, p, n);
        return;
    }
    size_t mark = out->len;
    if (!hr_json_str(out, p, n)) {
        out->len = mark;
        buf_append_str(out, "{\"base64\":");
        hr_json_b64(out, p, n);
        buf_append(out, "}", 1);
    }
}

/* INFO's text as JSON into out. */
static void to_json(const char *p, size_t n, struct hkv_buf *out)
{
    int in_section = 0, first_field = 1;
    buf_append(out, "{", 1);
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t end = nl != NULL ? (size_t)(nl - p) : n, len = end - i;
        if (len > 0 && p[i + len - 1] == '\r')
            len--;
        const char *line = p + i;
        i = nl != NULL ? end + 1 : n;
        if (len == 0)
            continue;
        if (len > 2 && line[0] == '#' && line[1] == ' ') {
            if (in_section)
                buf_append(out, "},", 2);
            buf_append(out, "\"", 1);
            for (size_t k = 2; k < len; k++) {
                char ch = line[k];
                ch = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch == ' ' ? '_' : ch;
                buf_append(out, &ch, 1);
            }
            buf_append(out, "\":{", 3);
            in_section = 1;
            first_field = 1;
            continue;
        }
        const char *colon = memchr(line, ':', len);
        if (colon == NULL || !in_section)
            continue;
        if (!first_field)
            buf_append(out, ",", 1);
        first_field = 0;
        size_t mark = out->len; /* a name is always a string */
        if (!hr_json_str(out, line, (size_t)(colon - line))) {
            out->len = mark;
            hr_json_b64(out, line, (size_t)(colon - line));
        }
        buf_append(out, ":", 1);
        json_value(out, colon + 1, len - (size_t)(colon - line) - 1);
    }
    if (in_section)
        buf_append(out, "}", 1);
    buf_append(out, "}\n", 2);
}

void edge_http_stats(struct conn *c, const struct http_run *x)
{
    const struct http_req *q = x->req;
    struct hkv_buf text = HKV_BUF_INIT, json = HKV_BUF_INIT;
    info_text_now(c->e, &text);
    to_json(buf_head(&text), buf_unread(&text), &json);
    hr_status(c, &c->out, 200, q->minor, x->keep_alive);
    buf_append_str(&c->out, "Cache-Control: no-store\r\n");
    hr_body(&c->out, "application/json", buf_head(&json), buf_unread(&json),
            q->method == HTTP_HEAD);
    buf_deinit(&text);
    buf_deinit(&json);
}

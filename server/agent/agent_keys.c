/*
 * agent_keys.c - the cluster's keys and values; see agent_keys.h.
 *
 * Numbers in keys are canonical decimal (no sign, no leading zero) and a
 * leaf's prefix exactly eight lower-case hex digits, so one leaf has one
 * key: a second spelling of the same leaf would be a second leaf, and the
 * map would overlap.  Values are tokenized whole (at most VAL_TOKENS
 * tokens: ours are flat objects) and every field is checked for type and
 * range; unknown fields are ignored, so a later version may add some.
 * Incarnations are u64 written as decimal strings and read without going
 * through int64 (a random u64 is above INT64_MAX half the time).
 */
#include "server/agent/agent_keys.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/json.h"
#include "server/core/topo.h"

#define VAL_TOKENS 64
#define VAL_LEN_MAX 8192

int agent_key(char *buf, size_t cap, const char *cluster, const char *fmt, ...)
{
    int n = snprintf(buf, cap, "/hotkvd/%s/", cluster);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)m >= cap - (size_t)n)
        return -1;
    return n + m;
}

/* ---- keys --------------------------------------------------------------------- */

/* Canonical decimal in s[0..n) into *out (<= max). */
static int dec(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

static int pool_of(const char *s, size_t n)
{
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        const char *name = topo_pool_name((enum cfg_pool)p);
        if (strlen(name) == n && memcmp(s, name, n) == 0)
            return p;
    }
    return -1;
}

/* s[0..n) starts with word; the rest in *rest, *rn. */
static int starts(const char *s, size_t n, const char *word, const char **rest, size_t *rn)
{
    size_t w = strlen(word);
    if (n < w || memcmp(s, word, w) != 0)
        return 0;
    *rest = s + w;
    *rn = n - w;
    return 1;
}

static int name_ok(const char *s, size_t n, int slash_ok)
{
    if (n == 0 || n >= CMAP_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || s[i] == 0x7f || (!slash_ok && s[i] == '/'))
            return 0;
    return 1;
}

int agent_owner_id_parse(const char *id, char *host, size_t cap, int *pool, int *k)
{
    const char *s2 = strrchr(id, '/');
    if (s2 == NULL || s2 == id)
        return HKV_EINVAL;
    const char *s1 = s2 - 1;
    while (s1 > id && *s1 != '/')
        s1--;
    if (*s1 != '/' || s1 == id)
        return HKV_EINVAL;
    uint64_t v;
    int p = pool_of(s1 + 1, (size_t)(s2 - s1 - 1));
    size_t hl = (size_t)(s1 - id);
    if (p < 0 || dec(s2 + 1, strlen(s2 + 1), 65535, &v) != 0 || !name_ok(id, hl, 0) || hl >= cap)
        return HKV_EINVAL;
    memcpy(host, id, hl);
    host[hl] = '\0';
    *pool = p;
    *k = (int)v;
    return HKV_OK;
}

enum agent_key_kind agent_key_parse(const char *key, size_t klen, const char *prefix,
                                    size_t plen, struct agent_key_info *o)
{
    memset(o, 0, sizeof(*o));
    const char *s;
    size_t n;
    uint64_t v;
    if (klen < plen || memcmp(key, prefix, plen) != 0)
        return AGENT_K_OTHER;
    s = key + plen;
    n = klen - plen;
    if (n == 7 && memcmp(s, "cluster", 7) == 0) {
        o->kind = AGENT_K_CLUSTER;
    } else if (starts(s, n, "pools/", &s, &n)) {
        if ((o->pool = pool_of(s, n)) >= 0)
            o->kind = AGENT_K_POOL;
    } else if (starts(s, n, "owners/", &s, &n)) {
        if (dec(s, n, CMAP_MAX_OWNERS, &v) == 0 && v >= 1) {
            o->number = (unsigned)v;
            o->kind = AGENT_K_OWNER;
        }
    } else if (starts(s, n, "hostnums/", &s, &n)) {
        if (dec(s, n, AGENT_HOSTNUM_MAX, &v) == 0 && v >= 1) {
            o->number = (unsigned)v;
            o->kind = AGENT_K_HOSTNUM;
        }
    } else if (starts(s, n, "hosts/", &s, &n)) {
        if (name_ok(s, n, 0)) {
            memcpy(o->name, s, n);
            o->kind = AGENT_K_HOST;
        }
    } else if (starts(s, n, "members/", &s, &n)) {
        char host[CMAP_NAME_MAX];
        int k;
        if (name_ok(s, n, 1)) {
            memcpy(o->name, s, n);
            if (agent_owner_id_parse(o->name, host, sizeof(host), &o->pool, &k) == HKV_OK)
                o->kind = AGENT_K_MEMBER;
        }
    } else if (starts(s, n, "writers/", &s, &n)) {
        if (dec(s, n, UINT32_MAX, &v) == 0) {
            o->number = (unsigned)v;
            o->kind = AGENT_K_WRITER;
        }
    } else if (starts(s, n, "map/", &s, &n)) {
        const char *slash = memchr(s, '/', n), *dash;
        if (slash == NULL || (o->pool = pool_of(s, (size_t)(slash - s))) < 0)
            return AGENT_K_OTHER;
        n -= (size_t)(slash + 1 - s);
        s = slash + 1;
        dash = memchr(s, '-', n);
        if (dash == NULL || dec(s, (size_t)(dash - s), CMAP_MAX_BITS, &v) != 0)
            return AGENT_K_OTHER;
        o->bits = (int)v;
        n -= (size_t)(dash + 1 - s);
        s = dash + 1;
        if (n != 8)
            return AGENT_K_OTHER;
        uint64_t p = 0;
        for (int i = 0; i < 8; i++) {
            int c = s[i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return AGENT_K_OTHER;
            p = p << 4 | (uint64_t)d;
        }
        if (p >> o->bits != 0)
            return AGENT_K_OTHER;
        o->prefix = (uint32_t)p;
        o->kind = AGENT_K_LEAF;
    }
    return o->kind;
}

/* ---- values written ----------------------------------------------------------- */

/* s as a JSON string (quotes included) at buf + *n. */
static void jstr(char *buf, size_t cap, size_t *n, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[6 * CMAP_NAME_MAX + 3];
    size_t t = 0;
    tmp[t++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && t < sizeof(tmp) - 8; p++) {
        if (*p == '"' || *p == '\\') {
            tmp[t++] = '\\';
            tmp[t++] = (char)*p;
        } else if (*p < 0x20) {
            memcpy(tmp + t, "\\u00", 4);
            tmp[t + 4] = hex[*p >> 4];
            tmp[t + 5] = hex[*p & 15];
            t += 6;
        } else {
            tmp[t++] = (char)*p;
        }
    }
    tmp[t++] = '"';
    if (*n < cap) {
        size_t room = cap - *n;
        memcpy(buf + *n, tmp, t < room ? t : room);
    }
    *n += t;
}

/* printf into buf + *n, counting what would not fit. */
static void app(char *buf, size_t cap, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void app(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(*n < cap ? buf + *n : NULL, *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    *n += m > 0 ? (size_t)m : 0;
}

static int done(char *buf, size_t cap, size_t n)
{
    if (n >= cap)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

int agent_val_cluster(char *buf, size_t cap, int64_t created_ms)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"format\":1,\"created\":\"%lld\"}", (long long)created_ms);
    return done(buf, cap, n);
}

int agent_val_pool(char *buf, size_t cap, int min_bits)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"min_bits\":%d,\"ready\":true}", min_bits);
    return done(buf, cap, n);
}

int agent_val_owner(char *buf, size_t cap, const char *id)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"id\":");
    jstr(buf, cap, &n, id);
    app(buf, cap, &n, "}");
    return done(buf, cap, n);
}

int agent_val_hostnum(char *buf, size_t cap, const char *host)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"host\":");
    jstr(buf, cap, &n, host);
    app(buf, cap, &n, "}");
    return done(buf, cap, n);
}

int agent_val_host(char *buf, size_t cap, const char *addr, unsigned number, const char *version,
                   const char *zone)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"addr\":");
    jstr(buf, cap, &n, addr);
    app(buf, cap, &n, ",\"number\":%u,\"version\":", number);
    jstr(buf, cap, &n, version);
    if (zone != NULL && zone[0] != '\0') {
        app(buf, cap, &n, ",\"zone\":");
        jstr(buf, cap, &n, zone);
    }
    app(buf, cap, &n, "}");
    return done(buf, cap, n);
}

int agent_val_member(char *buf, size_t cap, const struct agent_member *m)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"number\":%u,\"addr\":", m->number);
    jstr(buf, cap, &n, m->addr);
    app(buf, cap, &n, ",\"port\":%u,\"pool\":\"%s\",\"incarnation\":\"%llu\",\"host\":", m->port,
        topo_pool_name((enum cfg_pool)m->pool), (unsigned long long)m->incarnation);
    jstr(buf, cap, &n, m->host);
    app(buf, cap, &n, "}");
    return done(buf, cap, n);
}

int agent_val_writer(char *buf, size_t cap, const char *host, uint64_t incarnation)
{
    size_t n = 0;
    app(buf, cap, &n, "{\"host\":");
    jstr(buf, cap, &n, host);
    app(buf, cap, &n, ",\"incarnation\":\"%llu\"}", (unsigned long long)incarnation);
    return done(buf, cap, n);
}

int agent_val_leaf(char *buf, size_t cap, const struct agent_leaf_v *v)
{
    size_t n = 0;
    if (v->state == CMAP_MOVING)
        app(buf, cap, &n, "{\"owner\":%u,\"state\":\"moving\",\"to\":%u", v->owner, v->to);
    else
        app(buf, cap, &n, "{\"owner\":%u,\"state\":\"serving\"", v->owner);
    if (v->nisr > CMAP_MAX_ISR)
        return -1;
    if (v->nisr > 0) {
        app(buf, cap, &n, ",\"isr\":[");
        for (unsigned i = 0; i < v->nisr; i++)
            app(buf, cap, &n, "%s%u", i ? "," : "", v->isr[i]);
        app(buf, cap, &n, "]");
    }
    app(buf, cap, &n, "}");
    return done(buf, cap, n);
}

int agent_isr_has(const struct agent_leaf_v *v, unsigned n)
{
    for (unsigned i = 0; i < v->nisr && i < CMAP_MAX_ISR; i++)
        if (v->isr[i] == n)
            return 1;
    return 0;
}

void agent_isr_without(struct agent_leaf_v *v, unsigned n)
{
    unsigned k = 0;
    for (unsigned i = 0; i < v->nisr && i < CMAP_MAX_ISR; i++)
        if (v->isr[i] != n)
            v->isr[k++] = v->isr[i];
    v->nisr = k;
}

void agent_isr_with(struct agent_leaf_v *v, unsigned n)
{
    if (!agent_isr_has(v, n) && v->nisr < CMAP_MAX_ISR)
        v->isr[v->nisr++] = (uint16_t)n;
}

/* ---- values read -------------------------------------------------------------- */

struct val {
    const char *v;
    struct json_tok t[VAL_TOKENS];
};

static int val_open(struct val *x, const char *v, size_t n)
{
    x->v = v;
    if (n > VAL_LEN_MAX || json_parse(v, n, x->t, VAL_TOKENS) < 1 || x->t[0].type != JSON_OBJECT)
        return -1;
    return 0;
}

/* Member `name`: a string of 1..cap-1 bytes with no NUL, NUL-terminated. */
static int val_str(const struct val *x, const char *name, char *out, size_t cap)
{
    size_t n;
    int i = json_member(x->v, x->t, 0, name);
    if (i < 0 || json_string(x->v, x->t, i, out, cap - 1, &n) != HKV_OK || n == 0 ||
        memchr(out, '\0', n) != NULL)
        return -1;
    out[n] = '\0';
    return 0;
}

static int val_int(const struct val *x, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    int i = json_member(x->v, x->t, 0, name);
    if (i < 0 || json_int64(x->v, x->t, i, out) != HKV_OK || *out < lo || *out > hi)
        return -1;
    return 0;
}

static int val_u64(const struct val *x, const char *name, uint64_t *out)
{
    char s[24];
    if (val_str(x, name, s, sizeof(s)) != 0 || dec(s, strlen(s), UINT64_MAX, out) != 0)
        return -1;
    return 0;
}

int agent_parse_owner(const char *v, size_t n, char *id, size_t cap)
{
    struct val x;
    char host[CMAP_NAME_MAX];
    int pool, k;
    if (val_open(&x, v, n) != 0 || val_str(&x, "id", id, cap) != 0 ||
        agent_owner_id_parse(id, host, sizeof(host), &pool, &k) != HKV_OK)
        return HKV_EINVAL;
    return HKV_OK;
}

int agent_parse_hostnum(const char *v, size_t n, char *host, size_t cap)
{
    struct val x;
    if (val_open(&x, v, n) != 0 || val_str(&x, "host", host, cap) != 0 ||
        !name_ok(host, strlen(host), 0))
        return HKV_EINVAL;
    return HKV_OK;
}

int agent_parse_host(const char *v, size_t n, char *addr, size_t cap, unsigned *number,
                     char *zone, size_t zcap)
{
    struct val x;
    int64_t num;
    if (val_open(&x, v, n) != 0 || val_int(&x, "number", 1, AGENT_HOSTNUM_MAX, &num) != 0)
        return HKV_EINVAL;
    if (val_str(&x, "addr", addr, cap) != 0)
        addr[0] = '\0';
    if (zone != NULL && zcap > 0 && val_str(&x, "zone", zone, zcap) != 0)
        zone[0] = '\0'; /* none, or not one we can use */
    *number = (unsigned)num;
    return HKV_OK;
}

int agent_parse_member(const char *v, size_t n, struct agent_member *m)
{
    struct val x;
    int64_t num, port;
    char pool[16];
    memset(m, 0, sizeof(*m));
    if (val_open(&x, v, n) != 0 || val_int(&x, "number", 1, CMAP_MAX_OWNERS, &num) != 0 ||
        val_int(&x, "port", 0, 65535, &port) != 0 || val_str(&x, "pool", pool, sizeof(pool)) != 0 ||
        (m->pool = pool_of(pool, strlen(pool))) < 0 || val_u64(&x, "incarnation", &m->incarnation) != 0 ||
        val_str(&x, "host", m->host, sizeof(m->host)) != 0)
        return HKV_EINVAL;
    if (val_str(&x, "addr", m->addr, sizeof(m->addr)) != 0)
        m->addr[0] = '\0'; /* not reachable by TCP */
    m->number = (unsigned)num;
    m->port = (unsigned)port;
    return HKV_OK;
}

int agent_parse_pool(const char *v, size_t n, int *min_bits, int *ready)
{
    struct val x;
    int64_t b;
    if (val_open(&x, v, n) != 0 || val_int(&x, "min_bits", 0, CMAP_MAX_BITS, &b) != 0)
        return HKV_EINVAL;
    int i = json_member(x.v, x.t, 0, "ready");
    *ready = 0;
    if (i >= 0 && json_bool(x.t, i, ready) != HKV_OK)
        return HKV_EINVAL;
    *min_bits = (int)b;
    return HKV_OK;
}

/* "isr": absent, or an array of at most CMAP_MAX_ISR distinct owner
 * numbers, none of them the owner. */
static int parse_isr(const struct val *x, struct agent_leaf_v *out)
{
    int a = json_member(x->v, x->t, 0, "isr");
    out->nisr = 0;
    if (a < 0)
        return 0;
    if (x->t[a].type != JSON_ARRAY || x->t[a].size > CMAP_MAX_ISR)
        return -1;
    for (uint32_t k = 0; k < x->t[a].size; k++) {
        int64_t m;
        int e = json_elem(x->t, a, k);
        if (e < 0 || x->t[e].type != JSON_NUMBER || json_int64(x->v, x->t, e, &m) != HKV_OK ||
            m < 1 || m > CMAP_MAX_OWNERS || (unsigned)m == out->owner ||
            agent_isr_has(out, (unsigned)m))
            return -1;
        out->isr[out->nisr++] = (uint16_t)m;
    }
    return 0;
}

int agent_parse_leaf(const char *v, size_t n, struct agent_leaf_v *out)
{
    struct val x;
    int64_t o, t = 0;
    memset(out, 0, sizeof(*out));
    if (val_open(&x, v, n) != 0 || val_int(&x, "owner", 1, CMAP_MAX_OWNERS, &o) != 0)
        return HKV_EINVAL;
    int i = json_member(x.v, x.t, 0, "state");
    if (i < 0 || json_streq(x.v, x.t, i, "serving")) {
        out->state = CMAP_SERVING;
    } else if (json_streq(x.v, x.t, i, "moving")) {
        if (val_int(&x, "to", 1, CMAP_MAX_OWNERS, &t) != 0)
            return HKV_EINVAL;
        out->state = CMAP_MOVING;
    } else {
        return HKV_EINVAL;
    }
    out->owner = (unsigned)o;
    out->to = (unsigned)t;
    if (parse_isr(&x, out) != 0) {
        memset(out, 0, sizeof(*out));
        return HKV_EINVAL;
    }
    return HKV_OK;
}

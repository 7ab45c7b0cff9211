/*
 * edge_pubsub.c - pub/sub's tables and commands (edge_pubsub.h): who on
 * this edge is subscribed to what, SUBSCRIBE and friends with Redis 7.0's
 * confirmations, PUBLISH, PUBSUB, and RESP2's subscribed-mode gate.  The
 * messages themselves (the bus, the framing) are edge_pubsub_deliver.c's.
 */
#include "server/edge/edge_pubsub.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/colo/bus.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_pubsub_int.h"
#include "server/edge/edge_sess.h"

static struct edge_pubsub *ps_of(struct edge *e)
{
    if (e->pubsub == NULL)
        e->pubsub = calloc(1, sizeof(*e->pubsub));
    return e->pubsub;
}

static struct ps_entry *pattern_entry(struct edge_pubsub *ps, const char *p, size_t n)
{
    for (struct ps_entry *x = ps->pats; x != NULL; x = x->next)
        if (x->len == n && memcmp(x->name, p, n) == 0)
            return x;
    return NULL;
}

/* The entry's list of connections gets c (pattern: the pattern list). */
static int entry_add(struct edge_pubsub *ps, int pattern, const char *p, size_t n,
                     struct conn *c, struct ps_entry **out)
{
    struct ps_entry *x = pattern ? pattern_entry(ps, p, n) : ps_channel(ps, p, n);
    if (x == NULL) {
        x = calloc(1, sizeof(*x) + n + 1);
        if (x == NULL)
            return HKV_ENOMEM;
        x->hash = ps_hash(p, n);
        x->len = n;
        memcpy(x->name, p, n);
        struct ps_entry **head = pattern ? &ps->pats : &ps->chans[x->hash % PS_BUCKETS];
        x->next = *head;
        *head = x;
        if (pattern)
            ps->npats++;
        else
            ps->nchans++;
    }
    if (x->nsubs == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4;
        struct conn **v = realloc(x->subs, cap * sizeof(*v));
        if (v == NULL)
            return HKV_ENOMEM;
        x->subs = v;
        x->cap = cap;
    }
    x->subs[x->nsubs++] = c;
    *out = x;
    return HKV_OK;
}

static void entry_remove(struct edge_pubsub *ps, int pattern, const char *p, size_t n,
                         struct conn *c, struct bus *bus)
{
    struct ps_entry **pp = pattern ? &ps->pats : &ps->chans[ps_hash(p, n) % PS_BUCKETS];
    for (; *pp != NULL; pp = &(*pp)->next) {
        struct ps_entry *x = *pp;
        if (x->len != n || memcmp(x->name, p, n) != 0)
            continue;
        for (size_t i = 0; i < x->nsubs; i++)
            if (x->subs[i] == c) {
                memmove(&x->subs[i], &x->subs[i + 1], (x->nsubs - i - 1) * sizeof(*x->subs));
                x->nsubs--;
                break;
            }
        bus_count_set(bus, pattern, p, n, (uint32_t)x->nsubs);
        if (x->nsubs == 0) {
            *pp = x->next;
            free(x->subs);
            free(x);
            if (pattern)
                ps->npats--;
            else
                ps->nchans--;
        }
        return;
    }
}

/* ---- a connection's lists ------------------------------------------------------------ */

static struct pubsub_sess *sess_ps(struct conn *c, int make)
{
    struct sess *s = sess_of(c);
    if (s->pubsub == NULL && make)
        s->pubsub = calloc(1, sizeof(*s->pubsub));
    return s->pubsub;
}

static size_t nsubs_of(const struct conn *c)
{
    const struct pubsub_sess *p = sess_of(c)->pubsub;
    return p == NULL ? 0 : p->nch + p->npat;
}

static long find_name(const struct ps_name *v, size_t nv, const char *p, size_t n)
{
    for (size_t i = 0; i < nv; i++)
        if (v[i].n == n && memcmp(v[i].p, p, n) == 0)
            return (long)i;
    return -1;
}

int pubsub_conn_subscribed(const struct conn *c, const char *channel, size_t clen)
{
    const struct pubsub_sess *p = sess_of(c)->pubsub;
    return p != NULL && find_name(p->ch, p->nch, channel, clen) >= 0;
}

/* A confirmation: [kind, name or null, count], a push under RESP3. */
static void confirm(struct conn *c, const char *kind, const char *p, size_t n, int null)
{
    int proto = sess_of(c)->proto;
    buf_printf(&c->out, "%c3\r\n", proto == 3 ? '>' : '*');
    resp_add_bulk_str(&c->out, kind);
    if (null)
        resp_add_null(&c->out, proto);
    else
        resp_add_bulk(&c->out, p, n);
    resp_add_int(&c->out, (int64_t)nsubs_of(c));
}

/* The edge's count of connections in subscribed mode moved by d (0 -> 1
 * arms the bus, 1 -> 0 disarms it); c's output class follows. */
static void mode_changed(struct conn *c, int was)
{
    int now = pubsub_active(c);
    clients_publish(c); /* sub= psub= flags=P, for every edge's CLIENT LIST */
    if (was == now)
        return;
    struct edge_pubsub *ps = c->e->pubsub;
    c->pubsub_limits = (uint8_t)now;
    if (now && ps->nsubscribed++ == 0)
        ps_arm(c->e, 1);
    else if (!now && --ps->nsubscribed == 0)
        ps_arm(c->e, 0);
}

static void subscribe(struct conn *c, int argc, const struct resp_slice *argv, int pattern)
{
    struct edge_pubsub *ps = ps_of(c->e);
    struct pubsub_sess *p = sess_ps(c, 1);
    if (ps == NULL || p == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    int was = pubsub_active(c);
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i].p;
        size_t n = argv[i].len;
        struct ps_name **v = pattern ? &p->pat : &p->ch;
        size_t *nv = pattern ? &p->npat : &p->nch, *cap = pattern ? &p->cappat : &p->capch;
        if (find_name(*v, *nv, name, n) < 0) {
            struct ps_entry *x = NULL;
            char *copy = malloc(n + 1);
            if (*nv == *cap) {
                size_t nc = *cap ? *cap * 2 : 4;
                struct ps_name *nvv = realloc(*v, nc * sizeof(**v));
                if (nvv != NULL) {
                    *v = nvv;
                    *cap = nc;
                }
            }
            if (copy == NULL || *nv == *cap ||
                entry_add(ps, pattern, name, n, c, &x) != HKV_OK) {
                free(copy);
                resp_add_error(&c->out, "ERR out of memory");
                break;
            }
            memcpy(copy, name, n);
            (*v)[(*nv)++] = (struct ps_name){copy, n};
            bus_count_set(c->e->pubsub->bus, pattern, name, n, (uint32_t)x->nsubs);
        }
        confirm(c, pattern ? "psubscribe" : "subscribe", name, n, 0);
    }
    mode_changed(c, was);
}

/* c leaves name (which it holds at index i of its list). */
static void leave(struct conn *c, int pattern, size_t i)
{
    struct pubsub_sess *p = sess_of(c)->pubsub;
    struct ps_name *v = pattern ? p->pat : p->ch;
    size_t *nv = pattern ? &p->npat : &p->nch;
    struct ps_name nm = v[i];
    memmove(&v[i], &v[i + 1], (*nv - i - 1) * sizeof(*v));
    (*nv)--;
    entry_remove(c->e->pubsub, pattern, nm.p, nm.n, c, c->e->pubsub->bus);
    free(nm.p);
}

static void unsubscribe(struct conn *c, int argc, const struct resp_slice *argv, int pattern)
{
    const char *kind = pattern ? "punsubscribe" : "unsubscribe";
    struct pubsub_sess *p = sess_of(c)->pubsub;
    int was = pubsub_active(c);
    if (argc == 1) {
        size_t n = p == NULL ? 0 : pattern ? p->npat : p->nch;
        if (n == 0) {
            confirm(c, kind, NULL, 0, 1);
            return;
        }
        while (pattern ? p->npat > 0 : p->nch > 0) {
            struct ps_name *v = pattern ? p->pat : p->ch;
            size_t last = (pattern ? p->npat : p->nch) - 1;
            /* copied: leave frees it, the confirmation names it */
            char buf[256];
            size_t len = v[last].n;
            char *name = len <= sizeof(buf) ? buf : malloc(len);
            if (name == NULL) {
                resp_add_error(&c->out, "ERR out of memory");
                break;
            }
            memcpy(name, v[last].p, len);
            leave(c, pattern, last);
            confirm(c, kind, name, len, 0);
            if (name != buf)
                free(name);
        }
    } else {
        for (int i = 1; i < argc; i++) {
            long at = p == NULL ? -1 : pattern ? find_name(p->pat, p->npat, argv[i].p, argv[i].len)
                                            : find_name(p->ch, p->nch, argv[i].p, argv[i].len);
            if (at >= 0)
                leave(c, pattern, (size_t)at);
            confirm(c, kind, argv[i].p, argv[i].len, 0);
        }
    }
    mode_changed(c, was);
}

void edge_cmd_subscribe(struct conn *c, int argc, const struct resp_slice *argv)
{
    subscribe(c, argc, argv, 0);
}

void edge_cmd_psubscribe(struct conn *c, int argc, const struct resp_slice *argv)
{
    subscribe(c, argc, argv, 1);
}

void edge_cmd_unsubscribe(struct conn *c, int argc, const struct resp_slice *argv)
{
    unsubscribe(c, argc, argv, 0);
}

void edge_cmd_punsubscribe(struct conn *c, int argc, const struct resp_slice *argv)
{
    unsubscribe(c, argc, argv, 1);
}

void pubsub_conn_gone(struct conn *c)
{
    struct pubsub_sess *p = sess_of(c)->pubsub;
    if (p == NULL)
        return;
    int was = pubsub_active(c);
    while (p->nch > 0)
        leave(c, 0, p->nch - 1);
    while (p->npat > 0)
        leave(c, 1, p->npat - 1);
    mode_changed(c, was);
    free(p->ch);
    free(p->pat);
    free(p);
    sess_of(c)->pubsub = NULL;
    c->pubsub_limits = 0;
}

size_t pubsub_conn_counts(const struct conn *c, size_t *npat)
{
    const struct pubsub_sess *p = sess_of(c)->pubsub;
    *npat = p == NULL ? 0 : p->npat;
    return p == NULL ? 0 : p->nch;
}

/* ---- PUBLISH and PUBSUB ------------------------------------------------------------------ */

static void on_ack(void *arg, int status, const struct wire_msg *m)
{
    /* the owner has put it on every colo's push link (or the link failed:
     * the client was answered already, as for a message sent while the
     * owner restarts) */
}

/* PUBLISH routed like a key: its channel's owner fans the message out over
 * its push links to every colo (owner_pushq.c), whose push edges append it
 * to their buses.  -1 when that route is not there now (owner-push off,
 * the owner's push link to this colo or its write link down): the caller
 * then publishes to this host's colos itself. */
static int publish_via_owner(struct edge *e, const struct resp_slice *ch,
                             const struct resp_slice *msg)
{
    int64_t now = clock_mono_ms();
    if (edge_cache_unpushed(e, ch->p, ch->len, now))
        return -1;
    struct route rt;
    struct owner_ref *o = edge_owner_of(e, ch->p, ch->len, &rt);
    struct elink *l = o != NULL ? edge_owner_link(o, WIRE_ROLE_WRITE) : NULL;
    if (l == NULL || !elink_is_up(l))
        return -1;
    uint64_t id;
    struct hkv_buf *out = elink_out(l, &id);
    if (out == NULL ||
        wire_put_publish(out, id, wire_slice(ch->p, ch->len), wire_slice(msg->p, msg->len)) !=
            HKV_OK)
        return -1;
    int rc = elink_commit_at(l, id, on_ack, NULL, now);
    return rc == HKV_ETOOBIG ? -1 : 0;
}

void pubsub_pushed(struct edge *e, const char *ch, size_t clen, const char *msg, size_t mlen)
{
    struct edge_pubsub *ps = e->pubsub;
    if (ps == NULL)
        return;
    if (ps->bus == NULL) {
        ps_deliver(e, ch, clen, msg, mlen);
        return;
    }
    if (bus_publish(ps->bus, 0, 0, ch, clen, msg, mlen) != HKV_OK)
        log_verbose("pub/sub: a pushed message of %zu bytes does not fit this colo's bus",
                    clen + mlen);
}

void edge_cmd_publish(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    struct bus *bus = e->pubsub->bus;
    const struct resp_slice *ch = &argv[1], *msg = &argv[2];
    if (bus == NULL) {
        /* no bus (a segment that failed its check): this edge's own subscribers */
        if (e->pubsub != NULL)
            ps_deliver(e, ch->p, ch->len, msg->p, msg->len);
        struct ps_entry *x = e->pubsub != NULL ? ps_channel(e->pubsub, ch->p, ch->len) : NULL;
        size_t n = x != NULL ? x->nsubs : 0;
        for (struct ps_entry *p = e->pubsub != NULL ? e->pubsub->pats : NULL; p; p = p->next)
            if (bus_glob_match(p->name, p->len, ch->p, ch->len))
                n += p->nsubs;
        resp_add_int(&c->out, (int64_t)n);
        return;
    }
    if (ch->len + msg->len > bus_max_record(bus)) {
        resp_add_errorf(&c->out, "ERR message too big for the pub/sub bus (channel + message "
                        "%zu bytes, at most %zu: a quarter of pubsub-bus-size)",
                        ch->len + msg->len, bus_max_record(bus));
        return;
    }
    if (publish_via_owner(e, ch, msg) != 0) {
        /* No owner route now: this host's colos, each through its bus (all
         * are mapped in every process of the host, made before fork);
         * other hosts are not reached. */
        bus_publish(bus, 0, 0, ch->p, ch->len, msg->p, msg->len);
        board_add(&e->stats->pubsub_published_local, 1);
        for (int k = 0; e->ectx->colo_buses != NULL && k < e->ectx->ncolos; k++)
            if (k != e->ectx->colo_index && e->ectx->colo_buses[k] != NULL)
                bus_publish(e->ectx->colo_buses[k], 0, 0, ch->p, ch->len, msg->p, msg->len);
    }
    resp_add_int(&c->out, (int64_t)bus_receivers(bus, ch->p, ch->len));
}

static const char *const pubsub_help[] = {
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "HELP",
    "    Prints this help.",
};

struct chan_list {
    const struct resp_slice *pat;
    struct hkv_buf body;
    int64_t n;
};

static void add_channel(void *arg, const char *name, size_t n)
{
    struct chan_list *l = arg;
    if (l->pat != NULL && !bus_glob_match(l->pat->p, l->pat->len, name, n))
        return;
    resp_add_bulk(&l->body, name, n);
    l->n++;
}

void edge_cmd_pubsub(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct bus *bus = c->e->pubsub->bus;
    const struct resp_slice *sub = &argv[1];
    if (sub->len == 4 && strncasecmp(sub->p, "help", 4) == 0) {
        size_t n = sizeof(pubsub_help) / sizeof(pubsub_help[0]);
        resp_add_array(&c->out, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            resp_add_simple(&c->out, pubsub_help[i]);
    } else if (sub->len == 6 && strncasecmp(sub->p, "numpat", 6) == 0) {
        resp_add_int(&c->out, (int64_t)bus_numpat(bus));
    } else if (sub->len == 6 && strncasecmp(sub->p, "numsub", 6) == 0) {
        resp_add_array(&c->out, (int64_t)(argc - 2) * 2); /* an array in RESP3 too, as 7.0 */
        for (int i = 2; i < argc; i++) {
            resp_add_bulk(&c->out, argv[i].p, argv[i].len);
            resp_add_int(&c->out, (int64_t)bus_numsub(bus, argv[i].p, argv[i].len));
        }
    } else if (argc <= 3) { /* channels (the registry checked the name and arity) */
        struct chan_list l = {argc == 3 ? &argv[2] : NULL, {0}, 0};
        bus_channels(bus, add_channel, &l);
        resp_add_array(&c->out, l.n);
        buf_append(&c->out, buf_head(&l.body), buf_unread(&l.body));
        buf_deinit(&l.body);
    } else {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                        "'%.*s'. Try PUBSUB HELP.", (int)sub->len, sub->p);
    }
}

static void count_name(void *arg, const char *name, size_t n)
{
    (*(uint64_t *)arg)++;
}

void pubsub_info_counts(struct edge *e, uint64_t *channels, uint64_t *patterns)
{
    struct edge_pubsub *ps = e->pubsub;
    *channels = *patterns = 0;
    if (ps == NULL)
        return;
    if (ps->bus == NULL) {
        *channels = ps->nchans;
        *patterns = ps->npats;
        return;
    }
    bus_channels(ps->bus, count_name, channels);
    *patterns = bus_numpat(ps->bus);
}

/* ---- the gate and the module's life ------------------------------------------------------ */

int pubsub_gate(struct conn *c, const char *name, size_t len)
{
    static const char *const allowed[] = {"ping", "subscribe", "unsubscribe", "psubscribe",
                                          "punsubscribe", "quit", "reset"};
    if (sess_of(c)->proto != 2 || !pubsub_active(c))
        return 0;
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if (strlen(allowed[i]) == len && memcmp(allowed[i], name, len) == 0)
            return 0;
    resp_add_errorf(&c->out, "ERR Can't execute '%.*s': only (P|S)SUBSCRIBE / "
                    "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    (int)len, name);
    return 1;
}

int pubsub_setup(struct edge *e)
{
    if (ps_of(e) == NULL)
        return -1;
    e->pubsub->bus = e->ectx->bus;
    if (e->pubsub->bus != NULL && bus_attach(e->pubsub->bus, (uint32_t)e->ctx->index) != HKV_OK)
        e->pubsub->bus = NULL; /* served without: PUBLISH reaches this edge's subscribers */
    return ps_bus_setup(e);
}

void pubsub_teardown(struct edge *e)
{
    struct edge_pubsub *ps = e->pubsub;
    if (ps == NULL)
        return;
    ps_bus_teardown(e);
    for (size_t b = 0; b < PS_BUCKETS; b++)
        while (ps->chans[b] != NULL) {
            struct ps_entry *x = ps->chans[b];
            ps->chans[b] = x->next;
            free(x->subs);
            free(x);
        }
    while (ps->pats != NULL) {
        struct ps_entry *x = ps->pats;
        ps->pats = x->next;
        free(x->subs);
        free(x);
    }
    free(ps);
    e->pubsub = NULL;
}

/*
 * edge_track_cmd.c - CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO,
 * with Redis 7.0's rules and error texts (edge_track.h), and a tracking
 * client's life: on, off, RESET, close.
 */
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_track.h"
#include "server/edge/edge_track_int.h"

static void prefixes_drop(struct edge_track *t, struct track_sess *s)
{
    for (uint32_t i = 0; i < s->nprefix; i++)
        free(s->prefix[i].p);
    t->nprefixes -= s->nprefix;
    free(s->prefix);
    s->prefix = NULL;
    s->nprefix = 0;
    if (s->bprev != NULL) {
        *s->bprev = s->bnext;
        if (s->bnext != NULL)
            s->bnext->bprev = s->bprev;
        s->bnext = NULL;
        s->bprev = NULL;
        t->nbcast--;
    }
}

static void redirect_drop(struct track_sess *s)
{
    if (s->redir != NULL && sess_of(s->redir)->track_target > 0)
        sess_of(s->redir)->track_target--;
    s->redir = NULL;
    s->redirect = 0;
    s->remote = 0;
}

/* Tracking off for c: its keys, prefixes and redirect go. */
static void track_off(struct conn *c)
{
    struct track_sess *s = sess_of(c)->track;
    struct edge_track *t = c->e->track;
    if (s == NULL)
        return;
    track_sess_del(t, s);
    if (s->remembered)
        track_sweep_start(t); /* its ids stay in the table until swept */
    prefixes_drop(t, s);
    track_defer_drop(t, s);
    redirect_drop(s);
    *s->prev = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    if (--t->nsessions == 0)
        edge_feed_want(c->e, FEED_TRACK, 0);
    free(s);
    sess_of(c)->track = NULL;
}

static struct track_sess *track_on(struct conn *c)
{
    struct edge_track *t = c->e->track;
    struct track_sess *s = sess_of(c)->track;
    if (s != NULL)
        return s;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return NULL;
    if (track_sess_add(t, s) != 0) {
        free(s);
        return NULL;
    }
    s->c = c;
    s->next = t->sessions;
    if (t->sessions != NULL)
        t->sessions->prev = &s->next;
    t->sessions = s;
    s->prev = &t->sessions;
    sess_of(c)->track = s;
    if (t->nsessions++ == 0)
        edge_feed_want(c->e, FEED_TRACK, 1);
    return s;
}

static struct conn *local_conn(struct edge *e, uint64_t id)
{
    for (struct conn *x = e->conns->list; x != NULL; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

static int overlap(const char *a, size_t an, const char *b, size_t bn)
{
    return memcmp(a, b, an < bn ? an : bn) == 0;
}

/* Redis's checkPrefixCollisionsOrReply: 1 when the new prefixes overlap no
 * existing one and not each other, else 0 with the error written. */
static int prefixes_ok(struct conn *c, const struct track_sess *s, const struct resp_slice *px,
                       int n)
{
    for (int i = 0; i < n; i++) {
        for (uint32_t j = 0; s != NULL && j < s->nprefix; j++)
            if (overlap(s->prefix[j].p, s->prefix[j].len, px[i].p, px[i].len)) {
                resp_add_errorf(&c->out, "ERR Prefix '%.*s' overlaps with an existing prefix "
                                "'%.*s'. Prefixes for a single client must not overlap.",
                                (int)px[i].len, px[i].p, (int)s->prefix[j].len, s->prefix[j].p);
                return 0;
            }
        for (int j = i + 1; j < n; j++)
            if (overlap(px[i].p, px[i].len, px[j].p, px[j].len)) {
                resp_add_errorf(&c->out, "ERR Prefix '%.*s' overlaps with another provided "
                                "prefix '%.*s'. Prefixes for a single client must not overlap.",
                                (int)px[i].len, px[i].p, (int)px[j].len, px[j].p);
                return 0;
            }
    }
    return 1;
}

static int prefix_add(struct edge_track *t, struct track_sess *s, const struct resp_slice *p)
{
    for (uint32_t j = 0; j < s->nprefix; j++)
        if (s->prefix[j].len == p->len && memcmp(s->prefix[j].p, p->p, p->len) == 0)
            return 0;
    struct tprefix *np = realloc(s->prefix, (s->nprefix + 1) * sizeof(*np));
    if (np == NULL)
        return -1;
    s->prefix = np;
    char *b = malloc(p->len + 1);
    if (b == NULL)
        return -1;
    memcpy(b, p->p, p->len);
    s->prefix[s->nprefix++] = (struct tprefix){b, (uint32_t)p->len};
    t->nprefixes++;
    return 0;
}

struct tracking_args {
    int bcast, optin, optout, noloop, nprefix;
    uint64_t redirect;
    struct conn *redir;
    int remote;                   /* the target is a client of another edge of the host */
    uint32_t rslot, ridx;         /* ... its row in the clients board */
    const struct resp_slice *prefix[64];
    struct resp_slice px[64];
};

struct find_other {
    uint64_t id;
    int found;
    uint32_t slot, idx;
};

static void find_other_row(const struct board_client *row, uint32_t slot, uint32_t idx,
                           void *arg)
{
    struct find_other *f = arg;
    if (!f->found && row->id == f->id) {
        f->found = 1;
        f->slot = slot;
        f->idx = idx;
    }
}

/* 1 if client id is one of another edge of this colo (the clients board),
 * its row noted in a: its invalidations go through the colo's bus, which
 * reaches no other colo (a client there is refused as unknown). */
static int other_edge(struct edge *e, uint64_t id, struct tracking_args *a)
{
    struct find_other f = {.id = id};
    clients_each_other(e, find_other_row, &f);
    if (f.found && atomic_load_explicit(&e->ctx->board->slots[f.slot].colo,
                                        memory_order_relaxed) != (uint32_t)e->ectx->colo_index + 1)
        f.found = 0;
    if (f.found) {
        a->remote = 1;
        a->rslot = f.slot;
        a->ridx = f.idx;
    }
    return f.found;
}

/* The options after ON|OFF, checked as Redis checks them while parsing.
 * 0, or -1 with the error written. */
static int parse(struct conn *c, int argc, const struct resp_slice *argv,
                 struct tracking_args *a, uint32_t max_prefixes)
{
    for (int i = 3; i < argc; i++) {
        int more = i + 1 < argc;
        if (edge_arg_is(&argv[i], "redirect") && more) {
            if (a->redirect != 0) {
                resp_add_error(&c->out, "ERR A client can only redirect to a single other client");
                return -1;
            }
            long long id;
            if (edge_arg_ll(&argv[++i], &id) != 0) {
                resp_add_error(&c->out, "ERR value is not an integer or out of range");
                return -1;
            }
            a->redir = id > 0 ? local_conn(c->e, (uint64_t)id) : NULL;
            if (a->redir == NULL && (id <= 0 || !other_edge(c->e, (uint64_t)id, a))) {
                resp_add_error(&c->out, "ERR The client ID you want redirect to does not exist");
                return -1;
            }
            a->redirect = (uint64_t)id;
        } else if (edge_arg_is(&argv[i], "bcast")) {
            a->bcast = 1;
        } else if (edge_arg_is(&argv[i], "optin")) {
            a->optin = 1;
        } else if (edge_arg_is(&argv[i], "optout")) {
            a->optout = 1;
        } else if (edge_arg_is(&argv[i], "noloop")) {
            a->noloop = 1;
        } else if (edge_arg_is(&argv[i], "prefix") && more) {
            if (a->nprefix >= 64 || (uint32_t)a->nprefix >= max_prefixes) {
                resp_add_errorf(&c->out, "ERR too many prefixes (tracking-max-prefixes is %u, "
                                "at most 64 per command)", max_prefixes);
                return -1;
            }
            a->px[a->nprefix++] = argv[++i];
        } else {
            resp_add_error(&c->out, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

static void tracking(struct conn *c, int argc, const struct resp_slice *argv);

void edge_track_cmd_tracking(struct conn *c, int argc, const struct resp_slice *argv)
{
    tracking(c, argc, argv);
    track_publish(c->e->track);
}

static void tracking(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge_track *t = c->e->track;
    int on = edge_arg_is(&argv[2], "on");
    if (!on && !edge_arg_is(&argv[2], "off")) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    struct tracking_args a;
    memset(&a, 0, sizeof(a));
    if (parse(c, argc, argv, &a, t->max_prefixes) != 0)
        return;
    if (!a.bcast && a.nprefix > 0) {
        resp_add_error(&c->out, "ERR PREFIX option requires BCAST mode to be enabled");
        return;
    }
    if (!on) {
        track_off(c);
        resp_add_simple(&c->out, "OK");
        return;
    }
    struct track_sess *s = sess_of(c)->track;
    if (s != NULL && s->bcast != a.bcast) {
        resp_add_error(&c->out, "ERR You can't switch BCAST mode on/off before disabling "
                                "tracking for this client, and then re-enabling it with a "
                                "different mode.");
        return;
    }
    if (a.bcast && (a.optin || a.optout)) {
        resp_add_error(&c->out, "ERR OPTIN and OPTOUT are not compatible with BCAST");
        return;
    }
    if (a.optin && a.optout) {
        resp_add_error(&c->out, "ERR You can't specify both OPTIN mode and OPTOUT mode");
        return;
    }
    if (s != NULL && ((a.optin && s->optout) || (a.optout && s->optin))) {
        resp_add_error(&c->out, "ERR You can't switch OPTIN/OPTOUT mode before disabling "
                                "tracking for this client, and then re-enabling it with a "
                                "different mode.");
        return;
    }
    if (a.bcast && !prefixes_ok(c, s, a.px, a.nprefix))
        return;
    if (s != NULL && a.bcast && s->nprefix + (uint32_t)a.nprefix > t->max_prefixes) {
        resp_add_errorf(&c->out, "ERR too many prefixes (tracking-max-prefixes is %u)",
                        t->max_prefixes);
        return;
    }
    if ((s = track_on(c)) == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    redirect_drop(s);
    s->on = 1;
    s->broken = 0;
    s->optin = (uint8_t)a.optin;
    s->optout = (uint8_t)a.optout;
    s->noloop = (uint8_t)a.noloop;
    s->redirect = a.redirect;
    s->redir = a.redir;
    s->remote = (uint8_t)a.remote;
    s->rslot = a.rslot;
    s->ridx = a.ridx;
    if (s->redir != NULL)
        sess_of(s->redir)->track_target++;
    if (a.bcast) {
        static const struct resp_slice all = {"", 0};
        int failed = 0;
        if (a.nprefix == 0)
            failed |= prefix_add(t, s, &all);
        for (int i = 0; i < a.nprefix; i++)
            failed |= prefix_add(t, s, &a.px[i]);
        if (!s->bcast) {
            s->bcast = 1;
            s->bnext = t->bcasts;
            if (t->bcasts != NULL)
                t->bcasts->bprev = &s->bnext;
            t->bcasts = s;
            s->bprev = &t->bcasts;
            t->nbcast++;
        }
        if (failed) {
            track_off(c);
            resp_add_error(&c->out, "ERR out of memory");
            return;
        }
    }
    resp_add_simple(&c->out, "OK");
}

void edge_track_cmd_caching(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct track_sess *s = sess_of(c)->track;
    if (s == NULL || !(s->optin || s->optout)) {
        resp_add_error(&c->out, "ERR CLIENT CACHING can be called only when the client is in "
                                "tracking mode with OPTIN or OPTOUT mode enabled");
        return;
    }
    if (edge_arg_is(&argv[2], "yes")) {
        if (!s->optin) {
            resp_add_error(&c->out, "ERR CLIENT CACHING YES is only valid when tracking is "
                                    "enabled in OPTIN mode.");
            return;
        }
        s->caching = 1;
    } else if (edge_arg_is(&argv[2], "no")) {
        if (!s->optout) {
            resp_add_error(&c->out, "ERR CLIENT CACHING NO is only valid when tracking is "
                                    "enabled in OPTOUT mode.");
            return;
        }
        s->caching = 2;
    } else {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    resp_add_simple(&c->out, "OK");
}

void edge_track_cmd_getredir(struct conn *c)
{
    const struct track_sess *s = sess_of(c)->track;
    resp_add_int(&c->out, s != NULL ? (int64_t)s->redirect : -1);
}

void edge_track_cmd_trackinginfo(struct conn *c)
{
    const struct track_sess *s = sess_of(c)->track;
    int proto = sess_of(c)->proto;
    const char *flags[8];
    int n = 0;
    if (s == NULL) {
        flags[n++] = "off";
    } else {
        flags[n++] = "on";
        if (s->bcast)
            flags[n++] = "bcast";
        if (s->optin)
            flags[n++] = "optin";
        if (s->optout)
            flags[n++] = "optout";
        if (s->caching == 1)
            flags[n++] = "caching-yes";
        if (s->caching == 2)
            flags[n++] = "caching-no";
        if (s->noloop)
            flags[n++] = "noloop";
        if (s->broken)
            flags[n++] = "broken_redirect";
    }
    resp_add_map(&c->out, proto, 3);
    resp_add_bulk_str(&c->out, "flags");
    resp_add_set(&c->out, proto, n);
    for (int i = 0; i < n; i++)
        resp_add_bulk_str(&c->out, flags[i]);
    resp_add_bulk_str(&c->out, "redirect");
    resp_add_int(&c->out, s != NULL ? (int64_t)s->redirect : -1);
    resp_add_bulk_str(&c->out, "prefixes");
    resp_add_array(&c->out, s != NULL ? s->nprefix : 0);
    for (uint32_t i = 0; s != NULL && i < s->nprefix; i++)
        resp_add_bulk(&c->out, s->prefix[i].p, s->prefix[i].len);
}

void edge_track_reset(struct conn *c)
{
    track_off(c);
    track_publish(c->e->track);
}

void edge_track_conn_gone(struct conn *c)
{
    struct edge_track *t = c->e->track;
    if (t == NULL)
        return;
    int had = sess_of(c)->track != NULL;
    track_dirty_gone(t, c);
    track_off(c);
    if (sess_of(c)->track_target == 0) {
        if (had)
            track_publish(t);
        return;
    }
    for (struct track_sess *s = t->sessions; s != NULL; s = s->next)
        if (s->redir == c)
            s->redir = NULL; /* broken: said on its next invalidation */
    sess_of(c)->track_target = 0;
    track_publish(t);
}

/* ---- setup ---------------------------------------------------------------------- */

int edge_track_setup(struct edge *e, const struct track_opts *o)
{
    struct edge_track *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return -1;
    e->track = t;
    t->e = e;
    t->nbuckets = TRACK_BUCKETS_MIN;
    t->table = calloc(t->nbuckets, sizeof(*t->table));
    t->flush = event_new(e->base, -1, 0, track_on_flush, e);
    t->due_timer = evtimer_new(e->base, track_on_due, t);
    t->rnd = (uint64_t)clock_mono_ns() | 1;
    t->scratch = (struct hkv_buf)HKV_BUF_INIT;
    if (t->table == NULL || t->flush == NULL || t->due_timer == NULL)
        return -1;
    edge_feed_join(e, FEED_TRACK, &track_feed_hooks, t);
    edge_track_reload(e, o);
    return 0;
}

void edge_track_opts(const struct cfg *cfg, struct track_opts *o)
{
    o->max_keys = cfg->tracking_table_max_keys;
    o->max_prefixes = (uint32_t)cfg->tracking_max_prefixes;
}

void edge_track_reload(struct edge *e, const struct track_opts *o)
{
    struct edge_track *t = e->track;
    if (t == NULL)
        return;
    t->max_keys = o->max_keys;
    t->max_prefixes = o->max_prefixes;
    t->max_due = t->max_keys > 0 ? (uint64_t)t->max_keys : UINT64_MAX;
    track_limit(t);
}

void edge_track_teardown(struct edge *e)
{
    struct edge_track *t = e->track;
    if (t == NULL)
        return;
    while (t->sessions != NULL)
        edge_track_conn_gone(t->sessions->c);
    track_table_free(t);
    track_due_free(t);
    if (t->flush != NULL)
        event_free(t->flush);
    if (t->due_timer != NULL)
        event_free(t->due_timer);
    buf_deinit(&t->scratch);
    free(t->dirty);
    edge_feed_want(e, FEED_TRACK, 0);
    free(t);
    e->track = NULL;
}


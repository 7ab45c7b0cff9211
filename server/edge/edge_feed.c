/*
 * edge_feed.c - the edge's reader of the colo change ring (edge_feed.h).
 *
 * Each user reads with a cursor of its own, so a drain for one (CLIENT
 * TRACKING, inside a client's dispatch) never runs another's hooks (the
 * HTTP door's may answer and close connections).  A user that starts
 * wanting records starts at the head (CLIENT TRACKING: it remembers a key
 * before the read, so nothing older concerns it), the HTTP door
 * FEED_REARM_BACK records behind it (it registers after its read).
 *
 * A record still being written (PENDING) is waited for up to
 * PENDING_MAX_MS on a timer, then skipped as one whose writer died inside
 * it (lost).  A ring read takes at most a few rounds per call; more goes on
 * in the next loop turn, so a write storm cannot hold the loop.
 */
#include "server/edge/edge_feed.h"

#include <stdlib.h>

#include "server/core/clock.h"
#include "server/edge/edge_cache.h"

#define PENDING_MAX_MS 50 /* a record not finished by then: its writer died */
/* Arming after a quiet time reads this many records back, not the records
 * of the whole time (most overwritten: a "lost" for nothing): enough for
 * the writes of other processes between a caller's read and its arming,
 * microseconds apart in one loop turn. */
#define FEED_REARM_BACK 256

struct feed_user_state {
    struct feed_hooks hooks;
    void *arg;
    int wanted;
    int reading;                  /* in scan: no re-entry */
    uint64_t cursor;              /* the next ring position to read */
    uint64_t pending_at;          /* a record being written, since pending_since */
    int64_t pending_since;
};

struct edge_feed {
    struct changes *ring;         /* e->cache->changes: NULL = none */
    struct event *signal;         /* the ring's eventfd */
    struct event *retry;          /* a record still being written: look again soon */
    unsigned nwanted;             /* users that want records */
    struct feed_user_state u[FEED_USERS];
};

static void on_record(void *arg, const struct change *c)
{
    struct feed_user_state *u = arg;
    if (c->flags & CHANGES_F_FLUSH)
        u->hooks.lost(u->arg);
    else
        u->hooks.changed(u->arg, c);
}

/* Reads the ring for one user from its own cursor (each user has its own,
 * so that a drain for one never runs another's hooks). */
static void scan_user(struct edge_feed *f, struct feed_user_state *u)
{
    if (u->reading || !u->wanted)
        return;
    u->reading = 1;
    for (int round = 0; round < 4; round++) {
        int rc = changes_read(f->ring, &u->cursor, on_record, u);
        if (rc == CHANGES_OK) {
            u->pending_since = 0;
            if (u->hooks.caught_up != NULL)
                u->hooks.caught_up(u->arg);
            u->reading = 0;
            return;
        }
        if (rc == CHANGES_LOST) {
            u->hooks.lost(u->arg);
            continue;
        }
        int64_t now = clock_mono_ms();
        if (u->pending_since == 0 || u->pending_at != u->cursor) {
            u->pending_at = u->cursor;
            u->pending_since = now;
        } else if (now - u->pending_since >= PENDING_MAX_MS) {
            changes_skip(f->ring, &u->cursor); /* its writer died inside it */
            u->pending_since = 0;
            u->hooks.lost(u->arg);
            continue;
        }
        struct timeval tv = {0, PENDING_MAX_MS * 1000};
        evtimer_add(f->retry, &tv);
        u->reading = 0;
        return;
    }
    u->reading = 0;
    event_active(f->signal, EV_READ, 1); /* more than a few rounds: go on next turn */
}

static void scan(struct edge_feed *f)
{
    for (int i = 0; i < FEED_USERS; i++)
        scan_user(f, &f->u[i]);
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    board_add(&e->stats->http_wakeups, 1);
    changes_ack(e->feed->ring);
    scan(e->feed);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    scan(arg);
}

int edge_feed_setup(struct edge *e)
{
    struct edge_feed *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    e->feed = f;
    f->retry = evtimer_new(e->base, on_retry, f);
    if (f->retry == NULL)
        return -1;
    int fd = changes_fd(e->cache->changes);
    if (fd < 0)
        return 0; /* no ring: held readers wake at their deadlines, trackers get no records */
    f->signal = event_new(e->base, fd, EV_READ | EV_PERSIST, on_signal, e);
    if (f->signal == NULL || event_add(f->signal, NULL) != 0)
        return -1;
    f->ring = e->cache->changes;
    return 0;
}

void edge_feed_teardown(struct edge *e)
{
    struct edge_feed *f = e->feed;
    if (f == NULL)
        return;
    if (f->signal != NULL)
        event_free(f->signal);
    if (f->retry != NULL)
        event_free(f->retry);
    if (f->nwanted != 0)
        changes_arm(f->ring, 0);
    free(f);
    e->feed = NULL;
}

void edge_feed_join(struct edge *e, enum feed_user u, const struct feed_hooks *h, void *arg)
{
    e->feed->u[u].hooks = *h;
    e->feed->u[u].arg = arg;
}

void edge_feed_want(struct edge *e, enum feed_user uid, int on)
{
    struct edge_feed *f = e->feed;
    if (f == NULL || f->ring == NULL)
        return;
    struct feed_user_state *u = &f->u[uid];
    if (!!on == u->wanted)
        return;
    u->wanted = !!on;
    if (!on) {
        if (--f->nwanted == 0)
            changes_arm(f->ring, 0);
        return;
    }
    /* Armed first, then the ring read from a little before its head: a
     * change between the caller's read and now is either signalled or
     * already in the ring (at worst the user re-checks once). */
    uint64_t head = f->nwanted++ == 0 ? changes_arm(f->ring, 1) : changes_head(f->ring);
    uint64_t back = uid == FEED_HTTP ? FEED_REARM_BACK : 0;
    if (u->cursor > head || head - u->cursor > back)
        u->cursor = head > back ? head - back : 0;
    event_active(f->signal, EV_READ, 1);
}

void edge_feed_drain(struct edge *e, enum feed_user u)
{
    if (e->feed != NULL && e->feed->ring != NULL)
        scan_user(e->feed, &e->feed->u[u]);
}

int edge_feed_live(const struct edge *e)
{
    return e->feed != NULL && e->feed->ring != NULL;
}

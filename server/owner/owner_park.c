/*
 * owner_park.c - requests that wait for a moving leaf (owner_move_int.h).
 *
 * While a leaf is fenced (writes wait) or its commit is in doubt (reads
 * wait too), and on a target between its fence acknowledgment and the
 * commit's news, a request on the leaf is kept here as its frame, never
 * answered with an error: the protocol promises clients a wait, not a
 * failure (CLUSTER.md §5 step 4).  When the move modules change a leaf's
 * wait (owner_park_release), every parked request whose leaf no longer
 * blocks it runs again through the request executor (o->replay), in arrival
 * order, and meets whatever is true now: served, or MOVED to the new owner.
 *
 * The wait is bounded twice: per request (OPARK_WAIT_MS; then TRYAGAIN,
 * which an edge retries like any owner that cannot answer yet) and in size
 * (OPARK_MAX requests, OPARK_MAX_BYTES of frames: past either, TRYAGAIN at
 * once).  The wait of each released request goes into a log2 histogram, so
 * INFO can show the parked time's p99 and max (the target: p99
 * under 20 ms whatever the leaf's size).
 */
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/owner/owner_move_int.h"

#define OPARK_TICK_MS 10

struct pk {
    struct olink *link;      /* NULL once it closed */
    uint64_t place;
    int write;
    int64_t since_ms;
    char *payload;
    size_t plen;
    struct pk *next;
};

struct opark {
    struct pk *head, *tail;
    size_t n, bytes;
    struct event *tick;
    struct opark_stats st;
};

static void on_tick(evutil_socket_t fd, short what, void *arg);

int owner_park_setup(struct owner *o)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    o->park = calloc(1, sizeof(*o->park));
    if (o->park == NULL)
        return -1;
    o->park->tick = event_new(o->base, -1, EV_PERSIST, on_tick, o);
    return o->park->tick != NULL ? 0 : -1;
}

static void pk_free(struct opark *p, struct pk *k)
{
    p->n--;
    p->bytes -= k->plen;
    free(k->payload);
    free(k);
}

static void note_wait(struct opark *p, int64_t ms)
{
    int b = 0;
    while (b < OPARK_HIST - 1 && ms >= (1LL << b))
        b++;
    p->st.hist[b]++;
    if ((uint64_t)ms > p->st.wait_max_ms)
        p->st.wait_max_ms = (uint64_t)ms;
    p->st.released++;
}

/* Answers TRYAGAIN for the request in payload. */
static void tryagain(struct owner *o, struct olink *l, const char *payload, size_t plen,
                     const char *why)
{
    struct wire_msg m;
    if (l == NULL || wire_decode(&o->dec, payload, plen, &m, NULL) != HKV_OK)
        return;
    wire_put_error(&l->out, m.id, HKV_EAGAIN, wire_cstr(why));
    olink_flush(l);
}

void owner_park_leaf(struct owner *o, struct olink *l, uint64_t place, int write,
                     const char *payload, size_t plen)
{
    struct opark *p = o->park;
    struct pk *k = NULL;
    if (p != NULL && p->n < OPARK_MAX && p->bytes + plen <= OPARK_MAX_BYTES)
        k = calloc(1, sizeof(*k));
    if (k != NULL && (k->payload = malloc(plen ? plen : 1)) == NULL) {
        free(k);
        k = NULL;
    }
    if (k == NULL) {
        if (p != NULL)
            p->st.refused++;
        tryagain(o, l, payload, plen, "TRYAGAIN the key's leaf is moving and too many requests "
                                      "wait for it (not applied)");
        return;
    }
    memcpy(k->payload, payload, plen);
    k->plen = plen;
    k->link = l;
    k->place = place;
    k->write = write;
    k->since_ms = clock_mono_ms();
    if (p->tail != NULL)
        p->tail->next = k;
    else
        p->head = k;
    p->tail = k;
    p->n++;
    p->bytes += plen;
    p->st.parked++;
    p->st.parked_writes += write != 0;
    if (!event_pending(p->tick, EV_TIMEOUT, NULL)) {
        struct timeval tv = {0, OPARK_TICK_MS * 1000};
        event_add(p->tick, &tv);
    }
}

/* Runs again every parked request that no longer waits; those past their
 * deadline get TRYAGAIN. */
static void sweep(struct owner *o)
{
    struct opark *p = o->park;
    int64_t now = clock_mono_ms();
    struct pk *list = p->head, *keep = NULL, **kt = &keep;
    p->head = p->tail = NULL;
    while (list != NULL) {
        struct pk *k = list;
        list = k->next;
        k->next = NULL;
        int blocked = owner_own_blocks(o, k->place, k->write);
        if (blocked && now - k->since_ms < OPARK_WAIT_MS) {
            *kt = k;
            kt = &k->next;
            continue;
        }
        note_wait(p, now - k->since_ms);
        if (blocked) {
            p->st.timed_out++;
            tryagain(o, k->link, k->payload, k->plen,
                     "TRYAGAIN the key's leaf is moving; its move did not end in time (not applied)");
        } else if (k->link != NULL) {
            struct wire_msg m;
            if (wire_decode(&o->dec, k->payload, k->plen, &m, NULL) == HKV_OK)
                o->replay(o, k->link, &m, k->payload, k->plen);
            olink_flush(k->link);
        }
        pk_free(p, k);
    }
    /* what waits on goes first again, before anything parked meanwhile */
    if (keep != NULL) {
        struct pk *last = keep;
        while (last->next != NULL)
            last = last->next;
        last->next = p->head;
        if (p->tail == NULL)
            p->tail = last;
        p->head = keep;
    }
    if (p->head == NULL)
        event_del(p->tick);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    sweep(arg);
}

void owner_park_release(struct owner *o)
{
    if (o->park != NULL && o->park->head != NULL)
        sweep(o);
}

void owner_park_forget_link(struct owner *o, struct olink *l)
{
    for (struct pk *k = o->park != NULL ? o->park->head : NULL; k != NULL; k = k->next)
        if (k->link == l)
            k->link = NULL;
}

size_t owner_park_count(const struct owner *o)
{
    return o->park != NULL ? o->park->n : 0;
}

void owner_park_stats(const struct owner *o, struct opark_stats *out)
{
    if (o->park != NULL)
        *out = o->park->st;
    else
        memset(out, 0, sizeof(*out));
}

void owner_park_teardown(struct owner *o)
{
    struct opark *p = o->park;
    if (p == NULL)
        return;
    while (p->head != NULL) {
        struct pk *k = p->head;
        p->head = k->next;
        pk_free(p, k);
    }
    if (p->tick != NULL)
        event_free(p->tick);
    free(p);
    o->park = NULL;
}

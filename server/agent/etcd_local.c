/*
 * etcd_local.c - the local store's loop side (etcd_local.h): answers and
 * watch events released once durable (the pump), create and destroy.
 *
 * A call is applied to the table at once (so the next call sees it, as
 * etcd's linearizable answers would), and its answer is built at once and
 * queued with the revision it depends on (the table's revision when it
 * ran: a read may have seen a change not yet on disk).  Answers leave the
 * queue in order, from a libevent event, once the writer says the file
 * holds that revision; watch events likewise stop at the durable revision.
 * Every change is also kept in a history (with the value it replaced), for
 * watches that start in the past and ranges at an older revision.
 *
 * A callback may call the store again, cancel any watch or destroy the
 * client: the `dead` flags below are how the loops notice.  The calls and
 * txns themselves are etcd_local_txn.c, the answer queue and the commit of
 * a change set etcd_local_commit.c, watches etcd_local_watch.c.
 */
#include "server/agent/etcd_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"

/* ---- the pump ---- */

/* Answers a (out of the queue) and frees it; 1 if the store was destroyed
 * by the callback. */
static int answer(struct etcd_local *l, struct lans *a)
{
    int dead = 0;
    int *outer = l->dead;
    l->dead = &dead;
    a->cb(a->arg, &a->res.r);
    etcd_local_ans_free(a);
    if (dead) {
        if (outer != NULL)
            *outer = 1;
        return 1;
    }
    l->dead = outer;
    return 0;
}

static void pump_progress(struct etcd_local *l, int progress)
{
    int failed;
    size_t since, snap;
    int64_t d = lstore_log_durable(l->s.w, &failed, &since, &snap);
    if (d > l->s.durable)
        l->s.durable = d;
    if (failed)
        l->s.failed = 1;
    while (l->head != NULL && (l->head->need <= l->s.durable || l->s.failed)) {
        struct lans *a = l->head;
        l->head = a->next;
        if (l->head == NULL)
            l->tail = &l->head;
        if (a->need > l->s.durable) {
            memset(&a->res.r, 0, sizeof(a->res.r));
            a->res.r.status = HKV_EIO;
            a->res.r.message = "the local store could not write its file";
        }
        if (answer(l, a))
            return;
    }
    etcd_lw_pump(l, progress);
}

static void pump(struct etcd_local *l)
{
    pump_progress(l, 0);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    pump(arg);
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: another read took it; the state is read below anyway */
    }
    pump(arg);
}

static void on_progress(evutil_socket_t fd, short what, void *arg)
{
    struct etcd_local *l = arg;
    pump_progress(l, 1);
}

void etcd_local_set_progress_ms(struct etcd_local *l, int64_t ms)
{
    l->progress_ms = ms > 0 ? ms : ETCD_LOCAL_PROGRESS_MS;
    struct timeval tv = {l->progress_ms / 1000, (l->progress_ms % 1000) * 1000};
    event_add(l->progress, &tv);
}

int64_t etcd_local_revision(const struct etcd_local *l)
{
    return l->s.durable;
}

int etcd_local_failed(const struct etcd_local *l)
{
    return l->s.failed;
}

/* ---- create / destroy ---- */

static int load(struct etcd_local *l, char *err, size_t errlen)
{
    size_t cut, size;
    int rc = lstore_load(l->path, &l->s.t, &cut, &size);
    if (rc == HKV_ENOENT) {
        l->s.t.rev = 1; /* etcd's first revision */
        rc = lstore_write_snapshot(l->path, &l->s.t);
        if (rc != HKV_OK) {
            snprintf(err, errlen, "cannot create %s: %s", l->path, hkv_strstatus(rc));
            return rc;
        }
        rc = lstore_load(l->path, &l->s.t, &cut, &size);
    }
    if (rc != HKV_OK) {
        snprintf(err, errlen, "%s: %s", l->path,
                 rc == HKV_ECORRUPT ? "not a hotkvd leaf map store" : hkv_strstatus(rc));
        return rc;
    }
    if (cut > 0 && truncate(l->path, (off_t)size) != 0) {
        snprintf(err, errlen, "%s: cannot cut its torn tail of %zu bytes", l->path, cut);
        return HKV_EIO;
    }
    l->s.durable = l->s.hist_base = l->s.t.rev;
    l->s.w = lstore_log_start(l->path, size, l->efd);
    if (l->s.w == NULL) {
        snprintf(err, errlen, "%s: cannot start its writer", l->path);
        return HKV_EIO;
    }
    return HKV_OK;
}

struct etcd_local *etcd_local_create(struct event_base *base, const char *path, char *err,
                                     size_t errlen)
{
    struct etcd_local *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->base = base;
    l->tail = &l->head;
    l->watches.next = l->watches.prev = &l->watches;
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l->path = strdup(path);
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
        r = (uint64_t)getpid() << 20;
    l->s.next_lease = (int64_t)((r >> 2) | 1); /* a new process never reuses an old one's ids */
    snprintf(err, errlen, "out of memory");
    if (l->efd < 0 || l->path == NULL)
        goto fail;
    l->kick = event_new(base, -1, 0, on_kick, l);
    l->ev_notify = event_new(base, l->efd, EV_READ | EV_PERSIST, on_notify, l);
    l->progress = event_new(base, -1, EV_PERSIST, on_progress, l);
    if (l->kick == NULL || l->ev_notify == NULL || l->progress == NULL)
        goto fail;
    if (load(l, err, errlen) != HKV_OK)
        goto fail;
    event_add(l->ev_notify, NULL);
    etcd_local_set_progress_ms(l, ETCD_LOCAL_PROGRESS_MS);
    /* leases did not outlive the process that granted them */
    if (lstore_drop_leased(&l->s, 0) != HKV_OK) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return l;
fail:
    etcd_local_destroy(&l);
    return NULL;
}

void etcd_local_destroy(struct etcd_local **lp)
{
    struct etcd_local *l = *lp;
    if (l == NULL)
        return;
    *lp = NULL;
    if (l->dead != NULL)
        *l->dead = 1;
    while (l->watches.next != &l->watches) {
        struct etcd_lwatch *w = l->watches.next;
        etcd_lw_unlink(w);
        w->l = NULL;
    }
    lstore_log_stop(&l->s.w);
    while (l->head != NULL) {
        struct lans *a = l->head;
        l->head = a->next;
        etcd_local_ans_free(a);
    }
    for (size_t i = 0; i < l->s.nhist; i++)
        lstore_change_free(&l->s.hist[i].c);
    free(l->s.hist);
    free(l->s.leases);
    lstore_table_free(&l->s.t);
    if (l->kick != NULL)
        event_free(l->kick);
    if (l->ev_notify != NULL)
        event_free(l->ev_notify);
    if (l->progress != NULL)
        event_free(l->progress);
    if (l->efd >= 0)
        close(l->efd);
    free(l->path);
    free(l);
}

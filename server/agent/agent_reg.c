/*
 * agent_reg.c - the host lease and what the agent registers under it (see
 * agent.h), as one sequence of etcd calls, one at a time:
 *
 *   lease     take over the previous agent's lease if etcd still keeps it
 *             (keepalive answers with a TTL), else grant a new one
 *   hostnum   this host's permanent number: hostnums/<h> naming it, or the
 *             lowest free h created with create_revision == 0
 *   owners    each local owner's permanent number, the same way (owners/<n>)
 *   members   members/<id> for each local owner   } under the lease, each
 *   host      hosts/<host>                        } claimed with
 *   writers   writers/<edge_id> for each edge     } create_revision == 0
 *
 * A claim that fails shows who holds the key (the txn's failure branch
 * reads it): our own lease (a restart, or a retry after a lost answer) is
 * put again; another live lease means another hotkvd runs with this host
 * name or owner id.  Until the host has registered once, that refuses the
 * host (CTL_REFUSED: the master stops, with the reason in its log); after,
 * it is an alarm and a retry, since the owners and edges already run.
 * A number race lost (another host took the free number first) applies
 * what the failure branch read to the map and tries the next one.
 *
 * Keepalive runs every TTL/3 beside the sequence.  Its answer without a TTL
 * means the lease is gone: the sequence starts again with a new lease (an
 * answer still in flight for the old sequence is dropped when it comes).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/core/version.h"

enum { R_LEASE, R_HOSTNUM, R_OWNERS, R_MEMBERS, R_HOST, R_WRITERS, R_DONE };
static const char *const step_names[] = {"lease", "host number", "owner number", "member",
                                         "host", "writer", "done"};
#define MAX_RACES 64

static void reg_next(struct agent *a);

static int64_t lease_ttl_s(const struct agent *a)
{
    int64_t s = a->opt.etcd_lease_ttl_ms / 1000;
    return s < 2 ? 2 : s;
}

static void lease_taken(struct agent *a, int64_t id, int64_t ttl_s)
{
    a->h.lease_id = id;
    a->h.lease_ttl_ms = ttl_s * 1000;
    /* when it was asked, not answered: the lease runs at least TTL from
     * then, so an owner's self-fence needs no room for the round trip; the
     * fence goes by the monotonic stamp (a wall clock set back kept an old
     * primary serving after its follower was promoted) */
    a->h.lease_renewed_ms = a->lease_asked_ms > 0 ? a->lease_asked_ms : clock_unix_ms();
    a->h.lease_renewed_mono_ms = a->lease_asked_mono_ms > 0 ? a->lease_asked_mono_ms
                                                            : clock_mono_ms();
    a->keepalive_next_ms = clock_mono_ms() + ttl_s * 1000 / 4;
    agent_health_push(a);
}

static void save_state(struct agent *a)
{
    struct agent_state st = {.host_number = a->host_number, .lease_id = a->h.lease_id};
    snprintf(st.host, sizeof(st.host), "%s", a->opt.host);
    agent_saver_post_state(a->saver, &st);
}

/* Starts the sequence over (a new lease, every key again). */
static void reg_restart(struct agent *a)
{
    a->registered = 0;
    a->step = R_LEASE;
    a->item = 0;
    a->attempts = 0;
    a->adopting = 0;
    a->plain_put = 0;
    agent_retry_ok(&a->reg);
}

/* ---- the refusal -------------------------------------------------------------- */

static void conflict(struct agent *a, const struct etcd_kv *kv)
{
    char msg[1024], who[256] = "";
    int64_t lease = kv != NULL ? kv->lease : 0;
    if (kv != NULL && a->step == R_MEMBERS) {
        struct agent_member m;
        if (agent_parse_member(kv->value, kv->value_len, &m) == HKV_OK)
            snprintf(who, sizeof(who), ", serving on %s:%u", m.addr, m.port);
    }
    snprintf(msg, sizeof(msg),
             "%s %s is already registered in cluster %s by another live hotkvd (under etcd "
             "lease %" PRId64 "%s): an owner id, a host name and an edge id run once in a "
             "cluster; stop the other hotkvd or give this host another `host` name",
             a->step == R_MEMBERS ? "owner" : a->step == R_HOST ? "host" : "edge id",
             a->cur_name, a->opt.cluster, lease, who);
    if (!a->ever_registered) {
        a->refused = 1;
        log_warning("refusing to start: %s", msg);
        worker_send(a->w, CTL_REFUSED, msg, strlen(msg));
        return;
    }
    int64_t now = clock_mono_ms();
    if (now - a->last_conflict_log_ms > 10000) {
        a->last_conflict_log_ms = now;
        log_warning("ALARM: %s; retrying", msg);
    }
    a->reg.backoff_ms = AGENT_BACKOFF_MAX_MS;
    agent_retry_failed(&a->reg);
}

/* ---- calls -------------------------------------------------------------------- */

static void on_reg(void *arg, const struct etcd_result *r);

static void call_failed_to_start(struct agent *a)
{
    agent_retry_failed(&a->reg);
}

/* Creates a permanent key (no lease) if nobody has. */
static void create_key(struct agent *a)
{
    struct etcd_cmp c = {.target = ETCD_CREATE, .result = ETCD_EQUAL, .key = a->cur_key,
                         .klen = a->cur_klen, .n = 0};
    struct etcd_op ok = {.kind = ETCD_OP_PUT, .key = a->cur_key, .klen = a->cur_klen,
                         .value = a->cur_val, .vlen = a->cur_vlen};
    struct etcd_op fail = {.kind = ETCD_OP_RANGE, .key = a->cur_key, .klen = a->cur_klen};
    if (etcd_txn(a->etcd, &c, 1, &ok, 1, &fail, 1, on_reg, a) != HKV_OK)
        return call_failed_to_start(a);
    a->reg.inflight = 1;
}

/* Claims a key under the lease: created if absent, put again if ours. */
static void claim_key(struct agent *a)
{
    if (a->plain_put) {
        if (etcd_put(a->etcd, a->cur_key, a->cur_klen, a->cur_val, a->cur_vlen, a->h.lease_id,
                     on_reg, a) != HKV_OK)
            return call_failed_to_start(a);
        a->reg.inflight = 1;
        return;
    }
    struct etcd_cmp c = {.target = ETCD_CREATE, .result = ETCD_EQUAL, .key = a->cur_key,
                         .klen = a->cur_klen, .n = 0};
    struct etcd_op ok = {.kind = ETCD_OP_PUT, .key = a->cur_key, .klen = a->cur_klen,
                         .value = a->cur_val, .vlen = a->cur_vlen, .lease = a->h.lease_id};
    struct etcd_op fail = {.kind = ETCD_OP_RANGE, .key = a->cur_key, .klen = a->cur_klen};
    if (etcd_txn(a->etcd, &c, 1, &ok, 1, &fail, 1, on_reg, a) != HKV_OK)
        return call_failed_to_start(a);
    a->reg.inflight = 1;
}

static int set_key(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_key(struct agent *a, const char *fmt, ...)
{
    char rest[AGENT_KEY_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(rest, sizeof(rest), fmt, ap);
    va_end(ap);
    int k = n < 0 ? -1 : agent_key(a->cur_key, sizeof(a->cur_key), a->opt.cluster, "%s", rest);
    a->cur_klen = k < 0 ? 0 : (size_t)k;
    return k;
}

static void set_val(struct agent *a, int n)
{
    a->cur_vlen = n < 0 ? 0 : (size_t)n;
}

/* ---- the sequence ------------------------------------------------------------- */

/* Issues the call of the current step, or moves on when a step needs none. */
static void reg_next(struct agent *a)
{
    const struct agent_opts *opt = &a->opt;
    char id[CMAP_NAME_MAX];
    enum cfg_pool pool;
    int k;
    while (!a->reg.inflight && !a->refused && !a->stopping) {
        if (a->attempts > MAX_RACES) {
            a->attempts = 0;
            agent_retry_failed(&a->reg);
            return;
        }
        switch (a->step) {
        case R_LEASE:
            a->lease_asked_ms = clock_unix_ms();
            a->lease_asked_mono_ms = clock_mono_ms();
            if (a->h.lease_id != 0 && !a->adopting) {
                a->adopting = 1;
                if (etcd_lease_keepalive(a->etcd, a->h.lease_id, on_reg, a) != HKV_OK)
                    return call_failed_to_start(a);
            } else if (etcd_lease_grant(a->etcd, lease_ttl_s(a), on_reg, a) != HKV_OK) {
                return call_failed_to_start(a);
            }
            a->reg.inflight = 1;
            return;
        case R_HOSTNUM: {
            unsigned h = agent_map_host_number(a->map, opt->host);
            if (h != 0) {
                if (a->h.host_number != 0 && a->h.host_number != h)
                    log_warning("host %s: etcd says host number %u, the saved state said %u",
                                opt->host, h, a->h.host_number);
                a->host_number = h;
                a->step = R_OWNERS;
                a->item = a->attempts = 0;
                continue;
            }
            if ((h = agent_map_free_host_number(a->map)) == 0) {
                log_warning("cluster %s: no free host number (all %d taken)", opt->cluster,
                            AGENT_HOSTNUM_MAX);
                return call_failed_to_start(a);
            }
            set_key(a, "hostnums/%u", h);
            set_val(a, agent_val_hostnum(a->cur_val, sizeof(a->cur_val), opt->host));
            return create_key(a);
        }
        case R_OWNERS:
            if (a->item >= a->nowners) {
                a->step = R_MEMBERS;
                a->item = a->attempts = 0;
                continue;
            }
            agent_local_owner(a, a->item, &pool, &k, id, sizeof(id));
            if ((a->owner_num[a->item] = agent_map_owner_number(a->map, id)) != 0) {
                a->item++;
                continue;
            }
            unsigned n = agent_map_free_owner_number(a->map, 0);
            if (n == 0) {
                log_warning("cluster %s: no free owner number for %s (all %d taken)",
                            opt->cluster, id, CMAP_MAX_OWNERS);
                return call_failed_to_start(a);
            }
            set_key(a, "owners/%u", n);
            set_val(a, agent_val_owner(a->cur_val, sizeof(a->cur_val), id));
            return create_key(a);
        case R_MEMBERS: {
            if (a->item >= a->nowners) {
                a->step = R_HOST;
                a->item = 0;
                continue;
            }
            agent_local_owner(a, a->item, &pool, &k, id, sizeof(id));
            struct agent_member m = {.number = a->owner_num[a->item], .pool = pool,
                                     .port = opt->owner_port ? (unsigned)(opt->owner_port + a->item) : 0,
                                     .incarnation = a->incarnation};
            snprintf(m.addr, sizeof(m.addr), "%s", opt->advertise_addr ? opt->advertise_addr : "");
            snprintf(m.host, sizeof(m.host), "%s", opt->host);
            set_key(a, "members/%s", id);
            snprintf(a->cur_name, sizeof(a->cur_name), "%s", id);
            set_val(a, agent_val_member(a->cur_val, sizeof(a->cur_val), &m));
            return claim_key(a);
        }
        case R_HOST:
            set_key(a, "hosts/%s", opt->host);
            snprintf(a->cur_name, sizeof(a->cur_name), "%s", opt->host);
            set_val(a, agent_val_host(a->cur_val, sizeof(a->cur_val),
                                      opt->advertise_addr ? opt->advertise_addr : "",
                                      a->host_number, HOTKVD_VERSION, opt->zone));
            return claim_key(a);
        case R_WRITERS: {
            if (a->item >= a->nedges) {
                a->step = R_DONE;
                continue;
            }
            int slot = opt->edge_slot0 + a->item; /* colo item / edge_workers, its edge the rest */
            set_key(a, "writers/%u", worker_edge_id(a->host_number, slot));
            snprintf(a->cur_name, sizeof(a->cur_name), "%u", worker_edge_id(a->host_number, slot));
            set_val(a, agent_val_writer(a->cur_val, sizeof(a->cur_val), opt->host,
                                        a->incarnation));
            return claim_key(a);
        }
        case R_DONE:
            a->registered = 1;
            a->ever_registered = 1;
            agent_retry_ok(&a->reg);
            save_state(a);
            log_notice("registered in cluster %s: host %s number %u, lease %" PRId64 " (TTL %lld "
                       "s), %d owner(s), %d edge(s)", opt->cluster, opt->host, a->host_number,
                       a->h.lease_id, (long long)(a->h.lease_ttl_ms / 1000), a->nowners,
                       a->nedges);
            agent_announce_if_ready(a);
            return;
        }
    }
}

/* The answer of a step's call. */
static void on_reg(void *arg, const struct etcd_result *r)
{
    struct agent *a = arg;
    a->reg.inflight = 0;
    if (a->stopping || a->refused)
        return;
    if (a->restart_pending) {
        a->restart_pending = 0;
        reg_restart(a);
        return reg_next(a);
    }
    if (r->status != HKV_OK) {
        agent_etcd_failed(a, step_names[a->step], r);
        a->adopting = 0;
        a->plain_put = 0;
        agent_retry_failed(&a->reg);
        return;
    }
    agent_etcd_ok(a);
    const struct etcd_kv *held = r->nkvs > 0 ? &r->kvs[0] : NULL;
    switch (a->step) {
    case R_LEASE:
        if (a->adopting && r->ttl_s > 0) {
            log_notice("took over lease %" PRId64 " of the previous agent", a->h.lease_id);
            lease_taken(a, a->h.lease_id, r->ttl_s);
        } else if (a->adopting) {
            a->h.lease_id = 0; /* gone: grant a new one */
            a->adopting = 0;
            return reg_next(a);
        } else {
            lease_taken(a, r->lease_id, r->ttl_s);
        }
        a->adopting = 0;
        save_state(a);
        a->step = R_HOSTNUM;
        a->attempts = 0;
        break;
    case R_HOSTNUM:
    case R_OWNERS:
        /* ours or theirs, the map learns the key now (the watch says it later) */
        if (r->succeeded)
            agent_map_apply(a->map, a->cur_key, a->cur_klen, a->cur_val, a->cur_vlen,
                            r->revision);
        else if (held != NULL)
            agent_map_apply(a->map, held->key, held->key_len, held->value, held->value_len,
                            held->mod_revision);
        a->attempts += !r->succeeded;
        break;
    default:
        if (a->plain_put || r->succeeded) {
            a->plain_put = 0;
            if (a->step == R_HOST)
                a->step = R_WRITERS, a->item = 0;
            else
                a->item++;
        } else if (held != NULL && held->lease == a->h.lease_id) {
            a->plain_put = 1;
        } else if (held != NULL) {
            return conflict(a, held);
        } else {
            a->attempts++; /* gone between compare and read: cannot be; try again */
        }
        break;
    }
    reg_next(a);
}

/* ---- keepalive ---------------------------------------------------------------- */

static void on_keepalive(void *arg, const struct etcd_result *r)
{
    struct agent *a = arg;
    a->keepalive.inflight = 0;
    if (a->stopping)
        return;
    int64_t now = clock_mono_ms();
    if (r->status != HKV_OK) {
        agent_etcd_failed(a, "lease keepalive", r);
        a->keepalive_next_ms = now + 1000;
        return;
    }
    agent_etcd_ok(a);
    if (r->lease_id != 0 && r->lease_id != a->h.lease_id)
        return; /* an answer about a lease we no longer hold */
    if (r->ttl_s <= 0) {
        log_warning("lease %" PRId64 " is gone (etcd no longer keeps it); taking a new one and "
                    "registering again", a->h.lease_id);
        a->h.lease_id = 0;
        agent_health_push(a);
        if (a->reg.inflight)
            a->restart_pending = 1;
        else
            reg_restart(a);
        return;
    }
    lease_taken(a, a->h.lease_id, r->ttl_s);
}

void agent_reg_tick(struct agent *a, int64_t now)
{
    if (a->stopping || a->refused)
        return;
    if (a->h.lease_id != 0 && a->step > R_LEASE && !a->keepalive.inflight &&
        now >= a->keepalive_next_ms) {
        a->lease_asked_ms = clock_unix_ms();
        a->lease_asked_mono_ms = clock_mono_ms();
        if (etcd_lease_keepalive(a->etcd, a->h.lease_id, on_keepalive, a) == HKV_OK)
            a->keepalive.inflight = 1;
        else
            a->keepalive_next_ms = now + 1000;
    }
    if (a->have_read && !a->registered && agent_retry_due(&a->reg, now))
        reg_next(a);
}

/* ---- stop --------------------------------------------------------------------- */

struct revoke {
    void (*done)(void *arg);
    void *arg;
};
static struct revoke revoke_cb;

static void on_revoke(void *arg, const struct etcd_result *r)
{
    struct agent *a = arg;
    if (r->status == HKV_OK) {
        log_verbose("lease %" PRId64 " revoked: this host's registrations are gone",
                    a->h.lease_id);
        a->h.lease_id = 0;
        agent_health_push(a);
        save_state(a); /* the next start has no lease to take over */
    }
    /* Not revoked (etcd down): the saved state keeps the lease, which etcd
     * may still hold when it comes back (a restarted etcd renews every
     * lease's TTL).  The next start takes it over; forgetting it made the
     * next start see its own registrations under a live lease as another
     * hotkvd's, and refuse to start. */
    revoke_cb.done(revoke_cb.arg);
}

int agent_reg_revoke(struct agent *a, void (*done)(void *arg), void *arg)
{
    if (a->h.lease_id == 0)
        return 0;
    revoke_cb = (struct revoke){done, arg};
    return etcd_lease_revoke(a->etcd, a->h.lease_id, on_revoke, a) == HKV_OK;
}

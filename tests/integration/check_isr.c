/*
 * check_isr.c - the control plane of replicas on a single host with
 * `leaf-moves yes` (CLUSTER.md §7 "Single host"): the in-sync set in the
 * agent's local store, changed only by CASes on the leaf's epoch, and the
 * promotion the master's SIGCHLD triggers.  One host, two hot owners.
 *
 *   - LEAF_ISR_ADD / DEL, asked on the agent's control channel as owner
 *     hot/0 asks (this test speaks the owner's frames itself: seeding a
 *     follower is the owner side's, not this branch's), apply at the epoch
 *     they name and are LOST at any other; `leaf list` shows the set;
 *   - kill -9 of owner hot/0: the master tells the agent (CTL_OWNER_DIED),
 *     which makes owner 2, the in-sync follower of one of hot/0's leaves,
 *     its primary at once, and empties the set; a leaf with no follower
 *     stays with hot/0 (no unclean election); a client's write to the
 *     promoted leaf succeeds again (the time from the kill is printed);
 *   - the whole daemon restarted: every set is cleared before the first map;
 *   - `replicas 1` (set by CONFIG SET: reloadable) makes the agent send
 *     follow orders to the primaries (its log says so);
 *   - two hosts of a cluster (a real etcd, lease 3 s): h1 killed whole, its
 *     leaf with a follower on h2 is h2's owner's once h1's lease expired
 *     (the promotion compares h1's registration absent); a leaf without a
 *     follower stays h1's.
 */
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "proto/wire.h"
#include "proto/wire_hand.h"
#include "tests/integration/move_cluster.h"
#include "tests/unit/cluster_certs.h"

static struct daemon h1, h2;
static struct daemon *via = &h1; /* the host whose agent and admin tool the helpers use */

static void up(void)
{
    via = &h1;
    mc_local_start(&h1, NULL, NULL);
}

static void down(void) { mc_down(&h1); }

/* ---- the owner's side of the control channel, spoken by the test ---- */

struct ctl {
    int fd;
    struct wire_decoder dec;
    char in[65536];
    size_t have;
    uint64_t id;
};

static int ctl_send(struct ctl *c, struct hand_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    m->id = ++c->id;
    ck_assert_int_eq(hand_put(&b, m), HKV_OK);
    int rc = h_send(c->fd, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
    return rc;
}

/* The reply to the last frame sent, within ms: 0 and *m, or -1. */
static int ctl_reply(struct ctl *c, struct hand_msg *m, int ms)
{
    for (int64_t end = h_now_ms() + ms; h_now_ms() < end;) {
        const char *payload;
        size_t plen, used;
        while (c->have >= WIRE_HEADER_LEN &&
               wire_next_frame(c->in, c->have, sizeof(c->in), &payload, &plen, &used) == HKV_OK &&
               used <= c->have) {
            const char *why;
            int ok = hand_decode(&c->dec, payload, plen, m, &why) == HKV_OK;
            memmove(c->in, c->in + used, c->have - used);
            c->have -= used;
            if (ok && m->type == LEAF_REPLY && m->id == c->id)
                return 0; /* LEAF_ORDERs and older replies are skipped */
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = read(c->fd, c->in + c->have, sizeof(c->in) - c->have);
        if (n <= 0)
            return -1;
        c->have += (size_t)n;
    }
    return -1;
}

static void ctl_open(struct ctl *c, int index)
{
    memset(c, 0, sizeof(*c));
    wire_decoder_init(&c->dec, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char path[512];
    snprintf(path, sizeof(path), "%s/agent.sock", via->dir);
    ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(c->fd, 0);
    ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct hand_msg m = {.type = LEAF_HELLO, .u.hello = {CFG_POOL_HOT, (uint32_t)index}};
    ck_assert_int_eq(ctl_send(c, &m), 0);
    ck_assert_int_eq(ctl_reply(c, &m, 5000), 0);
    ck_assert_int_eq(m.u.reply.status, LEAF_ST_OK);
}

static void ctl_close(struct ctl *c)
{
    close(c->fd);
    wire_decoder_deinit(&c->dec);
}

/* One ISR_ADD / DEL of leaf (start, bits) at epoch for follower `to`: the
 * reply's status, and its epoch (OK) or truth (LOST) in *at. */
static int isr(struct ctl *c, uint8_t type, uint32_t start, int bits, int64_t epoch, unsigned to,
               int64_t *at)
{
    struct hand_msg m = {.type = type};
    m.u.leaf.leaf = (struct hand_leaf){CFG_POOL_HOT, (uint8_t)bits, start};
    m.u.leaf.epoch = epoch;
    m.u.leaf.to = to;
    ck_assert_int_eq(ctl_send(c, &m), 0);
    ck_assert_int_eq(ctl_reply(c, &m, 10000), 0);
    *at = m.u.reply.status == LEAF_ST_OK ? m.u.reply.epoch : m.u.reply.at;
    return m.u.reply.status;
}

/* ---- the map as hotkvd-admin shows it ---- */

struct lrow {
    char leaf[32];
    uint32_t start;
    int bits;
    unsigned owner;
    int64_t epoch;
    char isr[32];                    /* "2" or "" */
};

/* Leaf `leaf` ("bits-prefix"), or the k-th leaf of owner n when leaf is
 * NULL: 0 and *r, or -1. */
static int row(const char *leaf, unsigned n, int k, struct lrow *r)
{
    static char out[1 << 20];
    if (mc_admin(via, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return -1;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        unsigned b, p, owner;
        long long e;
        char state[16], name[32];
        if (sscanf(line, "leaf hot %u-%x owner %u %*s state %15s epoch %lld", &b, &p, &owner,
                   state, &e) != 5)
            continue;
        snprintf(name, sizeof(name), "%u-%08x", b, p);
        if (leaf != NULL ? strcmp(name, leaf) != 0 : owner != n || k-- > 0)
            continue;
        memset(r, 0, sizeof(*r));
        snprintf(r->leaf, sizeof(r->leaf), "%s", name);
        r->bits = (int)b;
        r->start = b == 0 ? 0 : p << (32 - b);
        r->owner = owner;
        r->epoch = e;
        const char *i = strstr(line, " isr ");
        if (i != NULL)
            snprintf(r->isr, sizeof(r->isr), "%s", i + 5);
        return 0;
    }
    return -1;
}

START_TEST(isr_changes_are_cases_and_kill_9_promotes_the_follower)
{
    struct lrow a, b, r;
    ck_assert_int_eq(row(NULL, 1, 0, &a), 0);
    ck_assert_int_eq(row(NULL, 1, 1, &b), 0);
    ck_assert_str_eq(a.isr, "");
    /* a key of each leaf, written before the set changes: hot/0 has its
     * first map (CI: a loaded start read it after the ISR_ADD below, and
     * the owner, its leaf showing a follower, waited for a promotion) */
    char ka[1][32], kb[1][32];
    mc_keys_in(a.start, a.bits, "a", ka, 1);
    mc_keys_in(b.start, b.bits, "b", kb, 1);
    ck_assert_msg(mc_set_until_ok(h1.port, ka[0], "first", 15000) >= 0, "SET %s failed 15 s", ka[0]);
    ck_assert_msg(mc_set_until_ok(h1.port, kb[0], "first", 15000) >= 0, "SET %s failed 15 s", kb[0]);
    struct ctl c;
    ctl_open(&c, 0); /* as owner hot/0, number 1, a's primary */
    int64_t e1, e2, e3, at;
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, a.epoch, 2, &e1), LEAF_ST_OK);
    ck_assert_int_gt(e1, a.epoch);
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, a.epoch, 2, &at), LEAF_ST_LOST);
    ck_assert_int_eq(at, e1); /* the truth: the epoch it has now */
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, e1, 2, &at), LEAF_ST_REFUSED);
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, e1, 9, &at), LEAF_ST_REFUSED);
    ck_assert_int_eq(row(a.leaf, 0, 0, &r), 0);
    ck_assert_str_eq(r.isr, "2");
    ck_assert_int_eq(r.epoch, e1);
    ck_assert_int_eq(isr(&c, LEAF_ISR_DEL, a.start, a.bits, e1, 2, &e2), LEAF_ST_OK);
    ck_assert_int_eq(isr(&c, LEAF_ISR_DEL, a.start, a.bits, e1, 2, &at), LEAF_ST_LOST);
    ck_assert_int_eq(row(a.leaf, 0, 0, &r), 0);
    ck_assert_str_eq(r.isr, "");
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, e2, 2, &e3), LEAF_ST_OK);
    ctl_close(&c);

    int fd = h_connect(h1.port);
    mc_set_ok(fd, ka[0], "before");
    close(fd);
    pid_t owner = h_child(&h1, "hotkvd: owner hot/0", 0);
    ck_assert_int_gt(owner, 0);
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(kill(owner, SIGKILL), 0);
    /* a write to the promoted leaf goes through again (ISR_FIRST_WRITE_MS:
     * the first one is sent that long after the kill, once the map moved,
     * instead of at once: a write sent before the promotion waits for the
     * edge's dead link, the restarted owner's MOVED, ~110 ms) */
    if (getenv("ISR_FIRST_WRITE_MS") != NULL)
        h_sleep_ms(atoi(getenv("ISR_FIRST_WRITE_MS")));
    int64_t back = -1;
    for (int64_t end = t0 + 10000; back < 0 && h_now_ms() < end;) {
        int w = mc_connect(h1.port);
        struct h_reply *x = w >= 0 ? h_cmdv(w, "SET", ka[0], "after", NULL) : NULL;
        if (x != NULL && h_str_is(x->v, "OK"))
            back = h_now_ms() - t0;
        else if (getenv("ISR_DEBUG") != NULL)
            fprintf(stderr, "isr: +%lld ms: %s\n", (long long)(h_now_ms() - t0),
                    x != NULL && x->raw != NULL ? x->raw : "(no reply)");
        h_free(x);
        if (w >= 0)
            close(w);
        if (back < 0)
            h_sleep_ms(5);
    }
    ck_assert_int_eq(row(a.leaf, 0, 0, &r), 0);
    ck_assert_uint_eq(r.owner, 2);
    ck_assert_str_eq(r.isr, ""); /* 2 was its only follower */
    ck_assert_int_gt(r.epoch, e3);
    ck_assert_int_eq(row(b.leaf, 0, 0, &r), 0);
    ck_assert_uint_eq(r.owner, 1); /* no follower: it waits for its primary */
    ck_assert(h_log_has(&h1, "follower 2 promoted", a.leaf, "ms after its death"));
    ck_assert_msg(back >= 0, "no write to the promoted leaf succeeded within 10 s of the kill");
    long long cas_ms = -1;
    FILE *lf = fopen(h1.log, "r");
    char line[1024];
    while (lf != NULL && fgets(line, sizeof(line), lf) != NULL) {
        const char *hit = strstr(line, "follower 2 promoted");
        const char *ms = hit != NULL ? strstr(hit, ", ") : NULL;
        if (ms != NULL && strstr(line, a.leaf) != NULL)
            sscanf(ms, ", %lld ms after its death", &cas_ms);
    }
    if (lf != NULL)
        fclose(lf);
    if (getenv("ISR_DEBUG") != NULL)
        h_dump_log(&h1);
    fprintf(stderr, "isr: owner hot/0 killed: its follower was primary %lld ms after the agent "
            "learnt of the death; a write to the leaf succeeded %lld ms after the kill\n",
            cas_ms, (long long)back);
    /* the restarted hot/0 serves its leaf without a follower again */
    mc_set_until_ok(h1.port, kb[0], "x", 15000);
    fd = h_connect(h1.port);
    mc_get_is(fd, kb[0], "x");
    mc_get_is(fd, ka[0], "after");
    close(fd);
}
END_TEST

START_TEST(a_whole_host_restart_clears_every_set)
{
    struct lrow a, r;
    ck_assert_int_eq(row(NULL, 2, 0, &a), 0);
    struct ctl c;
    ctl_open(&c, 1); /* as owner hot/1, number 2 */
    int64_t e;
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, a.epoch, 1, &e), LEAF_ST_OK);
    ctl_close(&c);
    ck_assert_int_eq(row(a.leaf, 0, 0, &r), 0);
    ck_assert_str_eq(r.isr, "1");
    ck_assert_int_ge(h_halt(&h1), 0);
    mc_start(&h1, NULL);
    ck_assert_int_eq(row(a.leaf, 0, 0, &r), 0);
    ck_assert_str_eq(r.isr, "");
    ck_assert_uint_eq(r.owner, 2);
    ck_assert(h_log_has(&h1, "in-sync sets of 1 leaves cleared", NULL, NULL));
}
END_TEST

START_TEST(replicas_1_sends_follow_orders_to_the_primaries)
{
    h_sleep_ms(500);
    ck_assert(!h_log_has(&h1, "asked to seed follower", NULL, NULL));
    int fd = h_connect(h1.port);
    struct h_reply *x = h_cmdv(fd, "CONFIG", "SET", "replicas", "1", NULL);
    ck_assert_msg(x != NULL && h_str_is(x->v, "OK"), "CONFIG SET replicas 1 refused");
    h_free(x);
    close(fd);
    int seen = 0;
    for (int64_t end = h_now_ms() + 10000; !seen && h_now_ms() < end; h_sleep_ms(50))
        seen = h_log_has(&h1, "owner 1 asked to seed follower 2", NULL, NULL) &&
               h_log_has(&h1, "owner 2 asked to seed follower 1", NULL, NULL);
    ck_assert_msg(seen, "no follow order to each owner within 10 s");
}
END_TEST

/* ---- two hosts of a cluster, a real etcd ---- */

static char certs[256];

static void host_prepare(struct daemon *d, const char *host)
{
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "owner-port %d\nadvertise-addr 127.0.0.1\nauto-moves no\n"
             "cluster-tls-cert-file %s/%s.crt\ncluster-tls-key-file %s/%s.key\n"
             "cluster-tls-ca-file %s/ca.crt\n",
             h_free_port(), certs, host, certs, host, certs);
    mc_prepare(d, host, 1, extra);
}

static void up_hosts(void)
{
    h_tmpdir(certs, sizeof(certs));
    cc_make_all(certs);
    mc_etcd_start();
    host_prepare(&h1, "h1");
    host_prepare(&h2, "h2");
    mc_cluster_init(&h1, "h1/hot/0,h2/hot/0", 3);
    mc_start(&h1, NULL);
    mc_start(&h2, NULL);
    via = &h1;
}

static void down_hosts(void)
{
    mc_down(&h1);
    mc_down(&h2);
    mc_etcd_stop();
    h_rmtree(certs);
}

START_TEST(a_dead_hosts_leaf_goes_to_its_follower_on_the_other_host)
{
    struct lrow a, b, r;
    ck_assert_int_eq(row(NULL, 1, 0, &a), 0);
    ck_assert_int_eq(row(NULL, 1, 1, &b), 0);
    struct ctl c;
    ctl_open(&c, 0); /* as h1's owner hot/0, number 1 */
    int64_t e;
    ck_assert_int_eq(isr(&c, LEAF_ISR_ADD, a.start, a.bits, a.epoch, 2, &e), LEAF_ST_OK);
    ctl_close(&c);
    char ka[1][32];
    mc_keys_in(a.start, a.bits, "a", ka, 1);
    /* h1 dies whole: every process by SIGKILL (no lease revoked), the master last */
    pid_t kids[64];
    int nk = h_children(&h1, kids, 64);
    ck_assert_int_gt(nk, 0);
    int64_t t0 = h_now_ms();
    for (int i = 0; i < nk; i++)
        kill(kids[i], SIGKILL);
    kill(h1.pid, SIGKILL);
    ck_assert_int_ge(h_wait(h1.pid, 10000), 0);
    h1.pid = 0;
    via = &h2;
    /* a write sent through h2 while h1 is dead and not yet replaced: what it
     * queued for h1 never left h2 (h1's port refuses), so at the promotion
     * it goes to the follower as a first attempt and is applied, not
     * answered "outcome unknown" */
    int early = mc_connect(h2.port);
    ck_assert_int_ge(early, 0);
    ck_assert_int_eq(h_sendv(early, "SET", ka[0], "sent-in-the-outage", NULL), 0);
    int64_t took = -1;
    for (int64_t end = t0 + 20000; took < 0 && h_now_ms() < end; h_sleep_ms(50))
        if (row(a.leaf, 0, 0, &r) == 0 && r.owner == 2)
            took = h_now_ms() - t0;
    ck_assert_msg(took >= 0, "the follower was not promoted within 20 s of its host's death");
    ck_assert_str_eq(r.isr, "");
    ck_assert_int_gt(r.epoch, e);
    ck_assert_int_eq(row(b.leaf, 0, 0, &r), 0);
    ck_assert_uint_eq(r.owner, 1); /* no follower: it waits for its host */
    /* the agent logs on its CAS's answer, which can come a little after the
     * test's own read of etcd shows the promotion */
    for (int64_t end = h_now_ms() + 3000;
         !h_log_has(&h2, "follower 2 promoted (primary 1 gone)", a.leaf, NULL) && h_now_ms() < end;)
        h_sleep_ms(20);
    ck_assert(h_log_has(&h2, "follower 2 promoted (primary 1 gone)", a.leaf, NULL));
    struct h_reply *er = h_read(early);
    ck_assert_msg(er != NULL && h_str_is(er->v, "OK"),
                  "a write sent during the outage answered %.*s, not OK",
                  er != NULL && er->v->str != NULL ? (int)er->v->len : 7,
                  er != NULL && er->v->str != NULL ? er->v->str : "nothing");
    h_free(er);
    close(early);
    int rd = mc_connect(h2.port);
    mc_get_is(rd, ka[0], "sent-in-the-outage");
    close(rd);
    /* a client of h2 writes to the leaf again */
    int64_t back = -1;
    for (int64_t end = h_now_ms() + 10000; back < 0 && h_now_ms() < end;) {
        int w = mc_connect(h2.port);
        struct h_reply *x = w >= 0 ? h_cmdv(w, "SET", ka[0], "on-h2", NULL) : NULL;
        if (x != NULL && h_str_is(x->v, "OK"))
            back = h_now_ms() - t0;
        h_free(x);
        if (w >= 0)
            close(w);
        if (back < 0)
            h_sleep_ms(20);
    }
    ck_assert_msg(back >= 0, "no write to the promoted leaf through h2 within 10 s");
    fprintf(stderr, "isr: host h1 killed (lease 3 s): its leaf's follower on h2 was primary "
            "%lld ms later, a write through h2 succeeded %lld ms after the kill\n",
            (long long)took, (long long)back);
}
END_TEST

Suite *isr_suite(void)
{
    Suite *s = suite_create("isr");
    TCase *tc = tcase_create("single host");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, up, down);
    tcase_add_test(tc, isr_changes_are_cases_and_kill_9_promotes_the_follower);
    tcase_add_test(tc, a_whole_host_restart_clears_every_set);
    tcase_add_test(tc, replicas_1_sends_follow_orders_to_the_primaries);
    suite_add_tcase(s, tc);
    tc = tcase_create("cluster");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, up_hosts, down_hosts);
    tcase_add_test(tc, a_dead_hosts_leaf_goes_to_its_follower_on_the_other_host);
    suite_add_tcase(s, tc);
    return s;
}

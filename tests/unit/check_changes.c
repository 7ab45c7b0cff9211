/*
 * check_changes.c - the colo change ring (server/colo/changes.h): records
 * come back in order with their hash and version; a reader that falls more
 * than the ring behind is told it lost records (and then re-checks
 * everyone); a record whose writer died half-way stops the reader
 * (PENDING) until it skips it; an edge is signalled only while armed, once
 * until it acknowledges, and a write in another process of the colo
 * signals it.  Cross-process behaviour uses a real fork()ed writer.
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/colo/changes.h"

struct seen {
    uint64_t hash[CHANGES_SLOTS + 8];
    hkv_stamp v[CHANGES_SLOTS + 8];
    int n;
};

static void collect(void *arg, const struct change *c)
{
    struct seen *s = arg;
    if (s->n < (int)(sizeof(s->hash) / sizeof(s->hash[0]))) {
        s->hash[s->n] = c->hash;
        s->v[s->n] = c->version;
    }
    s->n++;
}

/* 1 if fd is readable within ms. */
static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static struct changes *edge0(void)
{
    struct changes *ch = NULL;
    ck_assert_int_eq(changes_create(2, &ch), HKV_OK);
    ck_assert_int_eq(changes_attach(ch, 0), HKV_OK);
    return ch;
}

START_TEST(records_come_back_in_order)
{
    struct changes *ch = edge0();
    static struct seen s;
    s.n = 0;
    uint64_t cur = changes_arm(ch, 1);
    for (uint64_t i = 1; i <= 10; i++)
        changes_note(ch, 100 + i, 1000 + i);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_OK);
    ck_assert_int_eq(s.n, 10);
    for (int i = 0; i < 10; i++) {
        ck_assert_uint_eq(s.hash[i], 101 + (uint64_t)i);
        ck_assert_uint_eq(s.v[i], 1001 + (uint64_t)i);
    }
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_OK);
    ck_assert_int_eq(s.n, 10); /* nothing new */
    changes_destroy(&ch);
    ck_assert_ptr_null(ch);
}
END_TEST

START_TEST(a_reader_lapped_by_the_ring_is_told_it_lost_records)
{
    struct changes *ch = edge0();
    static struct seen s;
    s.n = 0;
    uint64_t cur = changes_arm(ch, 1);
    for (uint64_t i = 0; i < CHANGES_SLOTS + 5; i++)
        changes_note(ch, i, i + 1);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_LOST);
    ck_assert_int_eq(s.n, 0);
    /* the cursor is at the head: what comes next is read normally */
    changes_note(ch, 7, 77);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_OK);
    ck_assert_int_eq(s.n, 1);
    ck_assert_uint_eq(s.v[0], 77);
    changes_destroy(&ch);
}
END_TEST

START_TEST(a_half_written_record_stops_the_reader_until_skipped)
{
    struct changes *ch = edge0();
    static struct seen s;
    s.n = 0;
    uint64_t cur = changes_arm(ch, 1);
    changes_note(ch, 1, 10);
    changes_test_abandon(ch); /* a writer killed inside its record */
    changes_note(ch, 3, 30);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_PENDING);
    ck_assert_int_eq(s.n, 1);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_PENDING);
    ck_assert_int_eq(s.n, 1); /* still there: nothing read twice */
    changes_skip(ch, &cur);
    ck_assert_int_eq(changes_read(ch, &cur, collect, &s), CHANGES_OK);
    ck_assert_int_eq(s.n, 2);
    ck_assert_uint_eq(s.hash[1], 3);
    changes_destroy(&ch);
}
END_TEST

START_TEST(an_edge_is_signalled_only_while_armed_and_once_until_it_acks)
{
    struct changes *ch = edge0();
    int fd = changes_fd(ch);
    ck_assert_int_ge(fd, 0);
    changes_note(ch, 1, 1);
    ck_assert_int_eq(readable(fd, 0), 0); /* not armed: no signal, no syscall */
    changes_arm(ch, 1);
    changes_note(ch, 2, 2);
    ck_assert_int_eq(readable(fd, 0), 1);
    uint64_t n = 0;
    ck_assert_int_eq(read(fd, &n, sizeof(n)), (ssize_t)sizeof(n));
    ck_assert_uint_eq(n, 1);
    changes_note(ch, 3, 3); /* signalled already, not acknowledged: no new write */
    ck_assert_int_eq(readable(fd, 0), 0);
    changes_ack(ch);
    changes_note(ch, 4, 4);
    ck_assert_int_eq(readable(fd, 0), 1);
    changes_ack(ch);
    ck_assert_int_eq(readable(fd, 0), 0);
    changes_arm(ch, 0);
    changes_note(ch, 5, 5);
    ck_assert_int_eq(readable(fd, 0), 0);
    changes_destroy(&ch);
}
END_TEST

START_TEST(a_write_in_another_process_of_the_colo_signals_the_edge)
{
    struct changes *ch = NULL;
    ck_assert_int_eq(changes_create(2, &ch), HKV_OK);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* edge 1: writes every 20 ms (edge 0 may arm late on a loaded
         * machine) until it is stopped, at most 5 s */
        if (changes_attach(ch, 1) != HKV_OK)
            _exit(2);
        for (int i = 0; i < 250; i++) {
            changes_note(ch, 0xabc, 42);
            usleep(20 * 1000);
        }
        _exit(0);
    }
    ck_assert_int_eq(changes_attach(ch, 0), HKV_OK);
    uint64_t cur = changes_arm(ch, 1);
    ck_assert_int_eq(readable(changes_fd(ch), 5000), 1);
    changes_ack(ch);
    static struct seen s;
    s.n = 0;
    int rc = changes_read(ch, &cur, collect, &s);
    kill(pid, SIGKILL);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(rc == CHANGES_OK || rc == CHANGES_PENDING); /* PENDING: caught mid-record */
    ck_assert_int_ge(s.n, 1);
    ck_assert_uint_eq(s.hash[0], 0xabc);
    ck_assert_uint_eq(s.v[0], 42);
    changes_destroy(&ch);
}
END_TEST

struct recs {
    struct change c[4];
    char key[4][CHANGES_KEY_MAX];
    int n;
};

static void keep(void *arg, const struct change *c)
{
    struct recs *r = arg;
    if (r->n < 4) {
        r->c[r->n] = *c;
        memcpy(r->key[r->n], c->key, c->klen < CHANGES_KEY_MAX ? c->klen : CHANGES_KEY_MAX);
        r->c[r->n].key = r->key[r->n];
    }
    r->n++;
}

START_TEST(records_carry_the_key_its_writer_and_their_kind)
{
    struct changes *ch = edge0();
    uint64_t cur = changes_arm(ch, 1);
    char longkey[300];
    memset(longkey, 'k', sizeof(longkey));
    changes_note_key(ch, "user:1", 6, 11, 101, 42);
    changes_note_key(ch, longkey, sizeof(longkey), 12, 102, 0);
    changes_note_fill(ch, "f", 1, 13, 103);
    changes_note_flush(ch);
    static struct recs r;
    r.n = 0;
    ck_assert_int_eq(changes_read(ch, &cur, keep, &r), CHANGES_OK);
    ck_assert_int_eq(r.n, 4);
    ck_assert(r.c[0].klen == 6 && memcmp(r.c[0].key, "user:1", 6) == 0);
    ck_assert_uint_eq(r.c[0].origin, 42);
    ck_assert_uint_eq(r.c[0].flags, 0);
    ck_assert_uint_eq(r.c[1].klen, sizeof(longkey)); /* the whole length, the first bytes */
    ck_assert(memcmp(r.c[1].key, longkey, CHANGES_KEY_MAX) == 0);
    ck_assert_uint_eq(r.c[2].flags, CHANGES_F_FILL);
    ck_assert_uint_eq(r.c[2].version, 103);
    ck_assert_uint_eq(r.c[3].flags, CHANGES_F_FLUSH);
    changes_destroy(&ch);
}
END_TEST

START_TEST(bad_arguments_and_a_null_ring_are_harmless)
{
    struct changes *ch = NULL;
    ck_assert_int_eq(changes_create(0, &ch), HKV_EINVAL);
    ck_assert_int_eq(changes_create(CHANGES_EDGES_MAX + 1, &ch), HKV_EINVAL);
    ck_assert_int_eq(changes_attach(NULL, 0), HKV_ECORRUPT);
    changes_note(NULL, 1, 1);
    ck_assert_int_eq(changes_fd(NULL), -1);
    uint64_t cur = 0;
    ck_assert_int_eq(changes_read(NULL, &cur, collect, NULL), CHANGES_OK);
    ck_assert_int_eq(changes_create(2, &ch), HKV_OK);
    ck_assert_int_eq(changes_attach(ch, 2), HKV_ECORRUPT); /* no edge 2 in a colo of 2 */
    changes_destroy(&ch);
    changes_destroy(&ch); /* NULL-safe */
}
END_TEST

Suite *changes_suite(void)
{
    Suite *s = suite_create("changes");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, records_come_back_in_order);
    tcase_add_test(tc, records_carry_the_key_its_writer_and_their_kind);
    tcase_add_test(tc, a_reader_lapped_by_the_ring_is_told_it_lost_records);
    tcase_add_test(tc, a_half_written_record_stops_the_reader_until_skipped);
    suite_add_tcase(s, tc);
    tc = tcase_create("signals");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, an_edge_is_signalled_only_while_armed_and_once_until_it_acks);
    tcase_add_test(tc, a_write_in_another_process_of_the_colo_signals_the_edge);
    tcase_add_test(tc, bad_arguments_and_a_null_ring_are_harmless);
    suite_add_tcase(s, tc);
    return s;
}

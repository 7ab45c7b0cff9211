/*
 * check_durable_liveness.c - every request on durable-class keys is answered,
 * and answered with its result, not "outcome unknown", while the disk is
 * healthy: several clients (forked processes, each with its own connection)
 * hammer a few durable keys with SET, DEL, EXPIRE -1, GETDEL, RENAME, INCR,
 * SET PX and MULTI/EXEC, mixed with plain ledger-class SETs, against the real
 * daemon with a tiny persist-batch-max and a 5 ms persist-interval, so that
 * interval (ledger) batches, durable batches, parked requests and sweeps
 * overlap all the time.  A lost wake-up (a request parked on a commit that
 * never comes, a commit ticket that no durable batch ever settles) shows as
 * a reply that is late or a -TIMEOUT after durable-timeout.
 *
 * Bounded: each client runs at most CMD_MAX commands or RUN_MS, whichever
 * comes first; a reply not there within durable-timeout + 2 s fails it.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define LIVENESS_CONF                                                   \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\n"                    \
    "class money pattern \"d:*\" pool cold durability durable\n"        \
    "class default pool cold durability ledger\n"                       \
    "durable-timeout 3s\npersist-interval 5ms\npersist-batch-max 2\n"

enum {
    CLIENTS = 4,
    CMD_MAX = 3000,          /* per client */
    RUN_MS = 12000,          /* per client */
    DURABLE_TIMEOUT_MS = 3000,
    REPLY_MS = DURABLE_TIMEOUT_MS + 2000,
    NKEYS = 6,
};

/* One client's run; exits 0, or 1 after printing what went wrong. */
static void client(int port, unsigned seed)
{
    int fd = h_connect(port);
    if (fd < 0) {
        fprintf(stderr, "client %u: cannot connect\n", seed);
        _exit(1);
    }
    struct timeval tv = {REPLY_MS / 1000, (REPLY_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    srandom(seed);
    int64_t end = h_now_ms() + RUN_MS;
    for (int i = 0; i < CMD_MAX && h_now_ms() < end; i++) {
        char k[32], k2[16], v[32], lk[16];
        if (random() % 4 == 0) /* a durable key never written: no entry at all */
            snprintf(k, sizeof(k), "d:new:%u:%d", seed, i);
        else
            snprintf(k, sizeof(k), "d:%ld", random() % NKEYS);
        snprintf(k2, sizeof(k2), "d:%ld", random() % NKEYS);
        snprintf(lk, sizeof(lk), "l:%ld", random() % 32);
        snprintf(v, sizeof(v), "%u-%d", seed, i);
        const char *w[8] = {0};
        int argc = 0, multi = 0;
        switch (random() % 11) {
        case 0: w[0] = "SET"; w[1] = k; w[2] = v; argc = 3; break;
        case 1: w[0] = "DEL"; w[1] = k; argc = 2; break;
        case 2: w[0] = "EXPIRE"; w[1] = k; w[2] = "-1"; argc = 3; break;
        case 3: w[0] = "GETDEL"; w[1] = k; argc = 2; break;
        case 4: w[0] = "RENAME"; w[1] = k; w[2] = k2; argc = 3; break;
        case 5: w[0] = "INCR"; w[1] = k; argc = 2; break;
        case 6: w[0] = "SET"; w[1] = k; w[2] = v; w[3] = "PX"; w[4] = "3"; argc = 5; break;
        case 7: w[0] = "GET"; w[1] = k; argc = 2; break;
        case 8: multi = 1; break;
        default: w[0] = "SET"; w[1] = lk; w[2] = v; argc = 3; break;
        }
        int64_t t0 = h_now_ms();
        struct h_reply *r;
        if (multi) {
            char buf[256];
            int n = snprintf(buf, sizeof(buf),
                             "*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n"
                             "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n*1\r\n$4\r\nEXEC\r\n",
                             strlen(k), k, strlen(k2), k2, strlen(v), v);
            r = h_send(fd, buf, (size_t)n) == 0 ? h_read(fd) : NULL; /* +OK */
            for (int q = 0; q < 3 && r != NULL; q++) { /* QUEUED QUEUED, then EXEC's */
                h_free(r);
                r = h_read(fd);
            }
            w[0] = "MULTI DEL SET EXEC";
            w[1] = k;
            w[2] = k2;
        } else {
            r = h_cmd(fd, argc, w);
        }
        int64_t took = h_now_ms() - t0;
        if (r == NULL) {
            fprintf(stderr, "client %u: %s %s %s: no reply within %d ms (command %d)\n", seed,
                    w[0], w[1], w[2] ? w[2] : "", REPLY_MS, i);
            _exit(1);
        }
        const char *err = r->v->type == RESP_ERROR ? r->v->str : NULL;
        if (err != NULL && (strstr(err, "TIMEOUT") != NULL || strstr(err, "UNAVAILABLE") != NULL ||
                            strstr(err, "unknown") != NULL)) {
            fprintf(stderr, "client %u: %s %s %s: answered -%s after %lld ms (command %d)\n",
                    seed, w[0], w[1], w[2] ? w[2] : "", err, (long long)took, i);
            _exit(1);
        }
        h_free(r);
    }
    close(fd);
    _exit(0);
}

START_TEST(durable_requests_are_all_answered_under_churn)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, LIVENESS_CONF), 0);
    pid_t pids[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        pids[c] = fork();
        ck_assert_int_ge(pids[c], 0);
        if (pids[c] == 0)
            client(d.port, (unsigned)(c + 1));
    }
    int failed = 0;
    for (int c = 0; c < CLIENTS; c++) {
        int st = h_wait(pids[c], RUN_MS + REPLY_MS + 20000);
        if (st == -1) {
            kill(pids[c], SIGKILL);
            waitpid(pids[c], NULL, 0);
            failed++;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
        }
    }
    if (failed)
        h_dump_log(&d);
    ck_assert_msg(failed == 0, "%d of %d clients saw a durable request hang or time out "
                  "(see their lines above)", failed, CLIENTS);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *durable_liveness_suite(void)
{
    Suite *s = suite_create("durable_liveness");
    TCase *tc = tcase_create("churn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, durable_requests_are_all_answered_under_churn);
    suite_add_tcase(s, tc);
    return s;
}

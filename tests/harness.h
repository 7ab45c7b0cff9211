/*
 * harness.h - what the daemon-level tests share: temp dirs, free ports,
 * starting the real binary ($HOTKVD_BIN) from a fixture config, a tiny RESP
 * client over real sockets (harness_resp.c) and the owner's binary protocol
 * (harness_wire.c), and stopping every process by PID.  Every wait is
 * bounded in time.  A suite writes no client helper of its own: the words
 * of a command go through h_call (or h_cmd/h_cmdv when no reply is a result).
 */
#ifndef HKV_HARNESS_H
#define HKV_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/resp.h"

struct daemon {
    pid_t pid;
    int port;
    char dir[256];       /* temp dir: data, config, log */
    char conf[320];
    char log[320];
};

/* A fresh temp dir under /tmp; aborts the test on failure. */
void h_tmpdir(char *out, size_t len);
/* Removes a temp dir tree made by h_tmpdir. */
void h_rmtree(const char *dir);
/* A loopback TCP port that was free a moment ago. */
int h_free_port(void);
int64_t h_now_ms(void);
/* CLOCK_REALTIME in ms (what stamps are made of). */
uint64_t h_wall_ms(void);
void h_sleep_ms(int ms);
/* A per-test temp dir made and removed by the runner process around the
 * forked test (tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown)),
 * so a failed assertion leaves nothing behind; the daemon dies with the test
 * process (PR_SET_PDEATHSIG). */
extern char h_fixture_dir[256];
void h_dir_setup(void);
void h_dir_teardown(void);
/* Path of the binary under test. */
const char *h_bin(void);

/* Writes <dir>/hotkvd.conf: port, dir, logfile, then `extra` verbatim. */
void h_write_conf(struct daemon *d, const char *extra);
/* Initialises d (temp dir, free port), writes the config, starts the daemon
 * and waits (up to 10 s) until PING answers.  Returns 0, or -1 if it exited or
 * did not answer (the log is printed to stderr). */
int h_start(struct daemon *d, const char *extra);
/* h_start in h_fixture_dir (the test case needs that fixture) with the
 * daemon under the stall shim ($HOTKVD_SHIM, tests/fault/stallfs.c): its
 * fsync, fdatasync and pwrite on regular files block while the flag file
 * <h_fixture_dir>/stall exists (its path goes into flag[0..flen); create it
 * before the call to stall the owners' first writes).  Waits (up to 20 s) for PING only, not for
 * every child: an owner may be the one stalled.  0, or -1 (the log is
 * printed).  tests/harness_shim.c. */
int h_start_shim(struct daemon *d, const char *extra, char *flag, size_t flen);
/* Starts the binary with argv (NULL-terminated, argv[0] ignored) and extra env
 * ("NAME=value", several separated by newlines, or NULL); returns the pid. */
pid_t h_spawn(char *const argv[], const char *env);
/* Waits up to ms for pid to exit; returns its wait status, or -1 on timeout. */
int h_wait(pid_t pid, int ms);
/* SIGTERM, wait up to 15 s, SIGKILL what is left (master and children), and
 * remove the temp dir.  Returns the master's wait status. */
int h_stop(struct daemon *d);
/* h_stop without removing the temp dir, and starting again on it (same port,
 * same config, same data): for recovery tests. */
int h_halt(struct daemon *d);
int h_restart(struct daemon *d);
/* PIDs of the daemon's children from INFO processes (up to max). */
int h_children(const struct daemon *d, pid_t *pids, int max);
int h_alive(pid_t pid);
/* 1 when the daemon under test is a sanitizer build (HOTKVD_VARIANT=asan):
 * its RSS then holds ASan's quarantine of freed memory, so a test's bound on
 * an edge's growth is the release build's to check. */
int h_sanitized(void);
/* A field of /proc/<pid>/status in kB ("VmRSS", "RssAnon"); -1 if unreadable. */
long h_proc_kb(pid_t pid, const char *field);
/* PID of the daemon's child whose process title starts with `prefix`
 * ("hotkvd: owner hot/0", "hotkvd: edge"), other than `not`; 0 if none. */
pid_t h_child(const struct daemon *d, const char *prefix, pid_t not);
/* 1 if one line of the daemon's log holds a, and b and c where not NULL. */
int h_log_has(const struct daemon *d, const char *a, const char *b, const char *c);
/* A process that SIGCONTs a and b (0: none) once the test process goes away
 * (its pipe reaches EOF), however the test ends, so a failed check never
 * leaves a stopped process behind.  Returns the pipe's write end (close it
 * when done) and the guardian's pid in *guard (may be NULL). */
int h_sigcont_guard(pid_t a, pid_t b, pid_t *guard);
/* Prints the daemon log to stderr (for failing tests). */
void h_dump_log(const struct daemon *d);

/* Moves the calling test process (Check's fork of one test) into a network
 * namespace of its own with lo up and a second, non-loopback address on it
 * (198.18.0.2, of the benchmarking range of RFC 2544: no host has it),
 * written to ip: everything the test starts after this runs there, so a
 * "client from another address" never leaves this process's own namespace
 * and no interface of the host is touched.  0, or -1 (no namespace could be
 * made, or Check is not forking: the caller skips). */
int h_private_net(char *ip, size_t len);

/* The test's cleanup (stop its daemon, resume what it stopped), which the
 * checks of the fixture language (h_call) run before they fail the test, so
 * a failure leaves nothing running.  Set per test (each runs in a process of
 * its own); run at most once; NULL: none. */
void h_on_fail(void (*cleanup)(void));
/* Runs the cleanup set with h_on_fail, if any (once). */
void h_fail_cleanup(void);

/* A check that calls cleanup() (stop the test's daemon, resume what it
 * stopped) before it fails the test, so a failure leaves nothing running. */
#define H_EXPECT(cleanup, cond, ...)         \
    do {                                     \
        int ok_ = (cond) ? 1 : 0;            \
        if (!ok_)                            \
            cleanup();                       \
        ck_assert_msg(ok_, __VA_ARGS__);     \
    } while (0)

/* A blocking RESP client with a 5 s receive timeout. */
int h_connect(int port);
/* Sends one command (words) and reads one reply; NULL on error/timeout.
 * The caller frees the reply with h_free. */
struct h_reply {
    struct resp_value *v;
    char *raw;
};
struct h_reply *h_cmd(int fd, int argc, const char **argv);
struct h_reply *h_cmdv(int fd, ...); /* NULL-terminated words */
/* The fixture language for commands: h_call(fd, "SET", "k", "v", NULL) sends
 * the words (NULL-terminated, as h_cmdv) and returns the reply (the caller
 * frees it with h_free); no reply (EOF, 5 s timeout, fd < 0) fails the test
 * at the caller's line, after the h_on_fail cleanup. */
#define h_call(fd, ...) h_call_at(__FILE__, __LINE__, (fd), __VA_ARGS__)
struct h_reply *h_call_at(const char *file, int line, int fd, ...);
/* 1 if v's string is exactly want (reply strings are not NUL-terminated). */
int h_str_is(const struct resp_value *v, const char *want);
/* The value of an attribute's field (CLIENT META's age_ms, stamp, stale,
 * degraded), or NULL (no attribute, no such field). */
const struct resp_value *h_attr_get(const struct resp_value *attr, const char *name);
/* Sends raw bytes. */
int h_send(int fd, const void *p, size_t n);
/* Sends one command (NULL-terminated words) without reading its reply (a
 * pipeline, or a reply read later with h_read); 0 or -1. */
int h_sendv(int fd, ...);
/* Reads one reply after raw sends; NULL on EOF/timeout. */
struct h_reply *h_read(int fd);
void h_free(struct h_reply *r);
/* The value of `field` in an INFO reply (copied into buf); -1 if absent. */
int h_info_field(int port, const char *field, char *buf, size_t len);
/* INFO processes' text (malloc'd: the caller frees it); NULL if it did not
 * answer with one (no connection, NOAUTH). */
char *h_info_processes(int port);
/* The lowest config generation the edges run (INFO processes); -1 if INFO
 * did not answer. */
long long h_edges_generation(const struct daemon *d);
int64_t h_info_int(int port, const char *field);
/* The pid of the edge serving connection fd (INFO server), -1 if unknown. */
int h_edge_of(int fd);
/* Two connections (*a, *b) served by different edges.  Every edge accepts on
 * the same socket, so which one wins a connection is up to the scheduler;
 * the first edge is stopped for a moment so the second connection lands
 * elsewhere.  0, or -1 (nothing left open). */
int h_edge_pair(const struct daemon *d, int *a, int *b);
/* PING over a new connection; 1 if +PONG came back. */
int h_ping(int port);

/* Runs argv (argv[0] a full path) with stdin from `in` (NULL = /dev/null) and
 * stdout+stderr into out (NUL-terminated), killed after ms.  Returns the exit
 * code, or -1 on timeout or a crash.  Every test that runs redis-cli, the
 * python client or openssl goes through here. */
int h_run(char *const argv[], const char *in, char *out, size_t len, int ms);

/* ---- the owner's binary protocol, for owner-level tests ---- */
#include "proto/wire.h"

struct h_wire {
    int fd;
    struct hkv_buf in;
    struct wire_decoder dec;
    uint64_t next_id;
    uint32_t writer;       /* edge_id in HELLO (4000 unless set before open) */
    uint64_t incarnation;  /* this client as an "edge process": random per open */
    uint64_t seq;          /* last write request number given */
    uint64_t owner_inc;    /* from HELLO_OK */
};
/* Connects to owner `index` of pool "hot"/"cold" of daemon d and completes
 * the HELLO handshake with `role` (WIRE_ROLE_*).  0 or -1. */
int h_wire_open(struct h_wire *w, const struct daemon *d, const char *pool, int index, int role);
void h_wire_close(struct h_wire *w);
/* Sends the frame in `req` (built with wire_put_*; its id must be w->next_id
 * as returned by h_wire_id) and waits up to timeout_ms for the reply with that
 * id (replies to other ids are skipped).  0 with *out filled (slices valid
 * until the next call), -1 on timeout/EOF/garbage. */
uint64_t h_wire_id(struct h_wire *w);
/* h_wire_open on owner cold/0, retried every 50 ms for up to ms (an owner
 * being restarted).  0 or -1. */
int h_wire_open_wait(struct h_wire *w, const struct daemon *d, int role, int ms);
int h_wire_call(struct h_wire *w, struct hkv_buf *req, uint64_t id, int timeout_ms,
                struct wire_msg *out);
/* The request id of a new write request (a first attempt; every earlier
 * request of this client counts as finished). */
struct wire_rid h_wire_rid(struct h_wire *w);
/* SET key=value (a new request id, no expiry) and wait for OK. */
int h_wire_set(struct h_wire *w, const char *key, const char *val, int timeout_ms,
               struct wire_msg *out);

#endif /* HKV_HARNESS_H */

/* ---- a real etcd (/usr/bin/etcd, Debian's etcd-server) for cluster tests ---- */
#ifndef HKV_HARNESS_ETCD_H
#define HKV_HARNESS_ETCD_H
#define H_ETCD_MAX_ARGS 8
struct h_etcd {
    pid_t pid;             /* 0 while stopped */
    int port;              /* client port on 127.0.0.1 */
    int peer_port;
    char dir[256];         /* temp dir: data/ and etcd.log */
    char url[64];          /* "http://127.0.0.1:<port>" (https with --cert-file) */
    /* private: the extra arguments (for a restart) and the guardian */
    char args[H_ETCD_MAX_ARGS][320];
    int nargs;
    int tls;
    pid_t guard;
    int guard_fd;
};
/* 1 if /usr/bin/etcd and /usr/bin/etcdctl are installed. */
int harness_etcd_available(void);
/* Starts a one-member etcd on free loopback ports in a new temp dir, with a
 * 1 s progress-notify interval and `extra` arguments (NULL-terminated, at
 * most H_ETCD_MAX_ARGS, or NULL), and waits (up to 20 s) until /health
 * answers (with "--cert-file" in extra, client URLs are https and the wait is
 * for etcd's "ready to serve" log line).  0, or -1 (the log is printed to
 * stderr and nothing is left running).  etcd dies with the process that
 * started it (PR_SET_PDEATHSIG), and a guardian process removes the temp dir
 * then, so a test that fails before harness_etcd_stop leaves nothing behind. */
int harness_etcd_start(struct h_etcd *e, const char *const *extra);
/* SIGTERM, wait up to 10 s, SIGKILL; removes the temp dir.  The exit status. */
int harness_etcd_stop(struct h_etcd *e);
/* Stops etcd by PID (SIGTERM, then SIGKILL after 10 s) keeping its data,
 * ports and temp dir; harness_etcd_restart starts it again on them and waits
 * until it answers (0 or -1).  For "etcd is down for a while" tests. */
int harness_etcd_halt(struct h_etcd *e);
int harness_etcd_restart(struct h_etcd *e);
/* Runs etcdctl against e with the words given (NULL-terminated), 20 s at
 * most; its output in out.  The exit code, or -1. */
int harness_etcdctl(const struct h_etcd *e, char *out, size_t len, ...);
#endif

#!/usr/bin/python3
"""difftest.py - the differential test of issue 13: one seeded stream of
random commands (gen.py) sent to Debian's redis-server and to hotkvd, the
replies compared byte for byte after the rules of differences.py.  A reply
pair that still differs must match one of that file's listed differences;
anything else is a failure, printed with the seed and the step number so it
can be replayed.

    tests/diff/difftest.py --seed 42 --count 10000 [--hotkvd bin/hotkvd]
    tests/diff/difftest.py --seed 42 --count 200 --trace     (every step)

Exit status: 0 clean, 1 unlisted differences, 2 the run itself failed (a
server did not start or died, or --time-limit passed), 77 redis-server is
not installed.

The run is sequential: one step at a time, the same step to Redis first and
then to hotkvd, on connection 0 or 1 of each (two per server, so state that
belongs to a connection, and reads of another connection's writes, are
tested too), plus a third "admin" connection per server that the runner uses
for its own bookkeeping, never compared:
  - before DBSIZE and INFO keyspace every pool key is touched (EXISTS) on
    both servers, so Redis's count does not depend on when its active
    expiry cycle ran;
  - after a difference (listed or not) the pool is re-synchronised: every
    key is copied from Redis (GET, PEXPIRETIME) to hotkvd (SET PXAT or DEL),
    unless the step only read keys, and the connection of that step is
    reopened on both servers unless it was a data command, so one
    difference does not cascade into the steps that follow.
"""

import argparse
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import differences  # noqa: E402
import gen  # noqa: E402
import resp  # noqa: E402
import servers  # noqa: E402

# After a difference: the keys are re-synchronised unless the command only
# reads keys; the connection is reopened unless it was a data command (a
# server command or a raw step may have changed the connection's state).
DATA_READS = {b"GET", b"MGET", b"EXISTS", b"STRLEN", b"TYPE", b"TTL", b"PTTL", b"SCAN", b"DBSIZE",
              b"KEYS", b"RANDOMKEY", b"OBJECT"}
DATA_WRITES = {b"SET", b"SETEX", b"PSETEX", b"SETNX", b"GETSET", b"GETDEL", b"GETEX", b"MSET",
               b"DEL", b"UNLINK", b"EXPIRE", b"PEXPIRE", b"EXPIREAT", b"PEXPIREAT", b"PERSIST",
               b"INCR", b"DECR", b"INCRBY", b"DECRBY", b"FLUSHALL", b"FLUSHDB"}
MAX_RAW_REPLIES = 8     # a raw step reads at most this many replies before its marker


def closed_why(e):
    """A closed connection as a reply: "timeout" (no reply in time) or
    "closed" (EOF or reset, whichever the kernel reported)."""
    return b"timeout" if "timeout" in str(e) else b"closed"


class Side:
    """One server and its connections."""

    def __init__(self, server):
        self.server = server
        self.name = server.name
        self.conns = [None, None]
        self.admin = None
        self.marks = 0

    def open(self, i):
        if self.conns[i] is not None:
            self.conns[i].close()
        self.conns[i] = resp.Conn(self.server.port)

    def open_all(self):
        self.open(0)
        self.open(1)
        if self.admin is not None:
            self.admin.close()
        self.admin = resp.Conn(self.server.port)
        self.admin.call([b"CLIENT", b"SETNAME", b"difftest-admin"])

    def close(self):
        for c in self.conns + [self.admin]:
            if c is not None:
                c.close()

    def run(self, i, kind, payload):
        """Runs one step on connection i; returns the reply.  A raw step is
        followed by ECHO <marker>; its reply is the array of every reply
        before the marker's.  A closed
        connection is the reply ("CLOSED",) and is reopened."""
        c = self.conns[i]
        if kind == "cmd":
            try:
                r = c.call(payload)
            except resp.Closed as e:
                self.open(i)
                return (b"CLOSED", closed_why(e))
            if payload[0].upper() == b"QUIT":
                self.open(i)
            return r
        got = []
        self.marks += 1
        mark = b"difftest-sync-%d" % self.marks
        try:
            c.send_raw(payload + resp.encode([b"ECHO", mark]))
            while len(got) < MAX_RAW_REPLIES:
                r = c.read()
                if r == (b"$", mark):
                    break
                got.append(r)
        except resp.Closed as e:
            self.open(i)
            got.append((b"CLOSED", closed_why(e)))
        return (b"*", got)

    def keys_touch(self):
        for k in gen.KEYS:
            self.admin.call([b"EXISTS", k])


def resync(redis, hotkvd):
    """Copies every pool key from Redis to hotkvd through the admin
    connections, and sets it again on Redis too: a value both servers just
    SET is held the same way by both (OBJECT ENCODING depends on the command
    that made a value).  Returns a list of problems (empty when it worked)."""
    bad = []
    for k in gen.KEYS:
        v = redis.admin.call([b"GET", k])
        t = redis.admin.call([b"PEXPIRETIME", k])
        if v == (b"$", None):
            r = hotkvd.admin.call([b"DEL", k])
            ok = r[0] == b":"
        else:
            w = [b"SET", k, v[1]]
            if t[0] == b":" and int(t[1]) > 0:
                w += [b"PXAT", t[1]]
            r = hotkvd.admin.call(w)
            ok = r == (b"+", b"OK") and redis.admin.call(w) == (b"+", b"OK")
        if not ok:
            bad.append("resync %s: hotkvd answered %s" % (resp.show_cmd([k]), resp.show(r)))
    return bad


def main():
    ap = argparse.ArgumentParser(description="hotkvd vs redis-server, reply by reply")
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock (printed)")
    ap.add_argument("--count", type=int, default=10000, help="steps (commands) to run, at least 1")
    ap.add_argument("--hotkvd", default=os.environ.get("HOTKVD_BIN", "bin/hotkvd"))
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "/usr/bin/redis-server")
    ap.add_argument("--max-failures", type=int, default=20,
                    help="stop after this many unlisted differences")
    ap.add_argument("--trace", action="store_true", help="print every step and both replies")
    ap.add_argument("--keep", action="store_true", help="keep the servers' temp dirs (logs)")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds; past it the run stops and fails (0: none)")
    args = ap.parse_args()
    if args.count < 1:
        ap.error("--count must be at least 1")
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % (1 << 31)
    replay = "replay: make difftest SEED=%d COUNT=%d   (or tests/diff/difftest.py --seed %d --count %d)" % (
        seed, args.count, seed, args.count)

    if not os.access(args.redis_server, os.X_OK):
        print("difftest: skipped: redis-server not installed (apt-get install -y redis-server)")
        return 77
    problems = differences.self_check()
    if problems:
        print("difftest: differences.py is inconsistent:\n  " + "\n  ".join(problems))
        return 2

    redis = Side(servers.Redis(args.redis_server))
    hotkvd = Side(servers.Hotkvd(args.hotkvd))
    started = []
    try:
        for s in (redis, hotkvd):
            s.server.start()
            started.append(s)
            s.open_all()
        return run(args, seed, replay, redis, hotkvd)
    except (RuntimeError, OSError, ValueError, resp.Closed) as e:
        print("difftest: the run failed (seed %d): %s" % (seed, e))
        for s in started:
            if not s.server.alive():
                print("---- %s log:\n%s" % (s.name, s.server.log_tail()))
        print(replay)
        return 2
    finally:
        for s in started:
            s.close()
            s.server.stop(keep_dir=args.keep)
        if args.keep:
            print("difftest: logs kept in %s and %s" % (redis.server.dir, hotkvd.server.dir))


def run(args, seed, replay, redis, hotkvd):
    g = gen.Gen(seed)
    print("difftest: seed %d, %d steps, redis-server port %d, hotkvd port %d (%s)"
          % (seed, args.count, redis.server.port, hotkvd.server.port, args.hotkvd))
    sys.stdout.flush()
    failures = 0
    same = 0
    listed = {}
    listed_steps = 0
    step = -1
    t0 = time.monotonic()
    for step in range(args.count):
        if args.time_limit and time.monotonic() - t0 > args.time_limit:
            raise RuntimeError("time limit of %g s reached after %d steps" % (args.time_limit, step))
        conn, kind, payload = g.step()
        words = payload if kind == "cmd" else [b"<raw>", payload]
        if kind == "cmd" and differences.needs_touch(words):
            redis.keys_touch()
            hotkvd.keys_touch()
        r = redis.run(conn, kind, payload)
        h = hotkvd.run(conn, kind, payload)
        if kind == "cmd":
            r = differences.expand(words, r, lambda w: redis.conns[conn].call(w))
            h = differences.expand(words, h, lambda w: hotkvd.conns[conn].call(w))
        rn, hn = differences.normalise(words, r, h)
        if args.trace:
            print("%6d c%d %s\n         redis:  %s\n         hotkvd: %s%s"
                  % (step, conn, resp.show_cmd(words), resp.show(rn), resp.show(hn),
                     "" if rn == hn else "   <-- differs"))
        if rn == hn:
            same += 1
            continue
        entries = differences.match(words, rn, hn)
        if entries is not None:
            listed_steps += 1
            for e in entries:
                listed[e.key] = listed.get(e.key, 0) + 1
        else:
            failures += 1
            print("DIFF step %d (conn %d, seed %d):\n  command: %s\n  redis:   %s\n  hotkvd:  %s"
                  % (step, conn, seed, resp.show_cmd(words, 2000), resp.show(rn, 2000),
                     resp.show(hn, 2000)))
            sys.stdout.flush()
        name = words[0].upper()
        if name not in DATA_READS and name not in DATA_WRITES:
            for s in (redis, hotkvd):
                s.open(conn)
        if name not in DATA_READS:
            bad = resync(redis, hotkvd)
            if bad:
                raise RuntimeError("; ".join(bad))
        if failures >= args.max_failures:
            print("difftest: stopping after %d unlisted differences" % failures)
            break
    elapsed = time.monotonic() - t0
    for s in (redis, hotkvd):
        if not s.server.alive():
            raise RuntimeError("%s died during the run" % s.name)
    n = step + 1
    print("difftest: %d steps in %.1f s (%.0f commands/s per server): %d same, %d listed "
          "differences, %d unlisted" % (n, elapsed, n / elapsed if elapsed > 0 else 0, same,
                                        listed_steps, failures))
    for key, cnt in sorted(listed.items(), key=lambda kv: -kv[1]):
        print("  listed %5d  %s" % (cnt, key))
    if failures:
        print("difftest: FAILED: %d differences not in tests/diff/differences.py (seed %d)"
              % (failures, seed))
        print(replay)
        return 1
    print("difftest: OK (seed %d)" % seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

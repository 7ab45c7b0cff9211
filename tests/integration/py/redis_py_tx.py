#!/usr/bin/python3
"""redis_py_tx.py PORT - Debian's python3-redis transactions against hotkvd.

Runs README's example as written (r.pipeline() sends MULTI/EXEC), explicit
MULTI/EXEC pipelines, and the transaction() helper with WATCH-based
optimistic locking: several threads increment one counter with
read-modify-write transactions, and the count must come out exact (a
transaction whose watched key changed is retried by the helper, never
applied twice or half).  Exits 0 with "redis-py transactions passed", or 1
with a message on the first mismatch.
"""
import sys
import threading

import redis


def check(what, got, want):
    if got != want:
        print("MISMATCH %s: got %r, want %r" % (what, got, want), file=sys.stderr)
        sys.exit(1)


def readme_example(port):
    # README "Using it", as written (print goes to our stdout)
    r = redis.Redis(port=port)
    r.set("draw:today", "7 12 19 33 41")
    with r.pipeline() as p:          # pipelines, expiries and SCAN work as with Redis
        p.get("draw:today").ttl("draw:today")
        print(p.execute())
    for key in r.scan_iter(match="draw:*"):
        print(key)
    with r.pipeline() as p:
        check("readme pipeline", p.get("draw:today").ttl("draw:today").execute(),
              [b"7 12 19 33 41", -1])


def pipelines(r):
    p = r.pipeline()                  # transaction=True: MULTI ... EXEC
    p.set("{acct:1}:a", 10).set("{acct:1}:b", 20).incrby("{acct:1}:a", 5).mget(
        "{acct:1}:a", "{acct:1}:b")
    check("multi/exec", p.execute(), [True, True, 15, [b"15", b"20"]])
    p = r.pipeline()
    p.append("{acct:1}:s", "ab").getrange("{acct:1}:s", 0, 0).incrbyfloat("{acct:1}:f", 1.5)
    check("new commands in a transaction", p.execute(), [2, b"a", 1.5])
    # an error inside the transaction is that command's result
    p = r.pipeline()
    p.set("{acct:1}:t", "x").incr("{acct:1}:t").get("{acct:1}:t")
    res = p.execute(raise_on_error=False)
    check("error kept in place", (res[0], isinstance(res[1], redis.ResponseError), res[2]),
          (True, True, b"x"))
    # keys on two owners cannot be one transaction ("h:*" is the hot pool in
    # the test's config, the rest the cold one)
    p = r.pipeline()
    p.set("{acct:1}:a", 1).set("h:{acct:1}:a", 1)
    try:
        p.execute()
        ok = "no error"
    except redis.ResponseError as e:
        ok = str(e)
    check("cross-owner transaction", ok, "CROSSSLOT Keys in request don't hash to the same slot")
    check("unchanged when refused", (r.get("{acct:1}:a"), r.get("h:{acct:1}:a")), (b"15", None))
    # hash tags keep related keys on one owner
    check("msetnx", r.msetnx({"{u:7}:name": "n", "{u:7}:mail": "m"}), True)
    check("rename", r.rename("{u:7}:name", "{u:7}:nick"), True)
    check("lcs", r.execute_command("LCS", "{u:7}:nick", "{u:7}:mail"), b"")


def locking(port):
    r = redis.Redis(port=port)
    r.set("{ctr}:n", 0)
    per_thread, threads = 40, 4
    errors = []

    def work():
        c = redis.Redis(port=port)
        try:
            for _ in range(per_thread):
                def incr(pipe):
                    v = int(pipe.get("{ctr}:n"))
                    pipe.multi()
                    pipe.set("{ctr}:n", v + 1)
                c.transaction(incr, "{ctr}:n")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    check("threads finished", [t.is_alive() for t in ts], [False] * threads)
    check("thread errors", errors, [])
    check("optimistic counter", int(r.get("{ctr}:n")), per_thread * threads)

    # a WATCH aborted by another client raises WatchError
    with r.pipeline() as p:
        p.watch("{ctr}:n")
        redis.Redis(port=port).set("{ctr}:n", "other")
        p.multi()
        p.set("{ctr}:n", "mine")
        try:
            p.execute()
            check("watch error raised", False, True)
        except redis.WatchError:
            pass
    check("aborted write not applied", r.get("{ctr}:n"), b"other")


KEYS = ["draw:today", "{acct:1}:a", "{acct:1}:b", "{acct:1}:s", "{acct:1}:f", "{acct:1}:t",
        "h:{acct:1}:a", "{u:7}:name", "{u:7}:mail", "{u:7}:nick", "{r3}:a", "{ctr}:n"]


def main():
    port = int(sys.argv[1])
    redis.Redis(port=port).delete(*KEYS)  # a fresh start, run after run
    readme_example(port)
    pipelines(redis.Redis(port=port))
    r3 = None
    try:
        r3 = redis.Redis(port=port, protocol=3)
        r3.ping()
    except (TypeError, redis.RedisError):
        r3 = None
    if r3 is not None:
        p = r3.pipeline()
        p.set("{r3}:a", "1").get("{r3}:a").get("{r3}:none")
        check("resp3 multi/exec", p.execute(), [True, b"1", None])
    locking(port)
    print("redis-py transactions passed")


if __name__ == "__main__":
    main()

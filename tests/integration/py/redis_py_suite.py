#!/usr/bin/python3
"""redis_py_suite.py PORT - Debian's python3-redis against a running hotkvd.

Exercises what an application does with redis-py: plain commands, pipelines
(without MULTI: transaction=False), expiries, SCAN iteration, mget/mset,
counters, getex/getdel, binary values, and RESP3 when this redis-py has it.
Exits 0 when every check passes, 1 with a message on the first mismatch.
"""
import sys
import time

import redis


def check(what, got, want):
    if got != want:
        print("MISMATCH %s: got %r, want %r" % (what, got, want), file=sys.stderr)
        sys.exit(1)


def suite(r, tag):
    p = tag + ":"
    check("ping", r.ping(), True)
    check("set", r.set(p + "a", "1"), True)
    check("get", r.get(p + "a"), b"1")
    check("get missing", r.get(p + "missing"), None)
    check("set nx fails", r.set(p + "a", "2", nx=True), None)
    check("set xx", r.set(p + "a", "2", xx=True), True)
    check("set get", r.set(p + "a", "3", get=True), b"2")
    check("setnx", r.setnx(p + "n", "x"), True)
    check("setnx again", r.setnx(p + "n", "y"), False)
    check("getset", r.getset(p + "n", "z"), b"x")
    check("binary", r.set(p + "bin", b"\x00\xff\r\n"), True)
    check("binary get", r.get(p + "bin"), b"\x00\xff\r\n")
    check("strlen", r.strlen(p + "bin"), 4)
    check("type", r.type(p + "bin"), b"string")
    check("type none", r.type(p + "nothing"), b"none")

    # counters
    check("incr", r.incr(p + "c"), 1)
    check("incrby", r.incrby(p + "c", 10), 11)
    check("decr", r.decr(p + "c"), 10)
    check("decrby", r.decrby(p + "c", 5), 5)
    r.set(p + "text", "x")
    try:
        r.incr(p + "text")
        check("incr of text raised", False, True)
    except redis.ResponseError as e:
        check("incr error", str(e), "value is not an integer or out of range")

    # multi-key
    kv = {"%sm%d" % (p, i): str(i) for i in range(50)}
    check("mset", r.mset(kv), True)
    keys = list(kv.keys())
    check("mget", r.mget(keys + [p + "none"]), [v.encode() for v in kv.values()] + [None])
    check("exists", r.exists(*keys[:10]), 10)
    check("delete", r.delete(*keys[:20]), 20)
    check("unlink", r.unlink(*keys[:30]), 10)

    # expiries
    check("set px", r.set(p + "e", "v", px=100), True)
    check("pttl", 0 < r.pttl(p + "e") <= 100, True)
    time.sleep(0.3)
    check("expired", r.get(p + "e"), None)
    check("setex", r.setex(p + "e2", 100, "v"), True)
    check("ttl", r.ttl(p + "e2"), 100)
    check("expire", r.expire(p + "e2", 50), True)
    check("ttl after expire", r.ttl(p + "e2"), 50)
    check("persist", r.persist(p + "e2"), True)
    check("ttl after persist", r.ttl(p + "e2"), -1)
    check("pexpire", r.pexpire(p + "e2", 100000), True)
    check("ttl after pexpire", r.ttl(p + "e2"), 100)

    # getex / getdel
    check("getex ex", r.getex(p + "e2", ex=30), b"v")
    check("ttl after getex", r.ttl(p + "e2"), 30)
    check("getex persist", r.getex(p + "e2", persist=True), b"v")
    check("ttl after getex persist", r.ttl(p + "e2"), -1)
    check("getdel", r.getdel(p + "e2"), b"v")
    check("getdel gone", r.getdel(p + "e2"), None)

    # pipeline, no MULTI
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set("%spl%d" % (p, i), i)
        pipe.get("%spl%d" % (p, i))
        pipe.incr(p + "plc")
    out = pipe.execute()
    for i in range(200):
        check("pipeline set %d" % i, out[3 * i], True)
        check("pipeline get %d" % i, out[3 * i + 1], str(i).encode())
        check("pipeline incr %d" % i, out[3 * i + 2], i + 1)

    # SCAN iteration across owners
    seen = set(k.decode() for k in r.scan_iter(match=p + "pl[0-9]*", count=17))
    check("scan_iter", seen, set("%spl%d" % (p, i) for i in range(200)))
    check("dbsize positive", r.dbsize() >= 200, True)


def main():
    port = int(sys.argv[1])
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    suite(r, "py2")
    ver = tuple(int(x) for x in redis.__version__.split(".")[:2])
    if ver >= (5, 0):
        r3 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, protocol=3)
        suite(r3, "py3")
        print("RESP3 checked (redis-py %s)" % redis.__version__)
    else:
        print("RESP3 skipped: redis-py %s has no protocol=3" % redis.__version__)
    print("redis-py suite passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

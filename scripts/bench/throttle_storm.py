#!/usr/bin/python3
"""throttle_storm.py - issue 32's "no owner, no disk" target: a 60 s storm of
CL.THROTTLE over 100,000 keys (redis-benchmark -c 50 -P 16) against a fresh
hotkvd, and what moved meanwhile: INFO's owner_reads, owner_writes,
persist_rows, persist_batches, the app_ratelimit_* counters, and the
write_bytes of every daemon process (/proc/PID/io).  The daemon is started
by tests/diff/servers.py on a free loopback port and stopped by pid.

    /usr/bin/python3 scripts/bench/throttle_storm.py   (from the tree's root)
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, "tests/diff")
import servers, resp
h = servers.Hotkvd("bin/hotkvd"); h.start()
def fields(names):
    c = resp.Conn(h.port); r = c.call([b"INFO", b"all"]); c.close()
    out = {}
    for line in r[1].decode().splitlines():
        k, _, v = line.partition(":")
        if k in names: out[k] = int(v)
    return out
def wbytes():
    tot = 0
    for p in [h.proc.pid] + [int(x) for x in subprocess.run(["pgrep", "-P", str(h.proc.pid)], capture_output=True, text=True).stdout.split()]:
        try:
            for line in open("/proc/%d/io" % p):
                if line.startswith("write_bytes:"): tot += int(line.split()[1])
        except OSError: pass
    return tot
names = ("owner_reads", "owner_writes", "persist_rows", "persist_batches", "app_ratelimit_allowed", "app_ratelimit_rejected", "app_ratelimit_failopen")
try:
    time.sleep(2)
    f0 = fields(names); w0 = wbytes(); t0 = time.time()
    p = subprocess.run(["timeout", "60", "redis-benchmark", "-p", str(h.port), "-c", "50", "-P", "16", "-n", "1000000000", "-r", "100000",
                        "CL.THROTTLE", "user:__rand_int__", "10", "100", "1"], capture_output=True, text=True)
    dt = time.time() - t0
    f1 = fields(names); w1 = wbytes()
    print("storm %.1f s" % dt)
    for k in names: print(k, f1.get(k, 0) - f0.get(k, 0))
    print("write_bytes of every process during the storm:", w1 - w0)
finally:
    h.stop()

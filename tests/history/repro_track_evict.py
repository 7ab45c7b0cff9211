#!/usr/bin/python3
"""repro_track_evict.py - a reproduction, not a suite test (issue 28,
/work/notes/h28-trkhist-bugs.md): with a tracking table over
tracking-table-max-keys, the key a GET has just remembered can be the one
evicted to fit, and its invalidation is then sent BEFORE that GET's reply.
The client drops the key (it does not hold it yet), then caches the reply;
the edge has forgotten the key, so no later write invalidates it: the
client's cache serves that value forever (the history checker found it as
a cached read older than its client's last answer, seed 3).  Fixed by
b1e8b54 (evictions run after the dispatch); kept to show it stays fixed.

    /usr/bin/python3 tests/history/repro_track_evict.py --bin bin/hotkvd [--rounds 200]

One tracking client (RESP3, CLIENT TRACKING on, default mode) GETs keys
k0, k1, ... with tracking-table-max-keys 1, so every GET evicts one of two
keys at random.  For each GET it notes whether an invalidation of the key
it read came before the reply.  Then a writer SETs every key, and the
client waits for invalidations: keys it cached and is never told of are
stale forever.  Exit 1 when such a key exists, 0 otherwise."""

import argparse
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True

from run_daemon import Daemon
from run_resp import Conn
from run_track import TrackConn


def run(port, rounds):
    told = set()
    r = TrackConn(port)
    r.on_push = lambda v: told.update(v[1] if isinstance(v, list) and
                                      isinstance(v[1], list) else [])
    assert r.call(["HELLO", "3"]) is not None
    assert r.call(["CLIENT", "TRACKING", "on"]) == "OK"
    before_reply, cached = 0, {}
    for i in range(rounds):
        k = "hl:ev%d" % i
        told.discard(k)
        v = r.call(["GET", k])
        if k in told:
            before_reply += 1     # told before its own reply: dropped, then cached
        cached[k] = v
        told.discard(k)
    w = Conn(port)
    for k in cached:
        w.call(["SET", k, "new"])
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        r.drain()
        time.sleep(0.05)
    never = [k for k in cached if k not in told]
    w.close()
    r.close()
    return before_reply, never


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    a.shim = a.clockshim = a.admin = None
    a.leaf_moves, a.persist_interval, a.replicas = "no", None, 0
    work, out = tempfile.mkdtemp(prefix="hkv-trkev-"), tempfile.mkdtemp(prefix="hkv-trkev-out-")
    hkv = Daemon(a, work, out, 1)
    hkv.tracking_max_keys = 1
    try:
        hkv.write_conf()
        hkv.start()
        before, never = run(hkv.port, a.rounds)
    finally:
        hkv.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    print("tracking-table-max-keys 1, %d GETs: %d invalidations of the key read came before "
          "its reply; after a SET of every key, %d cached keys never invalidated%s" % (
              a.rounds, before, len(never), (" (e.g. %s)" % ", ".join(never[:5])) if never else ""))
    return 1 if never else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""repro_reveal.py - a reproduction, not a suite test: in one colo, an
owner's answer that changes nothing or fails on the value can reveal a write
the colo cache does not hold yet, and a read through another edge then gets
the older value (issue 27 session 7; tests/history/README.md, "Known").

    /usr/bin/python3 tests/history/repro_reveal.py --bin bin/hotkvd --mode incr
        [--replicas 0|1] [--seconds 15]

A writer W (one edge) and a reader R (the other edge), one key:
  incr    W: SET k <n>, SET k x<n>, n = 1, 2, ...  R: INCRBY k 0, GET k.
          After R saw integer m, an INCRBY error ("not an integer") means
          the owner held x<j>, j >= m, so a GET must not answer m or less.
  expire  W: SET k a<n>, DEL k.  R: GET k, PEXPIRE k -1, GET k.  After R
          saw a<m>, PEXPIRE answered 0 means a DEL after a<j>, j >= m, was
          applied, so a GET must not answer a<m> or older.
Prints the counts; exit 1 when such a read was seen, 0 otherwise (every
run is bounded by --seconds; the daemon is started in a temp dir and
stopped by pid)."""

import argparse
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True

from run_daemon import Daemon
from run_resp import Conn, RespError, info_fields


def conn_on(port, avoid=None):
    """A connection to an edge other than `avoid` (by edge pid), and its pid."""
    for _ in range(40):
        c = Conn(port)
        pid = int(info_fields(c.call(["INFO", "server"]))["edge_pid"])
        if pid != avoid:
            return c, pid
        c.close()
    raise RuntimeError("every connection landed on edge %d" % avoid)


def run(port, mode, seconds):
    key = "hl:reveal" if mode == "incr" else "hd:reveal"
    w, wpid = conn_on(port)
    r, _ = conn_on(port, avoid=wpid)
    stop = time.monotonic() + seconds
    seen = {"reveals": 0, "older": []}

    def writer():
        n = 0
        while time.monotonic() < stop:
            n += 1
            if mode == "incr":
                w.call(["SET", key, str(n)])
                w.call(["SET", key, "x%d" % n])
            else:
                w.call(["SET", key, "a%d" % n])
                w.call(["DEL", key])

    def number(v):
        return int(v.lstrip("xa")) if isinstance(v, str) else None

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    last = 0
    while time.monotonic() < stop:
        if mode == "incr":
            a = r.call(["INCRBY", key, "0"])
            revealed = isinstance(a, RespError)
            if isinstance(a, int):
                last = max(last, a)
        else:
            last = max(last, number(r.call(["GET", key])) or 0)
            revealed = r.call(["PEXPIRE", key, "-1"]) == 0
        if not revealed:
            continue
        seen["reveals"] += 1
        g = r.call(["GET", key])
        older = g is not None and (g.isdigit() if mode == "incr" else True) and number(g) <= last
        if older:
            seen["older"].append((last, g))
        last = max(last, number(g) or 0)
    th.join(5)
    w.close()
    r.close()
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mode", choices=["incr", "expire"], default="incr")
    ap.add_argument("--replicas", type=int, choices=[0, 1], default=0)
    ap.add_argument("--seconds", type=float, default=15.0)
    a = ap.parse_args()
    a.shim = a.clockshim = a.admin = None
    a.leaf_moves, a.persist_interval = "yes", None
    work, out = tempfile.mkdtemp(prefix="hkv-reveal-"), tempfile.mkdtemp(prefix="hkv-reveal-out-")
    hkv = Daemon(a, work, out, 1)
    try:
        hkv.write_conf()
        hkv.start()
        time.sleep(3.0)  # with replicas 1: the first leaves get their followers
        seen = run(hkv.port, a.mode, a.seconds)
    finally:
        hkv.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    print("mode %s, replicas %d: %d answers revealing the key's state, %d reads after them "
          "answering an older value%s" % (a.mode, a.replicas, seen["reveals"], len(seen["older"]),
                                           (": " + ", ".join("saw %d, then %r" % x for x in
                                                             seen["older"][:5]))
                                           if seen["older"] else ""))
    return 1 if seen["older"] else 0


if __name__ == "__main__":
    sys.exit(main())

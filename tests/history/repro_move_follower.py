#!/usr/bin/python3
"""repro_move_follower.py - a reproduction, not a suite test: with
`replicas 1` on one host (leaf-moves yes, 2 owners a pool), `hotkvd-admin
leaf move` of a leaf to its own in-sync follower (issue 27 session 7).

    /usr/bin/python3 tests/history/repro_move_follower.py --bin bin/hotkvd [--leaves 8]

The daemon starts in a temp dir; once the first hot leaves have a follower,
each of --leaves of them is moved to that follower (--wait 5000), one after
another, and then a SET of a key of each leaf must be acknowledged within
10 s.  Prints, per leaf, the move's exit and last line and whether the leaf
took the write; exit 1 when a leaf did not (it stays "moving") or when no
move was done at all, 0 otherwise.
The daemon is stopped by pid; every wait is bounded."""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True

from run_daemon import Daemon
from run_leaves import LeafMap, leaf_name, leaf_probe
from run_resp import Conn, Transport


def admin(hkv, *args, timeout=30.0):
    p = subprocess.run([hkv.admin_bin, hkv.conf] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


def writable(port, key, within=10.0):
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            c = Conn(port, timeout=2.0)
            try:
                if c.call(["SET", key, "v"], timeout=max(1.0, end - time.monotonic())) == "OK":
                    return True
            finally:
                c.close()
        except (OSError, Transport):
            pass
        time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--leaves", type=int, default=8)
    a = ap.parse_args()
    a.shim = a.clockshim = a.admin = None
    a.leaf_moves, a.persist_interval, a.replicas = "yes", None, 1
    work, out = tempfile.mkdtemp(prefix="hkv-mvf-"), tempfile.mkdtemp(prefix="hkv-mvf-out-")
    hkv = Daemon(a, work, out, 1)
    stuck = moved = tried = 0
    try:
        hkv.write_conf()
        hkv.start()
        followed, end = [], time.monotonic() + 30.0
        while len(followed) < a.leaves and time.monotonic() < end:
            time.sleep(1.0)
            code, text = admin(hkv, "leaf", "list")
            m = LeafMap(text if code == 0 else "", time.monotonic())
            followed = [l for l in m.leaves.get("hot", []) if l[4] == "serving" and l[6]]
        for leaf in followed[:a.leaves]:
            t0 = time.monotonic()
            code, text = admin(hkv, "leaf", "move", "hot", leaf_name(leaf), str(leaf[6][0]),
                               "--wait", "5000")
            ok = writable(hkv.port, leaf_probe("hot", leaf))
            stuck += not ok
            moved += code == 0
            print("move hot %s owner %d -> %d: exit %d in %.0f ms (%s); a write then: %s" % (
                leaf_name(leaf), leaf[2], leaf[6][0], code, (time.monotonic() - t0) * 1000,
                text.splitlines()[-1] if text else "", "acknowledged" if ok else
                "NOT acknowledged within 10 s"))
        tried = min(len(followed), a.leaves)
        print("%d leaves asked to move to their follower: %d moved, %d left unwritable" %
              (tried, moved, stuck))
    finally:
        hkv.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return 1 if stuck or (tried and not moved) else 0


if __name__ == "__main__":
    sys.exit(main())

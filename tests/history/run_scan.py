"""run_scan.py - SCAN in the history run: a scanner walks the whole keyspace
again and again through every fault (owner kills, leaf moves and splits,
reloads, evictions to disk) and judges each complete walk by SCAN's
promise (README, Redis's own): every key present for the whole walk is
returned.

The keys judged are stable ones written before the workload starts and
never touched after: hl:scan:N (the hot pool, a ledger class) and
hd:scan:N (the cold pool, durable), so "present for the whole walk" holds
for every walk.  The ledger ones are written, then the run waits one
persist interval before the nemesis starts, so an owner kill cannot take
them (replicas 0 loses acknowledged ledger writes of the last interval,
which is not SCAN's business).  A walk uses one COUNT (1 to 200) and, one
in four, MATCH h?:scan:*; a call that fails (an owner restarting, TRYAGAIN)
is asked again with the same cursor, a cursor being a position in the hash
space that stays valid; a walk that cannot finish (too many failures, more
calls than the bound) is abandoned and counted, never judged.

Judged: a complete walk that misses a stable key, or returns a key under
the scan prefix that was never written, is a broken promise (the run
fails).  Counted: walks, calls, abandoned walks, keys returned twice in one
walk (allowed by Redis, counted)."""

import random
import threading
import time

from run_resp import Conn, RespError, Transport

STABLE_PER_POOL = 60
MATCH = "h?:scan:*"
CALLS_MAX = 20000           # per walk
FAILS_MAX = 60              # failed calls per walk before it is abandoned
WALK_GAP_S = 0.05           # between walks: a steady, modest load


def stable_keys():
    return ["hl:scan:%d" % i for i in range(STABLE_PER_POOL)] + \
           ["hd:scan:%d" % i for i in range(STABLE_PER_POOL)]


def write_stable(hkv, deadline_s=60.0):
    """SETs every stable key (retried until OK); raises RuntimeError past the deadline."""
    end = time.monotonic() + deadline_s
    left = list(stable_keys())
    conn = None
    while left:
        if time.monotonic() > end:
            raise RuntimeError("scan: %d stable keys not written in %.0f s" % (len(left),
                                                                            deadline_s))
        try:
            if conn is None:
                conn = Conn(hkv.port, timeout=5.0)
            r = conn.call(["SET", left[0], "stable"], timeout=5.0)
        except (OSError, Transport):
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.2)
            continue
        if r == "OK":
            left.pop(0)
        else:
            time.sleep(0.1)
    if conn is not None:
        conn.close()


def judge(stable, seen):
    """What a complete walk that returned `seen` (key -> times) broke, or ""."""
    missing = sorted(stable - set(seen))
    invented = sorted(k for k in seen if ":scan:" in k and k not in stable)
    parts = []
    if missing:
        parts.append("missed %d keys present throughout: %s" % (len(missing), missing[:5]))
    if invented:
        parts.append("returned keys never written: %s" % invented[:5])
    return "; ".join(parts)


class Scanner(threading.Thread):
    def __init__(self, seed, hkv, stop):
        threading.Thread.__init__(self, daemon=True, name="scanner")
        self.hkv, self.stop = hkv, stop
        self.rng = random.Random("%s-scanner" % seed)
        self.walks = self.calls = self.abandoned = self.twice = 0
        self.broken = []
        self.error = None
        self.stable = set(stable_keys())

    def _call(self, conn, cur, count, match):
        args = ["SCAN", cur, "COUNT", str(count)] + (["MATCH", match] if match else [])
        return conn.call(args, timeout=5.0)

    def walk(self, conn):
        """One whole walk; (conn, keys seen or None when abandoned)."""
        count = self.rng.choice([1, 3, 10, 10, 50, 200])
        match = MATCH if self.rng.random() < 0.25 else None
        cur, seen, fails, calls, t0 = "0", {}, 0, 0, time.monotonic()
        while not self.stop.is_set() and calls < CALLS_MAX and fails < FAILS_MAX:
            try:
                if conn is None:
                    conn = Conn(self.hkv.port, timeout=5.0)
                r = self._call(conn, cur, count, match)
            except (OSError, Transport):
                if conn is not None:
                    conn.close()
                conn, fails = None, fails + 1
                time.sleep(0.1)
                continue
            calls += 1
            self.calls += 1
            if isinstance(r, RespError):
                fails += 1
                time.sleep(0.05)
                continue
            if not (isinstance(r, list) and len(r) == 2 and isinstance(r[1], list)):
                self.error = "scanner: SCAN answered %r" % (r,)
                return conn, None
            for k in r[1]:
                seen[k] = seen.get(k, 0) + 1
            cur = r[0]
            if cur == "0":
                return conn, (seen, count, match, t0, calls)
        return conn, None

    def run(self):
        conn = None
        while not self.stop.is_set():
            conn, res = self.walk(conn)
            if res is None:
                if not self.stop.is_set():
                    self.abandoned += 1
                continue
            seen, count, match, t0, calls = res
            self.walks += 1
            time.sleep(WALK_GAP_S)
            self.twice += sum(1 for n in seen.values() if n > 1)
            bad = judge(self.stable, seen)
            if bad:
                self.broken.append("a SCAN walk (COUNT %d%s, %d calls, begun %.2f) %s" % (
                    count, ", MATCH " + match if match else "", calls, t0, bad))
        if conn is not None:
            conn.close()

    def summary(self):
        return ("scan: %d complete walks (%d calls), %d abandoned, %d keys returned twice "
                "in a walk, %d stable keys each; %d broken" % (
                    self.walks, self.calls, self.abandoned, self.twice, len(self.stable),
                    len(self.broken)))

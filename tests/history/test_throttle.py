#!/usr/bin/python3
"""Tests of run_throttle.py's checks on made-up records: the window sweep
against a brute force, a simulated GCRA (exact decisions inside each call's
interval) that must pass, and the violations it must find."""

import os
import random
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run_throttle as rt  # noqa: E402


def brute(calls, T):
    best = None
    for a in {c[0] for c in calls}:
        for b in {c[1] for c in calls}:
            if b < a:
                continue
            u = sum(x[2] for x in calls if x[0] >= a and x[1] <= b)
            ex = u - (b - a) / T
            if best is None or ex > best:
                best = ex
    return best


def gcra_sim(seed, n=3000, key="thr:0", colo="a", lag=0.004, t_start=100.0, resets=()):
    """Calls of several clients; the table decides at s in [t0, t1] with
    gcra.c's arithmetic; a reset (t0, t1) empties the table."""
    rng = random.Random(seed)
    B, count, period = rt.THROTTLE_KEYS[key]
    T = rt.interval_s(key)
    tol = (B + 1) * T
    evs = []
    t = t_start
    for i in range(n):
        t += rng.expovariate(60.0)
        t0 = t
        s = t0 + rng.uniform(0, lag)
        t1 = s + rng.uniform(0, lag) + (0.05 if rng.random() < 0.01 else 0)
        q = rng.choice([0, 1, 1, 1, 2])
        evs.append((s, t0, t1, q))
    evs.sort()
    tat = 0.0
    recs = []
    ri = 0
    for s, t0, t1, q in evs:
        while ri < len(resets) and s >= resets[ri][0]:
            tat = 0.0
            ri += 1
        if any(a <= s <= b for a, b in resets):
            continue
        base = max(tat, s)
        new = base + q * T
        diff = s - (new - tol)
        if diff < 0:
            lim, retry, ttl = 1, int(-diff), base - s
        else:
            lim, retry, ttl = 0, -1, new - s
            tat = new
        nxt = tol - ttl
        rem = max(0, int(nxt / T + 1e-9)) if nxt > -T else 0
        recs.append({"kind": "throttle", "via": "resp", "client": 1, "colo": colo, "edge": "a/0",
                     "key": key, "burst": B, "count": count, "period": period, "quantity": q,
                     "t0": t0, "t1": t1, "outcome": "ok", "failopen": False,
                     "reply": [lim, B + 1, rem, retry, int(ttl)]})
    for i, r in enumerate(recs):
        r["id"] = i + 1
    return recs


def hist(lines):
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "w") as f:
        f.write('{"kind":"header"}\n')
        for l in lines:
            f.write(l + "\n")
    return path


class TestThrottle(unittest.TestCase):
    def test_sweep_matches_brute_force(self):
        rng = random.Random(5)
        for _ in range(300):
            calls = []
            for _ in range(rng.randint(1, 25)):
                t0 = rng.uniform(0, 2)
                calls.append((t0, t0 + rng.uniform(0, 0.3), rng.choice([1, 1, 2])))
            T = rng.choice([0.05, 0.1, 0.2])
            ex, a, b, units = rt.worst_window(calls, T)
            self.assertAlmostEqual(ex, brute(calls, T), places=9)
            self.assertAlmostEqual(ex, units - (b - a) / T, places=9)

    def test_gcra_passes(self):
        path = hist([])
        for seed in range(5):
            recs = gcra_sim(seed)
            broken, line = rt.check(recs, path, 1)
            self.assertEqual(broken, [], line)
            self.assertIn("over the bound 0", line)

    def test_extra_admission_caught(self):
        path = hist([])
        recs = gcra_sim(1)
        # a few limited answers turned into admissions: more than GCRA allows
        lim = [r for r in recs if r["reply"][0] == 1 and r["quantity"] == 1]
        for r in lim[100:110]:
            r["reply"] = [0, r["reply"][1], 0, -1, 0]
        broken, line = rt.check(recs, path, 1)
        self.assertTrue(any("units admitted within" in b for b in broken), line)

    def test_reset_splits_epochs(self):
        # a short outage: the fresh burst after it is more than the time allows
        resets = [(130.0, 130.02)]
        recs = gcra_sim(2, resets=resets)
        path = hist(['{"kind":"fault","f":"kill_master","t0":130.0,"t1":130.01}',
                     '{"kind":"fault","f":"restart","t0":130.01,"t1":130.02}'])
        broken, line = rt.check(recs, path, 1)
        self.assertEqual(broken, [], line)
        # without the restart's lines the fresh burst after it is over the bound
        broken, line = rt.check(recs, hist([]), 1)
        self.assertTrue(broken, line)

    def test_failopen_left_out(self):
        recs = gcra_sim(3)
        lim = [r for r in recs if r["reply"][0] == 1 and r["quantity"] == 1]
        for r in lim[100:110]:
            r["reply"] = [0, r["reply"][1], r["reply"][1] - 1, -1, 0]
            r["failopen"] = True
        broken, line = rt.check(recs, hist([]), 1)
        self.assertEqual(broken, [], line)
        self.assertIn("(10 failed open)", line)

    def test_limited_without_cause(self):
        recs = gcra_sim(4)
        # a limited answer long after the last admission
        last = max(r["t1"] for r in recs)
        recs.append(dict(recs[-1], id=len(recs) + 1, t0=last + 5.0, t1=last + 5.001, quantity=1,
                         reply=[1, 5, 0, 0, 0]))
        broken, line = rt.check(recs, hist([]), 1)
        self.assertEqual(len(broken), 1, broken)
        self.assertIn("limited without an admission", broken[0])

    def test_malformed(self):
        base = gcra_sim(6, n=10)[0]
        for reply in ([0, 5, 4, -1], [0, 6, 4, -1, 0], [0, 5, 6, -1, 0], [0, 5, 4, 0, 0],
                      [1, 5, 0, -1, 0], [2, 5, 0, 0, 0], [0, 5, 4, -1, 3], [1, 5, 0, 1, 0],
                      [0, 5, True, -1, 0]):
            r = dict(base, reply=reply)
            self.assertIsNotNone(rt.malformed(r), reply)
        self.assertIsNone(rt.malformed(dict(base, reply=[0, 5, 4, -1, 0])))
        self.assertIsNone(rt.malformed(dict(base, reply=[1, 5, 0, 0, 0])))


if __name__ == "__main__":
    unittest.main()

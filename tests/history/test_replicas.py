#!/usr/bin/python3
"""test_replicas.py - the history checker's replicas mode (issue 27).

Run from the repo root:
    /usr/bin/python3 -m unittest tests/history/test_replicas.py
    /usr/bin/python3 tests/history/test_replicas.py

With `replicas` >= 1 (the header's field, or --replicas / replicas= of
check_history) an owner kill promotes an in-sync follower holding every
acknowledged write, so the checker allows no loss across a crash for any
class; without it a ledger write acknowledged within the persist window
before a crash may be lost.  The same hand-made histories are checked both
ways: what the default mode lets pass inside the window the replicas mode
flags, which is what makes a run with `replicas 1` that passes mean
something.  And the runner's check of the hand-over promise, which the
checker cannot see (a failed write is a legal history).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import checker  # noqa: E402
from checker_hist import CheckerCase, Hist  # noqa: E402

CHECKER = os.path.join(HERE, "checker.py")


def lost_inside_window():
    """hl's window is 600 ms: "a" acknowledged 300 ms before the crash of
    its owner, read back as the older value after it."""
    h = Hist()
    h.set(1, "hl:0", "old", 0.5, 0.6)
    h.set(1, "hl:0", "a", 1.6, 1.7).crash("hot/0", 2.0)
    h.get(2, "hl:0", 3.0, 3.1, "old")
    return h


def with_replicas(h, n):
    h.lines[0]["replicas"] = n
    return h


class ReplicasMode(CheckerCase):
    def test_loss_inside_the_window_passes_in_the_default_mode(self):
        self.assertPasses(lost_inside_window())

    def test_loss_inside_the_window_is_flagged_with_replicas_in_the_header(self):
        res = self.assertAnomaly(with_replicas(lost_inside_window(), 1),
                                 checker.A_REPLICA_LOST, key="hl:0")
        self.assertEqual(len(res.anomalies[0].crashes), 1)
        self.assertIn("replicas 1", res.summary())

    def test_replicas_argument_overrides_the_header(self):
        res = lost_inside_window().check(replicas=1)
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertEqual(res.anomalies[0].name, checker.A_REPLICA_LOST)
        res = with_replicas(lost_inside_window(), 1).check(replicas=0)
        self.assertEqual(res.exit_code, checker.EXIT_OK, res.report())

    def test_key_gone_after_the_crash_is_flagged(self):
        # the only write of the key acknowledged, then nil after the kill
        h = with_replicas(Hist(), 1)
        h.set(1, "hl:1", "a", 1.8, 1.9).crash("hot/0", 2.0)
        h.get(2, "hl:1", 2.5, 2.6, None)
        self.assertAnomaly(h, checker.A_REPLICA_LOST, key="hl:1")

    def test_durable_loss_is_named_as_a_replica_loss(self):
        h = with_replicas(Hist(), 1)
        h.set(1, "hd:0", "a", 1, 2).crash("cold/0", 3)
        h.get(2, "hd:0", 4, 5, None)
        self.assertAnomaly(h, checker.A_REPLICA_LOST)

    def test_nothing_lost_across_the_crash_passes(self):
        h = with_replicas(Hist(), 1)
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "a", 1.6, 1.7).crash("hot/0", 2.0)
        h.get(2, "hl:0", 2.2, 2.3, "a")
        h.set(1, "hl:0", "b", 2.4, 2.5).get(2, "hl:0", 3.0, 3.1, "b")
        self.assertPasses(h)

    def test_unknown_write_in_flight_at_the_crash_may_be_lost(self):
        # its outcome was never told: the new primary may not hold it
        h = with_replicas(Hist(), 1)
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "a", 1.9, 2.8, outcome="info", value=None)
        h.crash("hot/0", 2.0)
        h.get(2, "hl:0", 3.0, 3.1, "old")
        self.assertPasses(h)

    def test_unknown_write_in_flight_at_the_crash_may_survive(self):
        h = with_replicas(Hist(), 1)
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "a", 1.9, 2.8, outcome="info", value=None)
        h.crash("hot/0", 2.0)
        h.get(2, "hl:0", 3.0, 3.1, "a")
        self.assertPasses(h)

    def test_counter_loses_no_increment_across_a_kill(self):
        h = with_replicas(Hist(), 1)
        for i in range(5):
            h.op(1, "incrby", "hl:2", 1 + 0.1 * i, 1.05 + 0.1 * i, value=i + 1, delta=1)
        h.crash("hot/0", 1.6)
        h.op(1, "incrby", "hl:2", 2.0, 2.1, value=4, delta=1)   # one went missing
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertEqual(with_replicas(h, 0).check().exit_code, checker.EXIT_OK)

    def test_bad_replicas_in_the_header_is_bad_input(self):
        h = with_replicas(Hist(), -1)
        with self.assertRaises(checker.BadHistory):
            h.check()

    def test_cli_replicas_flag(self):
        h = lost_inside_window()
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for x in h.lines:
                f.write(json.dumps(x) + "\n")
            path = f.name
        try:
            runs = {}
            for extra in ([], ["--replicas", "1"]):
                p = subprocess.run(["/usr/bin/python3", CHECKER, path, "--quiet"] + extra,
                                   capture_output=True, text=True, timeout=120)
                runs[bool(extra)] = p
            self.assertEqual(runs[False].returncode, checker.EXIT_OK, runs[False].stdout)
            self.assertEqual(runs[True].returncode, checker.EXIT_ANOMALY, runs[True].stdout)
            self.assertIn(checker.A_REPLICA_LOST, runs[True].stdout)
        finally:
            os.unlink(path)


class HandOverPromise(unittest.TestCase):
    """The runner's own check of README's hand-over promise (run_replicas.py
    Replicas.check_history): a write to a handed-over leaf's keys that meets
    a leaf_failover must not fail or be left unknown; a value's own error
    (INCRBY of a string) and writes to other keys or at other times are no
    concern of it."""

    def check(self, ops):
        from run_replicas import Replicas

        class Leaves:  # what check_history reads of run_leaves.Leaves
            class workload:
                counter = {"hl:3": "hl:n{hl:3}"}
        lines = [{"kind": "header", "started": 0.0},
                 {"kind": "fault", "f": "leaf_failover", "target": "hot 10-00000002",
                  "t0": 10.0, "t1": 10.5, "detail": {"keys": ["hl:3"], "handed_over": True}}]
        for i, (f, key, t0, t1, outcome, error) in enumerate(ops):
            lines.append({"kind": "op", "id": i + 1, "client": 1, "f": f, "key": key,
                          "t0": t0, "t1": t1, "outcome": outcome, "error": error})
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        try:
            r = Replicas(None, Leaves(), print)
            seen = r.check_history(path)
        finally:
            os.unlink(path)
        return seen, r.broken

    def test_answered_writes_keep_it(self):
        seen, broken = self.check([
            ("incrby", "hl:n{hl:3}", 9.9, 10.2, "ok", None),
            ("incrby", "hl:3", 10.1, 10.3, "fail", "ERR value is not an integer or out of range"),
            ("set", "hl:4", 10.1, None, "info", "runner: timeout"),      # another key
            ("set", "hl:3", 11.0, None, "info", "runner: timeout"),      # after it
            ("get", "hl:3", 10.1, 10.2, "fail", "TRYAGAIN owner did not answer")])  # a read
        self.assertEqual((seen, broken), (2, []))

    def test_unknown_or_failed_writes_break_it(self):
        seen, broken = self.check([
            ("incrby", "hl:n{hl:3}", 10.1, None, "info", "runner: timeout"),
            ("set", "hl:3", 9.0, 10.05, "info", "UNAVAILABLE outcome unknown"),
            ("del", "hl:3", 10.4, 10.6, "fail", "TRYAGAIN owner hot/0 cannot be reached now")])
        self.assertEqual(seen, 3)
        self.assertEqual(len(broken), 3, broken)
        self.assertTrue(all(b.startswith("hand-over failed a write") for b in broken), broken)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""test_composed.py - the checker logic of issue 25's composed nemesis:
move lines (a key's owner changes when its leaf moves, and a crash loses
only what its owner held then), the "write applied twice" name (a write in
flight across a fault whose second application explains the core), and the
revoked-credential check of run_creds.py.

    /usr/bin/python3 tests/history/test_composed.py
"""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import checker  # noqa: E402
from run_creds import check_auth  # noqa: E402
from checker_hist import Hist  # noqa: E402


def move(h, keys, frm, to, t0, t1):
    h.lines.append({"kind": "move", "keys": keys, "from": frm, "to": to,
                    "t0": 100.0 + t0, "t1": 100.0 + t1})
    return h


def fault(h, f, target, t0, t1):
    h.lines.append({"kind": "fault", "f": f, "target": target, "t0": 100.0 + t0,
                    "t1": 100.0 + t1, "detail": {}})
    return h


class MoveLines(unittest.TestCase):
    def lost_after_crash_of(self, owner, with_move):
        # hl:0 starts at hot/0; a write, then a crash within the persist
        # window (600 ms) of the owner named, then a read of nothing.
        h = Hist()
        if with_move:
            move(h, ["hl:0"], "hot/0", "hot/1", 1.0, 1.1)
        h.set(1, "hl:0", "a", 2.0, 2.1).crash(owner, 2.3)
        h.get(2, "hl:0", 4.0, 4.1, None)
        return h.check()

    def test_a_crash_of_the_new_owner_may_lose_the_window(self):
        res = self.lost_after_crash_of("hot/1", with_move=True)
        self.assertEqual(res.exit_code, checker.EXIT_OK, res.report())

    def test_without_the_move_that_crash_is_not_the_keys(self):
        res = self.lost_after_crash_of("hot/1", with_move=False)
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_a_crash_of_the_old_owner_after_the_move_is_not_the_keys(self):
        res = self.lost_after_crash_of("hot/0", with_move=True)
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertIn("lost", res.anomalies[0].name)

    def test_during_the_move_both_owners_may_hold_the_key(self):
        h = Hist()
        move(h, ["hl:0"], "hot/0", "hot/1", 1.0, 3.0)
        h.set(1, "hl:0", "a", 2.0, 2.1).crash("hot/0", 2.3)
        h.get(2, "hl:0", 4.0, 4.1, None)
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_OK, res.report())
        self.assertEqual(checker.load_history([json.dumps(x) for x in h.lines])
                         .owner_spans("hl:0"),
                         [("hot/0", -checker.INF, 103.0), ("hot/1", 101.0, checker.INF)])

    def test_the_report_names_the_owner_that_crashed(self):
        h = Hist()
        move(h, ["hd:0"], "cold/0", "cold/1", 1.0, 1.1)
        h.set(1, "hd:0", "a", 2.0, 2.1).crash("cold/1", 3.0)
        h.get(2, "hd:0", 4.0, 4.1, None)
        res = h.check()
        self.assertEqual(res.anomalies[0].name, checker.A_DURABLE_CRASH, res.report())
        self.assertIn("crash of cold/1", res.report())

    def test_bad_move_lines(self):
        for bad in ({"keys": ["nope:1"], "from": "hot/0", "to": "hot/1", "t0": 1, "t1": 2},
                    {"keys": "hl:0", "from": "hot/0", "to": "hot/1", "t0": 1, "t1": 2},
                    {"keys": ["hl:0"], "from": "hot/0", "to": "hot/1", "t0": 2, "t1": 1},
                    {"keys": ["hl:0"], "from": None, "to": "hot/1", "t0": 1, "t1": 2}):
            h = Hist()
            h.lines.append(dict(bad, kind="move"))
            with self.assertRaises(checker.BadHistory):
                h.check()


class AppliedTwice(unittest.TestCase):
    def test_an_increment_in_flight_across_a_pause_applied_twice(self):
        # +1 answered 1 while an owner was paused; +5 then answered 7: the
        # +1 was applied a second time.
        h = Hist()
        fault(h, "move_pause", "hot 10-00000001", 0.5, 2.5)
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=7, delta=5)
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        a = res.anomalies[0]
        self.assertEqual(a.name, checker.A_APPLIED_TWICE, res.report())
        self.assertEqual(a.dup.id, 1)
        self.assertIn("op id 1 took effect a second time", res.report())
        self.assertEqual(a.to_dict()["applied_twice"], 1)

    def test_no_fault_no_retry_named(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=7, delta=5)
        res = h.check()
        self.assertEqual(res.anomalies[0].name, checker.A_INCR_TOTAL, res.report())

    def test_a_total_no_second_application_explains(self):
        # 1 then 10 (+5): no write applied twice makes 10.
        h = Hist()
        fault(h, "pause_owner", "hot/0", 0.5, 2.5)
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=10, delta=5)
        res = h.check()
        self.assertEqual(res.anomalies[0].name, checker.A_INCR_TOTAL, res.report())


class RevokedCredentials(unittest.TestCase):
    def att(self, user, pw, t0, accepted, via="http"):
        return {"via": via, "user": user, "password": pw, "t0": t0, "t1": t0 + 0.01,
                "accepted": accepted, "reply": "200" if accepted else "401"}

    def test_accepted_after_revocation_is_reported(self):
        revoked = {("churn", "old"): 10.0}
        attempts = [self.att("churn", "old", 9.0, True),       # before: fine
                    self.att("churn", "old", 10.01, True),     # within the margin
                    self.att("churn", "old", 11.0, False),     # refused: fine
                    self.att("churn", "old", 12.0, True),      # the bug
                    self.att("churn", "new", 12.0, True)]      # never revoked
        tried, bad = check_auth(attempts, revoked)
        self.assertEqual(tried, 2)
        self.assertEqual([a["t0"] for a in bad], [12.0])

    def test_nothing_revoked_nothing_tried(self):
        self.assertEqual(check_auth([self.att("a", "b", 1.0, True)], {}), (0, []))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""test_checker.py - the history checker against hand-made and generated histories.

Run from the repo root:
    /usr/bin/python3 -m unittest tests/history/test_checker.py
    /usr/bin/python3 tests/history/test_checker.py

Hand-made histories: each anomaly the checker names is flagged with that
name, and each correct pattern passes.  Generated histories come from a
simulated store that is linearizable by construction (ops take effect at a
random point of their interval, reads see a state within the allowed delta,
crashes roll back within the persist window), so they must pass; one of them
is the performance test.  Small ones, with an answer changed or not, are
also decided by brute force from the definitions, and the search must agree.
"""

import bisect
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import checker  # noqa: E402

CHECKER = os.path.join(HERE, "checker.py")

CLASSES = {
    "hl": {"durability": "ledger", "pool": "hot", "fresh_ms": 1000,
           "keep_ms": 60000, "persist_window_ms": 600, "read_delta_ms": 0,
           "stale_delta_ms": 60000},
    "hf": {"durability": "ledger", "pool": "hot", "fresh_ms": 1000,
           "keep_ms": 60000, "persist_window_ms": 600, "read_delta_ms": 1000,
           "stale_delta_ms": 60000},
    "hd": {"durability": "durable", "pool": "cold", "fresh_ms": 1000,
           "keep_ms": 60000, "persist_window_ms": 0, "read_delta_ms": 0,
           "stale_delta_ms": 60000},
}
NOT_INT = "ERR value is not an integer or out of range"


class Hist:
    """Builds a history by hand: times are seconds from 100.0."""

    def __init__(self, nkeys=4):
        keys = {}
        for c, owner in (("hl", "hot/0"), ("hf", "hot/1"), ("hd", "cold/0")):
            for i in range(nkeys):
                keys["%s:%d" % (c, i)] = {"class": c, "owner": owner}
        self.lines = [{"kind": "header", "version": 1, "seed": 1,
                       "started": 1700000000.0, "classes": CLASSES,
                       "keys": keys, "colos": ["a"], "clients": 8}]
        self.next_id = 1

    def op(self, client, f, key, t0, t1, value=None, outcome="ok",
           error=None, stale=False, degraded=False, args=None, **kw):
        args = dict(args or {}, **kw)
        line = {"kind": "op", "id": self.next_id, "client": client,
                "colo": "a", "edge": "a/0", "f": f, "args": args,
                "t0": 100.0 + t0, "t1": 100.0 + t1, "outcome": outcome,
                "value": value, "error": error, "stale": stale,
                "degraded": degraded}
        if isinstance(key, list):
            line["keys"] = key
        else:
            line["key"] = key
        self.next_id += 1
        self.lines.append(line)
        return self

    def set(self, client, key, v, t0, t1, value="OK", **kw):
        args = {"value": v, "nx": False, "xx": False, "get": False,
                "keepttl": False, "px": None}
        for k in list(kw):
            if k in args:
                args[k] = kw.pop(k)
        return self.op(client, "set", key, t0, t1, value=value, args=args, **kw)

    def get(self, client, key, t0, t1, value, **kw):
        return self.op(client, "get", key, t0, t1, value=value, **kw)

    def crash(self, owner, t):
        self.lines.append({"kind": "crash", "owner": owner, "t": 100.0 + t})
        self.lines.append({"kind": "fault", "f": "kill_owner", "target": owner,
                           "t0": 100.0 + t, "t1": 100.0 + t + 0.5,
                           "detail": {"signal": 9}})
        return self

    def check(self, **kw):
        kw.setdefault("time_limit", 10.0)
        return checker.check_history([json.dumps(x) for x in self.lines], **kw)


class CheckerCase(unittest.TestCase):
    def assertAnomaly(self, h, name, key=None):
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        names = [(a.key, a.name) for a in res.anomalies]
        self.assertEqual(len(names), 1, res.report())
        if key is not None:
            self.assertEqual(names[0][0], key)
        self.assertEqual(names[0][1], name, res.report())
        return res

    def assertPasses(self, h):
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_OK, res.report())
        self.assertEqual(res.anomalies, [])
        self.assertEqual(res.unknown, [])
        self.assertGreater(res.keys_checked, 0)
        return res


class NamedAnomalies(CheckerCase):
    def test_lost_write_second_of_two_sequential_sets(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 4)
        h.get(2, "hl:0", 5, 6, "a").get(3, "hl:0", 7, 8, "a")
        res = self.assertAnomaly(h, checker.A_LOST, "hl:0")
        self.assertLessEqual(len(res.anomalies[0].ops), 3)
        self.assertTrue(res.anomalies[0].minimal)

    def test_key_that_vanishes_is_a_lost_write(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).get(2, "hl:0", 3, 4, None)
        h.get(3, "hl:0", 5, 6, None)
        self.assertAnomaly(h, checker.A_LOST)

    def test_stale_read_with_delta_zero(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 4)
        h.get(2, "hl:0", 5, 6, "a").get(2, "hl:0", 7, 8, "b")
        self.assertAnomaly(h, checker.A_STALE)

    def test_read_did_not_see_own_write(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 4)
        h.get(1, "hl:0", 5, 6, "a").get(2, "hl:0", 7, 8, "b")
        self.assertAnomaly(h, checker.A_OWN_WRITE)

    def test_own_write_is_seen_even_within_read_delta(self):
        # hf reads may be 1 s old, but never older than the reader's own write.
        h = Hist()
        h.set(1, "hf:0", "a", 1, 1.1).set(1, "hf:0", "b", 1.2, 1.3)
        h.get(1, "hf:0", 1.5, 1.6, "a").get(2, "hf:0", 3, 3.1, "b")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertEqual(res.anomalies[0].name, checker.A_OWN_WRITE)

    def test_double_set_nx(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2, nx=True).set(2, "hl:0", "b", 3, 4, nx=True)
        self.assertAnomaly(h, checker.A_DOUBLE_NX)

    def test_double_increment(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=1, delta=1)
        self.assertAnomaly(h, checker.A_DOUBLE_INCR)

    def test_increment_total_wrong(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=3, delta=1)
        self.assertAnomaly(h, checker.A_INCR_TOTAL)

    def test_read_of_counter_total_nobody_produced(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(2, "incrby", "hl:1", 3, 4, value=2, delta=1)
        h.get(3, "hl:1", 5, 6, "3")
        self.assertAnomaly(h, checker.A_INCR_TOTAL)

    def test_read_of_deleted_key(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).op(1, "del", "hl:0", 3, 4, value=1)
        h.get(1, "hl:0", 5, 6, "a")
        self.assertAnomaly(h, checker.A_READ_DELETED)

    def test_durable_write_lost_after_crash(self):
        h = Hist()
        h.set(1, "hd:0", "a", 1, 2).crash("cold/0", 3)
        h.get(2, "hd:0", 4, 5, None)
        res = self.assertAnomaly(h, checker.A_DURABLE_CRASH)
        self.assertEqual(len(res.anomalies[0].crashes), 1)
        self.assertIn("kill_owner", res.report())

    def test_ledger_write_lost_outside_the_window_is_flagged(self):
        # window 600 ms; the write was acknowledged 800 ms before the crash.
        h = Hist()
        h.set(1, "hl:0", "a", 1.0, 1.2).crash("hot/0", 2.0)
        h.get(2, "hl:0", 3.0, 3.1, None)
        self.assertAnomaly(h, checker.A_LEDGER_CRASH)

    def test_ledger_write_lost_inside_the_window_passes(self):
        h = Hist()
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "a", 1.6, 1.7).crash("hot/0", 2.0)
        h.get(2, "hl:0", 3.0, 3.1, "old")
        self.assertPasses(h)

    def test_lost_ledger_value_read_from_a_cache_soon_after_the_crash_passes(self):
        # A value the crash lost may still be served by a cache for
        # crash_read_delta after the crash (such reads are not checked);
        # then the restored state.
        h = Hist()
        h.lines[0]["classes"] = dict(CLASSES, hl=dict(CLASSES["hl"], crash_read_delta_ms=2000))
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "lost", 1.6, 1.7).crash("hot/0", 2.0)
        h.get(2, "hl:0", 2.1, 2.2, "lost")
        h.get(3, "hl:0", 2.5, 2.6, "old")
        self.assertPasses(h)

    def test_lost_ledger_value_read_past_the_crash_read_delta_is_flagged(self):
        h = Hist()
        h.lines[0]["classes"] = dict(CLASSES, hl=dict(CLASSES["hl"], crash_read_delta_ms=2000))
        h.set(1, "hl:0", "old", 0.5, 0.6)
        h.set(1, "hl:0", "lost", 1.6, 1.7).crash("hot/0", 2.0)
        h.get(2, "hl:0", 4.2, 4.3, "old")    # past the delta: the restored state
        h.get(3, "hl:0", 4.5, 4.6, "lost")   # 2.5 s after the crash: too late
        self.assertAnomaly(h, checker.A_STALE)

    def test_own_reads_of_other_keys_do_not_order_a_read(self):
        # read-your-writes is per key: a client's read of another key does
        # not stop a later read of this key from being a little stale.
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1)
        h.set(2, "hf:0", "b", 1.2, 1.3)
        h.get(3, "hf:1", 1.35, 1.4, None)
        h.get(3, "hf:0", 1.5, 1.6, "a")     # within hf's 1 s read delta
        self.assertPasses(h)

    def test_failed_write_reappears(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(1, "hl:0", "b", 3, 4, value=None, outcome="fail",
              error="ERR write failed: owner unavailable")
        h.get(2, "hl:0", 5, 6, "b")
        res = self.assertAnomaly(h, checker.A_FAILED_REAPPEARED)
        self.assertEqual(len(res.anomalies[0].ops), 2)

    def test_read_of_a_value_never_written(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).get(2, "hl:0", 3, 4, "zzz")
        self.assertAnomaly(h, checker.A_NEVER_WRITTEN)

    def test_key_found_missing_after_an_acknowledged_write_is_lost(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(2, "hl:0", "b", 3, 4, nx=True)
        self.assertAnomaly(h, checker.A_LOST)

    def test_read_of_a_value_before_its_write_began(self):
        h = Hist()
        h.get(1, "hl:0", 1, 2, "a").set(2, "hl:0", "a", 3, 4)
        self.assertAnomaly(h, checker.A_FUTURE)

    def test_failed_increment_that_took_effect(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
        h.op(1, "incrby", "hl:1", 3, 4, outcome="fail",
             error="BUSY try again", delta=1)
        h.op(2, "incrby", "hl:1", 5, 6, value=3, delta=1)
        res = self.assertAnomaly(h, checker.A_FAILED_REAPPEARED)
        self.assertIn(2, [o.id for o in res.anomalies[0].ops])

    def test_incrby_error_on_a_missing_key_is_flagged(self):
        h = Hist()
        h.op(1, "incrby", "hl:1", 1, 2, outcome="fail", error=NOT_INT, delta=1)
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_only_the_broken_key_is_reported(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:1", "x", 1, 2)
        h.set(1, "hl:0", "b", 3, 4).get(2, "hl:0", 5, 6, "a")
        h.get(2, "hl:1", 7, 8, "x")
        res = h.check()
        self.assertEqual(res.verdicts, {"hl:0": "anomaly", "hl:1": "ok"})

    def test_minimal_sub_history_drops_unrelated_ops(self):
        h = Hist()
        t = 0.0
        for i in range(40):     # a correct prefix
            h.set(1 + i % 3, "hl:0", "v%d" % i, t, t + 0.5)
            h.get(4, "hl:0", t + 0.6, t + 0.7, "v%d" % i)
            t += 1.0
        h.set(1, "hl:0", "late", t, t + 0.5)
        h.get(2, "hl:0", t + 1, t + 1.5, "v10")
        h.get(3, "hl:0", t + 2, t + 2.5, "v10")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY)
        a = res.anomalies[0]
        self.assertLessEqual(len(a.ops), 4, a.text())
        self.assertIn("late", a.text())


class CorrectHistories(CheckerCase):
    def test_concurrent_writes_in_either_order(self):
        for seen in ("a", "b"):
            h = Hist()
            h.set(1, "hl:0", "a", 1, 3).set(2, "hl:0", "b", 2, 4)
            h.get(3, "hl:0", 5, 6, seen).get(4, "hl:0", 7, 8, seen)
            self.assertPasses(h)

    def test_read_concurrent_with_write_sees_either(self):
        for seen in ("a", "b"):
            h = Hist()
            h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 5)
            h.get(2, "hl:0", 4, 4.5, seen)
            self.assertPasses(h)

    def test_indeterminate_write_applied_or_not(self):
        for seen in ("a", "b"):
            h = Hist()
            h.set(1, "hl:0", "a", 1, 2)
            h.set(1, "hl:0", "b", 3, 4, value=None, outcome="info",
                  error="timeout")
            h.get(2, "hl:0", 5, 6, seen).get(3, "hl:0", 7, 8, seen)
            self.assertPasses(h)

    def test_indeterminate_write_may_apply_late(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(1, "hl:0", "b", 3, 4, value=None, outcome="info", error="timeout")
        h.get(2, "hl:0", 5, 6, "a").get(3, "hl:0", 70, 71, "b")
        self.assertPasses(h)

    def test_indeterminate_write_cannot_apply_before_its_call(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).get(2, "hl:0", 3, 4, "b")
        h.set(3, "hl:0", "b", 5, 6, value=None, outcome="info", error="timeout")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_info_incrby_counted_or_not(self):
        for total in (2, 3):
            h = Hist()
            h.op(1, "incrby", "hl:1", 1, 2, value=1, delta=1)
            h.op(2, "incrby", "hl:1", 3, 4, outcome="info", error="timeout",
                 delta=1)
            h.op(3, "incrby", "hl:1", 5, 6, value=total, delta=1)
            h.get(4, "hl:1", 7, 8, str(total))
            self.assertPasses(h)

    def test_reads_within_delta(self):
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 1.2, 1.3)
        h.get(2, "hf:0", 1.5, 1.6, "a").get(2, "hf:0", 1.7, 1.8, "b")
        self.assertPasses(h)

    def test_one_clients_reads_through_a_cache_behind_may_repeat_the_old_value(self):
        # A push delayed (another host's colo): both reads are within hf's
        # 1 s delta of b's write, so both may see a.  The second read's
        # window starts where the first one's did, not where it ended.
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 2.0, 2.1)
        h.get(2, "hf:0", 2.2, 2.3, "a").get(2, "hf:0", 2.4, 2.5, "a")
        self.assertPasses(h)

    def test_a_no_op_write_does_not_make_the_cache_catch_up(self):
        # PERSIST answered 0 changed nothing: the client's next read may
        # still come from a cache that is behind, within the delta.
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 2.0, 2.1)
        h.op(2, "persist", "hf:0", 2.2, 2.3, value=0)
        h.get(2, "hf:0", 2.4, 2.5, "a")
        self.assertPasses(h)

    def test_a_write_that_changed_the_key_is_a_floor(self):
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 2.0, 2.1, px=7200000)
        h.op(2, "persist", "hf:0", 2.2, 2.3, value=1)
        h.get(2, "hf:0", 2.4, 2.5, "b")
        self.assertPasses(h)     # b had a TTL: the PERSIST took it away
        h.get(2, "hf:0", 2.6, 2.7, "a")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_one_clients_second_read_older_than_its_first_is_flagged(self):
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 2.0, 2.1)
        h.get(2, "hf:0", 2.2, 2.3, "b").get(2, "hf:0", 2.4, 2.5, "a")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_read_beyond_delta_is_stale(self):
        h = Hist()
        h.set(1, "hf:0", "a", 1.0, 1.1).set(1, "hf:0", "b", 1.2, 1.3)
        h.get(2, "hf:0", 3.0, 3.1, "a").get(2, "hf:0", 4.0, 4.1, "b")
        self.assertAnomaly(h, checker.A_STALE)

    def test_stale_flagged_read_within_stale_delta(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 4)
        h.get(2, "hl:0", 30, 31, "a", stale=True)
        h.get(2, "hl:0", 32, 33, "b")
        self.assertPasses(h)

    def test_an_unanswered_write_fixes_no_floor(self):
        # The cluster run's case (hl:hist:4, link_down of the owner's host):
        # client 2 reads a; b lands (another client reads it); client 2's
        # own SET gets no answer; its stale-flagged read from its colo's
        # cache, cut off from the owner, repeats a.  Allowed: nothing it was
        # told was newer than a.  A read older than its last answer is not.
        h = Hist()
        h.set(1, "hl:0", "a", 1.0, 1.1).get(2, "hl:0", 1.2, 1.3, "a")
        h.set(3, "hl:0", "b", 1.31, 1.35).get(3, "hl:0", 1.4, 1.5, "b")
        h.set(2, "hl:0", "c", 1.6, 3.6, value=None, outcome="info", error="UNAVAILABLE")
        h.get(2, "hl:0", 3.7, 4.2, "a", stale=True)
        self.assertPasses(h)
        h2 = Hist()
        h2.set(1, "hl:0", "z", 0.5, 0.6).set(1, "hl:0", "a", 1.0, 1.1)
        h2.get(2, "hl:0", 1.2, 1.3, "a")
        h2.set(2, "hl:0", "c", 1.6, 3.6, value=None, outcome="info", error="UNAVAILABLE")
        h2.get(2, "hl:0", 3.7, 4.2, "z", stale=True)
        res = h2.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_stale_flagged_read_beyond_stale_delta_is_flagged(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).set(1, "hl:0", "b", 3, 4)
        h.get(2, "hl:0", 100, 101, "a", stale=True)
        h.get(2, "hl:0", 102, 103, "b")
        self.assertAnomaly(h, checker.A_STALE)

    def test_degraded_and_indeterminate_reads_carry_no_information(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.get(2, "hl:0", 3, 4, None, degraded=True)
        h.get(3, "hl:0", 5, 6, None, outcome="info", error="timeout")
        h.op(4, "mget", ["hl:0", "hl:1"], 7, 8, value=[None, None],
             degraded=True)
        self.assertPasses(h)

    def test_crash_window_with_an_indeterminate_write(self):
        # The info write may have been applied inside the window and lost.
        h = Hist()
        h.set(1, "hl:0", "a", 0.1, 0.2)
        h.set(2, "hl:0", "b", 1.5, 2.5, value=None, outcome="info",
              error="timeout")
        h.get(3, "hl:0", 1.7, 1.8, "b").crash("hot/0", 2.0)
        h.get(3, "hl:0", 3.0, 3.1, "a")
        self.assertPasses(h)

    def test_crash_loses_writes_inside_the_window_only(self):
        h = Hist()
        h.set(1, "hl:0", "a", 0.1, 0.2)
        h.set(1, "hl:0", "b", 1.5, 1.6).crash("hot/0", 2.0)
        h.get(2, "hl:0", 2.5, 2.6, "a").set(2, "hl:0", "c", 3, 3.1)
        h.get(2, "hl:0", 3.5, 3.6, "c")
        self.assertPasses(h)

    def test_two_crashes_of_one_owner(self):
        h = Hist()
        h.set(1, "hl:0", "a", 0.1, 0.2).crash("hot/0", 2.0)
        h.get(2, "hl:0", 2.5, 2.6, "a").set(2, "hl:0", "b", 3, 3.1)
        h.crash("hot/0", 3.3).get(2, "hl:0", 4, 4.1, "a")
        self.assertPasses(h)

    def test_mset_with_a_duplicate_key_last_value_wins(self):
        h = Hist()
        h.op(1, "mset", ["hl:0", "hl:1", "hl:0"], 1, 2, value="OK",
             values=["x", "y", "z"])
        h.op(2, "mget", ["hl:0", "hl:1"], 3, 4, value=["z", "y"])
        self.assertPasses(h)
        h = Hist()
        h.op(1, "mset", ["hl:0", "hl:1", "hl:0"], 1, 2, value="OK",
             values=["x", "y", "z"])
        h.get(2, "hl:0", 3, 4, "x")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_getdel(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2).op(1, "getdel", "hl:0", 3, 4, value="a")
        h.get(2, "hl:0", 5, 6, None).op(2, "getdel", "hl:0", 7, 8, value=None)
        h.op(2, "exists", "hl:0", 9, 10, value=0)
        self.assertPasses(h)

    def test_expire_and_persist(self):
        h = Hist()
        h.op(1, "expire", "hl:0", 0, 0.5, value=0, ms=3600000)
        h.set(1, "hl:0", "a", 1, 2)
        h.op(1, "persist", "hl:0", 3, 4, value=0)
        h.op(1, "expire", "hl:0", 5, 6, value=1, ms=3600000)
        h.op(1, "persist", "hl:0", 7, 8, value=1)
        h.op(1, "persist", "hl:0", 9, 10, value=0)
        h.set(1, "hl:0", "b", 11, 12, px=7200000)
        h.set(1, "hl:0", "c", 13, 14, keepttl=True)
        h.op(1, "persist", "hl:0", 15, 16, value=1)
        h.set(1, "hl:0", "d", 17, 18, px=7200000)
        h.set(1, "hl:0", "e", 19, 20)
        h.op(1, "persist", "hl:0", 21, 22, value=0)
        h.op(1, "expire", "hl:0", 23, 24, value=1, ms=-1)
        h.op(1, "exists", "hl:0", 25, 26, value=0)
        h.get(2, "hl:0", 27, 28, None)
        self.assertPasses(h)

    def test_set_options(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2, value=None, xx=True)
        h.set(1, "hl:0", "b", 3, 4, nx=True)
        h.set(1, "hl:0", "c", 5, 6, value=None, nx=True)
        h.set(1, "hl:0", "d", 7, 8, value="b", get=True)
        h.set(1, "hl:0", "e", 9, 10, xx=True)
        h.op(1, "del", "hl:0", 11, 12, value=1)
        h.op(1, "del", "hl:0", 13, 14, value=0)
        h.set(1, "hl:0", "f", 15, 16, value=None, get=True, nx=True)
        h.get(1, "hl:0", 17, 18, "f")
        self.assertPasses(h)

    def test_compare_and_set(self):
        # SET ... IFEQ, and SETIFMATCH as the runner records it (an applied
        # one: SET IFEQ <the value its etag came with>; a refused one: the
        # GET of the value the owner answered with)
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(1, "hl:0", "b", 3, 4, ifeq="a")
        h.set(2, "hl:0", "c", 5, 6, value=None, ifeq="a")
        h.set(2, "hl:0", "d", 7, 8, value="b", get=True, ifeq="zzz")
        h.set(1, "hl:0", "e", 9, 10, value="b", get=True, ifeq="b")
        h.set(3, "hl:0", "f", 11, 12, value=None, ifeq="e", outcome="info")
        h.get(1, "hl:0", 13, 14, "e")
        h.set(2, "hl:1", "x", 1, 2, value=None, ifeq="a")  # no key
        h.get(2, "hl:1", 3, 4, None)
        self.assertPasses(h)

    def test_two_compare_and_sets_over_one_value_both_applied_is_flagged(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(1, "hl:0", "b", 3, 4, ifeq="a")
        h.set(2, "hl:0", "c", 5, 6, ifeq="a")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertEqual([a.key for a in res.anomalies], ["hl:0"], res.report())

    def test_a_compare_and_set_refused_over_its_value_is_flagged(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(2, "hl:0", "b", 3, 4, value=None, ifeq="a")
        h.get(1, "hl:0", 5, 6, "a")
        res = h.check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertEqual([a.key for a in res.anomalies], ["hl:0"], res.report())

    def test_incrby_on_a_string_fails_without_effect(self):
        h = Hist()
        h.set(1, "hl:1", "a", 1, 2)
        h.op(1, "incrby", "hl:1", 3, 4, outcome="fail", error=NOT_INT, delta=1)
        h.get(1, "hl:1", 5, 6, "a").op(1, "del", "hl:1", 7, 8, value=1)
        h.op(1, "incrby", "hl:1", 9, 10, value=-5, delta=-5)
        h.get(1, "hl:1", 11, 12, "-5")
        self.assertPasses(h)

    def test_failed_write_that_never_reappears_passes(self):
        h = Hist()
        h.set(1, "hl:0", "a", 1, 2)
        h.set(1, "hl:0", "b", 3, 4, value=None, outcome="fail",
              error="ERR write failed")
        h.op(1, "del", "hl:0", 5, 6, outcome="fail", value=None,
             error="ERR write failed")
        h.get(2, "hl:0", 7, 8, "a")
        self.assertPasses(h)


def hard_history(n=16):
    """n concurrent sets, then reads that flip a -> b -> a with no write
    between: not linearizable, but only an exhaustive search can tell."""
    h = Hist()
    for i in range(n):
        h.set(1 + i, "hl:0", "v%d" % i, 1.0 + i * 0.001, 5.0 + i * 0.001)
    h.get(100, "hl:0", 10, 11, "v0").get(100, "hl:0", 12, 13, "v1")
    h.get(100, "hl:0", 14, 15, "v0")
    return h


def run_cli(lines, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.jsonl")
        with open(path, "w") as fh:
            for x in lines:
                fh.write((x if isinstance(x, str) else json.dumps(x)) + "\n")
        out = os.path.join(d, "out.json")
        p = subprocess.run([sys.executable, CHECKER, path, "--json", out] +
                           list(args), capture_output=True, text=True,
                           timeout=300)
        js = None
        if os.path.exists(out):
            with open(out) as fh:
                js = json.load(fh)
        return p, js


class Bounds(unittest.TestCase):
    def test_time_limit_gives_unknown_exit_2(self):
        p, js = run_cli(hard_history().lines, "--time-limit", "0.3")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(js["unknown"], ["hl:0"])
        self.assertEqual(js["anomalies"], [])
        self.assertIn("unknown 1", p.stdout)

    def test_global_limit_gives_unknown(self):
        res = checker.check_history(
            [json.dumps(x) for x in hard_history().lines],
            time_limit=20, global_limit=0.3)
        self.assertEqual(res.exit_code, checker.EXIT_UNKNOWN)
        self.assertEqual(res.verdicts, {"hl:0": "unknown"})

    def test_hard_history_is_decided_and_reduced(self):
        # Every order of the 16 sets is a different configuration; merging
        # the unread values and windows around the reads keep it small.
        t = time.monotonic()
        res = hard_history().check(time_limit=10.0)
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())
        self.assertLess(time.monotonic() - t, 30.0)
        a = res.anomalies[0]
        self.assertLessEqual(len(a.ops), 3, a.text())
        self.assertEqual(a.name, checker.A_STALE, a.text())

    def test_window_at_the_end_proves_the_flip_flop(self):
        # Once every set is acknowledged, reads v1 then v0 with no write
        # between them fail in any state: the window of the last two reads
        # is a proof, the 16 sets irrelevant.
        hist = checker.load_history([json.dumps(x)
                                     for x in hard_history().lines])
        kh = checker.build_keys(hist)["hl:0"]
        w = checker.find_window(kh, checker.INF, time.monotonic() + 20)
        self.assertIsNotNone(w)
        self.assertEqual(w, (112.0, 115.0))

    def test_small_hard_history_is_decided(self):
        res = hard_history(6).check()
        self.assertEqual(res.exit_code, checker.EXIT_ANOMALY, res.report())

    def test_bad_json_exit_3_with_line_number(self):
        lines = [json.dumps(x) for x in Hist().set(1, "hl:0", "a", 1, 2).lines]
        lines.append('{"kind":"op", oops')
        p, js = run_cli(lines)
        self.assertEqual(p.returncode, 3)
        self.assertIn("line 3", p.stderr)
        self.assertIsNone(js)

    def test_unknown_key_exit_3(self):
        h = Hist().set(1, "nope:0", "a", 1, 2)
        p, _ = run_cli(h.lines)
        self.assertEqual(p.returncode, 3)
        self.assertIn("line 2", p.stderr)

    def test_missing_header_exit_3(self):
        h = Hist().set(1, "hl:0", "a", 1, 2)
        p, _ = run_cli(h.lines[1:])
        self.assertEqual(p.returncode, 3)
        self.assertIn("line 1", p.stderr)

    def test_bad_input_raises_from_the_library(self):
        with self.assertRaises(checker.BadHistory) as cm:
            checker.check_history([json.dumps(Hist().lines[0]),
                                   '{"kind":"op","f":"set"}'])
        self.assertEqual(cm.exception.line, 2)

    def test_cli_pass_and_anomaly_exit_codes(self):
        good = Hist().set(1, "hl:0", "a", 1, 2).get(2, "hl:0", 3, 4, "a")
        p, js = run_cli(good.lines)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(js["keys_checked"], 1)
        bad = Hist().set(1, "hl:0", "a", 1, 2).get(2, "hl:0", 3, 4, "zzz")
        p, js = run_cli(bad.lines)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("ANOMALY hl:0", p.stdout)
        self.assertEqual(js["anomalies"][0]["name"], checker.A_NEVER_WRITTEN)
        p, _ = run_cli(bad.lines, "--quiet")
        self.assertEqual(p.returncode, 1)
        self.assertNotIn("sub-history", p.stdout)


# --------------------------------------------------------------------------
# Generated histories: a store that is linearizable by construction.
# --------------------------------------------------------------------------

def _apply(f, a, st, rng_out=None):
    """Applies one op to a key state (value, ttl); returns (answer, new)."""
    v, ttl = st
    if f == "set":
        cond = not ((a["nx"] and v is not None) or (a["xx"] and v is None))
        out = v if a["get"] else ("OK" if cond else None)
        if cond:
            st = (a["value"], a["px"] is not None or (a["keepttl"] and ttl))
        return out, st
    if f == "mset":
        return "OK", (a["value"], False)
    if f == "getdel":
        return v, (None, False)
    if f == "del":
        return (0 if v is None else 1), (None, False)
    if f == "incrby":
        n = 0 if v is None else checker.redis_int(v)
        if n is None:
            return ("error", NOT_INT), st
        return n + a["delta"], (str(n + a["delta"]), ttl)
    if f == "expire":
        if v is None:
            return 0, st
        return 1, ((None, False) if a["ms"] <= 0 else (v, True))
    if f == "persist":
        if v is not None and ttl:
            return 1, (v, False)
        return 0, st
    raise AssertionError(f)


def generate(seed, n_ops, n_keys, n_clients, info_frac=0.02, crashes=0,
             stale_frac=0.05):
    rng = random.Random(seed)
    cls_names = ["hl", "hf", "hd"]
    keys = {}
    counters = set()
    for i in range(n_keys):
        c = cls_names[i % 3]
        k = "%s:%d" % (c, i)
        keys[k] = {"class": c, "owner": ("cold/%d" if c == "hd" else "hot/%d")
                   % (i % 2)}
        if i % 5 == 4:
            counters.add(k)
    knames = sorted(keys)
    hot = knames[:max(1, len(knames) // 4)]
    header = {"kind": "header", "version": 1, "seed": seed,
              "started": 1700000000.0, "classes": CLASSES, "keys": keys,
              "colos": ["a"], "clients": n_clients}

    def pick_key():
        return rng.choice(hot) if rng.random() < 0.5 else rng.choice(knames)

    # 1. The schedule: which op, when, and when it takes effect.
    ops = []
    threads = [[rng.uniform(0, 0.01), c] for c in range(n_clients)]
    next_client = n_clients
    prev_t1 = {}
    for n in range(n_ops):
        th = min(threads, key=lambda x: x[0])
        t0 = th[0]
        client = th[1]
        key = pick_key()
        r = rng.random()
        if key in counters:
            if r < 0.5:
                f = "incrby"
            elif r < 0.9:
                f = "get"
            elif r < 0.95:
                f = "del"
            else:
                f = "getdel"
        else:
            fs = [("get", 30), ("set", 25), ("mget", 6), ("mset", 5),
                  ("exists", 5), ("del", 5), ("getdel", 4), ("expire", 4),
                  ("persist", 4), ("incrby", 2)]
            x = r * sum(w for _, w in fs)
            for f, w in fs:
                x -= w
                if x < 0:
                    break
        op = {"kind": "op", "id": n + 1, "client": client, "colo": "a",
              "edge": "a/%d" % (client % 2), "f": f, "t0": 100.0 + t0,
              "stale": False, "degraded": False, "error": None}
        val = "c%d-op%d" % (client, n + 1)
        if f in ("mget", "mset"):
            ks = [key] + [rng.choice(knames) for _ in range(rng.randint(0, 3))]
            ks = [k for k in ks if k not in counters] or [key]
            op["keys"] = ks
            if f == "mset":
                op["args"] = {"values": ["%s-%d" % (val, i)
                                         for i in range(len(ks))]}
            else:
                op["args"] = {}
        else:
            op["key"] = key
            if f == "set":
                kind = rng.random()
                op["args"] = {"value": val, "nx": 0.5 < kind < 0.6,
                              "xx": 0.6 < kind < 0.7, "get": 0.7 < kind < 0.8,
                              "keepttl": 0.8 < kind < 0.9,
                              "px": 7200000 if kind > 0.9 else None}
            elif f == "incrby":
                op["args"] = {"delta": rng.choice([1, 1, 1, 2, 5, -1])}
            elif f == "expire":
                op["args"] = {"ms": -1 if rng.random() < 0.2 else 3600000}
            else:
                op["args"] = {}
        dur = rng.uniform(0.0005, 0.006)
        is_write = f not in ("get", "exists", "mget")
        op["_tl"] = t0 + rng.uniform(0, dur)
        if is_write and rng.random() < info_frac:
            op["outcome"] = "info"
            op["error"] = "timeout"
            t1 = t0 + 1.0
            if rng.random() < 0.6:
                op["_tl"] = t0 + rng.uniform(0, 1.5)   # may land late
            else:
                op["_tl"] = None                       # never applied
        elif is_write and f in ("set", "mset") and rng.random() < 0.004:
            op["outcome"] = "fail"
            op["error"] = "ERR write failed"
            op["_tl"] = None
            t1 = t0 + dur
        else:
            op["outcome"] = "ok"
            t1 = t0 + dur
        op["t1"] = 100.0 + t1
        if not is_write:
            ks = op.get("keys") or [op["key"]]
            stale = rng.random() < stale_frac
            field = "stale_delta_ms" if stale else "read_delta_ms"
            delta = min(min(CLASSES[keys[k]["class"]][field] for k in ks)
                        / 1000.0, 3.0)
            lo = max(t0 - delta, prev_t1.get(client, -1e9))
            op["stale"] = stale
            op["_tv"] = rng.uniform(min(lo, op["_tl"]), op["_tl"])
            if rng.random() < 0.005:
                op["degraded"] = True
        prev_t1[client] = t1
        ops.append(op)
        th[0] = t1 + rng.expovariate(1 / 0.002)
        if op["outcome"] == "info":
            th[1] = next_client         # a reconnect is a new client
            next_client += 1
    # 2. Effects in time order, answers from the states.
    events = []
    for op in ops:
        if op["_tl"] is not None:
            events.append((op["_tl"], 1, op["id"], op))
    t_end = max(op["_tl"] or 0 for op in ops)
    crash_lines = []
    for i in range(crashes):
        t = rng.uniform(t_end * 0.2, t_end * 0.9)
        owner = rng.choice(sorted({m["owner"] for m in keys.values()}))
        events.append((t, 0, -i, owner))
        crash_lines.append({"kind": "crash", "owner": owner, "t": 100.0 + t})
        crash_lines.append({"kind": "fault", "f": "kill_owner",
                            "target": owner, "t0": 100.0 + t,
                            "t1": 100.0 + t + 0.2, "detail": {}})
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    times = {k: [-1e9] for k in keys}
    states = {k: [(None, False)] for k in keys}

    def state_at(k, t):
        return states[k][bisect.bisect_right(times[k], t) - 1]

    last_crash = {}
    for t, kind, _, x in events:
        if kind == 0:
            # What a crash loses never reaches back past the last restart.
            lo = last_crash.get(x, -1e9)
            last_crash[x] = t
            for k, meta in keys.items():
                if meta["owner"] != x:
                    continue
                w = CLASSES[meta["class"]]["persist_window_ms"] / 1000.0
                st = state_at(k, rng.uniform(max(t - w, lo), t))
                times[k].append(t)
                states[k].append(st)
            continue
        op = x
        f = op["f"]
        if f in ("get", "exists", "mget"):
            ks = op["keys"] if f == "mget" else [op["key"]]
            vals = [state_at(k, op["_tv"])[0] for k in ks]
            if op["degraded"]:
                vals = [None] * len(vals)
            if f == "get":
                op["value"] = vals[0]
            elif f == "exists":
                op["value"] = 0 if vals[0] is None else 1
            else:
                op["value"] = vals
            continue
        if f == "mset":
            for k, v in zip(op["keys"], op["args"]["values"]):
                out, st = _apply("mset", {"value": v}, states[k][-1])
                times[k].append(t)
                states[k].append(st)
            out = "OK"
        else:
            k = op["key"]
            out, st = _apply(f, op["args"], states[k][-1])
            times[k].append(t)
            states[k].append(st)
        if op["outcome"] == "ok":
            if isinstance(out, tuple):
                op["outcome"] = "fail"
                op["error"] = out[1]
                op["value"] = None
            else:
                op["value"] = out
    lines = [header]
    for op in ops:
        op.pop("_tl")
        op.pop("_tv", None)
        op.setdefault("value", None)
        lines.append(op)
    lines.extend(crash_lines)
    return lines


def brute_force(lines):
    """{key: linearizable?} by the definitions alone, for small histories:
    every order of the ops that respects real time (a return at the time of
    a call precedes it) and puts each read after its client's previous op of
    the key, each determinate op with its answer, each info op
    anywhere after its call or never, each crash a snapshot somewhere in its
    window followed by a restore.  Memoized on (ops done, state) only."""
    hist = checker.load_history(lines)
    out = {}
    for key, kh in checker.build_keys(hist).items():
        ops = []
        index = {}
        preds = []
        for u in kh.subs:
            if u.mode == "ghost" or u.fixed:
                continue
            mval = u.a.get("value") if u.f in ("set", "mset") else None
            index[id(u)] = len(ops)
            preds.append(u.pred)
            ops.append((u.call, checker.INF if u.mode == "info" else u.t1(),
                        checker._mk_step(u.f, u.a, u.out, u.mode, mval),
                        u.mode == "info"))
        # A read comes after its client's previous op of the key (Sub.pred).
        after = [index.get(id(p)) if p is not None else None for p in preds]
        w = hist.classes[kh.cls]["persist_window"]
        prev = None
        for t, _ in kh.crashes:
            ts = t - w if prev is None or t - w > prev else prev
            ops.append((min(ts, t - 2e-9), t - 1e-9,
                        lambda s: (s[0], s[1], (s[0], s[1])), False))
            ops.append((t, t, lambda s: None if s[2] is None else
                        (s[2][0], s[2][1], None), False))
            prev = t
        det = [i for i, o in enumerate(ops) if not o[3]]
        seen = set()

        def rec(done, state):
            if all(i in done for i in det):
                return True
            if (done, state) in seen:
                return False
            seen.add((done, state))
            for i, (call, _, step, _) in enumerate(ops):
                if i in done or any(j != i and j not in done and
                                    ops[j][1] <= call for j in det):
                    continue
                if i < len(after) and after[i] is not None and after[i] not in done:
                    continue
                new = step(state)
                if new is not None and rec(done | {i}, new):
                    return True
            return False
        out[key] = rec(frozenset(), checker.INIT_STATE)
    return out


def small_history(rng):
    """A few ops on one key, correct by construction, then maybe one answer
    changed."""
    lines = generate(rng.randint(0, 10 ** 9), rng.randint(3, 8), 1,
                     rng.choice([2, 3, 4]), info_frac=rng.choice([0.1, 0.4]),
                     crashes=rng.choice([0, 1, 2]), stale_frac=0.3)
    ops = [x for x in lines[1:] if x["kind"] == "op" and x["outcome"] == "ok"]
    if ops and rng.random() < 0.5:
        x = rng.choice(ops)
        vals = [None, "zz"] + [o["args"]["value"] for o in ops
                               if o["f"] == "set"]
        if isinstance(x["value"], list):
            x["value"] = [rng.choice(vals) for _ in x["value"]]
        elif isinstance(x["value"], int):
            x["value"] += rng.choice([-1, 1])
        elif x["f"] in ("get", "getdel"):
            x["value"] = rng.choice(vals)
    return [json.dumps(x) for x in lines]


class AgainstBruteForce(unittest.TestCase):
    def test_search_agrees_with_brute_force_on_small_histories(self):
        rng = random.Random(5)
        counts = {True: 0, False: 0}
        for _ in range(1000):
            lines = small_history(rng)
            want = brute_force(lines)
            res = checker.check_history(lines, time_limit=10.0)
            for key, lin in want.items():
                counts[lin] += 1
                self.assertEqual(res.verdicts.get(key),
                                 "ok" if lin else "anomaly",
                                 "\n".join(lines) + "\n" + res.report())
        # Both verdicts must be exercised.
        self.assertGreater(counts[True], 300)
        self.assertGreater(counts[False], 100)

    def test_no_window_proof_on_linearizable_small_histories(self):
        # A failing relaxed window is a proof: none may exist when the
        # history is linearizable, whatever frontier it ends at.
        rng = random.Random(6)
        tried = 0
        for _ in range(300):
            lines = small_history(rng)
            want = brute_force(lines)
            hist = checker.load_history(lines)
            for key, kh in checker.build_keys(hist).items():
                if not want[key]:
                    continue
                for fr in sorted({u.t1() for u in checker._det(kh)}):
                    tried += 1
                    self.assertIsNone(
                        checker.find_window(kh, fr, time.monotonic() + 5),
                        "\n".join(lines))
        self.assertGreater(tried, 300)


def _window_start_by_definition(kh, start):
    moved = True
    while moved:
        moved = False
        for u in kh.subs:
            if u.f == "open" and u.call < start <= u.crash[0]:
                start = u.call
                moved = True
    return start


def _items_by_definition(kh, core, cut, start):
    """checker._items as README "Proofs" defines it, scanning every op:
    (seq, relaxed) of the ops kept, without the free initial state."""
    out = []
    for u in sorted(kh.subs, key=lambda x: x.rk if x.fixed else x.ck):
        if u.fixed:
            if start <= u.crash[0] <= cut:
                out.append((u.seq, False))
        elif u.t0() > cut:
            continue
        elif u.mode == "info":
            out.append((u.seq, False))
        elif u.t1() >= start:
            out.append((u.seq, not (u in core and u.t1() <= cut
                                    and u.call >= start)))
    return out


class Generated(unittest.TestCase):
    def check_lines(self, lines, **kw):
        kw.setdefault("time_limit", 20.0)
        return checker.check_history(lines, **kw)

    def test_generated_histories_pass(self):
        for seed in range(6):
            lines = generate(seed, 1500, 6, 6, info_frac=0.05, crashes=2)
            res = self.check_lines(lines)
            self.assertEqual(res.exit_code, 0,
                             "seed %d: %s" % (seed, res.report()))

    def test_dense_generated_histories_have_no_false_anomaly(self):
        # One key, many clients, many info ops, crashes and stale reads:
        # the checker may give up (unknown), never accuse.
        for seed in range(3):
            lines = generate(100 + seed, 800, 1, 8, info_frac=0.1, crashes=4,
                             stale_frac=0.3)
            res = self.check_lines(lines, time_limit=10.0)
            self.assertNotEqual(res.exit_code, 1,
                                "seed %d: %s" % (seed, res.report()))

    def test_a_changed_read_in_a_generated_history_is_found(self):
        lines = generate(7, 3000, 8, 8)
        # Make a late get return the value an earlier get of the key saw,
        # when a write acknowledged in between changed it.
        gets = [x for x in lines[1:] if x["f"] == "get"
                and x["outcome"] == "ok" and not x["degraded"]
                and not x["stale"] and x["value"] is not None
                and x["key"].startswith("hl")]
        target = None
        for late in reversed(gets):
            for early in gets:
                if early["key"] != late["key"] or early["value"] == late["value"]:
                    continue
                if early["t1"] + 1.0 < late["t0"]:
                    target = (early, late)
                    break
            if target:
                break
        self.assertIsNotNone(target)
        target[1]["value"] = target[0]["value"]
        res = self.check_lines(lines)
        self.assertEqual(res.exit_code, 1, res.report())
        self.assertEqual([a.key for a in res.anomalies], [target[1]["key"]])
        a = res.anomalies[0]
        self.assertTrue(any(o.id == target[1]["id"] for o in a.ops), a.text())
        self.assertLessEqual(len(a.ops), 12, a.text())

    def test_window_items_match_their_definition(self):
        # _items reads cached, time-sorted lists (a key of 40 000 ops made
        # each window check a full scan): the window must be the one its
        # definition gives, scanning every op, for any start and cut.
        lines = generate(9, 3000, 2, 6, info_frac=0.05, crashes=6)
        hist = checker.load_history(lines)
        rng = random.Random(9)
        for kh in checker.build_keys(hist).values():
            ts = sorted({u.t1() for u in checker._det(kh)})
            for _ in range(40):
                a, b = sorted(rng.sample(ts, 2))
                start = checker._window_start(kh, a)
                core = set(rng.sample(checker._det(kh), 50))
                got = [(u.seq, r) for u, r in checker._items(kh, core, b, start)
                       if u.seq >= 0]
                self.assertEqual(got, _items_by_definition(kh, core, b, start))
                self.assertEqual(start, _window_start_by_definition(kh, a))

    def test_window_starts_of_a_long_key_with_many_crashes_are_cheap(self):
        # 20 000 ops on one key and 60 crashes: every window start is
        # computed when the latest failing start is the earliest one (it
        # took minutes when each start scanned the whole key).
        lines = generate(3, 20000, 1, 4, info_frac=0.0, crashes=60)
        hist = checker.load_history(lines)
        kh = checker.build_keys(hist)["hl:0"]
        t = time.monotonic()
        first = min(u.call for u in checker._det(kh))
        got = checker._latest_start(kh, lambda c, s: s <= first, checker.INF,
                                    time.monotonic() + 60)
        self.assertEqual(got, checker._window_start(kh, first))
        self.assertLess(time.monotonic() - t, 20.0)

    def test_performance_20000_ops(self):
        lines = generate(42, 20000, 20, 8, info_frac=0.02, crashes=3)
        n_info = sum(1 for x in lines[1:] if x.get("outcome") == "info")
        self.assertGreater(n_info, 100)
        t = time.monotonic()
        res = self.check_lines(lines)
        took = time.monotonic() - t
        sys.stderr.write("\n[perf] 20000 ops, 20 keys, 8 clients, %d info ops:"
                         " %.2f s\n" % (n_info, took))
        self.assertEqual(res.exit_code, 0, res.report())
        self.assertEqual(res.keys_checked, 20)
        self.assertLess(took, 30.0)


if __name__ == "__main__":
    unittest.main()

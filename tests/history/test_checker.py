#!/usr/bin/python3
"""test_checker.py - the history checker against hand-made histories.

Run from the repo root:
    /usr/bin/python3 -m unittest tests/history/test_checker.py
    /usr/bin/python3 tests/history/test_checker.py

Each anomaly the checker names is flagged with that name, and each correct
pattern passes.  Its bounds and generated histories: test_checker_search.py.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from checker_hist import CLASSES, NOT_INT, CheckerCase, Hist, checker  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()

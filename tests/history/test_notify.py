"""test_notify.py - run_notify.check() on synthetic histories: what it must
pass and what it must catch (python3 -m unittest, standard library only)."""

import json
import os
import tempfile
import unittest

import run_notify


class FakeSub:
    def __init__(self, events):
        self.i, self.events, self.reconnects = 0, events, 0


def history(ops, keys=("hl:0", "hl:1")):
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps({"kind": "header", "keys": {k: {} for k in keys}}) + "\n")
        for i, (fn, key, t0, outcome) in enumerate(ops):
            rec = {"kind": "op", "id": i, "f": fn, "t0": t0, "t1": t0 + 0.01,
                   "outcome": outcome}
            rec["keys" if isinstance(key, list) else "key"] = key
            f.write(json.dumps(rec) + "\n")
    return path


class CheckTest(unittest.TestCase):
    def run_check(self, ops, events):
        path = history(ops)
        try:
            return run_notify.check([FakeSub(events)], path)
        finally:
            os.unlink(path)

    def test_events_after_their_writes_pass(self):
        bad, line = self.run_check(
            [("set", "hl:0", 1.0, "ok"), ("incrby", "hl:0", 2.0, "info"),
             ("mset", ["hl:0", "hl:1"], 3.0, "ok"), ("expire", "hl:1", 4.0, "ok")],
            [(1.5, "hl:0", "set"), (2.5, "hl:0", "incrby"), (3.1, "hl:0", "set"),
             (3.2, "hl:1", "set"), (4.1, "hl:1", "del"), (5.0, "hl:1", "expired")])
        self.assertEqual(bad, [])
        self.assertIn("6 events heard", line)

    def test_an_event_before_any_write_is_caught(self):
        bad, _ = self.run_check([("set", "hl:0", 2.0, "ok")], [(1.0, "hl:0", "set")])
        self.assertEqual(len(bad), 1)
        self.assertIn("no write before it", bad[0])

    def test_one_event_more_than_writes_is_caught(self):
        bad, _ = self.run_check([("set", "hl:0", 1.0, "ok")],
                                [(1.5, "hl:0", "set"), (1.6, "hl:0", "set")])
        self.assertEqual(len(bad), 1)

    def test_a_failed_write_emits_nothing(self):
        bad, _ = self.run_check([("incrby", "hl:0", 1.0, "fail")], [(1.5, "hl:0", "incrby")])
        self.assertEqual(len(bad), 1)

    def test_an_event_no_op_can_emit_is_caught(self):
        bad, _ = self.run_check([("set", "hl:0", 1.0, "ok")], [(1.5, "hl:0", "rename_to")])
        self.assertEqual(len(bad), 1)

    def test_keys_outside_the_history_are_not_judged(self):
        bad, line = self.run_check([], [(1.0, "probe:1", "set")])
        self.assertEqual(bad, [])
        self.assertIn("0 events heard", line)


if __name__ == "__main__":
    unittest.main()

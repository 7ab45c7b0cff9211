"""test_pubsub.py - run_pubsub.check() on synthetic runs: what it must pass
and what it must catch (python3 -m unittest, standard library only)."""

import json
import os
import tempfile
import unittest

import run_pubsub


class FakePub:
    def __init__(self, i, log):
        self.i, self.log, self.error = i, log, None


class FakeSub:
    def __init__(self, i, heard, colos):
        self.i, self.heard, self.colos, self.reconnects = i, heard, colos, len(colos) - 1
        self.error = None


def pub(i, msgs):
    """msgs: (seq, channel, t0, outcome); each answered 10 ms later."""
    return FakePub(i, [(seq, ch, t0, t0 + 0.01, outcome, 1) for seq, ch, t0, outcome in msgs])


P0 = pub(0, [(1, "hch:0", 1.0, "ok"), (2, "hch:0", 2.0, "ok"), (3, "hch:1", 3.0, "ok"),
             (4, "hch:0", 4.0, "ok")])
P1 = pub(1, [(1, "hch:0", 1.5, "ok"), (2, "hch:0", 2.5, "ok")])


class CheckTest(unittest.TestCase):
    def test_a_clean_run_passes(self):
        a = FakeSub(0, [(1.1, 0, "hch:0", "p0:1"), (1.6, 0, "hch:0", "p1:1"),
                        (2.1, 0, "hch:0", "p0:2"), (3.1, 0, "hch:1", "p0:3")], ["c0"])
        b = FakeSub(1, [(1.7, 0, "hch:0", "p1:1"), (2.2, 0, "hch:0", "p0:2"),
                        (2.6, 0, "hch:0", "p1:2"), (4.1, 0, "hch:0", "p0:4")], ["c0"])
        bad, line = run_pubsub.check([P0, P1], [a, b])
        self.assertEqual(bad, [])
        self.assertIn("8 messages heard by 2 subscriber(s)", line)
        self.assertIn("6 publishes (6 ok)", line)
        self.assertIn("0 ok publishes heard by none", line)

    def test_lost_messages_are_counted_not_judged(self):
        a = FakeSub(0, [(4.1, 0, "hch:0", "p0:4")], ["c0"])
        bad, line = run_pubsub.check([P0, P1], [a])
        self.assertEqual(bad, [])
        self.assertIn("5 ok publishes heard by none", line)

    def test_an_invented_message_is_caught(self):
        for heard in [(1.1, 0, "hch:0", "p0:9"),        # never published
                      (1.1, 0, "hch:1", "p0:1"),        # on another channel
                      (0.9, 0, "hch:0", "p0:1"),        # before its PUBLISH
                      (1.1, 0, "hch:0", "hello")]:      # not a workload payload
            bad, _ = run_pubsub.check([P0], [FakeSub(0, [heard], ["c0"])])
            self.assertEqual(len(bad), 1, heard)
            self.assertIn("invented", bad[0])

    def test_a_failed_publish_heard_is_caught(self):
        p = pub(0, [(1, "hch:0", 1.0, "fail")])
        bad, _ = run_pubsub.check([p], [FakeSub(0, [(1.1, 0, "hch:0", "p0:1")], ["c0"])])
        self.assertEqual(len(bad), 1)
        self.assertIn("failed", bad[0])

    def test_a_duplicate_on_one_connection_is_caught(self):
        a = FakeSub(0, [(1.1, 0, "hch:0", "p0:1"), (1.2, 0, "hch:0", "p0:1")], ["c0"])
        bad, _ = run_pubsub.check([P0], [a])
        self.assertEqual(len(bad), 1)
        self.assertIn("twice", bad[0])

    def test_the_same_message_on_a_new_connection_is_not_a_duplicate(self):
        a = FakeSub(0, [(1.1, 0, "hch:0", "p0:1"), (1.2, 1, "hch:0", "p0:1")], ["c0", "c0"])
        bad, _ = run_pubsub.check([P0], [a])
        self.assertEqual(bad, [])

    def test_a_publishers_order_is_judged(self):
        a = FakeSub(0, [(2.1, 0, "hch:0", "p0:2"), (2.2, 0, "hch:0", "p0:1")], ["c0"])
        bad, _ = run_pubsub.check([P0], [a])
        self.assertTrue(any("a publisher's order" in b for b in bad), bad)

    def test_a_message_whose_answer_was_lost_may_come_late(self):
        p = pub(0, [(1, "hch:0", 1.0, "unknown"), (2, "hch:0", 2.0, "ok")])
        a = FakeSub(0, [(2.1, 0, "hch:0", "p0:2"), (2.2, 0, "hch:0", "p0:1")], ["c0"])
        bad, _ = run_pubsub.check([p], [a])
        self.assertEqual(bad, [])

    def test_two_orders_in_one_colo_are_caught(self):
        a = FakeSub(0, [(1.7, 0, "hch:0", "p0:1"), (1.8, 0, "hch:0", "p1:1")], ["c0"])
        b = FakeSub(1, [(1.7, 0, "hch:0", "p1:1"), (1.8, 0, "hch:0", "p0:1")], ["c0"])
        bad, _ = run_pubsub.check([P0, P1], [a, b])
        self.assertEqual(len(bad), 1)
        self.assertIn("two orders", bad[0])

    def test_a_longer_cycle_over_three_subscribers_is_caught(self):
        x, y, z = "p0:1", "p1:1", "p0:2"
        subs = [FakeSub(0, [(3.0, 0, "hch:0", x), (3.1, 0, "hch:0", y)], ["c0"]),
                FakeSub(1, [(3.0, 0, "hch:0", y), (3.1, 0, "hch:0", z)], ["c0"]),
                FakeSub(2, [(3.0, 0, "hch:0", z), (3.1, 0, "hch:0", x)], ["c0"])]
        bad, _ = run_pubsub.check([P0, P1], subs)
        self.assertTrue(any("two orders" in b for b in bad), bad)

    def test_two_colos_are_not_judged_against_each_other(self):
        a = FakeSub(0, [(1.7, 0, "hch:0", "p0:1"), (1.8, 0, "hch:0", "p1:1")], ["c0"])
        b = FakeSub(1, [(1.7, 0, "hch:0", "p1:1"), (1.8, 0, "hch:0", "p0:1")], ["c1"])
        bad, _ = run_pubsub.check([P0, P1], [a, b])
        self.assertEqual(bad, [])

    def test_the_output_file_has_every_record(self):
        a = FakeSub(0, [(1.1, 0, "hch:0", "p0:1")], ["c0"])
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        try:
            run_pubsub.write(path, [P0], [a])
            with open(path) as f:
                recs = [json.loads(l) for l in f]
        finally:
            os.unlink(path)
        self.assertEqual(len(recs), 5)
        self.assertEqual(recs[-1]["colo"], "c0")
        self.assertEqual(recs[0]["outcome"], "ok")


if __name__ == "__main__":
    unittest.main()

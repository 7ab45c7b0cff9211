"""test_scan.py - run_scan's scanner against scripted SCAN replies: a walk
is followed to cursor 0 through failed calls, judged on the stable keys,
and abandoned (never judged) when it cannot finish (python3 -m unittest,
standard library only)."""

import threading
import unittest
from unittest import mock

import run_scan
from run_resp import RespError, Transport


class FakeConn:
    """Answers SCAN calls from a script: each item a reply, or an exception to raise."""

    def __init__(self, script):
        self.script, self.asked = list(script), []

    def call(self, args, timeout=None):
        self.asked.append(args[1])
        if not self.script:
            return RespError("ERR script ran out")
        r = self.script.pop(0)
        if isinstance(r, (Transport, OSError)):
            raise r
        return r

    def close(self):
        pass


def scanner():
    s = run_scan.Scanner(1, None, threading.Event())
    s.stable = {"hl:scan:0", "hd:scan:1"}
    return s


@mock.patch("run_scan.time.sleep", lambda s: None)
class ScanTest(unittest.TestCase):
    def test_a_walk_follows_the_cursor_through_failures(self):
        c = FakeConn([["77", ["hl:scan:0"]], RespError("TRYAGAIN owners changing"),
                      ["99", ["hd:scan:1", "hl:5"]], ["0", []]])
        s = scanner()
        conn, res = s.walk(c)
        self.assertIs(conn, c)
        seen = res[0]
        self.assertEqual(c.asked, ["0", "77", "77", "99"])  # the failed call asked again
        self.assertEqual(run_scan.judge(s.stable, seen), "")

    def test_a_missed_stable_key_is_a_broken_promise(self):
        bad = run_scan.judge({"hl:scan:0", "hd:scan:1"}, {"hl:scan:0": 1})
        self.assertIn("missed 1 keys", bad)
        self.assertIn("hd:scan:1", bad)

    def test_an_invented_scan_key_is_a_broken_promise(self):
        bad = run_scan.judge({"hl:scan:0"}, {"hl:scan:0": 1, "hl:scan:9": 1, "hl:3": 2})
        self.assertIn("never written", bad)
        self.assertIn("hl:scan:9", bad)
        self.assertNotIn("hl:3", bad)

    def test_a_key_twice_is_allowed(self):
        self.assertEqual(run_scan.judge({"hl:scan:0"}, {"hl:scan:0": 2}), "")

    def test_a_walk_that_cannot_finish_is_abandoned_not_judged(self):
        c = FakeConn([Transport("reset")] * (run_scan.FAILS_MAX + 5))
        s = scanner()
        s.hkv = type("H", (), {"port": 1})()  # reconnects fail: port 1 refuses
        conn, res = s.walk(c)
        self.assertIsNone(res)
        self.assertEqual(s.broken, [])

    def test_a_malformed_reply_is_a_run_error(self):
        s = scanner()
        conn, res = s.walk(FakeConn(["OK"]))
        self.assertIsNone(res)
        self.assertIn("SCAN answered", s.error)


if __name__ == "__main__":
    unittest.main()

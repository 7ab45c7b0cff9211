#!/usr/bin/python3
"""test_tracking.py - reads a tracking client answered from its own cache
(issue 28; run_track.py writes them: `"cached": true`, t0 = t1 = the moment
it looked): the checker judges them with the class's cached_delta_ms, so a
cached value overwritten longer ago than that is an anomaly; and the
client's push handling (invalidate, flush, pushes before a reply) on a
socket pair.

    /usr/bin/python3 tests/history/test_tracking.py
"""

import json
import os
import socket
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import checker  # noqa: E402
import run_track  # noqa: E402
from run_resp import Transport  # noqa: E402

# read_delta 0 (one colo), the run's cached bound (fresh + miss-wait + push
# allowance: 2000 + 800 + 500 ms), keep 10 s for stale-flagged fills.
CLASSES = {"hl": {"durability": "ledger", "persist_window_ms": 600, "read_delta_ms": 0,
                  "stale_delta_ms": 10000, "cached_delta_ms": 3300},
           "hz": {"durability": "ledger", "persist_window_ms": 600, "read_delta_ms": 0,
                  "stale_delta_ms": 10000}}


class Hist:
    def __init__(self):
        self.lines = [{"kind": "header", "version": 1, "seed": 1, "started": 1.0,
                       "classes": CLASSES, "colos": ["a"], "clients": 3,
                       "keys": {"hl:0": {"class": "hl", "owner": "hot/0"},
                                "hl:1": {"class": "hl", "owner": "hot/0"},
                                "hz:0": {"class": "hz", "owner": "hot/0"}}}]
        self.n = 0

    def op(self, client, f, key, t0, t1, value, args=None, **flags):
        self.n += 1
        line = {"kind": "op", "id": self.n, "client": client, "colo": "a", "edge": "a/0",
                "f": f, "args": args or {}, "t0": 100.0 + t0, "t1": 100.0 + t1,
                "outcome": "ok", "value": value, "error": None}
        line["keys" if isinstance(key, list) else "key"] = key
        line.update(flags)
        self.lines.append(line)
        return self

    def set(self, client, key, v, t0, t1):
        return self.op(client, "set", key, t0, t1, "OK",
                       {"value": v, "nx": False, "xx": False, "get": False,
                        "keepttl": False, "px": None})

    def cached(self, client, key, t, value, **flags):
        f = "mget" if isinstance(key, list) else "get"
        return self.op(client, f, key, t, t, value, cached=True, **flags)

    def check(self):
        return checker.check_history([json.dumps(x) for x in self.lines], time_limit=10.0)


class CachedReads(unittest.TestCase):
    def assertVerdict(self, h, code, key=None):
        res = h.check()
        self.assertEqual(res.exit_code, code, res.report())
        if code == checker.EXIT_ANOMALY:
            self.assertEqual([a.key for a in res.anomalies], [key], res.report())
        return res

    def base(self):
        # client 2 (tracking) read "a" from the server at 1.5 and cached it;
        # client 1 overwrote it with "b", acknowledged at 2.1.
        h = Hist().set(1, "hl:0", "a", 1.0, 1.1).op(2, "get", "hl:0", 1.5, 1.6, "a")
        return h.set(1, "hl:0", "b", 2.0, 2.1)

    def test_cached_read_within_the_bound_passes(self):
        h = self.base().cached(2, "hl:0", 2.1 + 3.0, "a").cached(2, "hl:0", 6.0, "b")
        self.assertVerdict(h, checker.EXIT_OK)

    def test_stale_cache_past_the_bound_is_flagged(self):
        # "a" was overwritten at 2.0..2.1; at 6.0 (3.9 s later, bound 3.3 s)
        # the client still answers "a" from its cache: an invalidation lost.
        h = self.base().cached(2, "hl:0", 6.0, "a").op(3, "get", "hl:0", 6.5, 6.6, "b")
        res = self.assertVerdict(h, checker.EXIT_ANOMALY, "hl:0")
        self.assertEqual(res.anomalies[0].name, checker.A_STALE, res.report())
        self.assertIn("cached", res.report())
        self.assertLessEqual(len(res.anomalies[0].ops), 3, res.report())

    def test_cached_mget_past_the_bound_is_flagged(self):
        h = self.base().set(1, "hl:1", "x", 1.0, 1.1)
        h.cached(2, ["hl:1", "hl:0"], 6.0, ["x", "a"])
        self.assertVerdict(h, checker.EXIT_ANOMALY, "hl:0")

    def test_the_flag_is_what_allows_it(self):
        # The same read sent to the server (one colo: read_delta 0).
        h = self.base().op(2, "get", "hl:0", 2.5, 2.5, "a")
        self.assertVerdict(h, checker.EXIT_ANOMALY, "hl:0")

    def test_cached_read_never_older_than_its_clients_last_answer(self):
        h = self.base().op(2, "get", "hl:0", 2.3, 2.4, "b").cached(2, "hl:0", 2.5, "a")
        self.assertVerdict(h, checker.EXIT_ANOMALY, "hl:0")

    def test_cached_delete_is_judged_too(self):
        h = Hist().op(2, "get", "hl:0", 1.0, 1.1, None).set(1, "hl:0", "a", 2.0, 2.1)
        self.assertVerdict(h.cached(2, "hl:0", 3.0, None), checker.EXIT_OK)
        self.assertVerdict(h.cached(2, "hl:0", 9.0, None), checker.EXIT_ANOMALY, "hl:0")

    def test_a_stale_flagged_fill_keeps_the_stale_bound(self):
        h = self.base().cached(2, "hl:0", 9.0, "a", stale=True)
        self.assertVerdict(h, checker.EXIT_OK)
        h = self.base().cached(2, "hl:0", 13.0, "a", stale=True)
        self.assertVerdict(h, checker.EXIT_ANOMALY, "hl:0")

    def test_without_cached_delta_the_class_read_delta_applies(self):
        h = Hist().set(1, "hz:0", "a", 1.0, 1.1).set(1, "hz:0", "b", 2.0, 2.1)
        self.assertVerdict(h.cached(2, "hz:0", 2.5, "a"), checker.EXIT_ANOMALY, "hz:0")

    def test_only_reads_may_be_cached(self):
        h = Hist().op(2, "exists", "hl:0", 1.0, 1.0, 0, cached=True)
        with self.assertRaises(checker.BadHistory):
            h.check()


def _push(keys):
    if keys is None:
        return b">2\r\n$10\r\ninvalidate\r\n_\r\n"
    out = b">2\r\n$10\r\ninvalidate\r\n*%d\r\n" % len(keys)
    return out + b"".join(b"$%d\r\n%s\r\n" % (len(k), k.encode()) for k in keys)


class PushHandling(unittest.TestCase):
    """TrackConn on a socket pair: what reaches the cache."""

    def setUp(self):
        self.a, self.b = socket.socketpair()
        self.conn = run_track.TrackConn.__new__(run_track.TrackConn)
        self.conn.sock, self.conn.buf, self.conn.attrs = self.a, bytearray(), []
        self.client = run_track.TrackingClient.__new__(run_track.TrackingClient)
        self.client.cache = {"k1": ("v", False, False), "k2": ("w", False, False)}
        self.client.counts = {"pushes": 0, "flushes": 0, "keys_invalidated": 0}
        self.conn.on_push = self.client.on_push

    def tearDown(self):
        self.a.close()
        self.b.close()

    def test_drain_drops_invalidated_keys_and_keeps_a_partial_frame(self):
        whole = _push(["k1"]) + _push(["k2"])
        self.b.sendall(whole[:-3])
        self.conn.drain()
        self.assertEqual(sorted(self.client.cache), ["k2"])   # the second still on its way
        self.b.sendall(whole[-3:])
        self.conn.drain()
        self.assertEqual(self.client.cache, {})
        self.assertEqual(self.client.counts["keys_invalidated"], 2)

    def test_null_payload_flushes(self):
        self.b.sendall(_push(None))
        self.conn.drain()
        self.assertEqual(self.client.cache, {})
        self.assertEqual(self.client.counts["flushes"], 1)

    def test_pushes_before_a_reply_are_applied_first(self):
        self.b.sendall(_push(["k1"]) + b"$3\r\nnew\r\n" + _push(["k2"]))
        self.assertEqual(self.conn.read(time.monotonic() + 5), "new")
        self.assertEqual(sorted(self.client.cache), ["k2"])
        self.conn.drain()
        self.assertEqual(self.client.cache, {})

    def test_closed_connection_and_unasked_reply_are_transport(self):
        self.b.sendall(b"+OK\r\n")
        with self.assertRaises(Transport):
            self.conn.drain()
        self.conn.buf = bytearray()
        self.b.close()
        with self.assertRaises(Transport):
            self.conn.drain()


if __name__ == "__main__":
    unittest.main()

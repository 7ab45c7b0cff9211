"""checker_hist.py - what the checker's tests share (test_checker.py,
test_checker_search.py): the classes of a test history, a builder of
histories by hand (times are seconds from 100.0), and the asserts on a
check's result."""

import json
import os
import sys
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

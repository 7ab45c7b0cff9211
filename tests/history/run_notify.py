"""run_notify.py - keyspace notifications in the history run (issue 28):
the daemon runs with `notify-keyspace-events KEA` and a subscriber
(`--notify N` of them, default 1) holds `PSUBSCRIBE __keyspace@0__:*`
through every fault, reconnecting when its connection goes (a killed
edge, a restart), and records each event it hears with the time it heard
it.  After the run, check() judges the events against the history's
operations, with what the README promises and nothing more:

  - an event is sent once its write is acknowledged, so the i-th event E
    heard on key K needs at least i operations on K that can emit E, that
    did not fail, and that were invoked before it was heard ("an event
    with no write before it": invented, duplicated, or of a failed write);
  - an event name no operation of the workload can emit is an anomaly;
  - only the history's keys are judged (the nemesis writes probe keys);
  - the subscriber may miss events (its connection went, a push link
    went down): a missed event is never judged, only counted.

The subscriber's output is its own file (notify.jsonl), not history
lines: the checker of the history (checker.py) is not told of it."""

import json
import time

from run_resp import Conn, RespError
from run_sub import SubscriberThread

NOTIFY_DEFAULT = 1
PREFIX = "__keyspace@0__:"

# The events each history operation can emit (README "Keyspace notifications").
EMITS = {
    "set": {"set", "expire"},
    "mset": {"set"},
    "del": {"del"},
    "getdel": {"del"},
    "expire": {"expire", "del"},
    "persist": {"persist"},
    "incrby": {"incrby"},
    "cas": {"set"},
    "setifmatch": {"set"},
    "put": {"set"},
    "delete": {"del"},
}
# A key with a deadline may expire by itself: any op that can set one.
DEADLINE_OPS = {"set", "expire"}


class Subscriber(SubscriberThread):
    def __init__(self, i, hkv, stop, path):
        SubscriberThread.__init__(self, "notify subscriber %d" % i)
        self.i, self.hkv, self.stop, self.path = i, hkv, stop, path
        self.events = []        # (t, key, event)

    def connect(self):
        c = Conn(self.hkv.port, timeout=3.0)
        c.send(["PSUBSCRIBE", PREFIX + "*"], time.monotonic() + 3.0)
        r = c.read(time.monotonic() + 3.0)
        if not isinstance(r, list) or len(r) != 3 or r[0] != "psubscribe":
            c.close()
            raise OSError("PSUBSCRIBE: %r" % (r,))
        return c

    def take(self, v, t):
        if isinstance(v, RespError):
            return "an error in subscribed mode: %s" % v
        if (not isinstance(v, list) or len(v) != 4 or v[0] != "pmessage" or
                not isinstance(v[2], str) or not v[2].startswith(PREFIX)):
            return "not a keyspace pmessage: %r" % (v,)
        self.events.append((t, v[2][len(PREFIX):], v[3]))
        return None

    def finish(self):
        with open(self.path, "a") as f:
            for t, k, e in self.events:
                f.write(json.dumps({"sub": self.i, "t": t, "key": k, "event": e}) + "\n")


def _producers(history_path):
    """The history's keys, and (key, event) -> sorted invocation times of
    the ops that may emit it."""
    out, keys_of_run = {}, set()
    with open(history_path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") == "header":
                keys_of_run = set(rec.get("keys", {}))
            if rec.get("kind") != "op" or rec.get("outcome") == "fail":
                continue
            emits = EMITS.get(rec.get("f"))
            if emits is None:
                continue
            keys = rec.get("keys") or ([rec["key"]] if "key" in rec else [])
            for k in keys:
                for e in emits:
                    out.setdefault((k, e), []).append(rec["t0"])
                if rec.get("f") in DEADLINE_OPS:
                    out.setdefault((k, "expired"), []).append(rec["t0"])
    for v in out.values():
        v.sort()
    return keys_of_run, out


def check(subscribers, history_path):
    """A list of anomaly lines (empty: clean) and a one-line summary."""
    keys_of_run, prod = _producers(history_path)
    anomalies = []
    heard = 0
    for s in subscribers:
        seen = {}
        for t, k, e in s.events:
            if k not in keys_of_run:
                continue  # the nemesis's probe and loader keys: not in the history
            heard += 1
            n = seen[(k, e)] = seen.get((k, e), 0) + 1
            times = prod.get((k, e), [])
            before = _count_before(times, t)
            if before < n:
                anomalies.append(
                    "notify: subscriber %d heard %s #%d on %s at %.3f with %d operation(s) "
                    "that can emit it invoked before (an event with no write before it)" % (
                        s.i, e, n, k, t, before))
                if len(anomalies) >= 20:
                    return anomalies, "notify: %d events heard; stopped at 20 anomalies" % heard
    summary = "notify: %d subscriber(s), %d events heard, %d reconnects, %d anomalies" % (
        len(subscribers), heard, sum(s.reconnects for s in subscribers), len(anomalies))
    return anomalies, summary


def _count_before(times, t):
    lo, hi = 0, len(times)
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo

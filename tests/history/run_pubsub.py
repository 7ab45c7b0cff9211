"""run_pubsub.py - PUBLISH and SUBSCRIBE in the history run (issue 28):
publishers (two) PUBLISH numbered messages on a few channels through every
fault, each waiting for its answer before the next, and subscribers
(`--pubsub N`, default 2: even ones SUBSCRIBE the channels under RESP2, odd
ones PSUBSCRIBE a pattern under RESP3) hold their subscription, reconnecting
when the connection goes.  Each connection records its colo (INFO server,
before it subscribes).  After the run, check() judges what was heard
against what was published, with what README's Pub/sub section promises:

  - no invented message: every message heard was published on that channel
    by a PUBLISH invoked before it was heard, and not one that failed with
    a "not applied" error (README's error table);
  - no duplicate: one subscription (one connection) hears a message at most
    once (PUBLISH is never retried, by the client here or by the daemon); a
    reconnected subscriber may hear one again on its new connection;
  - a publisher's order per channel: a subscription hears one publisher's
    messages of a channel in the order they were published (a message whose
    answer was lost may come after later ones);
  - one order per colo: the subscriptions of one colo (every connection of
    every subscriber, both kinds) hear a channel's messages in one order
    (they read one bus): the order every connection saw is merged and must
    have no cycle;
  - a message may be lost (a connection or a push link went down): lost
    messages are counted, never judged.

The output is pubsub.jsonl, not history lines: checker.py is not told of it."""

import json
import random
import threading
import time

from run_resp import Conn, RespError, Transport, info_fields
from run_sub import SubscriberThread

PUBSUB_DEFAULT = 2
PUBLISHERS = 2
CHANNELS = ["hch:%d" % i for i in range(4)]
PATTERN = "hch:*"
PUBLISH_GAP_S = 0.004      # between one publisher's PUBLISHes: about 250 a second


def _payload(pub, seq):
    return "p%d:%d" % (pub, seq)


def _parse(payload):
    """(publisher, seq) of a payload, or None."""
    if not isinstance(payload, str) or not payload.startswith("p") or ":" not in payload:
        return None
    a, b = payload[1:].split(":", 1)
    if not (a.isdigit() and b.isdigit()):
        return None
    return int(a), int(b)


class Publisher(threading.Thread):
    def __init__(self, i, seed, hkv, stop):
        threading.Thread.__init__(self, daemon=True, name="publisher-%d" % i)
        self.i, self.hkv, self.stop = i, hkv, stop
        self.rng = random.Random("%s-publisher-%d" % (seed, i))
        self.log = []          # (seq, channel, t0, t1, outcome, reply)
        self.error = None

    def run(self):
        conn, seq = None, 0
        while not self.stop.is_set():
            if conn is None:
                try:
                    conn = Conn(self.hkv.port, timeout=3.0)
                except (OSError, Transport):
                    time.sleep(0.2)
                    continue
            seq += 1
            ch = self.rng.choice(CHANNELS)
            t0 = time.monotonic()
            try:
                r = conn.call(["PUBLISH", ch, _payload(self.i, seq)], timeout=3.0)
            except Transport as e:
                self.log.append((seq, ch, t0, time.monotonic(), "unknown", str(e)))
                conn.close()
                conn = None
                continue
            t1 = time.monotonic()
            if isinstance(r, RespError):
                outcome = "unknown" if "outcome unknown" in str(r) else "fail"
                self.log.append((seq, ch, t0, t1, outcome, str(r)))
            elif isinstance(r, int):
                self.log.append((seq, ch, t0, t1, "ok", r))
            else:
                self.log.append((seq, ch, t0, t1, "unknown", repr(r)))
                self.error = "publisher %d: PUBLISH answered %r" % (self.i, r)
            time.sleep(PUBLISH_GAP_S)
        if conn is not None:
            conn.close()


class Subscriber(SubscriberThread):
    def __init__(self, i, hkv, stop):
        SubscriberThread.__init__(self, "pubsub subscriber %d" % i)
        self.i, self.hkv, self.stop = i, hkv, stop
        self.pattern = i % 2 == 1
        self.heard = []        # (t, conn number, channel, payload)
        self.colos = []        # colo of each connection, by number

    def connect(self):
        c = Conn(self.hkv.port, timeout=3.0)
        try:
            colo = info_fields(c.call(["INFO", "server"], timeout=3.0)).get("colo", "?")
            if self.pattern:
                r = c.call(["HELLO", "3"], timeout=3.0)
                if isinstance(r, RespError):
                    raise OSError("HELLO 3: %s" % r)
                c.send(["PSUBSCRIBE", PATTERN], time.monotonic() + 3.0)
                want = 1
            else:
                c.send(["SUBSCRIBE"] + CHANNELS, time.monotonic() + 3.0)
                want = len(CHANNELS)
            for _ in range(want):
                r = c.read(time.monotonic() + 3.0)
                if not isinstance(r, list) or len(r) != 3 or r[0] not in ("subscribe",
                                                                          "psubscribe"):
                    raise OSError("subscribe: %r" % (r,))
        except (OSError, Transport):
            c.close()
            raise
        self.colos.append(colo)
        return c

    def take(self, v, t):
        """Records one message; returns an error text for anything else."""
        if isinstance(v, RespError):
            return "an error in subscribed mode: %s" % v
        if self.pattern and isinstance(v, list) and len(v) == 4 and v[0] == "pmessage" \
                and v[1] == PATTERN:
            ch, payload = v[2], v[3]
        elif not self.pattern and isinstance(v, list) and len(v) == 3 and v[0] == "message":
            ch, payload = v[1], v[2]
        else:
            return "not a %s: %r" % ("pmessage" if self.pattern else "message", v)
        self.heard.append((t, len(self.colos) - 1, ch, payload))
        return None


def write(path, publishers, subscribers):
    with open(path, "w") as f:
        for p in publishers:
            for seq, ch, t0, t1, outcome, reply in p.log:
                f.write(json.dumps({"pub": p.i, "seq": seq, "channel": ch, "t0": t0, "t1": t1,
                                    "outcome": outcome, "reply": reply}) + "\n")
        for s in subscribers:
            for t, cn, ch, payload in s.heard:
                f.write(json.dumps({"sub": s.i, "conn": cn, "colo": s.colos[cn], "t": t,
                                    "channel": ch, "payload": payload}) + "\n")


def _cycle(edges):
    """A node on a cycle of the graph {a: set(b)} (a before b), or None."""
    indeg = {}
    for a, bs in edges.items():
        indeg.setdefault(a, 0)
        for b in bs:
            indeg[b] = indeg.get(b, 0) + 1
    ready = [n for n, d in indeg.items() if d == 0]
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        for b in edges.get(n, ()):
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    if done == len(indeg):
        return None
    return next(n for n, d in indeg.items() if d > 0)


def check(publishers, subscribers, limit=20):
    """A list of anomaly lines (empty: clean) and a one-line summary.
    publishers: objects with .i and .log; subscribers: .i, .heard, .colos,
    .reconnects."""
    published = {}                   # (pub, seq) -> (channel, t0, outcome)
    for p in publishers:
        for seq, ch, t0, _t1, outcome, _r in p.log:
            published[(p.i, seq)] = (ch, t0, outcome)
    anomalies = []

    def bad(line):
        anomalies.append(line)
        return len(anomalies) >= limit

    heard, delivered = 0, {}
    order = {}                       # (colo, channel) -> {msg: set(next msg)}
    for s in subscribers:
        seen, last_seq, prev = set(), {}, {}
        for t, cn, ch, payload in s.heard:
            heard += 1
            who = "subscriber %d (conn %d, colo %s)" % (s.i, cn, s.colos[cn])
            id_ = _parse(payload)
            pub = published.get(id_) if id_ is not None else None
            if pub is None or pub[0] != ch or pub[1] >= t:
                if bad("pubsub: %s heard %r on %s at %.3f: no PUBLISH of it on that channel "
                       "invoked before (an invented message)" % (who, payload, ch, t)):
                    break
                continue
            if pub[2] == "fail":
                if bad("pubsub: %s heard %r of a PUBLISH that failed (not applied)" % (
                        who, payload)):
                    break
            if (cn, id_) in seen:
                if bad("pubsub: %s heard %r twice (a duplicate)" % (who, payload)):
                    break
                continue
            seen.add((cn, id_))
            delivered[id_] = delivered.get(id_, 0) + 1
            # One publisher waits for each answer: a message answered "ok"
            # was published before every later one was invoked, so hearing
            # it after a later one breaks the order.  One whose answer was
            # lost (outcome unknown) may still have been in flight.
            k = (cn, id_[0], ch)
            if pub[2] == "ok" and last_seq.get(k, 0) > id_[1]:
                if bad("pubsub: %s heard %r after p%d:%d on %s (a publisher's order)" % (
                        who, payload, id_[0], last_seq[k], ch)):
                    break
            last_seq[k] = max(last_seq.get(k, 0), id_[1])
            pk = (cn, ch)
            g = order.setdefault((s.colos[cn], ch), {})
            if pk in prev:
                g.setdefault(prev[pk], set()).add(id_)
            g.setdefault(id_, set())
            prev[pk] = id_
        if len(anomalies) >= limit:
            break
    for (colo, ch), g in sorted(order.items()):
        n = _cycle(g)
        if n is not None and bad("pubsub: the subscriptions of colo %s heard %s's messages "
                                 "in two orders (p%d:%d is on a cycle)" % (colo, ch, n[0], n[1])):
            break
    ok = sum(1 for v in published.values() if v[2] == "ok")
    lost = sum(1 for k, v in published.items() if v[2] == "ok" and k not in delivered)
    summary = ("pubsub: %d publishes (%d ok), %d messages heard by %d subscriber(s), "
               "%d reconnects, %d ok publishes heard by none, %d anomalies" % (
                   len(published), ok, heard, len(subscribers),
                   sum(s.reconnects for s in subscribers), lost, len(anomalies)))
    return anomalies, summary

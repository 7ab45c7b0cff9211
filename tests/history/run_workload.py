"""run_workload.py - what the history runner's clients do (run.py): the reply
table (which error replies mean "not applied", which "outcome unknown"), the
history file, the workload (keys, operation kinds and their weights) and
the RESP client threads that run it and record each operation.  Split from
run.py (issue 28), which keeps the run itself: daemon, nemesis, summary."""

import json
import random
import threading
import time

import run_cas
from run_daemon import CLASSES, REQUEST_TIMEOUT_S, proc_title
from run_replicas import REPLICA_ONLY
from run_resp import Conn, RespError, Transport, info_fields
from run_route import owner_of

# ---- how replies are classified (printed by --help) -----------------------

# First word of an error reply -> outcome.  "fail": the command was NOT
# applied; the checker verifies that it really was not.  "info": the outcome
# is unknown (the write may have been applied, now or later).
REPLY_TABLE = [
    ("UNAVAILABLE", "info", "the owner did not acknowledge the write within write-deadline"),
    ("TIMEOUT", "info", "a durable write not committed within durable-timeout (may commit later)"),
    ("IOERR", "info", "a durable commit failed with an I/O error (the owner exits)"),
    ("MISCONF", "info", "disk full: a durable write not committed"),
    ("BUSY", "fail", "persist backlog over persist-max-dirty: write refused"),
    ("ERR", "fail", "syntax, wrong value (not an integer ...), refused request"),
    ("WRONGTYPE", "fail", "wrong type"),
    ("TRYAGAIN", "fail", "read: the owner did not answer (on-timeout error, miss-wait)"),
    ("OOM", "fail", "owner out of memory: write refused"),
    ("RATELIMITED", "fail", "over a rate limit: not run"),
    ("NOAUTH", "fail", "not authenticated: not run"),
]
REPLY_TABLE_NOTES = [
    "any other error word                    -> info (unknown, so not assumed harmless)",
    "TRYAGAIN on a write                     -> info (only reads are documented to say it)",
    "any error reply to MSET                 -> info (MSET is one SET per key, not atomic across"
    " owners: an error may leave some keys set)",
    "no reply within the request timeout     -> info (t1 = when the runner gave up)",
    "connection closed before the reply      -> info; the client reconnects as a new client",
]
ERROR_OUTCOME = {word: outcome for word, outcome, _ in REPLY_TABLE}


def reply_table_text():
    lines = ["error reply (first word) -> outcome:"]
    for word, outcome, why in REPLY_TABLE:
        lines.append("  -%-12s -> %-4s  %s" % (word, outcome, why))
    lines.append("and:")
    lines.extend("  " + n for n in REPLY_TABLE_NOTES)
    return "\n".join(lines)


def classify_error(text, f, is_write):
    """Outcome ("fail" or "info") of error reply `text` to operation f."""
    if f == "mset":
        return "info"
    word = text.split(" ", 1)[0].upper()
    outcome = ERROR_OUTCOME.get(word, "info")
    if word == "TRYAGAIN" and is_write:
        outcome = "info"
    return outcome


# Operation kinds of the workload and their weights (--ops picks a subset).
OP_WEIGHTS = [("set", 22), ("setnx", 5), ("setget", 3), ("get", 20), ("exists", 5),
              ("mget", 6), ("getdel", 4), ("del", 6), ("incr", 8), ("mset", 5),
              ("mset_dup", 2), ("expire", 7), ("persist", 7), ("setifeq", 3), ("cas", 5)]
# hotkvd's compare-and-sets, which a Redis 7.0 reference server does not have:
# SET ... IFEQ (Valkey 8.1) and "cas", GETWITHETAG then SETIFMATCH with the
# etag it read (tests/history/run_cas.py).
HOTKVD_ONLY_OPS = ("setifeq", "cas")

FAULT_KINDS = ["kill_owner", "kill_edge", "kill_master", "pause_owner", "disk_stall",
               "disk_eio", "sighup_reorder", "config_set", "big_request", "clock_shift",
               "client_pause",
               # issue 25: features composed (run_leaves.py, run_creds.py, run_outlimit.py)
               "leaf_split", "leaf_move", "move_pause", "move_kill", "auto_move",
               "cred_churn", "slow_reader", "http_stream",
               # issue 27: replicas (run_replicas.py; in "all" only with --replicas)
               "kill_primary", "stop_follower", "leaf_failover", "replica_config"]
LEAF_KINDS = {"leaf_split", "leaf_move", "move_pause", "move_kill", "auto_move"} | \
    set(REPLICA_ONLY)
WRITE_FS = {"set", "getdel", "del", "incrby", "expire", "persist", "mset"}


# ---- the history file -------------------------------------------------------


class History:
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.next_id = 0
        self.next_client = 0
        self.counts = {"ok": 0, "fail": 0, "info": 0}
        self.by_f = {}
        self.faults = {k: 0 for k in FAULT_KINDS + ["restart"]}
        self.crashes = {}
        self.crash_pids = set()
        self.surprises = []

    def op_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id

    def client_id(self):
        with self.lock:
            self.next_client += 1
            return self.next_client

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        with self.lock:
            self.f.write(line + "\n")
            k = obj.get("kind")
            if k == "op":
                self.counts[obj["outcome"]] += 1
                st = self.by_f.setdefault(obj["f"], {"ok": 0, "fail": 0, "info": 0})
                st[obj["outcome"]] += 1
            elif k == "fault":
                self.faults[obj["f"]] = self.faults.get(obj["f"], 0) + 1
            elif k == "crash":
                self.crashes[obj["owner"]] = self.crashes.get(obj["owner"], 0) + 1

    def crash(self, owner, pid, t):
        """A crash line: owner lost its memory without a flush at t."""
        self.write({"kind": "crash", "owner": owner, "t": t})
        with self.lock:
            self.crash_pids.add(pid)

    def surprise(self, text):
        with self.lock:
            self.surprises.append(text)

    def close(self):
        with self.lock:
            self.f.close()


# ---- the workload -----------------------------------------------------------


class Workload:
    """What the clients share: the key set and the generator of operations."""

    def __init__(self, nkeys, owners, ops):
        self.keys = {cls: self.pick(cls, nkeys, owners[CLASSES[cls]["pool"]]) for cls in CLASSES}
        self.all_keys = self.keys["hl"] + self.keys["hd"]
        # A counter beside each key, in its leaf (hash tag): only INCRBYs
        # while that leaf moves, so a retry applied twice shows as a total
        # one delta too high, in a sub-history of a few ops.
        self.counter = {k: "%s:n{%s}" % (k.split(":", 1)[0], k) for k in self.all_keys}
        self.ops = [name for name, _ in OP_WEIGHTS if name in ops]
        self.weights = [w for name, w in OP_WEIGHTS if name in ops]
        self.focus = None
        # a few values lately given to each key, for SET ... IFEQ to compare
        # with (shared by the clients; appends and reads are atomic)
        self.recent = {}

    def set_focus(self, keys):
        """While a leaf moves, most operations go to its keys, INCRBY mostly
        (a retry applied twice shows as a wrong total), some DELs (so an
        INCRBY meets a new key) and reads."""
        self.focus = list(keys) if keys else None
    @staticmethod
    def pick(cls, nkeys, nowners):
        """nkeys names "<cls>:<i>", the first i's that spread them evenly over
        the pool's owners (so every owner's faults touch the history)."""
        per = -(-nkeys // nowners)
        count = [0] * nowners
        keys, i = [], 0
        while len(keys) < nkeys:
            k = "%s:%d" % (cls, i)
            o = owner_of(k, CLASSES[cls]["pool"], nowners)
            if count[o] < per:
                count[o] += 1
                keys.append(k)
            i += 1
        return keys

    def gen(self, rng, client, opid):
        """(f, key-or-keys, args, command words) of the next operation."""
        focus = self.focus
        if focus and rng.random() < 0.4:
            key = self.counter[rng.choice(focus)]
            d = rng.randint(1, 20)
            return "incrby", key, {"delta": d}, ["INCRBY", key, str(d)]
        if focus and rng.random() < 0.6:
            kind = rng.choices(["incr", "del", "get"], weights=[7, 2, 1])[0]
            return getattr(self, "gen_" + kind)(rng, rng.choice(focus), "c%d-%d" % (client, opid))
        kind = rng.choices(self.ops, weights=self.weights)[0]
        op = getattr(self, "gen_" + kind)(rng, rng.choice(self.all_keys),
                                         "c%d-%d" % (client, opid))
        if op[0] in ("set", "cas") and isinstance(op[1], str):
            r = self.recent.setdefault(op[1], [])
            r.append(op[2]["value"])
            del r[:-4]
        return op

    @staticmethod
    def set_args(value, nx=False, xx=False, get=False, keepttl=False, px=None):
        return {"value": value, "nx": nx, "xx": xx, "get": get, "keepttl": keepttl, "px": px}

    def gen_set(self, rng, key, value):
        v, w = rng.random(), rng.random()
        nx, xx = v < 0.15, 0.15 <= v < 0.30
        get = not nx and rng.random() < 0.15  # NX with GET left out: one meaning per op
        keepttl = w < 0.10
        px = rng.randint(3600000, 7200000) if 0.10 <= w < 0.20 else None
        words = ["SET", key, value] + (["NX"] if nx else []) + (["XX"] if xx else []) + \
            (["GET"] if get else []) + (["KEEPTTL"] if keepttl else []) + \
            (["PX", str(px)] if px is not None else [])
        return "set", key, self.set_args(value, nx, xx, get, keepttl, px), words

    def gen_setnx(self, rng, key, value):
        return "set", key, self.set_args(value, nx=True), ["SETNX", key, value]

    def gen_setget(self, rng, key, value):
        return "set", key, self.set_args(value, get=True), ["SET", key, value, "GET"]

    def gen_get(self, rng, key, value):
        return "get", key, {}, ["GET", key]

    def gen_exists(self, rng, key, value):
        return "exists", key, {}, ["EXISTS", key]

    def gen_mget(self, rng, key, value):
        keys = [rng.choice(self.all_keys) for _ in range(rng.randint(2, 4))]
        return "mget", keys, {}, ["MGET"] + keys

    def gen_getdel(self, rng, key, value):
        return "getdel", key, {}, ["GETDEL", key]

    def gen_del(self, rng, key, value):
        return "del", key, {}, ["DEL", key]

    def gen_incr(self, rng, key, value):
        if rng.random() < 0.5:
            return "incrby", key, {"delta": 1}, ["INCR", key]
        d = rng.randint(-5, 20)
        return "incrby", key, {"delta": d}, ["INCRBY", key, str(d)]

    def _mset(self, keys, value):
        values = ["%s.%d" % (value, i) for i in range(len(keys))]
        words = ["MSET"]
        for k, v in zip(keys, values):
            words += [k, v]
        return "mset", keys, {"values": values}, words

    def gen_mset(self, rng, key, value):
        return self._mset(rng.sample(self.all_keys, rng.randint(2, 3)), value)

    def gen_mset_dup(self, rng, key, value):
        keys = rng.sample(self.all_keys, rng.randint(1, 2))
        return self._mset(keys + [keys[0]], value)  # the same key twice: the last wins

    def gen_expire(self, rng, key, value):
        if rng.random() < 0.7:
            ms = rng.randint(3600000, 7200000)
        else:
            ms = rng.choice([0, -1, -1000])
        return "expire", key, {"ms": ms}, ["PEXPIRE", key, str(ms)]

    def gen_persist(self, rng, key, value):
        return "persist", key, {}, ["PERSIST", key]

    def gen_setifeq(self, rng, key, value):
        """SET key value IFEQ old: old one of the values lately given to the
        key (so it matches now and then), or one never written."""
        r = self.recent.get(key) or ["never"]
        old = rng.choice(r + ["never"])
        get = rng.random() < 0.2
        args = self.set_args(value, get=get)
        args["ifeq"] = old
        return "set", key, args, ["SET", key, value, "IFEQ", old] + (["GET"] if get else [])

    def gen_cas(self, rng, key, value):
        """A compare-and-set on the owner's version; its words and its record
        depend on the etag the client last read (run_cas.cas_words)."""
        return "cas", key, {"value": value}, None


def reply_value(f, args, reply):
    """The recorded value of an ok reply, or raises ValueError if the shape is
    not what f returns."""
    if f == "get" or f == "getdel":
        if reply is None or isinstance(reply, str):
            return reply
    elif f in ("exists", "del", "incrby", "expire", "persist"):
        if isinstance(reply, int) and not isinstance(reply, bool):
            return reply
    elif f == "set":
        if args.get("get"):
            if reply is None or isinstance(reply, str):
                return reply
        elif isinstance(reply, int) and not isinstance(reply, bool):  # SETNX
            if reply in (0, 1):
                return "OK" if reply == 1 else None
        elif reply is None or reply == "OK":
            return reply
    elif f == "mset":
        if reply == "OK":
            return reply
    elif f == "mget":
        if isinstance(reply, list) and all(v is None or isinstance(v, str) for v in reply):
            return reply
    raise ValueError("unexpected reply %r to %s" % (reply, f))


class Client(threading.Thread):
    """One worker: a connection (a new client number after each reconnect),
    one operation at a time, its own seeded RNG."""

    conn_class = Conn   # run_track.py's clients read pushes too

    def __init__(self, index, seed, port, daemon, workload, history, stop, think_ms, nedges):
        super().__init__(name="client-%d" % index, daemon=True)
        self.index = index
        self.rng = random.Random("%s-client-%d" % (seed, index))
        self.port = port
        self.hkv = daemon
        self.workload = workload
        self.history = history
        self.stop_ev = stop
        self.think_ms = think_ms
        self.want_edge = index % max(1, nedges)
        self.conn = None
        self.etags = {}  # key -> (etag, value) this client last read (cas ops)
        self.client = None
        self.colo = None
        self.edge = None
        self.error = None

    def connect(self):
        """Connects (trying a few times to land on this client's edge) and
        sets up HELLO 3 and CLIENT META ON.  False if the daemon is down."""
        names = self.hkv.edge_names()
        want = names[self.want_edge % len(names)]
        best = None
        for _ in range(6):
            try:
                c = self.conn_class(self.port, timeout=2.0)
            except OSError:
                return False
            try:
                hello = c.call(["HELLO", "3"], timeout=2.0)
                meta = c.call(["CLIENT", "META", "ON"], timeout=2.0)
                srv = c.call(["INFO", "server"], timeout=2.0)
                if isinstance(hello, RespError) or isinstance(meta, RespError) or \
                        isinstance(srv, RespError):
                    c.close()
                    return False
            except Transport:
                c.close()
                return False
            fields = info_fields(srv)
            colo = fields.get("colo")
            try:
                title = proc_title(int(fields.get("edge_pid", "0"))) or ""
            except ValueError:
                title = ""
            edge = title[len("edge "):] if title.startswith("edge ") else None
            if best is not None:
                best[0].close()
            best = (c, colo, edge)
            if edge == want:
                break
        self.conn, self.colo, self.edge = best
        self.client = self.history.client_id()
        return True

    def drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def run(self):
        try:
            self.loop()
        except Exception as e:  # a runner bug: reported, fails the run
            self.error = "%s: %r" % (self.name, e)
        finally:
            self.drop()

    def loop(self):
        backoff = 0.05
        while not self.stop_ev.is_set():
            if self.conn is None:
                if not self.connect():
                    self.stop_ev.wait(backoff)
                    backoff = min(backoff * 2, 0.5)
                    continue
                backoff = 0.05
            opid = self.history.op_id()
            f, target, args, words = self.workload.gen(self.rng, self.client, opid)
            cas = None
            if f == "cas":
                f, args, words, cas = run_cas.cas_words(self.etags, target, args["value"])
            rec = {"kind": "op", "id": opid, "client": self.client, "colo": self.colo,
                   "edge": self.edge, "f": f}
            if isinstance(target, list):
                rec["keys"] = target
            else:
                rec["key"] = target
            rec["args"] = args
            is_write = f in WRITE_FS
            t0 = time.monotonic()
            deadline = t0 + REQUEST_TIMEOUT_S
            outcome, value, error, stale, degraded = "info", None, None, False, False
            try:
                self.conn.send(words, deadline)
                reply = self.conn.read(deadline)
                t1 = time.monotonic()
                if isinstance(reply, RespError):
                    error = str(reply)
                    outcome = classify_error(error, f, is_write)
                else:
                    try:
                        if cas is not None:
                            f, args, reply = run_cas.cas_record(self.etags, target, cas, reply)
                        value = reply_value(f, args, reply)
                        outcome = "ok"
                    except ValueError as e:
                        error = "runner: %s" % e
                        self.history.surprise("op %d: %s" % (opid, e))
                for a in self.conn.attrs:
                    stale = stale or a.get("stale") is True
                    degraded = degraded or a.get("degraded") is True
            except Transport as e:
                t1 = time.monotonic()
                error = "runner: %s" % e
                self.drop()
            rec["f"], rec["args"] = f, args  # a cas op's, as its reply made it
            rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                        "stale": stale, "degraded": degraded})
            self.history.write(rec)
            # No think time while a leaf moves: more writes in flight when
            # the map changes, to meet MOVED and be resent.
            if self.think_ms > 0 and not self.workload.focus:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)

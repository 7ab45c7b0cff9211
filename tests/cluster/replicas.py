"""replicas.py - the cluster with `replicas 1` (issue 27, CLUSTER.md §7):
turning it on, the map entries with their in-sync sets, a thread that turns
every change of a history key's primary into a move line, and the
cross-host nemeses of the issue, each returning what it measured:

  kill_host      kill -9 of every process of a primary's host daemon, the
                 host restarted once its leaves are promoted (it must rejoin
                 as a follower);
  etcd_cut       the primary's host cut from etcd alone (its agent's etcd
                 proxy blackholed), clients still reach it: the Sentinel-loss
                 case.  Its leaves are promoted elsewhere; it must fence;
  stop_host      SIGSTOP of every process of a primary's host past its lease
                 TTL, then SIGCONT: the returning old primary must not serve;
  follower_cut   a primary's host cut from its follower's host (one-way or
                 both ways, nftables): the follower leaves the in-sync set
                 by a CAS, writes go on;
  move_failover  a leaf move whose source host is killed -9 mid-way (a
                 failover during a move).

The fence, promotion and rejoin checks are also run as direct scenarios
(replica_scenarios.py); here each nemesis records its timings and its
failed expectations become problems of the history run."""

import base64
import json
import os
import signal
import threading
import time

from run_resp import Transport

from cluster import PREFIX, POOL_OF, place, wait_until

REPLICA_TIMEOUT_MS = 1000
REPL_LINES = ["replicas 1", "replica-timeout %dms" % REPLICA_TIMEOUT_MS]
PROBE = {"hot": "hl:probe:", "cold": "hd:probe:"}


# ---- the map, read through etcd's JSON gateway (no etcdctl start per read)

def _range(cl, prefix, timeout=2.0):
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                       "range_end": base64.b64encode(end.encode()).decode()}).encode()
    out = json.loads(cl.etcd.http("/v3/kv/range", body=body, timeout=timeout))
    return [(base64.b64decode(kv["key"]).decode(), base64.b64decode(kv.get("value", "")).decode(),
             int(kv.get("mod_revision", 0))) for kv in out.get("kvs", [])]


class Map:
    """One read of the map: leaves {(pool, "bits-prefix"): {owner, isr,
    epoch}} and owners {number: "host/pool/k"}."""

    def __init__(self, cl):
        self.leaves = {}
        for k, v, rev in _range(cl, PREFIX + "map/"):
            pool, leaf = k[len(PREFIX + "map/"):].split("/", 1)
            d = json.loads(v)
            self.leaves[(pool, leaf)] = {"owner": int(d["owner"]), "epoch": rev,
                                         "isr": [int(x) for x in d.get("isr", [])],
                                         "state": d.get("state", "serving"),
                                         "to": int(d.get("to", 0))}
        self.owners = {}
        for k, v, _ in _range(cl, PREFIX + "owners/"):
            self.owners[int(k.rsplit("/", 1)[1])] = json.loads(v)["id"]
        self.numbers = {oid: n for n, oid in self.owners.items()}

    def leaf_of(self, key):
        """((pool, name), entry) of key's leaf."""
        pool = POOL_OF[key.split(":", 1)[0]]
        h = place(key)
        for (p, name), e in self.leaves.items():
            bits, prefix = name.split("-", 1)
            b = int(bits)
            if p == pool and (h >> (64 - b) if b else 0) == int(prefix, 16):
                return (p, name), e
        return (pool, None), None

    def owner_id(self, n):
        return self.owners.get(n, "#%d" % n)

    def host_of(self, n):
        return self.owner_id(n).split("/", 1)[0]

    def in_sync(self):
        """(leaves with a follower in sync, leaves)."""
        return sum(1 for e in self.leaves.values() if e["isr"]), len(self.leaves)

    def followed_by_host(self, host):
        return sum(1 for e in self.leaves.values()
                   for n in e["isr"] if self.host_of(n) == host)


def leaf_state(cl, leaf):
    """(state, owner, to) of one map entry ("serving"/"moving"), or None."""
    try:
        rows = _range(cl, PREFIX + "map/%s/%s" % leaf, timeout=1.0)
    except (OSError, ValueError):
        return None
    if not rows:
        return None
    d = json.loads(rows[0][1])
    return d.get("state", "serving"), int(d["owner"]), int(d.get("to", 0))


def read_map(cl):
    try:
        return Map(cl)
    except (OSError, ValueError, KeyError):
        return None


def enable(cl, log, timeout=90.0):
    """`replicas 1` on every host: in its config file (a restarted host keeps
    it) and by CONFIG SET (reloadable); then until every leaf has a
    follower in sync.  Returns the seconds that took; raises otherwise."""
    t0 = time.monotonic()
    for h in cl.hosts.values():
        if REPL_LINES[0] not in h.extra:
            h.extra += REPL_LINES
            h.write_conf()
        for name, value in (("replica-timeout", "%dms" % REPLICA_TIMEOUT_MS), ("replicas", "1")):
            r = h.call("CONFIG", "SET", name, value, timeout=5.0)
            if r != "OK":
                raise RuntimeError("CONFIG SET %s %s on %s: %r" % (name, value, h.tag, r))
    n, took = wait_replicated(cl, timeout)
    if n is None:
        m = read_map(cl)
        raise RuntimeError("not every leaf has a follower in sync %.0f s after replicas 1: %s"
                           % (timeout, m.in_sync() if m else "map unreadable"))
    log("replicas: every leaf (%d) has an in-sync follower %.1f s after replicas 1" %
        (n, time.monotonic() - t0))
    return time.monotonic() - t0


def wait_replicated(cl, timeout):
    """(number of leaves, s waited) once every host runs and every leaf has
    a follower in sync; (None, s) at the timeout."""
    def ok():
        if not all(h.running() for h in cl.hosts.values()):
            return None
        m = read_map(cl)
        if m is None:
            return None
        n, total = m.in_sync()
        return total if n == total and total else None
    return wait_until(ok, timeout, 0.25)


def unsynced(cl, most=6):
    """What a failed wait_replicated names: the leaves with no follower in
    sync and their primaries (and the hosts not running)."""
    down = [h.name for h in cl.hosts.values() if not h.running()]
    m = read_map(cl)
    if m is None:
        return "map unreadable" + (", hosts down: %s" % down if down else "")
    bad = sorted("%s/%s (primary %s, %s)" % (p, n, m.owner_id(e["owner"]), e["state"])
                 for (p, n), e in m.leaves.items() if not e["isr"])
    return "%d leaves without a follower in sync: %s%s%s" % (
        len(bad), ", ".join(bad[:most]), " ..." if len(bad) > most else "",
        ", hosts down: %s" % down if down else "")


class MapWatch(threading.Thread):
    """Every change of a history key's primary (promotion, move, hand-over)
    as a move line: t0 the last read that showed the old owner, t1 the
    first that shows the new one.  Also the times each leaf's primary
    changed, for the nemeses' timings."""

    def __init__(self, run, period=0.25):
        super().__init__(daemon=True)
        self.hist, self.cl, self.period = run, run.cl, period
        self.owner = {k: v["owner"] for k, v in run.keys.items()}
        self.last_ok = time.monotonic()
        self.halt = threading.Event()
        self.reads = self.failed_reads = 0
        self.lock = threading.Lock()
        self.latest = None

    def run(self):
        while not self.halt.is_set():
            self.poll()
            self.halt.wait(self.period)

    def poll(self):
        m = read_map(self.cl)
        now = time.monotonic()
        with self.lock:
            if m is None:
                self.failed_reads += 1
                return None
            self.reads += 1
            for key, old in list(self.owner.items()):
                _, e = m.leaf_of(key)
                new = m.owner_id(e["owner"]) if e else old
                if new != old:
                    self.hist.move([key], old, new, self.last_ok, now)
                    self.owner[key] = new
            self.last_ok = now
            self.latest = m
        return m

    def stop(self):
        self.halt.set()
        self.join(10)
        self.poll()   # the last changes, after the clients stopped


# ---- what a nemesis does to a host

def host_pids(h):
    """The daemon's processes, children first, the master last."""
    if not h.running():
        return []
    return list(reversed(h.pids()))


def kill_host(cl, h, history=None):
    """SIGKILL to every process of h's daemon (no lease revoked, nothing
    flushed); a crash line per owner.  Returns the time of the kill."""
    pids = host_pids(h)
    t = time.monotonic()
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    cl.procs.kill9(h.proc)
    h.proc = None
    if history is not None:
        for oid in h.owner_ids():
            history.crash(oid, pids[0] if pids else 0, t)
    return t


def signal_host(h, sig, pids=None):
    """sig to every process of h's daemon (or to pids); returns the pids."""
    pids = host_pids(h) if pids is None else pids
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:
            pass
    return pids


def probe_key(pool, leaf):
    """A key of pool's history class that falls in leaf ("bits-prefix")
    and is not a history key: the writes-back probe."""
    bits, prefix = leaf.split("-", 1)
    b, p = int(bits), int(prefix, 16)
    for i in range(200000):
        k = "%s%d" % (PROBE[pool], i)
        if (place(k) >> (64 - b) if b else 0) == p:
            return k
    return None


def write_back(h, key, t0, limit=30.0, value="probe"):
    """s from t0 to the first SET of key through h answered OK (a fresh
    connection per try), or None within limit."""
    end = t0 + limit
    n = 0
    while time.monotonic() < end:
        n += 1
        try:
            c = h.conn(timeout=3.0)
            try:
                r = c.call(["SET", key, "%s%d" % (value, n)], timeout=3.0)
            finally:
                c.close()
            if r == "OK":
                return time.monotonic() - t0
        except (OSError, Transport):
            pass
        time.sleep(0.02)
    return None


def set_once(h, key, value, timeout=4.0):
    """The reply of one SET through h (a RespError, "OK"), or the exception."""
    try:
        c = h.conn(timeout=timeout)
        try:
            return c.call(["SET", key, value], timeout=timeout)
        finally:
            c.close()
    except (OSError, Transport) as e:
        return e


def wait_primary_not(cl, leaf, number, timeout):
    """(Map, s) once leaf's primary is no longer owner number."""
    def moved():
        m = read_map(cl)
        return m if m is not None and m.leaves[leaf]["owner"] != number else None
    return wait_until(moved, timeout, 0.1)


def registered(cl, h):
    """h's agent holds a lease again (INFO cluster: etcd up, renewed within
    a second) and every owner of h is registered under it (members/)."""
    try:
        f = h.info("cluster")
    except (OSError, Transport):
        return False
    if f.get("etcd_up") != "1" or not 0 <= int(f.get("lease_renewed_ms_ago", -1)) < 1000:
        return False
    try:
        got = {k[len(PREFIX + "members/"):] for k, _, _ in
               _range(cl, PREFIX + "members/%s/" % h.name)}
    except (OSError, ValueError):
        return False
    return all(o in got for o in h.owner_ids())


def pick_leaf(run, used=(), pool=None):
    """A history key not in used whose leaf has a follower in sync: (key,
    leaf, entry, Map) or (None, ...)."""
    m = read_map(run.cl)
    if m is None:
        return None, None, None, None
    keys = [k for k in run.wl.all_keys if k not in used and
            (pool is None or POOL_OF[k.split(":", 1)[0]] == pool)]
    run.rng.shuffle(keys)
    for k in keys:
        leaf, e = m.leaf_of(k)
        if e is not None and e["isr"]:
            return k, leaf, e, m
    return None, None, None, m


def other_host_of(cl, rng, *names):
    """A running host not named: the one a probe writes through."""
    hs = [h for h in cl.hosts.values() if h.name not in names and h.running()]
    return rng.choice(hs) if hs else None

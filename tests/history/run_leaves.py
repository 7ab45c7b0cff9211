"""run_leaves.py - leaf splits and moves for the history runner (run.py), on a
single host with `leaf-moves yes` (the agent keeps the map in
dir/leaf-map.store; `hotkvd-admin CONF leaf list|split|move` reaches it).

Issue 25: a retry that meets MOVED must not be applied twice.  So the moves
are composed with the other faults: a move while the clients hammer the
moving leaf's history keys with INCRBY (the workload's "focus"), a move
whose target owner is SIGSTOPped the moment it takes the leaf (writes that
followed MOVED there time out and are resent after write-timeout), a move
whose source or target is killed mid-way, and automatic moves and splits
(`auto-moves yes` by reload, a loader making one owner busy through keys of
one history key's leaf).

Where a key lives matters to the checker (a crash of owner O loses only
O's keys), so every change of the map is written as a move line: the keys
of the history whose owner changed between two snapshots of `leaf list`,
with the snapshots' times as t0..t1 (tests/history/README.md, "Move
lines")."""

import re
import subprocess
import threading
import time

from run_resp import Conn, Transport, info_fields
from run_route import ROUTE_KEY, siphash24

LEAF_LINE = re.compile(r"^leaf (\w+) (\d+)-([0-9a-f]+) owner (\d+) (\S+) state (\w+)"
                       r"(?: to (\d+))? epoch (\d+)(?: isr ([\d,]+))?")


def key_hash32(key):
    """Top 32 bits of the key's placement hash (router.c; hash tags too)."""
    data = key.encode()
    i = data.find(b"{")
    if i >= 0:
        j = data.find(b"}", i + 1)
        if j > i + 1:
            data = data[i + 1:j]
    return siphash24(ROUTE_KEY, data) >> 32


def in_leaf(h32, bits, prefix):
    return (h32 >> (32 - bits) if bits else 0) == prefix


class LeafMap:
    """One snapshot of `leaf list`: {pool: [(bits, prefix, owner number,
    owner name, state, to, isr)]}, owner names as the history names owners
    ("hot/0": the id without its host), isr the in-sync followers' numbers
    (issue 27; [] without replicas)."""

    def __init__(self, text, t):
        self.t = t
        self.leaves = {}
        self.names = {}          # owner number -> "hot/0"
        for line in text.splitlines():
            m = LEAF_LINE.match(line.strip())
            if not m:
                continue
            pool, bits, prefix, num, oid, state, to, _, isr = m.groups()
            name = oid.split("/", 1)[1] if oid.count("/") >= 2 else oid
            self.names[int(num)] = name
            self.leaves.setdefault(pool, []).append(
                (int(bits), int(prefix, 16), int(num), name, state, int(to) if to else None,
                 [int(n) for n in isr.split(",")] if isr else []))

    def leaf_of(self, key, pool):
        h = key_hash32(key)
        for leaf in self.leaves.get(pool, []):
            if in_leaf(h, leaf[0], leaf[1]):
                return leaf
        return None

    def owner_of(self, key, pool):
        leaf = self.leaf_of(key, pool)
        return leaf[3] if leaf else None

    def numbers_of_pool(self, pool):
        return sorted({l[2] for l in self.leaves.get(pool, [])} |
                      {n for n, nm in self.names.items() if nm.startswith(pool + "/")})


def leaf_name(leaf):
    return "%d-%08x" % (leaf[0], leaf[1])


class Leaves:
    """The runner's view of the map and the leaf fault kinds."""

    def __init__(self, hkv, history, workload, key_pools, log):
        self.hkv = hkv
        self.history = history
        self.workload = workload
        self.key_pools = key_pools      # history key -> pool
        self.log = log
        self.lock = threading.Lock()
        self.map = None
        self.owners = {}                # history key -> owner name, as last written
        self.moves_done = 0
        self.splits_done = 0
        self.moves_failed = 0
        self.auto = {"moves": 0, "splits": 0}
        self.move_lines = 0
        self.broken = []                # leaves left unwritable after a move kind

    def admin(self, *args, timeout=30.0):
        cmd = [self.hkv.admin_bin, self.hkv.conf] + list(args)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1, "timeout after %g s" % timeout
        except OSError as e:
            return -1, str(e)
        return p.returncode, (p.stdout + p.stderr).strip()

    def snapshot(self):
        t = time.monotonic()
        code, out = self.admin("leaf", "list", timeout=15.0)
        if code != 0:
            return None
        return LeafMap(out, t)

    def sync(self, note):
        """Takes a snapshot and writes a move line for every history key
        whose owner changed since the last one (t0 = that snapshot's time:
        the move happened somewhere in between)."""
        with self.lock:
            m = self.snapshot()
            if m is None:
                return None
            prev = self.map
            changed = {}
            for key, pool in self.key_pools.items():
                o = m.owner_of(key, pool)
                old = self.owners.get(key)
                if o is not None and old is not None and o != old:
                    changed.setdefault((old, o), []).append(key)
                if o is not None:
                    self.owners[key] = o
            if prev is not None:
                # Owner numbers are stable on a host, but a snapshot names
                # only the owners that are some leaf's primary: one that
                # lost all of its leaves to promotions is still a follower.
                for n, name in prev.names.items():
                    m.names.setdefault(n, name)
            t0 = prev.t if prev is not None else m.t
            for (frm, to), keys in sorted(changed.items()):
                self.history.write({"kind": "move", "keys": sorted(keys), "from": frm, "to": to,
                                    "t0": t0, "t1": time.monotonic(), "detail": {"why": note}})
                self.move_lines += 1
            self.map = m
            return m

    def start(self):
        m = self.sync("start")
        if m is None:
            raise RuntimeError("leaf list failed: is leaf-moves on?")

    # ---- helpers

    def pick(self, rng, pool=None):
        """(key, pool, leaf) of a random history key whose leaf serves."""
        m = self.map
        keys = [k for k, p in self.key_pools.items() if (pool is None or p == pool)
                and k in self.workload.counter]     # not the counters themselves
        rng.shuffle(keys)
        for k in keys:
            leaf = m.leaf_of(k, self.key_pools[k])
            if leaf is not None and leaf[4] == "serving":
                return k, self.key_pools[k], leaf
        return None, None, None

    def keys_in(self, pool, leaf):
        """The workload's keys (not the counters) in leaf."""
        return [k for k, p in self.key_pools.items() if k in self.workload.counter
                and p == pool and in_leaf(key_hash32(k), leaf[0], leaf[1])]

    def other_owner(self, rng, pool, num):
        cands = [n for n in self.map.numbers_of_pool(pool) if n != num]
        return rng.choice(cands) if cands else None

    def leaf_now(self, pool, name):
        m = self.snapshot()
        if m is None:
            return None
        for leaf in m.leaves.get(pool, []):
            if leaf_name(leaf) == name:
                return leaf
        return None

    # ---- the fault kinds

    def do_split(self, nem):
        self.sync("before split")
        key, pool, leaf = self.pick(nem.rng)
        if key is None:
            nem.log("leaf_split: no serving leaf")
            return
        t0 = time.monotonic()
        code, out = self.admin("leaf", "split", pool, leaf_name(leaf))
        t1 = time.monotonic()
        if code == 0:
            self.splits_done += 1
        self.sync("split")
        nem.fault("leaf_split", "%s %s" % (pool, leaf_name(leaf)), t0, t1,
                  {"key": key, "exit": code, "out": out[-200:]})

    def _move(self, nem, kind, pause=None, kill=None):
        """A leaf move of a random history key, the clients focused on the
        leaf's keys (INCRBY mostly).  pause: "target"/"source" SIGSTOPped
        around the move; kill: "target"/"source" killed mid-way."""
        self.sync("before " + kind)
        key, pool, leaf = self.pick(nem.rng)
        if key is None:
            nem.log("%s: no serving leaf" % kind)
            return
        src = leaf[2]
        to = self.other_owner(nem.rng, pool, src)
        if to is None:
            nem.log("%s: pool %s has one owner" % (kind, pool))
            return
        names = self.map.names
        name = leaf_name(leaf)
        focus = self.keys_in(pool, leaf)
        self.workload.set_focus(focus)
        detail = {"key": key, "keys": focus, "from": names.get(src), "to": names.get(to)}
        t0 = time.monotonic()
        try:
            time.sleep(0.3)         # the focused writes start
            res = {}

            def run():
                res["r"] = self.admin("leaf", "move", pool, name, str(to), "--wait", "20000",
                                      timeout=30.0)

            th = threading.Thread(target=run, daemon=True)
            th.start()
            who = pause or kill
            if who:
                victim = names.get(to if who == "target" else src)
                if who == "target" or kill:
                    # The moment the target serves the leaf (or, for a kill,
                    # a random moment in the move), before the edges learn.
                    end = time.monotonic() + (nem.rng.uniform(0.0, 0.4) if kill else 20.0)
                    while time.monotonic() < end and th.is_alive():
                        if not kill:
                            l = self.leaf_now(pool, name)
                            if l is None or l[2] == to:
                                break
                        time.sleep(0.02)
                if kill:
                    detail["killed"] = victim
                    detail["killed_pid"] = nem.kill_owner_now(victim)
                else:
                    ms = nem.pause_ms()
                    detail["paused"] = victim
                    detail["pause_ms"] = ms
                    detail["paused_pid"] = nem.pause_owner_for(victim, ms)
            th.join(35.0)
            code, out = res.get("r", (-1, "admin did not finish"))
            time.sleep(0.5)         # retries of the focused writes settle
        finally:
            self.workload.set_focus(None)
        t1 = time.monotonic()
        m = self.sync(kind)
        now = None
        if m is not None:
            for l in m.leaves.get(pool, []):
                if leaf_name(l) == name or in_leaf(key_hash32(key), l[0], l[1]):
                    now = l
        moved = now is not None and now[2] == to
        if moved:
            self.moves_done += 1
        else:
            self.moves_failed += 1
        detail.update({"exit": code, "out": out[-200:], "moved": moved})
        nem.fault(kind, "%s %s" % (pool, name), t0, t1, detail)
        self.writable_after(kind, pool, leaf, t1)
        if detail.get("killed"):
            nem.wait_owner_back(detail["killed"], detail.get("killed_pid"))

    def writable_after(self, kind, pool, leaf, t_end):
        """A move, done or not, leaves its leaf writable (README: past
        move-fence-timeout a move aborts and the writes go on where they
        were; a killed owner is restarted): a SET of a key of the leaf that
        is not a history key, each attempt on a fresh connection, must be
        acknowledged within WRITABLE_S of the kind's end, else a broken
        promise (the run fails).  1 if it was."""
        key = leaf_probe(pool, leaf)
        end = t_end + WRITABLE_S
        last = None
        while key is not None and time.monotonic() < end:
            try:
                c = Conn(self.hkv.port, timeout=2.0)
                try:
                    r = c.call(["SET", key, "w"], timeout=max(1.0, end - time.monotonic()))
                finally:
                    c.close()
                if r == "OK":
                    return 1
                last = str(r)
            except (OSError, Transport) as e:
                last = "runner: %s" % e
            time.sleep(0.1)
        if key is None:
            return 1
        m = self.snapshot()
        now = [l for l in (m.leaves.get(pool, []) if m else []) if l[0] == leaf[0] and
               l[1] == leaf[1]]
        self.broken.append("%s of %s %s: no write to the leaf (%s) acknowledged within %.0f s "
                           "of its end (last answer: %s; leaf now: %s)" % (
                               kind, pool, leaf_name(leaf), key, WRITABLE_S, last,
                               "owner %s state %s%s" % (now[0][3], now[0][4],
                                                        " to %s" % now[0][5] if now[0][5]
                                                        else "") if now else "?"))
        return 0

    def do_move(self, nem):
        self._move(nem, "leaf_move")

    def do_move_pause(self, nem):
        # The source paused or killed is what found a retry applied twice on
        # the previous binary (the write applied there, its answer lost, the
        # resend applied again by the new owner): 2 of 3 times.
        self._move(nem, "move_pause", pause=nem.rng.choice(["target", "source", "source"]))

    def do_move_kill(self, nem):
        self._move(nem, "move_kill", kill=nem.rng.choice(["target", "source", "source"]))

    def auto_counts(self):
        try:
            f = info_fields(self.hkv.info("leaves"))
        except (OSError, Transport):
            return None
        return (int(f.get("auto_moves_started", "0") or 0),
                int(f.get("auto_splits_started", "0") or 0))

    def do_auto_move(self, nem, max_s=15.0):
        """auto-moves yes by reload, and a loader writing many keys of one
        history key's leaf (so the leaf can split and no key carries most of
        it; the clients are not focused on it here) until the agent has
        started a move or a split by itself; then auto-moves no again."""
        self.sync("before auto_move")
        key, pool, leaf = self.pick(nem.rng, pool="hot")
        if key is None:
            nem.log("auto_move: no serving hot leaf")
            return
        bg = bg_keys(key, leaf, 32)
        c0 = self.auto_counts() or (0, 0)
        t0 = time.monotonic()
        nem.reload(auto_moves=True)
        stop = threading.Event()
        loaders = [threading.Thread(target=load, args=(self.hkv, bg[i::2], stop), daemon=True)
                   for i in range(2)]
        for th in loaders:
            th.start()
        c1 = c0
        try:
            end = time.monotonic() + max_s
            while time.monotonic() < end:
                time.sleep(0.25)
                c1 = self.auto_counts() or c1
                if c1 != c0:
                    time.sleep(1.0)         # let it finish under load
                    break
        finally:
            stop.set()
            for th in loaders:
                th.join(5.0)
            nem.reload(auto_moves=False)
        # An order already given finishes by itself: wait for no leaf moving.
        end = time.monotonic() + 10.0
        while time.monotonic() < end:
            m = self.snapshot()
            if m is None or not any(l[4] != "serving" for ls in m.leaves.values() for l in ls):
                break
            time.sleep(0.2)
        c2 = self.auto_counts() or c1
        t1 = time.monotonic()
        self.sync("auto")
        dm, ds = c2[0] - c0[0], c2[1] - c0[1]
        self.auto["moves"] += max(0, dm)
        self.auto["splits"] += max(0, ds)
        nem.fault("auto_move", "%s %s" % (pool, leaf_name(leaf)), t0, t1,
                  {"key": key, "auto_moves_started": dm, "auto_splits_started": ds,
                   "bg_keys": len(bg)})


WRITABLE_S = 10.0
PROBE_PREFIX = {"hot": "hl:probe:", "cold": "hd:probe:"}


def leaf_probe(pool, leaf):
    """A key of the class of pool's history keys that falls in leaf (not a
    history key: the checker never sees it), or None."""
    for i in range(200000):
        k = "%s%d" % (PROBE_PREFIX[pool], i)
        if in_leaf(key_hash32(k), leaf[0], leaf[1]):
            return k
    return None


def bg_keys(key, leaf, n):
    """n keys of the pool "hl:" whose placement falls in leaf, found by
    search, half in each half of the leaf (so a split has two busy halves).
    Not hash tags: the owner counts work per placement hash, so keys of one
    tag are one hot key to it (refused, not moved)."""
    bits, prefix = leaf[0], leaf[1]
    out = {0: [], 1: []}
    i = 0
    while len(out[0]) + len(out[1]) < n and i < 600000:
        k = "hl:bg-%s-%d" % (key, i)
        h = key_hash32(k)
        if in_leaf(h, bits, prefix):
            half = (h >> (31 - bits)) & 1 if bits < 32 else 0
            if len(out[half]) < n // 2:
                out[half].append(k)
        i += 1
    return out[0] + out[1]


def load(hkv, keys, stop):
    """Pipelined SETs of keys until stop (bounded per batch)."""
    try:
        c = Conn(hkv.port, timeout=3.0)
    except OSError:
        return
    try:
        n = 0
        while not stop.is_set():
            batch = [["SET", k, "x%d" % n] for k in keys[:16]]
            keys = keys[16:] + keys[:16]
            n += 1
            dl = time.monotonic() + 5.0
            for w in batch:
                c.send(w, dl)
            for _ in batch:
                c.read(dl)
    except Transport:
        pass
    finally:
        c.close()

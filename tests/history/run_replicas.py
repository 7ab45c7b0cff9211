"""run_replicas.py - the replica fault kinds of the history runner (run.py,
issue 27, CLUSTER.md §7) on a single host with `leaf-moves yes` and
`replicas` >= 1: every leaf has a primary owner and in-sync followers in the
other owner processes of its pool.

  kill_primary    kill -9 of the primary of a history key's leaf: the
                  master's SIGCHLD promotes a follower; the time from the
                  kill to the first acknowledged write to a probe key of
                  that leaf (not a history key) goes into the fault line;
  stop_follower   SIGSTOP of a follower of a history key's leaf (another
                  owner of its pool) for 1.5-2.5 x replica-timeout: the
                  primary must take it out of the in-sync set by a
                  compare-and-swap before acknowledging without it, and
                  take it back once it has caught up;
  move_kill       (run_leaves.py) a kill of a move's source or target
                  mid-way: with replicas, a failover during a move.

The checker runs in replicas mode (the header's "replicas"): no
acknowledged write of any class may be lost across these kills.  The map
changes a promotion makes are written as move lines (Leaves.sync), so the
checker knows which owner held a key when."""

import time

from run_resp import Conn, RespError, Transport
from run_leaves import in_leaf, key_hash32, leaf_name

REPLICA_KINDS = ["kill_primary", "stop_follower", "move_kill"]
PROBE_PREFIX = {"hot": "hl:probe:", "cold": "hd:probe:"}
BACK_WAIT_S = 10.0


def probe_key(pool, leaf):
    """A key of the class of pool's history keys that falls in leaf."""
    for i in range(200000):
        k = "%s%d" % (PROBE_PREFIX[pool], i)
        if in_leaf(key_hash32(k), leaf[0], leaf[1]):
            return k
    return None


class Replicas:
    def __init__(self, hkv, leaves, replica_timeout_ms, log):
        self.hkv = hkv
        self.leaves = leaves
        self.replica_timeout_ms = replica_timeout_ms
        self.log = log
        self.back_ms = []           # kill -> first probe write acknowledged, per kill
        self.not_back = 0
        self.probe_n = 0

    def _write_back_ms(self, key, t_kill):
        """ms from t_kill to the first acknowledged SET of key sent after
        it (each attempt on a fresh connection), or None within BACK_WAIT_S."""
        end = t_kill + BACK_WAIT_S
        while time.monotonic() < end:
            self.probe_n += 1
            try:
                c = Conn(self.hkv.port, timeout=2.0)
                try:
                    r = c.call(["SET", key, "p%d" % self.probe_n], timeout=BACK_WAIT_S)
                finally:
                    c.close()
                if not isinstance(r, RespError) and r == "OK":
                    return (time.monotonic() - t_kill) * 1000.0
            except (OSError, Transport):
                pass
            time.sleep(0.005)
        return None

    def do_kill_primary(self, nem):
        self.leaves.sync("before kill_primary")
        key, pool, leaf = self.leaves.pick(nem.rng)
        if key is None:
            nem.log("kill_primary: no serving leaf")
            return
        owner = leaf[3]
        probe = probe_key(pool, leaf)
        # The clients hammer the leaf's keys (INCRBY mostly, as during a
        # move) across the kill: writes in flight are resent to the new
        # primary, whose copy of their completion records must answer them
        # once (R4).
        focus = self.leaves.keys_in(pool, leaf)
        self.leaves.workload.set_focus(focus)
        try:
            time.sleep(0.3)
            t0 = time.monotonic()
            pid = nem.kill_owner_now(owner)
            if pid is None:
                nem.log("kill_primary: owner %s not found" % owner)
                return
            back = self._write_back_ms(probe, t0) if probe else None
            time.sleep(0.3)
        finally:
            self.leaves.workload.set_focus(None)
        if back is None:
            self.not_back += 1
        else:
            self.back_ms.append(back)
        new = nem.wait_owner_back(owner, pid)
        m = self.leaves.sync("kill_primary")
        now = m.leaf_of(key, pool) if m is not None else None
        nem.fault("kill_primary", owner, t0, time.monotonic(),
                  {"pid": pid, "new_pid": new, "signal": "KILL", "key": key, "keys": focus,
                   "leaf": leaf_name(leaf), "probe": probe,
                   "writes_back_ms": None if back is None else round(back, 1),
                   "primary_after": now[3] if now else None})

    def do_stop_follower(self, nem):
        self.leaves.sync("before stop_follower")
        key, pool, leaf = self.leaves.pick(nem.rng)
        if key is None:
            nem.log("stop_follower: no serving leaf")
            return
        others = [n for n in self.leaves.map.numbers_of_pool(pool) if n != leaf[2]]
        if not others:
            nem.log("stop_follower: pool %s has one owner" % pool)
            return
        follower = self.leaves.map.names.get(nem.rng.choice(others))
        ms = int(self.replica_timeout_ms * nem.rng.uniform(1.5, 2.5))
        t0 = time.monotonic()
        pid = nem.pause_owner_for(follower, ms)
        if not pid:
            nem.log("stop_follower: owner %s not found" % follower)
            return
        self.leaves.sync("stop_follower")
        nem.fault("stop_follower", follower, t0, time.monotonic(),
                  {"pid": pid, "ms": ms, "key": key, "leaf": leaf_name(leaf),
                   "primary": leaf[3]})

    def summary(self):
        b = sorted(self.back_ms)
        if not b and not self.not_back:
            return "replicas: no kill_primary"

        def pct(p):
            return b[min(len(b) - 1, int(p * len(b)))] if b else float("nan")
        return ("replicas: %d kill_primary, writes back p50 %.0f ms, max %.0f ms, "
                "not back within %.0f s: %d" % (len(b) + self.not_back, pct(0.5),
                                                b[-1] if b else float("nan"), BACK_WAIT_S,
                                                self.not_back))

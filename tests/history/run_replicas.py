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
                  mid-way: with replicas, a failover during a move;
  leaf_failover   a planned hand-over (`hotkvd-admin leaf failover POOL
                  LEAF`) of a history key's leaf that has an in-sync
                  follower, the clients focused on its keys: README
                  promises that it pauses the leaf's writes and never fails
                  one, so after the run every write to those keys in flight
                  during the hand-over must have been answered (a failed or
                  unknown one fails the run, beside the checker's verdict);
  replica_config  CONFIG SET of the reloadable replication directives under
                  the workload: replica-timeout down to 200-500 ms, with the
                  follower of a history key's leaf stopped for 2.5-3.5 x that
                  (less than the file's timeout) while the clients write to
                  the leaf: it must be taken out of the in-sync set by CAS
                  (repl_isr_removals grows, else the run fails) and rejoin;
                  the timeout back, then replicas 1 -> 0 -> 1 (by CONFIG SET,
                  or by SIGHUP with the file saying so).  With
                  replicas 0 the agents seed no follower and a leaf without
                  one acknowledges ledger writes before they are on disk
                  (one copy, as before), so the kind ends with the persist
                  window passed after replicas is 1 again, and no kill falls
                  where the checker's replicas mode would not hold; what
                  replicas 1 promises again is checked: the in-sync
                  followers come back (INFO repl_isr_members at least what
                  it was before replicas 0, within ISR_BACK_S).

The checker runs in replicas mode (the header's "replicas"): no
acknowledged write of any class may be lost across these kills.  The map
changes a promotion makes are written as move lines (Leaves.sync), so the
checker knows which owner held a key when."""

import json
import time

from run_daemon import COMMIT_ALLOWANCE_MS
from run_resp import Conn, RespError, Transport, config_set, info_fields
from run_leaves import leaf_name, leaf_probe

REPLICA_KINDS = ["kill_primary", "stop_follower", "move_kill", "leaf_failover",
                 "replica_config"]
# The kinds that need followers: in --faults all only with --replicas.
REPLICA_ONLY = ["kill_primary", "stop_follower", "leaf_failover", "replica_config"]
BACK_WAIT_S = 10.0
ISR_BACK_S = 30.0
FOLLOWED_WAIT_S = 10.0     # leaf_failover waits this long for a followed history leaf
WRITES = {"set", "getdel", "del", "incrby", "expire", "persist", "mset"}
# Failed writes that say nothing about the hand-over: the value's own answer.
# A write's own refusals, hand-over or not (run_http.py: an If-Match PUT
# whose version moved is recorded as not applied with this error)
VALUE_ERRORS = ("ERR value is not an integer", "ERR increment or decrement would overflow",
                "HTTP 412 If-Match")


probe_key = leaf_probe


class Replicas:
    def __init__(self, hkv, leaves, log):
        self.hkv = hkv
        self.leaves = leaves
        self.log = log
        self.back_ms = []           # kill -> first probe write acknowledged, per kill
        self.not_back = 0
        self.probe_n = 0
        self.handovers = {"asked": 0, "done": 0, "pause_ms": []}
        self.configs = {"runs": 0, "isr_removals": 0, "isr_back_s": []}
        self.broken = []            # promises the runner saw broken (not the checker's)

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
        # A leaf with a follower in sync if there is one (the followers are
        # seeded a few leaves at a time: early in a run, and after a kill,
        # most leaves have none, and their kill is a plain restart).
        key, pool, leaf = self._pick_followed(nem.rng)
        if key is None:
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
                   "leaf": leaf_name(leaf), "isr": leaf[6], "probe": probe,
                   "writes_back_ms": None if back is None else round(back, 1),
                   "primary_after": now[3] if now else None})

    def do_stop_follower(self, nem):
        self.leaves.sync("before stop_follower")
        key, pool, leaf = self._pick_followed(nem.rng)
        if key is None:
            key, pool, leaf = self.leaves.pick(nem.rng)
        if key is None:
            nem.log("stop_follower: no serving leaf")
            return
        others = leaf[6] or [n for n in self.leaves.map.numbers_of_pool(pool) if n != leaf[2]]
        if not others:
            nem.log("stop_follower: pool %s has one owner" % pool)
            return
        follower = self.leaves.map.names.get(nem.rng.choice(others))
        if follower is None:
            nem.log("stop_follower: no name for the follower of %s" % leaf_name(leaf))
            return
        ms = int(self.hkv.replica_timeout_ms * nem.rng.uniform(1.5, 2.5))
        t0 = time.monotonic()
        pid = nem.pause_owner_for(follower, ms)
        if not pid:
            nem.log("stop_follower: owner %s not found" % follower)
            return
        self.leaves.sync("stop_follower")
        nem.fault("stop_follower", follower, t0, time.monotonic(),
                  {"pid": pid, "ms": ms, "key": key, "leaf": leaf_name(leaf),
                   "primary": leaf[3], "isr": leaf[6]})

    # ---- planned hand-over

    def _pick_followed(self, rng):
        """(key, pool, leaf) of a history key whose leaf serves and has an
        in-sync follower, or (None, None, None)."""
        m = self.leaves.map
        keys = [k for k, p in self.leaves.key_pools.items() if k in self.leaves.workload.counter]
        rng.shuffle(keys)
        for k in keys:
            pool = self.leaves.key_pools[k]
            leaf = m.leaf_of(k, pool)
            if leaf is not None and leaf[4] == "serving" and leaf[6]:
                return k, pool, leaf
        return None, None, None

    def _repl(self):
        try:
            return info_fields(self.hkv.info("replication"))
        except (OSError, Transport):
            return {}

    def do_leaf_failover(self, nem):
        self.leaves.sync("before leaf_failover")
        key, pool, leaf = self._pick_followed(nem.rng)
        end = time.monotonic() + FOLLOWED_WAIT_S
        while key is None and time.monotonic() < end:
            # early in a run, or after kills, the followers are still seeded
            time.sleep(0.5)
            self.leaves.sync("before leaf_failover")
            key, pool, leaf = self._pick_followed(nem.rng)
        if key is None:
            nem.log("leaf_failover: no serving leaf of a history key with a follower in sync "
                    "within %.0f s" % FOLLOWED_WAIT_S)
            return
        name = leaf_name(leaf)
        focus = self.leaves.keys_in(pool, leaf)
        self.leaves.workload.set_focus(focus)
        self.handovers["asked"] += 1
        try:
            time.sleep(0.3)         # the focused writes start
            t0 = time.monotonic()
            code, out = self.leaves.admin("leaf", "failover", pool, name, "--wait", "10000",
                                          timeout=20.0)
            t1 = time.monotonic()
            time.sleep(0.3)
        finally:
            self.leaves.workload.set_focus(None)
        m = self.leaves.sync("leaf_failover")
        now = m.leaf_of(key, pool) if m is not None else None
        done = now is not None and now[2] != leaf[2]
        pause = self._repl().get("repl_handover_ms_last")
        if done:
            self.handovers["done"] += 1
            if pause is not None and pause.isdigit():
                self.handovers["pause_ms"].append(int(pause))
        nem.fault("leaf_failover", "%s %s" % (pool, name), t0, t1,
                  {"key": key, "keys": focus, "from": leaf[3], "isr": leaf[6],
                   "to": now[3] if now else None, "handed_over": done, "exit": code,
                   "out": out[-200:], "repl_handover_ms_last": pause})

    # ---- the reloadable replication directives

    def _config_set(self, name, value):
        """CONFIG SET name value; the reply as text ("OK" when applied)."""
        try:
            r = config_set(self.hkv.port, name, value)
        except (OSError, Transport) as e:
            return "runner: %s" % e
        return ("-%s" % r) if isinstance(r, RespError) else str(r)

    def _set_replicas(self, nem, how, n):
        """replicas n by CONFIG SET, or by SIGHUP with the file saying n;
        "OK" once applied (the reload: every edge shows the new generation)."""
        if how == "CONFIG SET":
            return self._config_set("replicas", str(n))
        self.hkv.replicas_file = None if n == self.hkv.replicas else n
        t = nem.reload()
        return "OK" if t is not None else "SIGHUP: not every edge showed a new generation in 5 s"

    @staticmethod
    def _int(fields, name):
        v = fields.get(name, "")
        return int(v) if v.lstrip("-").isdigit() else None

    def _grew(self, a, b, name):
        x, y = self._int(a, name), self._int(b, name)
        return x is not None and y is not None and y > x

    def do_replica_config(self, nem):
        """replica-timeout short and back, then replicas 1 -> 0 -> 1 (see the
        file's top); ends once the persist window has passed since replicas
        was 1 again."""
        self.configs["runs"] += 1
        base = "%dms" % self.hkv.replica_timeout_ms
        short = nem.rng.choice([200, 300, 500])
        t0 = time.monotonic()
        r0 = self._repl()
        replies = {}
        replies["replica-timeout %dms" % short] = self._config_set("replica-timeout",
                                                                  "%dms" % short)
        # The short timeout must be the one in effect: the follower of a
        # history key's leaf stopped for 2.5-3.5 x short (less than the
        # file's timeout) while the clients write to the leaf is taken out
        # of the in-sync set (INFO repl_isr_removals grows).
        self.leaves.sync("before replica_config")
        key, pool, leaf = self._pick_followed(nem.rng)
        stopped = None
        if key is not None and self.leaves.map.names.get(leaf[6][0]) is not None:
            stopped = {"key": key, "leaf": leaf_name(leaf), "primary": leaf[3],
                       "follower": self.leaves.map.names.get(leaf[6][0]),
                       "ms": int(short * nem.rng.uniform(2.5, 3.5))}
            self.leaves.workload.set_focus(self.leaves.keys_in(pool, leaf))
            try:
                time.sleep(0.2)
                stopped["pid"] = nem.pause_owner_for(stopped["follower"], stopped["ms"])
                time.sleep(0.5)
            finally:
                self.leaves.workload.set_focus(None)
        time.sleep(nem.rng.uniform(0.5, 1.5))
        replies["replica-timeout " + base] = self._config_set("replica-timeout", base)
        r1 = self._repl()
        end = time.monotonic() + 3.0
        while stopped and time.monotonic() < end and not self._grew(r0, r1, "repl_isr_removals"):
            # INFO renders an owner's last STATS when it does not answer within
            # 300 ms (INFO_ASK_MS): the follower just SIGCONTed may be late
            time.sleep(0.2)
            r1 = self._repl()
        self.leaves.sync("replica_config")
        before = self._int(r1, "repl_isr_members")
        # replicas by CONFIG SET or by a reload of a file that says so (both
        # make a new config generation; every edge must show it)
        how = nem.rng.choice(["CONFIG SET", "SIGHUP"])
        replies["replicas 0"] = self._set_replicas(nem, how, 0)
        time.sleep(nem.rng.uniform(1.0, 2.5))
        r2 = self._repl()
        replies["replicas 1"] = self._set_replicas(nem, how, 1)
        t_back = time.monotonic()
        # The followers come back: every leaf that had one before has one
        # again (the agents seed again once replicas is 1).
        back_s, now = None, None
        while time.monotonic() < t_back + ISR_BACK_S:
            now = self._int(self._repl(), "repl_isr_members")
            if before is not None and now is not None and now >= before:
                back_s = time.monotonic() - t_back
                break
            time.sleep(0.2)
        window = (self.hkv.persist_interval_ms + COMMIT_ALLOWANCE_MS) / 1000.0
        rest = t_back + window - time.monotonic()
        if rest > 0:
            time.sleep(rest)
        r3 = self._repl()
        removals = None
        if self._int(r1, "repl_isr_removals") is not None and \
                self._int(r0, "repl_isr_removals") is not None:
            removals = self._int(r1, "repl_isr_removals") - self._int(r0, "repl_isr_removals")
            self.configs["isr_removals"] += removals
        if stopped and stopped.get("pid") and removals is not None and removals < 1:
            self.broken.append("replica_config at %.2f: follower %s stopped %d ms with "
                               "replica-timeout %d ms by CONFIG SET and writes to leaf %s: "
                               "no in-sync removal (INFO repl_isr_removals; in-sync members "
                               "at the start %s)" % (
                                   t0, stopped["follower"], stopped["ms"], short,
                                   stopped["leaf"], self._int(r0, "repl_isr_members")))
        bad = [k for k, v in replies.items() if v != "OK"]
        if bad:
            self.broken.append("replica_config at %.2f: not applied: %s" % (
                t0, "; ".join("%s: %s" % (k, replies[k]) for k in bad)))
        if back_s is None:
            self.broken.append("replica_config at %.2f: in-sync followers not back %.0f s "
                               "after replicas 1 again (repl_isr_members %s before replicas 0, "
                               "%s after)" % (t0, ISR_BACK_S, before, now))
        else:
            self.configs["isr_back_s"].append(back_s)
        nem.fault("replica_config", "daemon", t0, time.monotonic(),
                  {"replies": replies, "replicas_by": how, "short_timeout_ms": short,
                   "stopped": stopped,
                   "isr_removals_while_short": removals,
                   "isr_members": {"before": self._int(r0, "repl_isr_members"),
                                   "before_replicas_0": before,
                                   "replicas_0": self._int(r2, "repl_isr_members"),
                                   "end": self._int(r3, "repl_isr_members")},
                   "seeded_while_0": (self._int(r2, "repl_follows_seeded") or 0) -
                   (self._int(r1, "repl_follows_seeded") or 0),
                   "isr_back_s": None if back_s is None else round(back_s, 2)})

    # ---- after the run

    def check_history(self, path):
        """The hand-over promise, from the history file: every write to a
        handed-over leaf's keys (and their counters) whose interval meets a
        leaf_failover's was answered, and not with an error that says
        "not applied" or "unknown" (only a value's own error is allowed).
        Appends to self.broken; returns the number of writes looked at."""
        try:
            lines = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
        except (OSError, ValueError) as e:
            self.broken.append("hand-over check: cannot read %s: %s" % (path, e))
            return 0
        counter = self.leaves.workload.counter
        spans = []
        for o in lines:
            if o.get("kind") == "fault" and o.get("f") == "leaf_failover":
                keys = set(o["detail"].get("keys") or [])
                keys |= {counter[k] for k in keys if k in counter}
                spans.append((o["t0"], o["t1"], keys, o["detail"].get("handed_over")))
        seen = 0
        for o in lines:
            if o.get("kind") != "op" or o.get("f") not in WRITES:
                continue
            ks = set(o.get("keys") or [o.get("key")])
            # an open-ended write (outcome unknown) met the hand-over only if
            # its client was still waiting then ("answered": when it gave up)
            t1 = o["t1"] if o.get("t1") is not None else o.get("answered", float("inf"))
            for a, b, keys, done in spans:
                if not ks & keys or t1 < a or o["t0"] > b:
                    continue
                seen += 1
                err = o.get("error") or ""
                if o["outcome"] == "info" or (o["outcome"] == "fail" and
                                              not err.startswith(VALUE_ERRORS)):
                    self.broken.append(
                        "hand-over failed a write: op %d (client %d) %s %s -> %s %s, "
                        "%+.3f..%s s from the start of the leaf_failover that ran %.3f s "
                        "(handed over: %s)" % (
                            o["id"], o["client"], o["f"], o.get("key") or o.get("keys"),
                            o["outcome"], err, o["t0"] - a,
                            "%+.3f" % (t1 - a) if t1 != float("inf") else "?", b - a, done))
        return seen

    def report(self, path, kinds):
        """Prints the runner's own checks (the hand-over promise from the
        history at path, and what the kinds found broken); the broken list."""
        looked = self.check_history(path)
        if "leaf_failover" in kinds:
            print("hand-over promise: %d writes in flight during hand-overs, %d failed or "
                  "unknown" % (looked, sum(1 for b in self.broken if b.startswith("hand-over"))))
        for b in self.broken[:10]:
            print("  PROMISE BROKEN: " + b)
        return self.broken

    def summary(self):
        out = []
        b = sorted(self.back_ms)

        def pct(p):
            return b[min(len(b) - 1, int(p * len(b)))] if b else float("nan")
        if b or self.not_back:
            out.append("%d kill_primary, writes back p50 %.0f ms, max %.0f ms, not back within "
                       "%.0f s: %d" % (len(b) + self.not_back, pct(0.5),
                                       b[-1] if b else float("nan"), BACK_WAIT_S,
                                       self.not_back))
        else:
            out.append("no kill_primary")
        h = self.handovers
        if h["asked"]:
            p = sorted(h["pause_ms"])
            out.append("%d leaf_failover (%d handed over), write pause (INFO "
                       "repl_handover_ms_last) max %s ms" % (h["asked"], h["done"],
                                                             p[-1] if p else "-"))
        c = self.configs
        if c["runs"]:
            out.append("%d replica_config, in-sync removals while replica-timeout was short "
                       "%d, followers back after replicas 1 in max %s s" % (
                           c["runs"], c["isr_removals"],
                           "%.1f" % max(c["isr_back_s"]) if c["isr_back_s"] else "-"))
        return "replicas: " + "; ".join(out)

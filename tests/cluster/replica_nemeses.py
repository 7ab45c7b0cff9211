"""replica_nemeses.py - the five cross-host faults of issue 27 (see
replicas.py), each aimed at the leaf of one key, each with the checks that
belong to it.  A nemesis returns (detail, problems): detail what it did and
measured (seconds from the fault: promoted_s, writes_back_s, removed_s,
rejoined_s ...), problems the expectations that failed.  With a history
(the history run, which also focuses its clients on the key) a killed
host's owners get crash lines; without one (the direct scenarios) the key
is a probe key.

Timings are measured from the fault to: the map's primary of the leaf
changed (promoted_s, etcd read every 0.1 s), the first SET of a probe key
of the leaf through another host answered OK (writes_back_s), the follower
out of the leaf's isr (removed_s), the host back following a leaf in sync
(rejoined_s, from its restart or heal)."""

import os
import signal
import threading
import time

from clock import ClockShift
from cluster import POOL_OF, wait_until
from hosts import LEASE_TTL
from replicas import (REPLICA_TIMEOUT_MS, kill_host, leaf_state, other_host_of, probe_key, read_map,
                      registered, set_once, signal_host, wait_primary_not, wait_replicated,
                      write_back)

TTL_S = float(LEASE_TTL.rstrip("s"))
ETCD_TIMEOUT_S = 1.0           # hosts.py: etcd-timeout 1s
POLL_SLACK_S = 0.5             # the map read every 0.1 s, through etcd (seen: 1.02-1.3 s in all)
FENCE_LINE = "the host lease was last renewed"
PROMOTE_LIMIT = 30.0
REJOIN_LIMIT = 60.0


class Target:
    """The key's leaf and who holds it, from one read of the map."""

    def __init__(self, cl, key):
        self.key = key
        self.m = read_map(cl)
        if self.m is None:
            raise RuntimeError("map unreadable")
        self.leaf, e = self.m.leaf_of(key)
        if e is None:
            raise RuntimeError("no leaf holds %s" % key)
        self.entry = e
        self.primary = e["owner"]
        self.primary_id = self.m.owner_id(self.primary)
        self.host = cl.hosts[self.m.host_of(self.primary)]
        self.probe = probe_key(self.leaf[0], self.leaf[1])

    def describe(self):
        return {"key": self.key, "leaf": "%s/%s" % self.leaf, "primary": self.primary_id,
                "isr": [self.m.owner_id(n) for n in self.entry["isr"]],
                "epoch": self.entry["epoch"], "probe": self.probe}


def log_count(h, text):
    try:
        with open(h.log, errors="replace") as f:
            return sum(1 for line in f if text in line)
    except OSError:
        return 0


def _promotion(cl, t, t0, detail, problems):
    """Waits for the leaf's new primary; checks it was in the in-sync set
    (R5) and the epoch grew.  Returns the Map or None."""
    m, took = wait_primary_not(cl, t.leaf, t.primary, PROMOTE_LIMIT)
    if not m:
        problems.append("leaf %s/%s still has primary %s %.0f s after the fault" %
                        (t.leaf + (t.primary_id, PROMOTE_LIMIT)))
        return None
    e = m.leaves[t.leaf]
    detail["promoted_s"] = round(time.monotonic() - t0, 2)
    detail["new_primary"] = m.owner_id(e["owner"])
    detail["new_epoch"] = e["epoch"]
    if e["owner"] not in t.entry["isr"]:
        problems.append("leaf %s/%s went to %s, not a member of its in-sync set %s (R5)" %
                        (t.leaf + (detail["new_primary"], t.describe()["isr"])))
    if e["epoch"] <= t.entry["epoch"]:
        problems.append("leaf %s/%s: epoch %d after the promotion, %d before" %
                        (t.leaf + (e["epoch"], t.entry["epoch"])))
    return m


def _writes_back(h, t, t0, detail, problems):
    if h is None or t.probe is None:
        problems.append("no host or probe key to write through")
        return
    back = write_back(h, t.probe, t0, 30.0)
    detail["writes_back_via"] = h.name
    detail["writes_back_s"] = None if back is None else round(back, 2)
    if back is None:
        problems.append("no write to leaf %s/%s through %s acknowledged within 30 s of the "
                        "fault" % (t.leaf + (h.name,)))


def _check_old_primary_write(cl, old, via, t, what, detail, problems):
    """A SET through the old primary's own edge (its map is the old one):
    not acknowledged, or if it is, the new primary must hold it."""
    val = "old-primary-%s-%d" % (what, int(time.monotonic() * 1000))
    r = set_once(old, t.probe, val, timeout=4.0)
    detail["old_primary_set"] = str(r)[:80]
    if r == "OK":
        got = via.call("GET", t.probe, timeout=4.0) if via is not None else None
        detail["read_after_via"] = str(got)[:80]
        if got != val:
            problems.append("%s: a SET through the old primary's host %s was acknowledged "
                            "(%s) and a GET through %s read %r: a write the new primary does "
                            "not hold" % (what, old.name, val, via.name if via else "-", got))


def _rejoin(cl, h, t1, detail, problems, what="it returned"):
    """h registered again (a new lease, its owners under it) within
    REJOIN_LIMIT; then how many leaves it follows once every leaf is in
    sync.  A host whose follower slots were all given to the third host
    while it was away follows none (nothing rebalances): recorded, not a
    failure; that it serves none of the leaves promoted away is the
    history checker's (a stale read or a lost write there)."""
    ok, _ = wait_until(lambda: registered(cl, h), REJOIN_LIMIT, 0.25)
    detail["rejoined_s"] = round(time.monotonic() - t1, 2) if ok else None
    if not ok:
        problems.append("host %s not registered again %.0f s after %s" %
                        (h.name, REJOIN_LIMIT, what))
        return
    n, took = wait_replicated(cl, 30)
    detail["all_in_sync_s"] = round(took, 2) if n else None
    m = read_map(cl)
    if m is not None:
        detail["follows_after"] = m.followed_by_host(h.name)
        detail["primary_after"] = sum(1 for e in m.leaves.values()
                                      if m.host_of(e["owner"]) == h.name)


def _restart_and_rejoin(cl, h, detail, problems):
    t1 = time.monotonic()
    h.start(wait=True, timeout=60)
    detail["restart_ready_s"] = round(time.monotonic() - t1, 2)
    _rejoin(cl, h, t1, detail, problems, "its restart")


def kill_host_nemesis(cl, rng, key, history=None, restart_after=1.0):
    t = Target(cl, key)
    detail, problems = t.describe(), []
    via = other_host_of(cl, rng, t.host.name)
    detail["host"] = t.host.name
    t0 = kill_host(cl, t.host, history)
    _promotion(cl, t, t0, detail, problems)
    _writes_back(via, t, t0, detail, problems)
    time.sleep(restart_after)
    _restart_and_rejoin(cl, t.host, detail, problems)
    return detail, problems


def etcd_cut_clock_nemesis(cl, rng, key, history=None):
    """etcd_cut with the cut host's wall clock set 10 s back as the cut
    begins (an NTP step, an operator): the lease is etcd's, it expires on
    etcd's clock, so the old primary's fence must not move with its wall
    clock (CLUSTER.md §7: "by its monotonic clock")."""
    return etcd_cut_nemesis(cl, rng, key, history, clock_ms=-10000)


def etcd_cut_nemesis(cl, rng, key, history=None, hold_after=2.0, clock_ms=0):
    """The primary's agent cut from etcd (its proxy blackholed) while its
    edges and owners stay reachable: it must fence (a log line, INFO
    lease_renewed_ms_ago past TTL - margin, a SET through it not
    acknowledged) and its leaf be promoted."""
    if clock_ms:
        t = Target(cl, key)
        with ClockShift(cl, t.host, clock_ms):
            d, p = etcd_cut_nemesis(cl, rng, key, history, hold_after)
        d["clock_ms"] = clock_ms
        return d, p
    t = Target(cl, key)
    detail, problems = t.describe(), []
    old = t.host
    via = other_host_of(cl, rng, old.name)
    px = cl.proxies[old.tag]
    fences0 = log_count(old, FENCE_LINE)
    detail["host"] = old.name
    t0 = time.monotonic()
    px.blackhole(True)
    try:
        m = _promotion(cl, t, t0, detail, problems)
        _writes_back(via, t, t0, detail, problems)
        if m is not None:
            ok, _ = wait_until(lambda: log_count(old, FENCE_LINE) > fences0, 5.0, 0.1)
            detail["fence_logged"] = bool(ok)
            if not ok:
                problems.append("host %s cut from etcd: no '%s' in its log after its leaf "
                                "was promoted" % (old.name, FENCE_LINE))
            f = old.info("cluster")
            age, ttl = int(f.get("lease_renewed_ms_ago", -1)), int(f.get("lease_ttl_ms", -1))
            detail["lease_renewed_ms_ago"], detail["etcd_up"] = age, f.get("etcd_up")
            if not age > ttl - (ETCD_TIMEOUT_S * 1000 + 500):
                problems.append("host %s cut from etcd, leaf promoted: INFO cluster "
                                "lease_renewed_ms_ago %d, lease_ttl_ms %d: not past the fence"
                                % (old.name, age, ttl))
            _check_old_primary_write(cl, old, via, t, "etcd cut", detail, problems)
        time.sleep(hold_after)
    finally:
        px.blackhole(False)
    t1 = time.monotonic()
    detail["cut_s"] = round(t1 - t0, 2)
    _rejoin(cl, old, t1, detail, problems)
    return detail, problems


def stop_host_nemesis(cl, rng, key, history=None):
    """SIGSTOP of the primary's host for TTL + 2 s at least (until its leaf
    is promoted), then SIGCONT: a SET through it at once must not be
    acknowledged unless the new primary holds it."""
    t = Target(cl, key)
    detail, problems = t.describe(), []
    old = t.host
    via = other_host_of(cl, rng, old.name)
    detail["host"] = old.name
    t0 = time.monotonic()
    pids = signal_host(old, signal.SIGSTOP)
    try:
        _promotion(cl, t, t0, detail, problems)
        _writes_back(via, t, t0, detail, problems)
        time.sleep(max(0.0, t0 + TTL_S + 2.0 - time.monotonic()))
    finally:
        signal_host(old, signal.SIGCONT, pids)
    t1 = time.monotonic()
    detail["stopped_s"] = round(t1 - t0, 2)
    _check_old_primary_write(cl, old, via, t, "after SIGCONT", detail, problems)
    _rejoin(cl, old, t1, detail, problems)
    return detail, problems


def follower_cut_nemesis(cl, rng, key, history=None, mode=None):
    """The primary's host and its follower's host cut (a->b: the primary's
    frames lost, b->a: the follower's acks lost, or both): the follower is
    out of the isr within replica-timeout + etcd-timeout (+ 0.5 s for the
    map polling), writes through the third host go on."""
    t = Target(cl, key)
    detail, problems = t.describe(), []
    if not t.entry["isr"]:
        return detail, ["leaf %s/%s has no follower" % t.leaf]
    fol = t.entry["isr"][0]
    a, b = t.host, cl.hosts[t.m.host_of(fol)]
    third = other_host_of(cl, rng, a.name, b.name) or other_host_of(cl, rng, b.name)
    mode = mode or rng.choice(["a->b", "b->a", "both"])
    detail.update({"primary_host": a.name, "follower": t.m.owner_id(fol),
                   "follower_host": b.name, "mode": mode, "writes_via": third.name})
    writes = {"ok": [], "err": 0}
    halt = threading.Event()

    def writer():
        n = 0
        while not halt.is_set():
            n += 1
            ti = time.monotonic()
            r = set_once(third, t.probe, "fc%d" % n, timeout=3.0)
            if r == "OK":
                writes["ok"].append((ti, time.monotonic()))
            else:
                writes["err"] += 1
            time.sleep(0.05)

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    if mode in ("a->b", "both"):
        cl.net.cut(a.node, b.node)
    if mode in ("b->a", "both"):
        cl.net.cut(b.node, a.node)
    try:
        def removed():
            m = read_map(cl)
            return m is not None and fol not in m.leaves[t.leaf]["isr"]
        ok, took = wait_until(removed, 20.0, 0.1)
        detail["removed_s"] = round(took, 2) if ok else None
        limit = REPLICA_TIMEOUT_MS / 1000.0 + ETCD_TIMEOUT_S + POLL_SLACK_S
        if not ok:
            problems.append("follower %s still in leaf %s/%s's isr 20 s after the cut (%s)"
                            % ((detail["follower"],) + t.leaf + (mode,)))
        elif took > limit:
            problems.append("follower %s out of leaf %s/%s's isr %.2f s after the cut (%s): "
                            "more than replica-timeout + etcd-timeout + %.1f s of polling = "
                            "%.1f s" % ((detail["follower"],) + t.leaf +
                                        (took, mode, POLL_SLACK_S, limit)))
        time.sleep(1.5)
        # writes sent after the cut (one sent before may still get its
        # follower's ack, the cut being a few ms old)
        after = [x for x in writes["ok"] if x[0] > t0 + (took if ok else 0)]
        detail["writes_ok_after_removal"] = len(after)
        first = [x for x in writes["ok"] if x[0] > t0]
        detail["writes_back_s"] = round(first[0][1] - t0, 2) if first else None
        if ok and not after:
            problems.append("no write to leaf %s/%s through %s acknowledged in the 1.5 s after "
                            "its follower left the isr" % (t.leaf + (third.name,)))
    finally:
        halt.set()
        th.join(10)
        cl.net.heal(a.node)
        cl.net.heal(b.node)
    t1 = time.monotonic()
    detail["cut_s"] = round(t1 - t0, 2)
    detail["write_errors"] = writes["err"]

    def back_in_sync():
        m = read_map(cl)
        return m is not None and bool(m.leaves[t.leaf]["isr"])
    ok, took = wait_until(back_in_sync, REJOIN_LIMIT, 0.25)
    detail["resynced_s"] = round(took, 2) if ok else None
    if not ok:
        problems.append("leaf %s/%s has no follower in sync %.0f s after the cut healed" %
                        (t.leaf + (REJOIN_LIMIT,)))
    return detail, problems


def move_failover_nemesis(cl, rng, key, history=None):
    """A move of the key's leaf to an owner of its pool on a host that is
    neither the primary's nor its follower's when there is one (else the
    follower's), whose process is SIGSTOPped as the move starts so that the
    move stays between its intent and its end (the map says "moving"); the
    source host is killed -9 once the map says so, the target continued 1 s
    later.  Expected: the leaf gets one live primary (an isr member or the
    target) and writes come back, as after any primary's death."""
    t = Target(cl, key)
    detail, problems = t.describe(), []
    pool = POOL_OF[key.split(":", 1)[0]]
    others = [n for n, oid in t.m.owners.items()
              if oid.split("/")[1] == pool and t.m.host_of(n) != t.host.name]
    if not others:
        return detail, ["no owner of pool %s on another host" % pool]
    third = [n for n in others if n not in t.entry["isr"]]
    to = rng.choice(third or others)
    tgt_host = cl.hosts[t.m.host_of(to)]
    admin_host = other_host_of(cl, rng, t.host.name)
    via = other_host_of(cl, rng, t.host.name, tgt_host.name) or admin_host
    res = {}
    name = t.leaf[1]
    th = threading.Thread(target=lambda: res.setdefault("r", admin_host.admin(
        "leaf", "move", pool, name, str(to), "--wait", "20000", timeout=40)), daemon=True)
    detail.update({"to": t.m.owner_id(to), "to_in_isr": to in t.entry["isr"],
                   "host": t.host.name})
    tpid = tgt_host.child("hotkvd: owner " + t.m.owner_id(to).split("/", 1)[1])
    def moving():
        st = leaf_state(cl, t.leaf)
        return st if st and st[0] == "moving" else None
    t0 = None
    try:
        if tpid:
            os.kill(tpid, signal.SIGSTOP)
        th.start()
        st, waited = wait_until(moving, 10.0, 0.01)
        detail["moving_seen_s"] = round(waited, 2) if st else None
        if not st:
            detail["moving_not_seen"] = str(leaf_state(cl, t.leaf))
        time.sleep(0.1)
        t0 = kill_host(cl, t.host, history)
        time.sleep(1.0)
    finally:
        if tpid:
            os.kill(tpid, signal.SIGCONT)
    m, _ = wait_primary_not(cl, t.leaf, t.primary, PROMOTE_LIMIT)
    if m:
        e = m.leaves[t.leaf]
        detail["promoted_s"] = round(time.monotonic() - t0, 2)
        detail["new_primary"] = m.owner_id(e["owner"])
        if e["owner"] not in t.entry["isr"] and e["owner"] != to:
            problems.append("leaf %s/%s went to %s: neither in its in-sync set nor the "
                            "move's target" % (t.leaf + (detail["new_primary"],)))
        _writes_back(via, t, t0, detail, problems)
    else:
        st = leaf_state(cl, t.leaf)
        problems.append("leaf %s/%s (map: %s) still on %s %.0f s after its host was "
                        "killed mid-move (the map said moving %s s after the move began)"
                        % (t.leaf + (st, t.primary_id, PROMOTE_LIMIT,
                                     detail["moving_seen_s"])))
    th.join(45)
    code, out = res.get("r", (-1, "admin did not finish"))
    detail["admin_exit"], detail["admin_out"] = code, out.strip().split("\n")[-1][:120]
    time.sleep(1.0)
    _restart_and_rejoin(cl, t.host, detail, problems)
    return detail, problems


NEMESES = {"kill_host": kill_host_nemesis, "etcd_cut": etcd_cut_nemesis,
           "etcd_cut_clock": etcd_cut_clock_nemesis,
           "stop_host": stop_host_nemesis, "follower_cut": follower_cut_nemesis,
           "move_failover": move_failover_nemesis}

"""scenarios.py - the cluster scenarios of issue 14, one function each, run
in order on one cluster of three hosts (h1, h2, h3: one edge, one hot and
one cold owner each; the leaves dealt over all six owners).  A scenario
raises Fail (with what it saw) or Skip (with the reason); it leaves the
cluster healthy for the next one or says it could not.  Every wait is
bounded.  Figures go to ctx.figures."""

import json
import os
import signal
import statistics
import threading
import time

from run_resp import RespError, Transport

from clock import ClockShift, observed_offset_ms
from cluster import PREFIX, wait_until
from hosts import KEEP_MS, MISS_WAIT_MS, WRITE_DEADLINE_MS, WRITE_TIMEOUT_MS, Host
from load import Loader, start_loaders, stop_loaders

PUSH_BOUND_S = 1.0        # pf keys are fresh for 10 s: seeing a write sooner is a push
# write-timeout + the longest write-retry-backoff + margin, < write-deadline
RESEND_AFTER_S = (WRITE_TIMEOUT_MS + 400 + 300) / 1000.0


class Fail(AssertionError):
    pass


class Skip(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def call(h, *words, timeout=5.0):
    try:
        return h.call(*words, timeout=timeout)
    except (OSError, Transport) as e:
        return Transport(str(e))


def info_int(h, field, section="cluster"):
    try:
        v = h.info(section).get(field)
        return int(v) if v not in (None, "") else None
    except (OSError, Transport, ValueError):
        return None


def healthy(cl):
    """'' if etcd runs and every host is up and ready, else why not."""
    if not cl.etcd.running():
        return "etcd is not running"
    for h in cl.hosts.values():
        if not h.running():
            return "host %s is not running" % h.tag
        ok, why = h.ready()
        if not ok:
            return "host %s: %s" % (h.tag, why)
    return ""


def members(cl, host=None):
    """{owner id: (value dict, lease)} of the members/ keys (of host)."""
    pre = PREFIX + "members/" + (host + "/" if host else "")
    out = {}
    for k, v, _, lease in cl.etcd.get_prefix(pre):
        try:
            out[k[len(PREFIX + "members/"):]] = (json.loads(v), lease)
        except ValueError:
            out[k[len(PREFIX + "members/"):]] = ({"raw": v}, lease)
    return out


def all_members_back(cl):
    got = members(cl)
    want = [o for h in cl.host_names for o in cl.hosts[h].owner_ids()]
    return all(o in got for o in want)


def lease_values(text):
    """The ints a lease id printed as text may stand for (decimal or hex)."""
    out = set()
    for base in (10, 16):
        try:
            out.add(int(text, base))
        except (TypeError, ValueError):
            pass
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


# ---- (a) -------------------------------------------------------------------


def push_visible_across_hosts(ctx):
    """Writes through h1's edge to keys owned by h2, read through h3's edge:
    the value is in h3's colo cache within PUSH_BOUND_S (pf keys stay fresh
    10 s, so only a push explains it), and on h1 at once."""
    cl = ctx.cl
    a, b, c = cl.hosts["h1"], cl.hosts["h2"], cl.hosts["h3"]
    keys = cl.keys_on("h2", "pf", 5, tag="push")
    ca, cc = a.conn(), c.conn()
    delays, sent, missed = [], [], []
    pushes0 = info_int(c, "pushes_received", "cache")
    try:
        for i, k in enumerate(keys):
            v0, v1 = "v0-%d" % i, "v1-%d" % i
            r = ca.call(["SET", k, v0], timeout=5)
            expect(r == "OK", "SET %s via h1: %r" % (k, r))
            got, _ = wait_until(lambda: cc.call(["GET", k], timeout=5) == v0, 3)
            expect(got, "h3 never read %s = %r (the owner is on h2)" % (k, v0))
            t_send = time.monotonic()
            r = ca.call(["SET", k, v1], timeout=5)
            t_ok = time.monotonic()
            expect(r == "OK", "SET %s via h1: %r" % (k, r))
            r = ca.call(["GET", k], timeout=5)
            expect(r == v1, "h1 read %s = %r right after its own SET %r" % (k, r, v1))
            seen = None
            end = t_ok + PUSH_BOUND_S
            while time.monotonic() < end:
                if cc.call(["GET", k], timeout=5) == v1:
                    seen = time.monotonic() - t_ok
                    break
                time.sleep(0.001)
            if seen is None:
                missed.append("%s (write %d of %d%s)" % (
                    k, i + 1, len(keys), ", h3's first contact with the owner" if i == 0 else ""))
            else:
                delays.append(seen * 1000)
                sent.append((t_ok + seen - t_send) * 1000)
            r = call(b, "GET", k)
            expect(r == v1, "h2 (the owner's host) read %s = %r, expected %r" % (k, r, v1))
    finally:
        ca.close()
        cc.close()
    expect(not missed, "%d of %d writes through h1 (owner on h2) still not in h3's colo %.1f s "
           "after the OK (pf keys are fresh for 10 s: no push arrived): %s; the others within "
           "%s ms" % (len(missed), len(keys), PUSH_BOUND_S, ", ".join(missed),
                      ", ".join("%.1f" % d for d in delays)))
    pushes = (info_int(c, "pushes_received", "cache") or 0) - (pushes0 or 0)
    expect(pushes >= len(keys), "h3 received %d pushes for %d writes of keys it had cached"
           % (pushes, len(keys)))
    ctx.figures["push across hosts: SET via h1 (owner on h2) -> new value read via h3"] = \
        "after the OK: p50 %.2f ms, max %.2f ms; after the SET was sent: p50 %.2f ms, " \
        "max %.2f ms (%d keys; h3 polled every ~1 ms, so 'after the OK' is mostly the " \
        "first read)" % (statistics.median(delays), max(delays), statistics.median(sent),
                         max(sent), len(delays))
    return "h3 read each new value at most %.1f ms after h1's OK (%d pushes received)" % (
        max(delays), pushes)


# ---- figures ------------------------------------------------------------------


def cpu_ns(pids):
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/schedstat" % p) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def figures_latency(ctx, n=None):
    """GET and SET latency and CPU per request through h1's edge, for keys
    whose owner is on h1 (Unix socket) and on h2 (TCP + mutual TLS); lat
    keys have fresh 0, so every GET asks the owner."""
    cl = ctx.cl
    n = n or ctx.args.latency_requests
    a = cl.hosts["h1"]
    pids = [p for h in cl.hosts.values() for p in h.pids()]
    out = []
    for where in ("h1", "h2"):
        keys = cl.keys_on(where, "lat", 50, tag="lat")
        c = a.conn()
        try:
            for k in keys:
                c.call(["SET", k, "x" * 16], timeout=5)
            for op in ("SET", "GET"):
                lat = []
                errors = 0
                cpu0 = cpu_ns(pids)
                t0 = time.monotonic()
                for i in range(n):
                    k = keys[i % len(keys)]
                    words = ["SET", k, "v%d" % i] if op == "SET" else ["GET", k]
                    ts = time.monotonic()
                    r = c.call(words, timeout=5)
                    lat.append((time.monotonic() - ts) * 1e6)
                    if isinstance(r, RespError) or r is None:
                        errors += 1
                wall = time.monotonic() - t0
                cpu = (cpu_ns(pids) - cpu0) / n / 1000.0
                expect(errors == 0, "%d of %d %s with the owner on %s failed" % (errors, n, op,
                                                                               where))
                kind = "local owner (h1)" if where == "h1" else "remote owner (h2, TLS)"
                line = "%s via h1, %s: p50 %.0f us, p99 %.0f us, %.0f req/s on one " \
                       "connection, CPU %.0f us/request (all hotkvd processes)" % (
                           op, kind, pct(lat, 50), pct(lat, 99), n / wall, cpu)
                ctx.figures["%s latency, %s" % (op, kind)] = line[line.index(":") + 2:]
                out.append(line)
        finally:
            c.close()
    return "; ".join(o.split(":")[0] for o in out) + " measured"


def figures_map_change(ctx, rounds=3):
    """Time from an etcd write of a map key (the leaf's epoch moves) until
    every host's agent has published a table at that revision."""
    cl = ctx.cl
    leaf, value, _, _ = cl.etcd.get_prefix(PREFIX + "map/hot/")[0]
    times = []
    for _ in range(rounds):
        seen = {}
        stop = threading.Event()
        rev_box = {}

        def poll(h):
            c = h.conn()
            try:
                while not stop.is_set():
                    r = c.call(["INFO", "cluster"], timeout=3)
                    rev = 0
                    for line in (r or "").splitlines():
                        if line.startswith("map_revision:"):
                            rev = int(line.split(":", 1)[1])
                    if "rev" in rev_box and rev >= rev_box["rev"]:
                        seen[h.tag] = time.monotonic()
                        return
                    time.sleep(0.002)
            finally:
                c.close()
        ths = [threading.Thread(target=poll, args=(h,)) for h in cl.hosts.values()]
        for t in ths:
            t.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        rev_box["rev"] = cl.etcd.put_http(leaf, value)
        for t in ths:
            t.join(10)
        stop.set()
        expect(len(seen) == len(cl.hosts), "after a map write (revision %d) only %s saw it "
               "within 10 s" % (rev_box["rev"], sorted(seen)))
        times.append((max(seen.values()) - t0) * 1000)
    ctx.figures["map change (one leaf key written) until every host published it"] = \
        "median %.1f ms, max %.1f ms over %d writes (from the put's start, INFO polled " \
        "every 2 ms)" % (statistics.median(times), max(times), rounds)
    return "every host saw each map write within %.0f ms" % max(times)


def figures_etcd_traffic(ctx):
    """Bytes each host's agent exchanges with etcd at rest, counted by the
    host's proxy over a window."""
    cl = ctx.cl
    secs = ctx.args.traffic_seconds
    s0 = {t: p.stats() for t, p in cl.proxies.items() if t in cl.hosts}
    time.sleep(secs)
    parts = []
    for t, p in cl.proxies.items():
        if t not in s0:
            continue
        s1 = p.stats()
        up = (s1["up"] - s0[t]["up"]) * 60.0 / secs
        down = (s1["down"] - s0[t]["down"]) * 60.0 / secs
        parts.append("%s %.1f KiB/min to etcd, %.1f KiB/min from etcd" % (t, up / 1024,
                                                                         down / 1024))
    ctx.figures["etcd traffic per host at rest (%d s window, progress notify 1 s)" % secs] = \
        "; ".join(parts)
    return "; ".join(parts)


# ---- (b) -------------------------------------------------------------------


def etcd_outage_no_errors(ctx):
    """etcd killed -9 for ctx.args.etcd_outage seconds: every host's
    loader (SET/GET over keys owned by all three hosts) sees 0 errors; the
    agents notice (INFO etcd_up 0), reconnect when etcd is back, and every
    owner's members/ key is there again."""
    cl = ctx.cl
    secs = ctx.args.etcd_outage
    loaders = start_loaders(cl)
    seen_down = set()
    try:
        time.sleep(1.0)
        cl.etcd.kill9()
        t_kill = time.monotonic()
        while time.monotonic() < t_kill + secs:
            for h in cl.hosts.values():
                if info_int(h, "etcd_up") == 0:
                    seen_down.add(h.tag)
            time.sleep(0.5)
        cl.etcd.start()
        ok, waited = wait_until(lambda: all(info_int(h, "etcd_up") == 1
                                            for h in cl.hosts.values()), 20, 0.1)
        expect(ok, "agents not back on etcd 20 s after it restarted: %s" % {
            h.tag: info_int(h, "etcd_up") for h in cl.hosts.values()})
        back, _ = wait_until(lambda: all_members_back(cl), 15, 0.2)
        expect(back, "members/ keys not all back 15 s after etcd restarted: %s" %
               sorted(members(cl)))
        time.sleep(1.0)
    finally:
        errors, ops = stop_loaders(loaders)
    detail = "; ".join(ld.summary() for ld in loaders)
    expect(errors == 0, "%d errors during the etcd outage: %s" % (errors, detail))
    expect(ops > 50 * len(loaders), "too few operations ran (%d): %s" % (ops, detail))
    expect(seen_down == set(cl.hosts), "INFO etcd_up never said 0 on %s during a %g s etcd "
           "outage" % (sorted(set(cl.hosts) - seen_down), secs))
    ctx.figures["agents back on etcd after it restarted"] = "%.1f s" % waited
    return "%g s outage, %d ops, 0 errors; agents back %.1f s after the restart" % (
        secs, ops, waited)


# ---- (c) -------------------------------------------------------------------


def _cut_owner_host(ctx, cut, heal, what):
    """The body of (c): h2 cut off by `cut`, writes to its keys fail
    explicitly within write-deadline, cached reads served stale, other
    owners unaffected, recovery after `heal`."""
    cl = ctx.cl
    a, c = cl.hosts["h1"], cl.hosts["h3"]
    hl = cl.keys_on("h2", "hl", 3, tag="cut" + what)
    hd = cl.keys_on("h2", "hd", 2, tag="cut" + what)
    other = cl.keys_on("h3", "hl", 1, tag="cut" + what)[0]
    cached = [hl[0], hl[1], hd[0]]
    # h1 caches a value only while h2's owner can push to it (its push link
    # greeted), which after an earlier cut may take a reconnect: each cached
    # key is written and read until a read is a colo cache hit.
    for k in cached:
        r = None
        def _cached(k=k):
            nonlocal r
            r = call(a, "SET", k, "before")
            if r != "OK":
                return False
            r = call(a, "GET", k)
            hits = info_int(a, "cache_hits", "cache")
            r2 = call(a, "GET", k)
            return r == "before" and r2 == "before" and hits is not None and \
                (info_int(a, "cache_hits", "cache") or 0) > hits
        ok, _ = wait_until(_cached, 15, 0.2)
        expect(ok, "%s not cached through h1 within 15 s before the cut: %r" % (k, r))
    t_cut = time.monotonic()
    try:
        cut()
        # A write to a key of h2: an explicit error, not before
        # write-timeout, not (much) after write-deadline.
        t0 = time.monotonic()
        r = call(a, "SET", hl[2], "during", timeout=WRITE_DEADLINE_MS / 1000.0 + 6)
        dt = time.monotonic() - t0
        expect(isinstance(r, RespError), "SET of a key of the cut-off host answered %r "
               "after %.1f s (expected an error reply)" % (r, dt))
        expect(dt <= WRITE_DEADLINE_MS / 1000.0 + 2.5, "the error came %.1f s after the SET "
               "(write-deadline %d ms)" % (dt, WRITE_DEADLINE_MS))
        err = str(r)
        t0 = time.monotonic()
        r = call(a, "SET", hd[1], "during", timeout=WRITE_DEADLINE_MS / 1000.0 + 6)
        dt2 = time.monotonic() - t0
        expect(isinstance(r, RespError) and dt2 <= WRITE_DEADLINE_MS / 1000.0 + 2.5,
               "durable SET to the cut-off host: %r after %.1f s" % (r, dt2))
        # A key of another host is written as usual meanwhile.
        t0 = time.monotonic()
        r = call(a, "SET", other, "during")
        expect(r == "OK" and time.monotonic() - t0 < 1.5,
               "a write to h3's owner through h1 during the cut: %r in %.1f s" %
               (r, time.monotonic() - t0))
        # Cached values (fresh 1 s, keep 20 s) are served stale, flagged.
        wait = max(0.0, t_cut + 1.3 - time.monotonic())
        time.sleep(wait)
        conn = a.conn(resp3=True)
        try:
            for k in cached:
                t0 = time.monotonic()
                r = conn.call(["GET", k], timeout=MISS_WAIT_MS / 1000.0 + 5)
                dt3 = time.monotonic() - t0
                stale = any(x.get("stale") is True for x in conn.attrs)
                expect(r == "before", "GET %s during the cut: %r (expected the cached value "
                       "'before', served stale within keep)" % (k, r))
                expect(stale, "GET %s during the cut returned the old value without the "
                       "stale flag (attributes %r)" % (k, conn.attrs))
                expect(dt3 <= MISS_WAIT_MS / 1000.0 + 2.0, "stale read took %.1f s" % dt3)
        finally:
            conn.close()
        expect(time.monotonic() - t_cut < KEEP_MS / 1000.0, "the checks outlasted keep")
    finally:
        heal()
    ok, rec = wait_until(lambda: call(a, "SET", hl[2], "after") == "OK", 30, 0.2)
    expect(ok, "writes to h2's keys through h1 still fail 30 s after the cut healed: %r"
           % call(a, "SET", hl[2], "after"))
    # h2's cold owner has a link of its own, which may still be waiting on a
    # connect the cut left hanging (TCP's SYN retries): recovered means both.
    ok, rec_cold = wait_until(lambda: call(a, "SET", hd[1], "after") == "OK", 30, 0.2)
    expect(ok, "durable writes to h2's cold owner through h1 still fail 30 s after the cut "
           "healed: %r" % call(a, "SET", hd[1], "after"))
    rec += rec_cold
    got, _ = wait_until(lambda: call(c, "GET", hl[2]) == "after", 5, 0.05)
    expect(got, "h3 reads %s = %r after recovery" % (hl[2], call(c, "GET", hl[2])))
    back, _ = wait_until(lambda: all_members_back(cl) and not healthy(cl), 20, 0.2)
    expect(back, "cluster not healthy 20 s after the cut healed: %s" % (healthy(cl) or
                                                                      "members missing"))
    ctx.figures["recovery after the owner host's %s healed (writes OK at both its owners)" % what] = \
        "%.1f s" % rec
    return "write error %r after %.1f s (deadline %d ms); stale reads served flagged; " \
           "recovered %.1f s after heal" % (err[:40], dt, WRITE_DEADLINE_MS, rec)


def owner_host_cut_off(ctx):
    """(c) h2's link down (ip link set down on its bridge port)."""
    cl = ctx.cl
    if cl.net.mode != "netns":
        raise Skip("needs network namespaces: %s" % cl.net.reason)
    return _cut_owner_host(ctx, lambda: cl.net.link_down("h2"), lambda: cl.net.link_up("h2"),
                           "link")


def owner_host_one_way_cut(ctx):
    """(c') h2's packets to h1 dropped (nftables in h2's namespace), h1's
    to h2 still delivered: the owner gets requests and its answers are lost."""
    cl = ctx.cl
    if cl.net.mode != "netns":
        raise Skip("needs network namespaces: %s" % cl.net.reason)
    if not cl.net.nft_ok:
        raise Skip(cl.net.nft_reason)
    return _cut_owner_host(ctx, lambda: cl.net.cut("h2", "h1"), lambda: cl.net.heal("h2"),
                           "one-way cut")


# ---- (d) -------------------------------------------------------------------


def agent_kill9_restarted(ctx):
    """kill -9 of h2's `hotkvd: agent`: the master starts a new one, it
    registers h2's owners under a live lease again, and the loaders see no
    error meanwhile."""
    cl = ctx.cl
    h = cl.hosts["h2"]
    old = h.child("hotkvd: agent")
    expect(old, "no `hotkvd: agent` among h2's master's children: %s" % h.children())
    lease0 = h.info("cluster").get("lease_id")
    loaders = start_loaders(cl)
    try:
        time.sleep(1.0)
        os.kill(old, signal.SIGKILL)
        new, dt = wait_until(lambda: (lambda p: p if p and p != old else None)(
            h.child("hotkvd: agent")), 10, 0.02)
        expect(new, "no new agent 10 s after kill -9 of pid %d" % old)

        def registered():
            lease = h.info("cluster").get("lease_id")
            if lease in (None, "", "0"):
                return None
            m = members(cl, "h2")
            want = h.owner_ids()
            if not all(o in m for o in want):
                return None
            leases = {m[o][1] for o in want}
            return lease if len(leases) == 1 and leases.pop() in lease_values(lease) else None
        lease1, dt2 = wait_until(registered, 15, 0.1)
        expect(lease1, "h2's members/ keys not under the new agent's lease 15 s after the "
               "kill: INFO lease_id %s, members %s" % (h.info("cluster").get("lease_id"),
                                                      members(cl, "h2")))
        time.sleep(1.0)
    finally:
        errors, ops = stop_loaders(loaders)
    detail = "; ".join(ld.summary() for ld in loaders)
    expect(errors == 0, "%d errors around the agent kill: %s" % (errors, detail))
    ctx.figures["agent kill -9 -> new agent / owners registered under its lease"] = \
        "%.2f s / %.2f s" % (dt, dt2 + dt)
    return "agent %d killed, %d up after %.2f s, lease %s -> %s, %d ops, 0 errors" % (
        old, new, dt, lease0, lease1, ops)


# ---- (e) -------------------------------------------------------------------


def owner_started_twice_refused(ctx):
    """A second hotkvd claiming host h2 (same host name, same owner ids) from
    another address: it must not take h2's owners (members/ never name it),
    and h2 keeps serving without an error."""
    cl = ctx.cl
    orig = cl.hosts["h2"]
    before = members(cl, "h2")
    expect(before, "h2 has no members/ keys")
    keys = cl.keys_on("h2", "hl", 3, tag="twice")
    ld = Loader(cl.hosts["h1"], keys, "load@h1->h2")
    ld.start()
    dup = Host(cl, "h2", node="dup", tag="h2dup")
    hijacked = []
    try:
        dup.start(wait=False)
        end = time.monotonic() + ctx.args.twice_seconds
        while time.monotonic() < end:
            for oid, (v, lease) in members(cl, "h2").items():
                if v.get("addr") not in (None, orig.addr):
                    hijacked.append((oid, v))
            if not dup.running():
                break
            time.sleep(0.3)
        dup_status = dup.proc.poll()
        ready_owners = 0
        if dup.running():
            try:
                for k, v in dup.info("processes").items():
                    f = dict(x.split("=", 1) for x in v.split(",") if "=" in x)
                    if k.startswith("slot") and f.get("role", "").startswith("owner") and \
                            f.get("ready") == "1":
                        ready_owners += 1
            except (OSError, Transport):
                pass
        words = ("refus", "held", "already", "in use", "duplicate")
        said = ""
        for path in (dup.log, dup.stderr):
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        if any(w in line.lower() for w in words):
                            said = line.strip()
                            break
            except OSError:
                pass
            if said:
                break
    finally:
        dup.stop()
        ld.stop()
    after = members(cl, "h2")
    expect(not hijacked, "the second process took over %s" % hijacked[:2])
    expect({o: v.get("incarnation") for o, (v, _) in after.items()} ==
           {o: v.get("incarnation") for o, (v, _) in before.items()},
           "h2's members/ changed: before %s, after %s" % (before, after))
    expect(ld.errors == 0, "writes to h2's owners failed meanwhile: %s" % ld.summary())
    refused = dup_status not in (None, 0) or (ready_owners == 0 and said)
    expect(refused, "the second process was not refused: status %s, %d owners ready, log: %s"
           % (dup_status, ready_owners, said or "(nothing about it)\n" + dup.tail(10)))
    how = ("exited %s" % dup_status) if dup_status is not None else \
        "kept running with no owner serving"
    return "second h2 %s; log: %s; h2 served %d ops meanwhile, 0 errors" % (
        how, said[:120] or "-", ld.ops)


# ---- (f) -------------------------------------------------------------------


def compaction_during_watch(ctx):
    """h3's etcd proxy blackholed while the map moves on and etcd compacts
    past h3's watch revision, then its connections reset: h3's agent must
    resume (full read after the compaction), and follow later changes."""
    cl = ctx.cl
    h, px = cl.hosts["h3"], cl.proxies["h3"]
    c0 = info_int(h, "watch_compactions")
    expect(c0 is not None, "INFO cluster has no watch_compactions: %s" % h.info("cluster"))
    leaf, value, _, _ = cl.etcd.get_prefix(PREFIX + "map/cold/")[0]
    px.blackhole(True)
    try:
        rev = 0
        for _ in range(3):
            rev = cl.etcd.put(leaf, value)
        cl.etcd.compact(rev)
    finally:
        px.reset()
        px.blackhole(False)
    ok, dt = wait_until(lambda: (info_int(h, "map_revision") or 0) >= rev and
                        (info_int(h, "watch_compactions") or 0) > c0, 20, 0.1)
    expect(ok, "h3 did not recover from the compaction within 20 s: map_revision %s (want "
           ">= %d), watch_compactions %s (was %d)" % (info_int(h, "map_revision"), rev,
                                                      info_int(h, "watch_compactions"), c0))
    rev2 = cl.etcd.put(leaf, value)
    ok, dt2 = wait_until(lambda: all((info_int(x, "map_revision") or 0) >= rev2
                                     for x in cl.hosts.values()), 10, 0.05)
    expect(ok, "after the compaction a map write (revision %d) did not reach every host: %s"
           % (rev2, {x.tag: info_int(x, "map_revision") for x in cl.hosts.values()}))
    expect(info_int(h, "refused_maps") in (0, None), "h3 refused maps: %s" %
           info_int(h, "refused_maps"))
    return "compacted at %d; h3 back %.1f s later (watch_compactions %d -> %d); next map " \
           "write seen by all in %.0f ms" % (rev, dt, c0, info_int(h, "watch_compactions"),
                                              dt2 * 1000)


# ---- (g) -------------------------------------------------------------------


def clock_skew_changes_nothing(ctx):
    """Every process of h3 sees a wall clock ctx.args.offsets off (the
    shim): the last write in real time still wins whichever host wrote it,
    and a PX set through h3 expires when it should, seen from h1."""
    cl = ctx.cl
    if not cl.clockshim:
        raise Skip("no clock shim (HOTKVD_CLOCKSHIM / --clockshim clockshift.so)")
    h1, h2, h3 = cl.hosts["h1"], cl.hosts["h2"], cl.hosts["h3"]
    notes = []
    for off in ctx.args.offsets:
        keys = cl.keys_on("h2", "hl", 2, tag="clock%d" % off)
        with ClockShift(cl, h3, off):
            seen = observed_offset_ms(h3)
            expect(seen is not None and abs(seen - off) < 2000,
                   "h3's TIME is %s ms off, expected about %d" % (seen, off))
            for first, second, name in ((h3, h1, "h3 then h1"), (h1, h3, "h1 then h3")):
                k = keys[0]
                v1, v2 = "%s-1-%d" % (name[:2], off), "%s-2-%d" % (name[:2], off)
                expect(call(first, "SET", k, v1) == "OK", "SET via %s" % first.tag)
                expect(call(second, "SET", k, v2) == "OK", "SET via %s" % second.tag)
                for h in (h1, h2, h3):
                    got, _ = wait_until(lambda: call(h, "GET", k) == v2, 3, 0.05)
                    expect(got, "%d ms skew on h3, writes %s: %s reads %r, expected the later "
                           "write %r" % (off, name, h.tag, call(h, "GET", k), v2))
            k = keys[1]
            expect(call(h3, "SET", k, "ttl", "PX", "4000") == "OK", "SET PX via h3")
            t0 = time.monotonic()
            pttl = call(h1, "PTTL", k)
            expect(isinstance(pttl, int) and 2000 < pttl <= 4000,
                   "%d ms skew on h3: SET PX 4000 via h3, PTTL via h1 = %r" % (off, pttl))
            time.sleep(max(0.0, t0 + 1.0 - time.monotonic()))
            for h in (h1, h3):
                r = call(h, "GET", k)
                expect(r == "ttl", "%d ms skew: 1 s after SET PX 4000, %s reads %r" %
                       (off, h.tag, r))
            gone, _ = wait_until(lambda: all(call(h, "GET", k) is None for h in (h1, h3)),
                                 t0 + 4.0 + 3.0 - time.monotonic(), 0.1)
            expect(gone, "%d ms skew: a key set with PX 4000 via h3 still read %s / %s "
                   "7 s later" % (off, call(h1, "GET", k), call(h3, "GET", k)))
        notes.append("%+d ms (h3's TIME %+d ms)" % (off, seen))
    return "skew %s: later writes won, PX 4000 through h3 lived ~4 s" % ", ".join(notes)


# ---- exactly once across a lost reply ---------------------------------------------


def retry_after_lost_reply_applied_once(ctx):
    """A write through h1 to an owner on h2 whose replies to h1 are dropped
    (one-way cut h2 -> h1): the owner applies it, the edge resends it (same
    request id) until the cut heals.  Meanwhile h3 overwrites the key.  The
    resends must be answered from the completion record, not applied again:
    after the heal every host reads h3's value.  Run twice: alone, and with
    other writes from h1's edge to the same owner during the cut."""
    cl = ctx.cl
    if cl.net.mode != "netns":
        raise Skip("needs network namespaces: %s" % cl.net.reason)
    if not cl.net.nft_ok:
        raise Skip(cl.net.nft_reason)
    a, b, c = cl.hosts["h1"], cl.hosts["h2"], cl.hosts["h3"]
    notes = []
    for busy in (False, True):
        k = cl.keys_on("h2", "hl", 1, tag="once%d" % busy)[0]
        others = cl.keys_on("h2", "hl", 4, tag="oncebg%d" % busy)
        expect(call(a, "SET", k, "v0") == "OK", "SET %s via h1" % k)
        res = {}
        w0 = (info_int(b, "owner_writes", "owners"), info_int(b, "owner_idempotent_retries",
                                                               "owners"))
        r0 = info_int(a, "write_retries", "stats")
        bg = Loader(a, others, "bg@h1", think=0.01) if busy else None
        cl.net.cut("h2", "h1")
        try:
            if bg:
                bg.start()

            def first():
                t0 = time.monotonic()
                res["r"] = call(a, "SET", k, "A", timeout=WRITE_DEADLINE_MS / 1000.0 + 6)
                res["dt"] = time.monotonic() - t0
            th = threading.Thread(target=first)
            t_set = time.monotonic()
            th.start()
            got, _ = wait_until(lambda: call(c, "GET", k) == "A", 1.0, 0.02)
            expect(got, "h1's SET never reached h2's owner (h3 reads %r)" % call(c, "GET", k))
            expect(call(c, "SET", k, "B") == "OK", "SET %s via h3" % k)
            # Past write-timeout plus the longest backoff, so h1's edge has
            # resent at least once, and well before write-deadline.
            time.sleep(max(0.0, t_set + RESEND_AFTER_S - time.monotonic()))
        finally:
            cl.net.heal("h2")
        th.join(WRITE_DEADLINE_MS / 1000.0 + 8)
        if bg:
            bg.stop()
        time.sleep(1.0)
        reads = {h.tag: call(h, "GET", k) for h in (a, b, c)}
        w1 = (info_int(b, "owner_writes", "owners"), info_int(b, "owner_idempotent_retries",
                                                               "owners"))
        resent = (info_int(a, "write_retries", "stats") or 0) - (r0 or 0)
        expect(resent >= 1, "harness: h1's edge resent nothing during the %.1f s cut "
               "(write_retries %s -> %s): the scenario tested no resend" % (
                   RESEND_AFTER_S, r0, info_int(a, "write_retries", "stats")))
        expect(all(v == "B" for v in reads.values()),
               "%s: h1's SET %s A (answered %r after %.1f s) was applied again after h3's SET B: "
               "reads after the heal %s; h2's INFO owners: owner_writes %s -> %s, "
               "owner_idempotent_retries %s -> %s" % (
                   "with other writes from h1 meanwhile" if busy else "alone", k, res.get("r"),
                   res.get("dt", -1), reads, w0[0], w1[0], w0[1], w1[1]))
        notes.append("%s: h1's SET answered %r after %.1f s, %d resend(s); every host reads B"
                     % ("busy" if busy else "alone", res.get("r"), res.get("dt", -1), resent))
    return "; ".join(notes)


# ---- operator's view ----------------------------------------------------------------

INFO_CLUSTER_FIELDS = ("cluster", "host", "host_number", "map_revision", "map_from_disk",
                       "etcd_up", "etcd_last_ok_ms_ago", "lease_id", "lease_ttl_ms",
                       "lease_renewed_ms_ago", "watch_revision", "watch_compactions",
                       "refused_maps", "owners_known", "owners_live", "leaves_hot",
                       "leaves_cold", "remote_links_up")


def admin_status_and_info(ctx):
    """`hotkvd-admin CONFIG status` names every host and owner, live, with
    its leaves (exit 0); INFO cluster on every host has the contract's
    fields and agrees on the map; --cluster-init run again changes nothing;
    with etcd stopped, status exits 1 with a one-line reason."""
    cl = ctx.cl
    h1 = cl.hosts["h1"]
    code, out = h1.admin("status")
    expect(code == 0, "hotkvd-admin status exited %d:\n%s" % (code, out))
    for h in cl.hosts.values():
        expect(h.name in out, "status does not name host %s:\n%s" % (h.name, out))
        for o in h.owner_ids():
            expect(o in out, "status does not name owner %s:\n%s" % (o, out))
    revs = set()
    for h in cl.hosts.values():
        f = h.info("cluster")
        missing = [k for k in INFO_CLUSTER_FIELDS if k not in f]
        expect(not missing, "INFO cluster on %s lacks %s: %s" % (h.tag, missing, f))
        expect(f["cluster"] == "hkvtest" and f["host"] == h.name and f["etcd_up"] == "1",
               "INFO cluster on %s: %s" % (h.tag, f))
        expect(int(f["owners_live"]) == int(f["owners_known"]) == 6,
               "INFO cluster on %s: owners_known %s, owners_live %s (6 owners)" %
               (h.tag, f["owners_known"], f["owners_live"]))
        expect(int(f["leaves_hot"]) == 64 and int(f["leaves_cold"]) == 64,
               "INFO cluster on %s: leaves %s/%s" % (h.tag, f["leaves_hot"], f["leaves_cold"]))
        revs.add(f["map_revision"])
    code2, out2 = h1.cluster_init([o for h in cl.host_names for o in cl.hosts[h].owner_ids()])
    expect(code2 == 0 and "already" in out2, "--cluster-init on an initialised cluster: exit %d: "
           "%s" % (code2, out2))
    cl.etcd.kill9()
    try:
        code3, out3 = h1.admin("status", timeout=30)
    finally:
        cl.etcd.start()
    lines = [x for x in out3.strip().splitlines() if x.strip()]
    expect(code3 == 1 and len(lines) == 1, "hotkvd-admin status with etcd down: exit %d, "
           "%d lines:\n%s" % (code3, len(lines), out3))
    ok, _ = wait_until(lambda: all(info_int(h, "etcd_up") == 1 for h in cl.hosts.values()),
                       15, 0.1)
    expect(ok, "agents not back on etcd 15 s after it restarted")
    ctx.notes.append("hotkvd-admin status:\n" + out)
    return "status names 3 hosts, 6 owners (exit 0); INFO cluster complete on every host " \
           "(map revisions %s); init again: %r; etcd down: exit 1, %r" % (
               sorted(revs), out2.strip()[:70], lines[0][:100] if lines else "")

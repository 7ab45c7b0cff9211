"""selftest.py - the harness checks itself before any hotkvd runs: namespaces
up and down, etcd in its namespace reachable from a host's namespace, the
proxy's delay, blackhole and reset, a one-way nftables cut and a link cut,
teardown leaving nothing, the next run removing a crashed run's leftovers,
and the loopback fallback refusing namespace faults.  Each check prints one
line; the first failure raises."""

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import netns
from etcd import Etcd
from procs import Procs
from proxy import ProxyCtl


class SelfTestFailure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise SelfTestFailure(what)


def http_get(net, node, url, timeout):
    t0 = time.monotonic()
    with net.enter(node):
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read().decode()
    return body, time.monotonic() - t0


def udp_pair(net, src, dst, timeout=0.5):
    """True if a datagram from src's namespace reaches dst's address."""
    with net.enter(dst):
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind((net.addr(dst), 0))
    with net.enter(src):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # one datagram every 0.1 s until timeout: right after a link comes
        # up, the first ones can meet a neighbour entry still FAILED from
        # the cut (seen twice under load: "h2 not back after link up")
        end = time.monotonic() + timeout
        rx.settimeout(min(0.1, timeout))
        while True:
            try:
                tx.sendto(b"x", (net.addr(dst), rx.getsockname()[1]))
            except OSError:
                pass
            try:
                rx.recvfrom(16)
                return True
            except socket.timeout:
                if time.monotonic() >= end:
                    return False
    finally:
        rx.close()
        tx.close()


def run_selftest(tmp, log=print, force_loopback=None):
    """Runs every check; returns the list of lines (raises on a failure)."""
    out = []

    def ok(line):
        out.append("selftest: " + line)
        log("selftest: " + line)

    netns.cleanup_leftovers(log)
    # Leftovers of a "crashed run": a namespace named for a dead pid, with a
    # process in it.  The cleanup must kill the process and delete it.
    ok_ns, why = netns.probe() if not force_loopback else (False, force_loopback)
    if ok_ns:
        dead = subprocess.Popen(["/bin/true"])
        dead.wait()
        ns = "hkv-%d-left" % dead.pid
        netns.run(["ip", "netns", "add", ns])
        sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "60"])
        time.sleep(0.2)
        n = netns.cleanup_leftovers(lambda s: None)
        try:
            sleeper.wait(timeout=5)
        except subprocess.TimeoutExpired:
            sleeper.kill()
            sleeper.wait()
            raise SelfTestFailure("a crashed run's process survived the cleanup")
        check(ns not in netns.namespaces(), "a crashed run's namespace %s survived" % ns)
        ok("a crashed run's leftovers (namespace %s, pid %d in it) removed by the next run "
           "(%d removed)" % (ns, sleeper.pid, n))

    procs = Procs()
    net = netns.make_net(log, force_loopback)
    try:
        for n in ("etcd", "h1", "h2"):
            net.add(n)
        if net.mode == "netns":
            names = netns.namespaces()
            check(all(net.ns(n) in names for n in ("etcd", "h1", "h2")) and net.br in names,
                  "namespaces missing: %s" % names)
            _, links = netns.run(["ip", "-n", net.ns("h1"), "-o", "addr", "show", "dev", "eth0"])
            check(net.addr("h1") in links, "h1 has no address %s: %s" % (net.addr("h1"), links))
            _, root = netns.run(["ip", "-o", "addr"])
            check(net.addr("h1") not in root, "h1's address leaked into the root namespace")
            ok("namespaces up: %s, %s and %s on bridge namespace %s, subnet %s.0/24 "
               "(absent from the root namespace)" % (net.ns("etcd"), net.ns("h1"), net.ns("h2"),
                                                     net.br, net.subnet))
        else:
            ok("loopback mode (%s): nodes on %s.0/24" % (net.reason, net.subnet))

        e = Etcd(procs, net, "etcd", tmp, log)
        e.start()
        etcd_pid = e.proc.pid
        body, dt = http_get(net, "h1", e.url + "/health", 3)
        check('"health":"true"' in body.replace(" ", ""), "etcd /health from h1: %s" % body)
        ok("etcd %s in its namespace, reachable from h1's namespace (/health in %.1f ms)"
           % (e.url, dt * 1000))
        rev = e.put("/selftest/a", "1")
        check(rev >= 2, "etcd revision after a put: %d" % rev)

        # The proxy in h1: 127.0.0.1 there (h1's own loopback) -> etcd.
        listen = "127.0.0.1" if net.mode == "netns" else net.addr("h1")
        with net.enter("h1"):
            s = socket.socket()
            s.bind((listen, 0))
            port = s.getsockname()[1]
            s.close()
        px = ProxyCtl(procs, net, "h1", "%s:%d" % (listen, port), "%s:%d" % (e.addr, e.port),
                      os.path.join(tmp, "px.sock"), os.path.join(tmp, "px.log"))
        purl = "http://%s:%d/health" % (listen, port)
        best = min(http_get(net, "h1", purl, 3)[1] for _ in range(3))
        px.delay(150)
        slow = min(http_get(net, "h1", purl, 3)[1] for _ in range(2))
        check(slow >= 0.29 and best < 0.15,
              "delay 150 ms each way: request took %.0f ms (undelayed %.0f ms)"
              % (slow * 1000, best * 1000))
        px.delay(0)
        ok("proxy delay: 150 ms each way -> %.0f ms per request (undelayed %.1f ms)"
           % (slow * 1000, best * 1000))
        px.blackhole(True)
        t0 = time.monotonic()
        try:
            http_get(net, "h1", purl, 1.0)
            check(False, "a request through the blackhole was answered")
        except (OSError, urllib.error.URLError):
            pass
        held = time.monotonic() - t0
        # A request started in the blackhole completes once it heals.
        import threading
        res = {}

        def late():
            try:
                res["body"] = http_get(net, "h1", purl, 5)[0]
            except Exception as ex:
                res["err"] = str(ex)
        th = threading.Thread(target=late)
        th.start()
        time.sleep(0.5)
        check("body" not in res, "answered while blackholed")
        px.blackhole(False)
        th.join(6)
        check("body" in res, "the held request did not complete after the blackhole: %s" % res)
        ok("proxy blackhole: no answer for %.1f s while on; a request held in it completed "
           "once off" % held)
        with net.enter("h1"):
            c = socket.create_connection((listen, port), timeout=3)
        time.sleep(0.2)
        r = px.reset()
        c.settimeout(2)
        try:
            got = c.recv(10)
            check(got == b"", "reset: data after reset")
        except ConnectionResetError:
            pass
        c.close()
        st = px.stats()
        check(st["up"] > 0 and st["down"] > 0, "proxy counted nothing: %s" % st)
        ok("proxy reset closed %d connection(s); bytes counted: up %d, down %d"
           % (r["reset"], st["up"], st["down"]))

        # Faults between namespaces.
        if net.mode == "netns":
            check(udp_pair(net, "h1", "h2") and udp_pair(net, "h2", "h1"), "h1<->h2 not flowing")
            net.cut("h1", "h2")
            a, b = udp_pair(net, "h1", "h2"), udp_pair(net, "h2", "h1")
            dropped = net.dropped("h1")
            check(not a and b and dropped > 0,
                  "one-way cut h1->h2: h1->h2 %s, h2->h1 %s, dropped %d" % (a, b, dropped))
            net.heal("h1")
            check(udp_pair(net, "h1", "h2"), "h1->h2 not back after heal")
            ok("one-way nft cut h1->h2: h1->h2 dropped (%d packets), h2->h1 flowed; healed"
               % dropped)
            net.link_down("h2")
            a = udp_pair(net, "h1", "h2")
            b = udp_pair(net, "h2", "h1")
            t0 = time.monotonic()
            try:
                with net.enter("h1"):
                    socket.create_connection((e.addr, e.port), timeout=1).close()
                reach_etcd = True
            except OSError:
                reach_etcd = False
            net.link_up("h2")
            check(not a and not b and reach_etcd, "link down h2: h1->h2 %s, h2->h1 %s, "
                  "h1->etcd %s" % (a, b, reach_etcd))
            check(udp_pair(net, "h1", "h2", timeout=2), "h2 not back after link up")
            ok("link down h2: h2 unreachable both ways, h1 still reaches etcd; link up: back")
        else:
            for fault in (lambda: net.link_down("h2"), lambda: net.cut("h1", "h2")):
                try:
                    fault()
                    check(False, "a namespace fault ran without namespaces")
                except netns.NeedsNetns as ex:
                    reason = str(ex)
            ok("loopback mode: link and one-way cuts refused (%s)" % reason)
        e.stop()
        check(not e.running(), "etcd still running")
    finally:
        procs.stop_all()
        net.close()
    if net.mode == "netns":
        left = [n for n in netns.namespaces() if n.startswith(net.tag + "-")]
        check(not left, "namespaces left after close: %s" % left)
        left_pids = [p for p in (px.proc.pid, etcd_pid) if netns.pid_alive(p)]
        check(not left_pids, "processes left after close: %s" % left_pids)
        ok("teardown: every namespace deleted, every process stopped by pid")
    return out

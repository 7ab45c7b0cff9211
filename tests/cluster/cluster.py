"""cluster.py - the test cluster assembled: a temp dir named with the test's
pid, the network (namespaces, or loopback with the reason), certificates,
etcd in its node, one delay proxy per host between its agent and etcd (the
etcd traffic of each host is counted there, and a host can be cut off from
etcd alone), the hosts, `--cluster-init`, and a teardown that runs however
the test ends (finally, atexit, SIGTERM/SIGINT) and stops every process by
pid.  Also where keys live: the map read from etcd, a key's owner computed
as the daemon does (SipHash placement, leaf = top bits)."""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "history"))

from run_route import ROUTE_KEY, siphash24  # noqa: E402

import netns  # noqa: E402
from certs import Certs  # noqa: E402
from etcd import Etcd, free_port  # noqa: E402
from hosts import CLUSTER, Host  # noqa: E402
from procs import Procs  # noqa: E402
from proxy import ProxyCtl  # noqa: E402

PREFIX = "/hotkvd/%s/" % CLUSTER
POOL_OF = {"hl": "hot", "hd": "cold", "pf": "hot", "lat": "hot"}


def place(key):
    """router_place: SipHash of the hash tag ({...}) if any, else the key."""
    data = key.encode()
    i = data.find(b"{")
    if i >= 0:
        j = data.find(b"}", i + 1)
        if j > i + 1:
            data = data[i + 1:j]
    return siphash24(ROUTE_KEY, data)


class Cluster:
    def __init__(self, bin_path, log=print, force_loopback=None, keep=False,
                 host_names=("h1", "h2", "h3"), extra_nodes=("dup",), clockshim=None,
                 admin=None):
        self.bin = os.path.abspath(bin_path)
        self.admin = admin
        self.clockshim = os.path.abspath(clockshim) if clockshim else None
        self.log = log
        self.keep = keep
        self.failed = False
        self.closed = False
        netns.cleanup_leftovers(log)
        self.tmp = tempfile.mkdtemp(prefix="hkv-cluster-%d-" % os.getpid())
        self.procs = Procs()
        self.net = None
        self.proxies = {}
        self.hosts = {}
        self.host_names = list(host_names)
        self.map_cache = None
        atexit.register(self.close)
        self._old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.net = netns.make_net(log, force_loopback)
            self.net.add("etcd")
            for h in self.host_names + list(extra_nodes):
                self.net.add(h)
            self.clock_file = os.path.join(self.tmp, "clockshift")
            self.certs = Certs(self.tmp)
            self.etcd = Etcd(self.procs, self.net, "etcd", self.tmp, log)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _on_signal(sig, frame):
        raise KeyboardInterrupt("signal %d" % sig)

    # ---- building

    def etcd_url_for(self, host):
        """Starts host's proxy to etcd (in host's node) and returns the URL
        its agent uses."""
        node = host.node
        listen_addr = "127.0.0.1" if self.net.mode == "netns" else host.addr
        with self.net.enter(node):
            import socket
            s = socket.socket()
            s.bind((listen_addr, 0))
            port = s.getsockname()[1]
            s.close()
        ctl = os.path.join(self.tmp, "proxy-%s.sock" % host.tag)
        px = ProxyCtl(self.procs, self.net, node, "%s:%d" % (listen_addr, port),
                      "%s:%d" % (self.etcd.addr, self.etcd.port), ctl,
                      os.path.join(self.tmp, "proxy-%s.log" % host.tag))
        self.proxies[host.tag] = px
        return "http://%s:%d" % (listen_addr, port)

    def up(self, hot=1, cold=1, edges=1, start=True):
        """etcd, the hosts, --cluster-init with every host's owners, then
        every host started and ready."""
        self.etcd.start()
        for h in self.host_names:
            self.hosts[h] = Host(self, h, hot=hot, cold=cold, edges=edges)
        owners = [o for h in self.host_names for o in self.hosts[h].owner_ids()]
        code, out = self.hosts[self.host_names[0]].cluster_init(owners)
        if code != 0:
            raise RuntimeError("hotkvd --cluster-init exited %d:\n%s" % (code, out))
        self.log("cluster-init: %s" % out.strip().replace("\n", " | ")[:300])
        if start:
            for h in self.hosts.values():
                h.start(wait=False)
            for h in self.hosts.values():
                h.wait_ready()
        return self

    def host_env(self):
        """Environment for every hotkvd of the cluster: the clock shim, when
        given, preloaded everywhere (no control file: real clocks) so a
        test can shift one host's processes by writing their pids."""
        if not self.clockshim:
            return {}
        from run_daemon import asan_runtime, needs_asan
        pre = []
        if needs_asan(self.bin):
            rt = asan_runtime()
            if rt is None:
                raise RuntimeError("hotkvd needs the ASan runtime before the clock shim")
            pre.append(rt)
        pre.append(self.clockshim)
        return {"LD_PRELOAD": ":".join(pre), "HKV_CLOCKSHIFT_FILE": self.clock_file}

    def admin_bin(self):
        """--admin, else $HOTKVD_ADMIN_BIN, else hotkvd-admin beside hotkvd."""
        for p in (self.admin, os.environ.get("HOTKVD_ADMIN_BIN"),
                  os.path.join(os.path.dirname(self.bin), "hotkvd-admin")):
            if p and os.access(p, os.X_OK):
                return os.path.abspath(p)
        raise RuntimeError("hotkvd-admin not found (--admin, $HOTKVD_ADMIN_BIN, or beside %s)"
                           % self.bin)

    def run_cmd(self, argv, timeout):
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1, "%s: no exit within %d s" % (" ".join(argv), timeout)
        except OSError as e:
            return -1, "%s: %s" % (" ".join(argv), e)
        return p.returncode, p.stdout + p.stderr

    # ---- where keys live

    def read_map(self):
        """{pool: [(bits, prefix, owner number, mod_revision)]}, {n: owner id}."""
        leaves = {}
        for k, v, rev, _ in self.etcd.get_prefix(PREFIX + "map/"):
            pool, leaf = k[len(PREFIX + "map/"):].split("/", 1)
            bits, prefix = leaf.split("-", 1)
            leaves.setdefault(pool, []).append((int(bits), int(prefix, 16),
                                                int(json.loads(v)["owner"]), rev))
        owners = {}
        for k, v, _, _ in self.etcd.get_prefix(PREFIX + "owners/"):
            owners[int(k.rsplit("/", 1)[1])] = json.loads(v)["id"]
        self.map_cache = (leaves, owners)
        return self.map_cache

    def owner_of(self, key):
        """The owner id ("h2/hot/0") the map gives key."""
        if self.map_cache is None:
            self.read_map()
        leaves, owners = self.map_cache
        pool = POOL_OF[key.split(":", 1)[0]]
        h = place(key)
        for bits, prefix, owner, _ in leaves.get(pool, []):
            if (h >> (64 - bits) if bits else 0) == prefix:
                return owners.get(owner, "#%d" % owner)
        raise RuntimeError("no leaf of pool %s holds %s (map: %d leaves)" %
                           (pool, key, len(leaves.get(pool, []))))

    def host_of(self, key):
        return self.owner_of(key).split("/", 1)[0]

    def keys_on(self, host, cls, n, tag="k"):
        """n keys "<cls>:<tag>:<i>" whose owner is on host."""
        out, i = [], 0
        while len(out) < n and i < 100000:
            k = "%s:%s:%d" % (cls, tag, i)
            if self.host_of(k) == host:
                out.append(k)
            i += 1
        if len(out) < n:
            raise RuntimeError("found only %d keys of class %s on %s" % (len(out), cls, host))
        return out

    # ---- teardown

    def close(self):
        if self.closed:
            return
        self.closed = True
        for h in list(self.hosts.values()):
            try:
                h.stop()
            except Exception as e:  # keep tearing down
                self.log("teardown: host %s: %s" % (h.tag, e))
        try:
            if getattr(self, "etcd", None) is not None:
                self.etcd.stop()
        except Exception as e:
            self.log("teardown: etcd: %s" % e)
        self.procs.stop_all()
        if self.net is not None:
            self.net.close()
        if self.keep or self.failed:
            # Renamed out of the leftovers' pattern: the next run removes
            # only what is more than a day old.  etcd's data (a 64 MB
            # preallocated WAL) goes; its log stays.
            shutil.rmtree(os.path.join(self.tmp, "etcd", "data"), ignore_errors=True)
            kept = self.tmp.replace("/hkv-cluster-", "/hkv-cluster-kept-", 1)
            try:
                os.rename(self.tmp, kept)
            except OSError:
                kept = self.tmp
            self.log("cluster files kept in %s (logs of every host, etcd, proxies, history)"
                     % kept)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        for s, h in self._old.items():
            try:
                signal.signal(s, h)
            except (ValueError, TypeError):
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            self.failed = True
        self.close()
        return False


def wait_until(fn, timeout, step=0.05):
    """Calls fn until it returns something true or timeout s pass; returns
    (value, seconds waited)."""
    t0 = time.monotonic()
    end = t0 + timeout
    v = None
    while True:
        try:
            v = fn()
        except Exception:
            v = None
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() >= end:
            return v, time.monotonic() - t0
        time.sleep(step)


__all__ = ["Cluster", "place", "wait_until", "free_port", "PREFIX"]

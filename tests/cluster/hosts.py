"""hosts.py - one hotkvd host of the test cluster: its generated config, the
daemon started inside the host's namespace and stopped by pid, readiness
(bounded), RESP connections made inside its namespace, INFO fields, its
processes by title among the master's children, and the two commands an
operator runs: `hotkvd --cluster-init CONFIG --owners ...` and
`hotkvd-admin CONFIG status`.

Every host of the test cluster has the classes below, so a key's prefix says
its class: hl (hot, ledger, degrade), hd (cold, durable, error), pf (hot,
fresh 10 s: a read served from cache for 10 s unless a push replaces it),
lat (hot, fresh 0: every read asks the owner), and the timeouts are short
(write-deadline 2 s) so that faults show within the tests' budget."""

import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "history"))

from run_resp import Conn, RespError, Transport, info_fields  # noqa: E402

import procs as P  # noqa: E402
from etcd import free_port  # noqa: E402

CLUSTER = "hkvtest"
WRITE_TIMEOUT_MS = 500
WRITE_DEADLINE_MS = 2000
MISS_WAIT_MS = 800
KEEP_MS = 20000
LEASE_TTL = "3s"
CLASSES = [
    ("hl", "hot", 1000, KEEP_MS, "ledger", "degrade"),
    ("hd", "cold", 1000, KEEP_MS, "durable", "error"),
    ("pf", "hot", 10000, KEEP_MS, "ledger", "degrade"),
    ("lat", "hot", 0, 0, "ledger", "error"),
]


class HostConn(Conn):
    """run_resp.Conn to an address inside a node's namespace."""

    def __init__(self, net, node, addr, port, timeout=3.0):
        with net.enter(node):
            self.sock = socket.create_connection((addr, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.attrs = []


class Host:
    """One hotkvd daemon.  `name` is its cluster host name; `node` the
    network node it runs in (normally the same; a second process claiming
    an existing host's name runs in a node of its own)."""

    def __init__(self, cl, name, node=None, hot=1, cold=1, edges=1, extra=(), tag=None):
        self.cl = cl
        self.net = cl.net
        self.name = name
        self.node = node or name
        self.tag = tag or name
        self.addr = self.net.addr(self.node)
        self.hot, self.cold, self.edges = hot, cold, edges
        self.extra = list(extra)
        self.dir = os.path.join(cl.tmp, self.tag)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "hotkvd.conf")
        self.log = os.path.join(self.dir, "hotkvd.log")
        self.stderr = os.path.join(self.dir, "hotkvd.stderr")
        self.port = free_port(self.net, self.node)
        self.owner_port = self.free_range(self.hot + self.cold)
        self.cert, self.key = cl.certs.host(name, self.addr, tag=self.tag)
        self.etcd_url = cl.etcd_url_for(self)
        self.proc = None
        self.env = None          # extra environment (the clock shim)
        self.write_conf()

    def free_range(self, n):
        """A base port with n free ports above it on this host's address."""
        for _ in range(50):
            base = free_port(self.net, self.node)
            if base + n >= 65535:
                continue
            socks = []
            try:
                with self.net.enter(self.node):
                    for i in range(n):
                        s = socket.socket()
                        socks.append(s)
                        s.bind((self.addr, base + i))
                return base
            except OSError:
                continue
            finally:
                for s in socks:
                    s.close()
        raise RuntimeError("no %d free ports in a row on %s" % (n, self.addr))

    def owner_ids(self):
        return ["%s/hot/%d" % (self.name, k) for k in range(self.hot)] + \
               ["%s/cold/%d" % (self.name, k) for k in range(self.cold)]

    def write_conf(self):
        binds = [self.addr] + (["127.0.0.1"] if self.net.mode == "netns" else [])
        lines = [
            "# written by tests/cluster/hosts.py for host %s" % self.name,
            "bind %s" % " ".join(binds),
            "port %d" % self.port,
            'dir "%s"' % self.dir,
            'logfile "%s"' % self.log,
            "loglevel verbose",
            "colo %s" % self.name,
            "edge-workers %d" % self.edges,
            "hot-owners %d" % self.hot,
            "cold-owners %d" % self.cold,
            "protected-mode no",        # clients come from other addresses of the test net
            "shutdown-timeout 5s",
            "write-timeout %dms" % WRITE_TIMEOUT_MS,
            "write-retry-backoff 200ms 400ms",
            "write-deadline %dms" % WRITE_DEADLINE_MS,
            "persist-interval 100ms",
            "durable-timeout 1000ms",
            "miss-wait %dms" % MISS_WAIT_MS,
            "negative-ttl 1s",
            "owner-push yes",
            "cache-memory 16mb",
            "cluster %s" % CLUSTER,
            "host %s" % self.name,
            "etcd-endpoints %s" % self.etcd_url,
            "etcd-lease-ttl %s" % LEASE_TTL,
            "etcd-timeout 1s",
            "owner-port %d" % self.owner_port,
            "advertise-addr %s" % self.addr,
            'cluster-tls-cert-file "%s"' % self.cert,
            'cluster-tls-key-file "%s"' % self.key,
            'cluster-tls-ca-file "%s"' % self.cl.certs.ca,
        ]
        for name, pool, fresh, keep, dur, ot in CLASSES:
            lines.append('class %s pattern "%s:*" pool %s fresh %dms keep %dms durability %s '
                         'on-timeout %s' % (name, name, pool, fresh, keep, dur, ot))
        lines += self.extra
        with open(self.conf + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(self.conf + ".tmp", self.conf)

    # ---- the daemon

    def start(self, wait=True, timeout=30.0):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.update(self.cl.host_env())
        if self.env:
            env.update(self.env)
        argv = self.net.prefix(self.node) + [self.cl.bin, self.conf]
        self.proc = self.cl.procs.spawn("hotkvd-" + self.tag, argv, self.stderr, env=env)
        if wait:
            self.wait_ready(timeout)
        return self.proc

    def wait_ready(self, timeout=30.0):
        """Until every child serves and the map is in: bounded; raises with
        the log's tail otherwise."""
        end = time.monotonic() + timeout
        why = "no answer"
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("%s: hotkvd exited with %s at start:\n%s" %
                                   (self.tag, self.proc.returncode, self.tail()))
            ok, why = self.ready()
            if ok:
                return
            time.sleep(0.1)
        raise RuntimeError("%s: not ready within %.0f s (%s):\n%s" % (self.tag, timeout, why,
                                                                   self.tail()))

    def ready(self):
        try:
            procs = self.info("processes")
            cl = self.info("cluster")
        except (OSError, Transport) as e:
            return False, str(e)
        slots = [dict(kv.split("=", 1) for kv in v.split(",") if "=" in kv)
                 for k, v in procs.items() if k.startswith("slot")]
        need = self.edges + self.hot + self.cold
        serving = [s for s in slots if s.get("ready") == "1" and s.get("pid", "0") != "0"]
        if len(serving) < need:
            return False, "%d of %d processes ready" % (len(serving), need)
        if int(cl.get("map_revision", "0") or 0) <= 0:
            return False, "no map yet (INFO cluster: %s)" % (cl or "empty")
        return True, ""

    def stop(self):
        if self.proc is not None:
            st = self.cl.procs.stop(self.proc, timeout=15)
            self.proc = None
            return st
        return None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n=30):
        out = []
        for path in (self.log, self.stderr):
            try:
                with open(path, errors="replace") as f:
                    lines = f.read().splitlines()[-n:]
                out.append("---- %s\n%s" % (path, "\n".join(lines)))
            except OSError:
                pass
        return "\n".join(out)

    def log_has(self, *words):
        try:
            with open(self.log, errors="replace") as f:
                return any(all(w in line for w in words) for line in f)
        except OSError:
            return False

    # ---- talking to it

    def conn(self, timeout=3.0, resp3=False, cls=None):
        c = (cls or HostConn)(self.net, self.node, self.addr, self.port, timeout)
        if resp3:
            c.call(["HELLO", "3"], timeout=timeout)
            c.call(["CLIENT", "META", "ON"], timeout=timeout)
        return c

    def call(self, *words, timeout=3.0):
        c = self.conn(timeout)
        try:
            return c.call(list(words), timeout=timeout)
        finally:
            c.close()

    def info(self, section, timeout=2.0):
        r = self.call("INFO", section, timeout=timeout)
        if isinstance(r, RespError):
            raise Transport(str(r))
        return info_fields(r)

    def children(self):
        """{title: pid} of the master's children ("hotkvd: agent" ...)."""
        if not self.running():
            return {}
        return {t: p for p, t in P.children(self.proc.pid).items()}

    def child(self, prefix):
        for t, p in self.children().items():
            if t.startswith(prefix):
                return p
        return None

    def pids(self):
        if not self.running():
            return []
        return [self.proc.pid] + P.descendants(self.proc.pid)

    # ---- operator commands

    def cluster_init(self, owners=None, timeout=30):
        argv = self.net.prefix(self.node) + [self.cl.bin, "--cluster-init", self.conf]
        if owners:
            argv += ["--owners", ",".join(owners)]
        return self.cl.run_cmd(argv, timeout)

    def admin(self, *args, timeout=20):
        argv = self.net.prefix(self.node) + [self.cl.admin_bin(), self.conf] + list(args)
        return self.cl.run_cmd(argv, timeout)

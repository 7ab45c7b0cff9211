"""etcd.py - the cluster's etcd for the tests: one single-node etcd 3.4 in
its own node (namespace) with its data dir under the test's temp dir,
started, killed (-9) and restarted on the same data, stopped by pid; and the
few things the tests ask of it (etcdctl run inside its namespace): the
current revision, a prefix read, a put, a compaction, its /metrics text.

Flags: --experimental-watch-progress-notify-interval 1s (what CLUSTER.md §3
asks operators for, shortened so tests see progress quickly), no
auto-compaction (a test compacts when it wants to)."""

import base64
import json
import os
import socket
import time
import urllib.request

from netns import run

ETCD = "/usr/bin/etcd"
ETCDCTL = "/usr/bin/etcdctl"


def free_port(net, node):
    """A TCP port free on node's address (asked inside its namespace)."""
    with net.enter(node):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((net.addr(node), 0))
            return s.getsockname()[1]
        finally:
            s.close()


class Etcd:
    def __init__(self, procs, net, node, tmp, log=print):
        self.procs = procs
        self.net = net
        self.node = node
        self.addr = net.addr(node)
        self.dir = os.path.join(tmp, "etcd")
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.dir, exist_ok=True)
        self.log_path = os.path.join(self.dir, "etcd.log")
        self.port = free_port(net, node)
        self.peer = free_port(net, node)
        self.url = "http://%s:%d" % (self.addr, self.port)
        self.proc = None
        self.log = log

    def argv(self):
        peer = "http://%s:%d" % (self.addr, self.peer)
        return self.net.prefix(self.node) + [
            ETCD, "--name", "hkv", "--data-dir", self.data,
            "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "hkv=" + peer, "--initial-cluster-state", "new",
            "--experimental-watch-progress-notify-interval", "1s",
            "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]

    def start(self, timeout=20.0):
        self.proc = self.procs.spawn("etcd", self.argv(), self.log_path)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("etcd exited with %s; see %s" % (self.proc.returncode,
                                                                  self.log_path))
            if self.healthy():
                return
            time.sleep(0.1)
        raise RuntimeError("etcd not healthy within %.0f s; see %s" % (timeout, self.log_path))

    def healthy(self):
        try:
            body = self.http("/health", timeout=1.0)
        except OSError:
            return False
        try:
            return json.loads(body).get("health") == "true"
        except ValueError:
            return False

    def http(self, path, body=None, timeout=3.0):
        """GET (or POST of a JSON body) from inside etcd's namespace."""
        with self.net.enter(self.node):
            req = urllib.request.Request(self.url + path, data=body,
                                         headers={"Content-Type": "application/json"}
                                         if body is not None else {})
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode("utf-8", "replace")

    def kill9(self):
        if self.proc is not None:
            self.procs.kill9(self.proc)
            self.proc = None

    def stop(self):
        if self.proc is not None:
            self.procs.stop(self.proc)
            self.proc = None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    # ---- etcdctl

    def ctl(self, *args, timeout=10.0):
        argv = self.net.prefix(self.node) + [ETCDCTL, "--endpoints", self.url,
                                              "--command-timeout", "5s"] + list(args)
        code, out = run(argv, check=False, timeout=timeout)
        if code != 0:
            raise RuntimeError("etcdctl %s: exit %d: %s" % (" ".join(args), code, out))
        return out

    def revision(self):
        st = json.loads(self.ctl("endpoint", "status", "-w", "json"))
        return int(st[0]["Status"]["header"]["revision"])

    def get_prefix(self, prefix):
        """[(key, value, mod_revision, lease)] of the keys under prefix."""
        out = json.loads(self.ctl("get", "--prefix", prefix, "-w", "json"))
        res = []
        for kv in out.get("kvs", []):
            res.append((base64.b64decode(kv["key"]).decode(),
                        base64.b64decode(kv.get("value", "")).decode(),
                        int(kv.get("mod_revision", 0)), int(kv.get("lease", 0))))
        return res

    def put(self, key, value):
        self.ctl("put", key, value)
        return self.revision()

    def put_http(self, key, value):
        """A put through etcd's JSON gateway (no etcdctl start-up in the
        timing); returns the revision it made."""
        body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                           "value": base64.b64encode(value.encode()).decode()}).encode()
        out = json.loads(self.http("/v3/kv/put", body=body))
        return int(out["header"]["revision"])

    def compact(self, rev):
        return self.ctl("compaction", str(rev))

    def metrics(self):
        return self.http("/metrics", timeout=3.0)

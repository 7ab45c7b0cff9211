"""run_resp.py - a minimal blocking RESP2/RESP3 client for the history runner
(run.py): one connection, every read bounded by a deadline, RESP3
attributes (CLIENT META ON: stale / degraded) collected per reply."""

import socket
import time


class RespError(Exception):
    """An error reply (the text without the leading '-')."""


class Transport(Exception):
    """No reply: timeout, refused or closed connection."""


# (user, password) every new Conn logs in with first, or None: the history
# runner sets it when the daemon's config has users (run_creds.py).
AUTH = None


class Conn:
    """One blocking connection; every read is bounded by a deadline."""

    def __init__(self, port, timeout=3.0, auth="default"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.attrs = []
        auth = AUTH if auth == "default" else auth
        if auth is not None:
            try:
                r = self.call(["AUTH", auth[0], auth[1]], timeout=timeout)
            except Transport as e:
                self.close()
                raise OSError("AUTH: %s" % e)
            if isinstance(r, RespError):
                self.close()
                raise OSError("AUTH refused: %s" % r)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, args, deadline):
        data = self.encode(args)
        try:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            self.sock.sendall(data)
        except (OSError, socket.timeout) as e:
            raise Transport("send: %s" % e)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Transport("timeout")
        try:
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Transport("timeout")
        except OSError as e:
            raise Transport("recv: %s" % e)
        if not chunk:
            raise Transport("connection closed")
        self.buf += chunk

    def _line(self, deadline):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill(deadline)

    def _bytes(self, n, deadline):
        while len(self.buf) < n + 2:
            self._fill(deadline)
        data = bytes(self.buf[:n])
        del self.buf[:n + 2]
        return data

    def _value(self, deadline):
        line = self._line(deadline)
        if not line:
            raise Transport("empty reply line")
        t, rest = chr(line[0]), line[1:]
        if t == "+":
            return rest.decode("utf-8", "replace")
        if t == "-":
            return RespError(rest.decode("utf-8", "replace"))
        if t == ":":
            return int(rest)
        if t in "$=!":
            n = int(rest)
            if n < 0:
                return None
            data = self._bytes(n, deadline).decode("utf-8", "replace")
            if t == "=":
                return data[4:]  # "txt:" or "mkd:"
            if t == "!":
                return RespError(data)
            return data
        if t in "*~>":
            n = int(rest)
            if n < 0:
                return None
            return [self._value(deadline) for _ in range(n)]
        if t == "%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._value(deadline)
                d[k if not isinstance(k, list) else str(k)] = self._value(deadline)
            return d
        if t == "|":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._value(deadline)
                d[k] = self._value(deadline)
            self.attrs.append(d)
            return self._value(deadline)
        if t == "_":
            return None
        if t == "#":
            return rest == b"t"
        if t == ",":
            return float(rest)
        if t == "(":
            return int(rest)
        raise Transport("unknown reply type %r" % t)

    def read(self, deadline):
        """One reply; attributes seen on the way are left in self.attrs."""
        self.attrs = []
        try:
            return self._value(deadline)
        except (ValueError, IndexError) as e:
            raise Transport("malformed reply: %s" % e)

    def call(self, args, timeout=3.0):
        deadline = time.monotonic() + timeout
        self.send(args, deadline)
        return self.read(deadline)


def info_fields(text):
    out = {}
    for line in (text or "").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def config_set(port, name, value, timeout=3.0):
    """CONFIG SET name value on a connection of its own: the reply (a
    RespError is returned, not raised); OSError/Transport propagate."""
    c = Conn(port, timeout=2.0)
    try:
        return c.call(["CONFIG", "SET", name, value], timeout=timeout)
    finally:
        c.close()

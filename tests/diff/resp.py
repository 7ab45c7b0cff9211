"""resp.py - the differential tester's own RESP client: raw bytes out, every
reply parsed into plain tuples that keep each scalar as the exact bytes the
server sent, so two replies compare equal only when their types, error texts
and numbers are byte-for-byte the same (":05" is not ":5").

A reply is one of
    (b"+", bytes) (b"-", bytes) (b":", bytes) (b"$", bytes | None)
    (b"*", list | None)                      RESP2 (None: the null array)
    (b"_", None) (b",", bytes) (b"#", bytes) (b"(", bytes) (b"!", bytes)
    (b"=", bytes) (b"%", [(k, v)...]) (b"~", list) (b">", list)
    (b"|", [(k, v)...], reply)               RESP3 (an attribute before a reply)
Standard library only, so it runs under any python3.
"""

import socket
import time


class Closed(Exception):
    """The server closed the connection (or a read timed out)."""


def encode(words):
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        out.append(b"$%d\r\n%s\r\n" % (len(w), w))
    return b"".join(out)


class Conn:
    """One blocking connection.  Every read is bounded by `timeout` seconds."""

    def __init__(self, port, timeout=30.0):
        self.timeout = timeout
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise Closed("send: %s" % e)

    def call(self, words):
        """Sends one command (a list of bytes) and returns its reply."""
        self.send_raw(encode(words))
        return self.read()

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Closed("timeout")
        try:
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise Closed("timeout")
        except OSError as e:
            raise Closed("recv: %s" % e)
        if not chunk:
            raise Closed("connection closed")
        if self.pos > 0:
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += chunk

    def _line(self, deadline):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            self._fill(deadline)

    def _bytes(self, n, deadline):
        while len(self.buf) - self.pos < n + 2:
            self._fill(deadline)
        data = bytes(self.buf[self.pos:self.pos + n])
        if self.buf[self.pos + n:self.pos + n + 2] != b"\r\n":
            raise Closed("protocol: bulk not followed by CRLF")
        self.pos += n + 2
        return data

    def read(self):
        return self._read(time.monotonic() + self.timeout)

    def _read(self, deadline):
        line = self._line(deadline)
        if not line:
            raise Closed("protocol: empty line")
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":", b",", b"#", b"("):
            return (t, rest)
        if t == b"_":
            return (t, None)
        if t in (b"$", b"!", b"="):
            n = int(rest)
            if n < 0:
                return (t, None)
            return (t, self._bytes(n, deadline))
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return (t, None)
            return (t, [self._read(deadline) for _ in range(n)])
        if t == b"%":
            n = int(rest)
            return (t, [(self._read(deadline), self._read(deadline)) for _ in range(n)])
        if t == b"|":
            n = int(rest)
            attrs = [(self._read(deadline), self._read(deadline)) for _ in range(n)]
            return (t, attrs, self._read(deadline))
        raise Closed("protocol: unknown reply type %r" % line[:40])


def _bytes_repr(b):
    out = []
    for c in b:
        if c == 0x22 or c == 0x5c:
            out.append("\\" + chr(c))
        elif 0x20 <= c < 0x7f:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return '"' + "".join(out) + '"'


def show(reply, limit=400):
    """A one-line rendering of a reply: the form the differences file matches.
    Simple strings and errors as on the wire (+OK, -ERR ...), integers :N,
    bulks quoted with \\xNN escapes, nulls (nil), aggregates [a, b] / {k: v}."""
    s = _show(reply)
    return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)


def _show(r):
    t = r[0]
    if t in (b"+", b"-", b":", b",", b"#", b"("):
        return t.decode() + r[1].decode("latin-1")
    if t == b"_":
        return "_(nil)"
    if t in (b"$", b"!", b"="):
        if r[1] is None:
            return "(nil)" if t == b"$" else t.decode() + "(nil)"
        return (t.decode() if t != b"$" else "") + _bytes_repr(r[1])
    if t in (b"*", b"~", b">"):
        if r[1] is None:
            return "*(nil)"
        pre = "" if t == b"*" else t.decode()
        return pre + "[" + ", ".join(_show(x) for x in r[1]) + "]"
    if t == b"%":
        return "{" + ", ".join("%s: %s" % (_show(k), _show(v)) for k, v in r[1]) + "}"
    if t == b"CLOSED":
        return "<connection %s>" % r[1].decode()
    if t == b"|":
        return "|{" + ", ".join("%s: %s" % (_show(k), _show(v)) for k, v in r[1]) + "} " + _show(r[2])
    return repr(r)


def show_cmd(words, limit=300):
    """A command as one line: words separated by spaces, a word quoted (with
    \\xNN escapes) only when it is empty or holds a space, quote or non-printable."""
    parts = []
    for w in words:
        if w and all(0x21 <= c < 0x7f and c not in (0x22, 0x5c) for c in w):
            parts.append(w.decode())
        else:
            parts.append(_bytes_repr(w))
    s = " ".join(parts)
    return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)

#!/usr/bin/python3
"""proxy.py - a user-space TCP proxy with a fixed delay and a blackhole switch
(this kernel has no `tc netem`), and the class that drives one.

    /usr/bin/python3 tests/cluster/proxy.py --listen 127.0.0.1:2379 \\
        --to 10.9.8.10:2379 --control /tmp/x/proxy.sock [--delay-ms 0]

Each accepted connection gets one upstream connection.  Every chunk read in
either direction is written to the other side `delay` ms after it was read,
in order.  While the blackhole is on nothing is forwarded in either
direction and new connections are accepted but not connected upstream: what
a dropped route looks like to TCP, whose retransmissions deliver the bytes
once it heals (bytes are held, never dropped: a TCP stream cannot lose bytes
in the middle).  `reset` closes every connection with an RST.  The bytes
forwarded each way are counted (etcd traffic per host).

Control: a Unix socket (works across network namespaces: it is a file);
one command per connection, one line of JSON back:
    delay <ms> | blackhole on | blackhole off | reset | stats
"""

import argparse
import asyncio
import json
import os
import socket
import struct
import sys
import time

HOLD_MAX = 16 * 1024 * 1024  # bytes held per direction before reading stops


class Proxy:
    def __init__(self, to_host, to_port, delay_ms):
        self.to = (to_host, to_port)
        self.delay = delay_ms / 1000.0
        self.open_ev = asyncio.Event()   # set = forwarding (no blackhole)
        self.open_ev.set()
        self.up = self.down = 0
        self.conns = 0
        self.live = set()
        self._conns = {}

    def stats(self):
        return {"up": self.up, "down": self.down, "conns": self.conns, "open": len(self.live),
                "delay_ms": int(self.delay * 1000), "blackhole": not self.open_ev.is_set()}

    async def pump(self, reader, writer, count):
        """Reads from reader, writes each chunk to writer after the delay."""
        queue = asyncio.Queue()
        held = [0]
        cond = asyncio.Condition()

        async def send():
            while True:
                item = await queue.get()
                if item is None:
                    return
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.open_ev.wait()
                writer.write(data)
                await writer.drain()
                count(len(data))
                async with cond:
                    held[0] -= len(data)
                    cond.notify_all()

        sender = asyncio.ensure_future(send())
        try:
            while True:
                async with cond:
                    await cond.wait_for(lambda: held[0] < HOLD_MAX)
                data = await reader.read(65536)
                if not data:
                    break
                async with cond:
                    held[0] += len(data)
                queue.put_nowait((time.monotonic() + self.delay, data))
            queue.put_nowait(None)
            await sender
            if writer.can_write_eof():
                writer.write_eof()
        finally:
            sender.cancel()

    async def serve(self, creader, cwriter):
        self.conns += 1
        me = {"c": cwriter, "u": None}
        self.live.add(id(me))
        self._conns[id(me)] = me
        try:
            await self.open_ev.wait()
            try:
                ureader, uwriter = await asyncio.open_connection(*self.to)
            except OSError:
                return
            me["u"] = uwriter

            def up(n):
                self.up += n

            def down(n):
                self.down += n

            await asyncio.gather(self.pump(creader, uwriter, up),
                                 self.pump(ureader, cwriter, down), return_exceptions=True)
        finally:
            for w in (me["c"], me["u"]):
                if w is not None:
                    w.close()
            self.live.discard(id(me))
            self._conns.pop(id(me), None)

    def reset(self):
        """Closes every connection with an RST (SO_LINGER 0)."""
        n = 0
        for me in list(self._conns.values()):
            for w in (me["c"], me["u"]):
                if w is None:
                    continue
                sock = w.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    except OSError:
                        pass
                w.transport.abort()
            n += 1
        return n

    async def control(self, reader, writer):
        try:
            line = (await asyncio.wait_for(reader.readline(), 5)).decode().split()
            out = {"ok": True}
            if line[:1] == ["delay"] and len(line) == 2:
                self.delay = max(0, int(line[1])) / 1000.0
            elif line == ["blackhole", "on"]:
                self.open_ev.clear()
            elif line == ["blackhole", "off"]:
                self.open_ev.set()
            elif line == ["reset"]:
                out["reset"] = self.reset()
            elif line != ["stats"]:
                out = {"ok": False, "error": "unknown command %r" % " ".join(line)}
            out.update(self.stats())
            writer.write((json.dumps(out) + "\n").encode())
            await writer.drain()
        except (asyncio.TimeoutError, OSError, UnicodeDecodeError):
            pass
        finally:
            writer.close()


async def main_async(args):
    host, port = args.listen.rsplit(":", 1)
    th, tp = args.to.rsplit(":", 1)
    p = Proxy(th, int(tp), args.delay_ms)
    server = await asyncio.start_server(p.serve, host, int(port), reuse_address=True)
    if os.path.exists(args.control):
        os.unlink(args.control)
    ctl = await asyncio.start_unix_server(p.control, path=args.control)
    print("proxy: %s -> %s, control %s" % (args.listen, args.to, args.control), flush=True)
    async with server, ctl:
        await asyncio.gather(server.serve_forever(), ctl.serve_forever())


def main():
    ap = argparse.ArgumentParser(description="TCP delay/blackhole proxy (tests/cluster)")
    ap.add_argument("--listen", required=True, help="ADDR:PORT")
    ap.add_argument("--to", required=True, help="ADDR:PORT")
    ap.add_argument("--control", required=True, help="Unix socket path")
    ap.add_argument("--delay-ms", type=int, default=0)
    args = ap.parse_args()
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass
    return 0


# ---- the driver (used by the harness) ----------------------------------------


class ProxyCtl:
    """A running proxy.py: started in a node's namespace, driven through its
    control socket, stopped by pid."""

    def __init__(self, procs, net, node, listen, to, ctl_path, log_path, delay_ms=0):
        self.ctl_path = ctl_path
        self.listen = listen
        here = os.path.abspath(__file__)
        argv = net.prefix(node) + ["/usr/bin/python3", here, "--listen", listen, "--to", to,
                                   "--control", ctl_path, "--delay-ms", str(delay_ms)]
        self.proc = procs.spawn("proxy-" + node, argv, log_path)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("proxy for %s exited (%s); see %s" %
                                   (node, self.proc.returncode, log_path))
            try:
                self.call("stats")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("proxy for %s did not answer within 10 s; see %s" % (node, log_path))

    def call(self, command):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(self.ctl_path)
            s.sendall((command + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        return json.loads(buf.decode())

    def delay(self, ms):
        return self.call("delay %d" % ms)

    def blackhole(self, on):
        return self.call("blackhole %s" % ("on" if on else "off"))

    def reset(self):
        return self.call("reset")

    def stats(self):
        return self.call("stats")


if __name__ == "__main__":
    sys.exit(main())

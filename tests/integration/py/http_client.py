#!/usr/bin/python3
"""http_client.py MODE PORT ... - Python's own HTTP clients (http.client,
urllib) against hotkvd's HTTP front door, for tests/integration/check_http.c.

Modes (each prints what it saw, one fact a line, and exits 0; 1 with a
message on the first mismatch; every read has a timeout):
  etag PORT KEY        GET, then GET again on the same keep-alive connection
                       with If-None-Match: <its ETag>: 200 then 304, the same
                       ETag and X-Hotkvd-Index, no body the second time.
  urllib PORT KEY      urllib.request GET: the value and the class's
                       Content-Type; a missing key raises HTTPError 404.
  sse PORT KEY LAST N  GET /v1/watch/KEY as text/event-stream with
                       Last-Event-ID: LAST ("-": none); prints the id and data
                       of the first N events ("id=V data=JSON"), and checks
                       the ids only grow.
  ndjson PORT KEY N    the same stream as NDJSON (Accept): N JSON lines,
                       heartbeat (empty) lines skipped.
"""
import http.client
import json
import sys
import urllib.error
import urllib.request

TIMEOUT = 10


def fail(msg):
    print("MISMATCH " + msg, file=sys.stderr)
    sys.exit(1)


def etag(port, key):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    c.request("GET", "/v1/kv/" + key)
    r = c.getresponse()
    body = r.read()
    tag, idx = r.getheader("ETag"), r.getheader("X-Hotkvd-Index")
    if r.status != 200 or not tag or not idx:
        fail("first GET: %d %r %r" % (r.status, tag, idx))
    print("200 %s %s %r" % (tag, idx, body))
    c.request("GET", "/v1/kv/" + key, headers={"If-None-Match": tag})
    r = c.getresponse()
    body2 = r.read()
    if r.status != 304 or r.getheader("ETag") != tag or body2 != b"":
        fail("second GET: %d %r %r" % (r.status, r.getheader("ETag"), body2))
    if r.getheader("X-Hotkvd-Index") != idx:
        fail("304 index %r != %r" % (r.getheader("X-Hotkvd-Index"), idx))
    print("304 %s same connection" % tag)
    c.close()


def with_urllib(port, key):
    url = "http://127.0.0.1:%d/v1/kv/%s" % (port, key)
    with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
        print("200 %s %r" % (r.headers.get("Content-Type"), r.read()))
    try:
        urllib.request.urlopen(url + ":missing", timeout=TIMEOUT)
        fail("a missing key was answered")
    except urllib.error.HTTPError as e:
        print("%d %s" % (e.code, e.headers.get("X-Hotkvd-Index")))


def stream(port, key, headers, n, sse):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    c.request("GET", "/v1/watch/" + key, headers=headers)
    r = c.getresponse()
    if r.status != 200:
        fail("watch status %d" % r.status)
    print("content-type %s" % r.getheader("Content-Type"))
    last, got, ev = -1, 0, {}
    while got < n:
        line = r.readline()
        if not line:
            fail("stream ended after %d events" % got)
        line = line.decode().rstrip("\r\n")
        if sse:
            if line.startswith(":") or line.startswith("retry:"):
                continue
            if line:
                k, _, v = line.partition(": ")
                ev[k] = v
                continue
            if not ev:
                continue
            ident, data = int(ev["id"]), ev["data"]
            ev = {}
        else:
            if not line:
                continue
            data = line
            ident = json.loads(line)["index"]
        if ident <= last:
            fail("event %d after %d: out of order" % (ident, last))
        last = ident
        json.loads(data)
        print("id=%d data=%s" % (ident, data))
        got += 1
    c.close()


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "etag":
        etag(port, sys.argv[3])
    elif mode == "urllib":
        with_urllib(port, sys.argv[3])
    elif mode == "sse":
        h = {"Accept": "text/event-stream"}
        if sys.argv[4] != "-":
            h["Last-Event-ID"] = sys.argv[4]
        stream(port, sys.argv[3], h, int(sys.argv[5]), True)
    elif mode == "ndjson":
        stream(port, sys.argv[3], {"Accept": "application/x-ndjson"}, int(sys.argv[4]), False)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()

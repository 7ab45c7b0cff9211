"""differences.py - the ONE place that says how hotkvd's replies may differ
from redis-server 7.0's in the differential test (difftest.py).  Nothing
else may differ.  Four parts:

  1. NORMALISED: replies that are not deterministic on either server (TTL
     countdown, TIME, SCAN cursors, connection ids, INFO counters) are
     brought to a comparable form by the rules below, the same on both sides.
  2. BY DESIGN: differences hotkvd means to have (it is not Redis: its name,
     its own config defaults, the commands it implements).
  3. KNOWN INCOMPATIBILITIES, TO FIX (issue 13): real differences found by
     this test.  Each entry gives the exact command and both replies seen;
     the fix of each removes its entry.
  4. NOT GENERATED: commands Redis 7.0 has that hotkvd does not implement
     yet (NOT_IMPLEMENTED) or by design (NOT_PLANNED), and hotkvd's own
     (HOTKVD_ONLY): the generator sends none of them.

An entry matches a step whose rendering (resp.show_cmd of the command,
resp.show of each normalised reply) full-matches its patterns (see Entry),
or, for replies with many fields, the entries' rewrites together remove the
difference (each removes the one aspect it documents).
"""

import re

import resp

# ============================================================================
# 1. NORMALISED: non-deterministic replies
# ============================================================================
#
# - TTL / PTTL: two non-negative answers within 2 s (TTL) or 2000 ms (PTTL) of
#   each other are equal: the same step reaches the two servers moments apart.
#   -1 and -2 compare exactly.  EXPIRETIME / PEXPIRETIME likewise (a relative
#   expiry becomes an absolute time on each server's clock).  (Every expiry
#   the generator sets is past or a day or more ahead, so no key expires
#   between the two servers.)
# - TIME: two arrays of two digit strings, seconds within 5 s: equal.
# - ACL GENPASS: two strings of random hex digits of one length: equal.
# - LASTSAVE: two integers that can be unix times: equal (each server's own
#   last save: Redis's start, hotkvd's newest owner commit).
# - SCAN with cursor 0: the runner follows the cursor to the end (at most
#   10,000 calls, same options) on each server; the reply compared is the
#   sorted set of every key returned (a key SCAN returns twice counts once,
#   as Redis allows).  A SCAN page for any other cursor compares by shape only
#   (its content depends on the server's table layout).
# - DBSIZE and INFO keyspace: before them the runner touches every pool key
#   (EXISTS), so Redis's lazy expiry has removed what is logically gone (its
#   count otherwise depends on when its active expiry cycle ran).
#   INFO keyspace lines drop avg_ttl (an estimate sampled in the background).
# - HELLO: the values of server, version and id are not compared.
# - CLIENT ID: not compared (an integer on both).  CLIENT INFO / CLIENT LIST
#   lines: the field names in order, and the values of name, db, sub, psub,
#   ssub, multi, flags, user, redir, resp (and cmd in CLIENT INFO); other
#   values (addresses, fds, ages, memory) are not compared, and CLIENT LIST's
#   lines are sorted.  The runner's own "difftest-admin" connection is left
#   out of CLIENT LIST.
# - KEYS: the keys are sorted (Redis answers in its table's order, hotkvd
#   sorted; neither order is promised).
# - RANDOMKEY: any key from each server compares equal to any other ("a
#   key"); nil compares exactly (a server with keys never answers nil).
# - CONFIG GET: the pairs are sorted by name, ignoring case (both servers
#   return them in their own table order).
# - COMMAND INFO / DOCS: a container's subcommands (CONFIG's, CLIENT's ...)
#   are sorted by name: Redis lists them in the order of a hash table whose
#   seed changes with every start.
# - INFO: compared as the list of its section headers, plus the keyspace
#   lines; field values are counters and clocks.  hotkvd's own sections
#   (Owners, Cache, Hotkeys, Ratelimit, HTTP, Processes) are dropped: see BY
#   DESIGN.

SCAN_MAX_CALLS = 10000
HOTKVD_SECTIONS = {b"Owners", b"Cache", b"Hotkeys", b"Ratelimit", b"HTTP", b"Processes"}
CLIENT_KEEP = [b"name", b"db", b"sub", b"psub", b"ssub", b"multi", b"flags", b"user", b"redir",
               b"resp"]


def _name(words):
    return words[0].upper() if words else b""


def _sub(words):
    return words[1].upper() if len(words) > 1 else b""


def needs_touch(words):
    n = _name(words)
    return n == b"DBSIZE" or (n == b"INFO" and (len(words) == 1 or any(
        w.lower() in (b"keyspace", b"all", b"default", b"everything") for w in words[1:])))


def _int(r):
    if r[0] == b":":
        try:
            return int(r[1])
        except ValueError:
            return None
    return None


def _text(r):
    """The text of a bulk, verbatim (RESP3) or simple string, else None."""
    if r[0] in (b"$", b"+") and r[1] is not None:
        return r[1]
    if r[0] == b"=" and r[1] is not None:
        return r[1][4:]          # "txt:" prefix
    return None


def _pairs(r):
    """A map reply (RESP3 map or RESP2 flat array) as a list of pairs, or None."""
    if r[0] == b"%":
        return list(r[1])
    if r[0] == b"*" and r[1] is not None and len(r[1]) % 2 == 0:
        return [(r[1][i], r[1][i + 1]) for i in range(0, len(r[1]), 2)]
    return None


def _sorted_subcommands(x):
    """COMMAND INFO entries (10th element) and COMMAND DOCS maps ("subcommands"
    pairs) with their subcommands sorted by name, at every depth."""
    def name(e):
        return resp.show(e[1][0] if e[0] == b"*" and e[1] else e)

    def walk(v, in_docs):
        if not in_docs and v[0] == b"*" and v[1] is not None and len(v[1]) == 10 and \
                v[1][0][0] == b"$" and v[1][9][0] == b"*" and v[1][9][1] is not None:
            subs = sorted((walk(e, False) for e in v[1][9][1]), key=name)
            return (v[0], v[1][:9] + [(v[1][9][0], subs)])
        if v[0] in (b"*", b"~") and v[1] is not None and not in_docs:
            return (v[0], [walk(e, False) for e in v[1]])
        p = _pairs(v) if in_docs else None
        if p is not None:
            out = []
            for k, val in p:
                if _text(k) == b"subcommands":
                    sp = _pairs(val)
                    if sp is not None:
                        val = _unpairs(val[0], sorted(((a, walk(b, True)) for a, b in sp),
                                                      key=lambda kv: resp.show(kv[0])))
                elif _pairs(val) is not None and val[0] in (b"%", b"*"):
                    val = walk(val, True)
                out.append((k, val))
            return _unpairs(v[0], out)
        return v
    return walk(x, x[0] == b"%" or (x[0] == b"*" and x[1] is not None and len(x[1]) % 2 == 0 and
                                     all(e[0] == b"$" for e in x[1][0::2])))


def _unpairs(t, pairs):
    if t == b"%":
        return (t, pairs)
    return (t, [e for kv in pairs for e in kv])


def expand(words, reply, call):
    """SCAN 0: follows the cursor to the end with call(words) and returns
    the sorted set of keys as one pseudo-reply; other replies unchanged."""
    if _name(words) != b"SCAN" or reply[0] != b"*" or reply[1] is None or len(reply[1]) != 2:
        return reply
    if words[1] != b"0":
        return (b"+", b"<scan page>")
    keys = set()
    calls = 0
    while True:
        cur, page = reply[1]
        if cur[0] != b"$" or page[0] not in (b"*", b"~") or page[1] is None:
            return (b"-", b"difftest: malformed SCAN page " + resp.show(reply).encode())
        keys.update(k[1] for k in page[1])
        if cur[1] == b"0":
            break
        calls += 1
        if calls >= SCAN_MAX_CALLS:
            return (b"-", b"difftest: SCAN did not finish in %d calls" % SCAN_MAX_CALLS)
        reply = call([words[0], cur[1]] + words[2:])
        if reply[0] != b"*" or reply[1] is None or len(reply[1]) != 2:
            return reply
    return (b"*", [(b"+", b"<full scan>")] + [(b"$", k) for k in sorted(keys)])


def _client_lines(text, keep_cmd, drop_admin):
    out = []
    for line in text.split(b"\n"):
        if not line.strip():
            continue
        fields = [f.split(b"=", 1) for f in line.strip().split(b" ")]
        d = {f[0]: f[1] if len(f) > 1 else b"" for f in fields}
        if drop_admin and d.get(b"name") == b"difftest-admin":
            continue
        keep = CLIENT_KEEP + ([b"cmd"] if keep_cmd else [])
        out.append(b"fields=" + b",".join(f[0] for f in fields) + b" | " +
                   b" ".join(k + b"=" + d[k] for k in keep if k in d))
    return sorted(out)


def _info(text):
    keep = []
    skip = False
    for line in text.split(b"\r\n"):
        if line.startswith(b"# "):
            skip = line[2:] in HOTKVD_SECTIONS
            if not skip:
                keep.append(line)
        elif not skip and line.startswith(b"db"):
            keep.append(re.sub(rb",avg_ttl=-?\d+", b"", line))
    return b"".join(b" " + k for k in keep)


def normalise(words, r, h):
    """The pair (r, h) after the rules above."""
    n = _name(words)
    if n in (b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"):
        a, b = _int(r), _int(h)
        tol = 2 if n in (b"TTL", b"EXPIRETIME") else 2000
        if a is not None and b is not None and a >= 0 and b >= 0 and abs(a - b) <= tol:
            return r, r
    elif n == b"TIME":
        def secs(x):
            if x[0] == b"*" and x[1] is not None and len(x[1]) == 2 and \
                    all(e[0] == b"$" and e[1] is not None and e[1].isdigit() for e in x[1]):
                return int(x[1][0][1])
            return None
        a, b = secs(r), secs(h)
        if a is not None and b is not None and abs(a - b) <= 5:
            return (b"+", b"<time>"), (b"+", b"<time>")
    elif n == b"ACL" and len(words) <= 3 and _sub(words) == b"GENPASS":
        def hexlen(x):
            if x[0] == b"$" and x[1] is not None and all(ch in b"0123456789abcdef" for ch in x[1]):
                return len(x[1])
            return None
        if hexlen(r) is not None and hexlen(r) == hexlen(h):
            return (b"+", b"<random hex>"), (b"+", b"<random hex>")
    elif n == b"LASTSAVE" and len(words) == 1:
        a, b = _int(r), _int(h)
        if a is not None and b is not None and a > 1000000000 and b > 1000000000:
            return (b"+", b"<unix time>"), (b"+", b"<unix time>")
    elif n == b"HELLO":
        def hello(x):
            p = _pairs(x)
            if p is None:
                return x
            return (x[0], [(k, (b"+", b"*") if _text(k) in (b"server", b"version", b"id") else v)
                           for k, v in p])
        return hello(r), hello(h)
    elif n == b"CLIENT" and len(words) == 2 and _sub(words) in (b"ID", b"INFO", b"LIST"):
        def client(x):
            if _sub(words) == b"ID":
                return (b"+", b"<id>") if _int(x) is not None else x
            t = _text(x)
            if t is None:
                return x
            lines = _client_lines(t, _sub(words) == b"INFO", _sub(words) == b"LIST")
            return (b"*", [(b"+", b"lines=%d" % len(lines))] + [(b"+", ln) for ln in lines])
        return client(r), client(h)
    elif n == b"KEYS":
        def keys(x):
            return (x[0], sorted(x[1])) if x[0] == b"*" and x[1] is not None else x
        return keys(r), keys(h)
    elif n == b"RANDOMKEY":
        def one(x):
            return (b"+", b"<a key>") if x[0] == b"$" and x[1] is not None else x
        return one(r), one(h)
    elif n == b"COMMAND" and _sub(words) in (b"INFO", b"DOCS"):
        return _sorted_subcommands(r), _sorted_subcommands(h)
    elif n == b"CONFIG" and _sub(words) == b"GET":
        def config(x):
            p = _pairs(x)
            return x if p is None else _unpairs(x[0], sorted(p, key=lambda kv: resp.show(kv[0]).lower()))
        return config(r), config(h)
    elif n == b"INFO":
        def info(x):
            t = _text(x)
            return x if t is None else (b"+", b"<info>" + _info(t))
        return info(r), info(h)
    return r, h


# ============================================================================
# Entries
# ============================================================================

class Entry:
    """A listed difference.  Either patterns: cmd (a regular expression the
    rendered command must full-match, case-insensitively) or when(words) (a
    predicate on the command's words), and redis / hotkvd (regular
    expressions the rendered replies must full-match), and check(words, r,
    h) if given (a predicate on the two replies); or a rewrite:
    rewrite(words, r, h) -> (r, h) with the aspect it documents removed from
    both replies (for replies with many fields, where several entries may
    apply at once), applied when cmd matches."""

    def __init__(self, section, reason, cmd=None, when=None, redis=".*", hotkvd=".*",
                 check=None, example=None, rewrite=None):
        self.section = section
        self.reason = reason
        self.cmd = re.compile(cmd, re.I | re.S) if cmd is not None else None
        self.when = when
        self.redis = re.compile(redis, re.S)
        self.hotkvd = re.compile(hotkvd, re.S)
        self.example = example
        self.check = check
        self.rewrite = rewrite
        self.key = "%s: %s" % (section, reason)

    def applies(self, words, cmd):
        if self.when is not None and not self.when(words):
            return False
        return self.cmd is None or self.cmd.fullmatch(cmd) is not None

    def matches(self, words, cmd, rs, hs, r=None, h=None):
        return self.rewrite is None and self.applies(words, cmd) and \
            self.redis.fullmatch(rs) is not None and self.hotkvd.fullmatch(hs) is not None and \
            (self.check is None or (r is not None and self.check(words, r, h)))


DESIGN = "by design"
TOFIX = "to fix (issue 13)"
ENTRIES = []


def design(reason, **kw):
    ENTRIES.append(Entry(DESIGN, reason, **kw))


def tofix(reason, **kw):
    ENTRIES.append(Entry(TOFIX, reason, **kw))


# ---- helpers for the patterns and rewrites ---------------------------------

def _config_pairs(words, r, h, fix):
    """fix(name, rv, hv) -> new (name, hv) for hotkvd's pair, applied to
    pairs at the same position of two CONFIG GET replies of equal length."""
    if r[0] != h[0] or r[1] is None or h[1] is None or len(r[1]) != len(h[1]):
        return r, h
    rp, hp = _pairs(r), _pairs(h)
    if rp is None or hp is None:
        return r, h
    out = []
    for (rk, rv), (hk, hv) in zip(rp, hp):
        nk, nv = fix(rk[1], rv[1], hk[1], hv[1])
        out.append(((hk[0], nk), (hv[0], nv)))
    return r, _unpairs(h[0], out)


def _config_obl(words, r, h):
    def fix(rk, rv, hk, hv):
        if hk == b"client-output-buffer-limit" and rv.startswith(b"normal ") and \
                re.fullmatch(rb"\d+ \d+ \d+", hv):
            return hk, rv
        return hk, hv
    return _config_pairs(words, r, h, fix)


def _config_tls_protocols(words, r, h):
    def fix(rk, rv, hk, hv):
        if hk == b"tls-protocols" and rv == b"" and hv == b"TLSv1.2 TLSv1.3":
            return hk, rv
        return hk, hv
    return _config_pairs(words, r, h, fix)


def _command_info_ping(words, r, h):
    """hotkvd's PING entry without its no_auth flag."""
    def entry(e):
        if e[0] != b"*" or e[1] is None or len(e[1]) != 10 or e[1][0] != (b"$", b"ping"):
            return e
        f = e[1][2]
        return (b"*", e[1][:2] + [(f[0], [x for x in f[1] if x != (b"+", b"no_auth")])] + e[1][3:])
    if h[0] != b"*" or h[1] is None:
        return r, h
    return r, (b"*", [entry(e) for e in h[1]])


def _command_info_null(words, r, h):
    if r[0] != b"*" or h[0] != b"*" or r[1] is None or h[1] is None or len(r[1]) != len(h[1]):
        return r, h
    return r, (b"*", [(b"$", None) if a == (b"$", None) and b == (b"*", None) else b
                      for a, b in zip(r[1], h[1])])


def _placement(key):
    """Where hotkvd (servers.HOTKVD_FIXTURE) puts a key: its pool ("h:*" hot,
    every other class cold) and its hash tag as Redis Cluster reads it, else
    the whole key.  Keys of one placement always share an owner."""
    pool = b"hot" if key.startswith(b"h:") else b"cold"
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            return (pool, key[s + 1:e])
    return (pool, key)


# Key positions (first, last, step; last -1 = the last word) of the commands
# with several keys that the generator sends; any other command with
# arguments has its key at 1, except the key-less ones.
KEY_POS = {b"BITOP": (2, -1, 1), b"MSETNX": (1, -1, 2), b"MSET": (1, -1, 2), b"RENAME": (1, 2, 1),
           b"RENAMENX": (1, 2, 1), b"COPY": (1, 2, 1), b"LCS": (1, 2, 1), b"TOUCH": (1, -1, 1),
           b"MGET": (1, -1, 1), b"DEL": (1, -1, 1), b"UNLINK": (1, -1, 1),
           b"EXISTS": (1, -1, 1), b"WATCH": (1, -1, 1)}
KEYLESS = {b"PING", b"ECHO", b"TIME", b"LASTSAVE", b"MULTI", b"EXEC", b"DISCARD", b"UNWATCH"}


def _keys(words):
    n = _name(words)
    if n in KEYLESS or len(words) < 2:
        return []
    first, last, step = KEY_POS.get(n, (1, 1, 1))
    last = len(words) + last if last < 0 else min(last, len(words) - 1)
    return words[first:last + 1:step]


def _spans_owners(keys):
    return len({_placement(k) for k in keys}) > 1


def _raw_commands(payload):
    """The commands of a raw step that gen.g_tx encoded (multibulk only)."""
    out, i = [], 0
    try:
        while i < len(payload) and payload[i:i + 1] == b"*":
            e = payload.index(b"\r\n", i)
            n, i, words = int(payload[i + 1:e]), e + 2, []
            for _ in range(n):
                e = payload.index(b"\r\n", i)
                ln = int(payload[i + 1:e])
                words.append(payload[e + 2:e + 2 + ln])
                i = e + 4 + ln
            out.append(words)
    except ValueError:
        return []
    return out


def _tx_spans_owners(words, r, h):
    """A raw transaction whose keys (watched ones included) do not share an
    owner."""
    if len(words) != 2:
        return False
    return _spans_owners([k for w in _raw_commands(words[1]) for k in _keys(w)])


# ============================================================================
# 2. BY DESIGN
# ============================================================================

# Also by design, and therefore not generated or normalised away above:
# hotkvd's own INFO sections (Owners, Cache, Hotkeys, Ratelimit, HTTP, Processes),
# HELLO's server/version/id, CONFIG GET values each test config sets its own
# way (port, dir, logfile, loglevel) or that are hotkvd's own defaults
# (proto-max-bulk-len 16mb), and redis-server running with one database
# (servers.py) as hotkvd has one.  The hotkvd under test runs with AUTH not
# rate limited and generous owner timeouts (servers.HOTKVD_FIXTURE), so a
# loaded machine changes no reply.

design("COMMAND (no argument) lists the commands hotkvd implements (COMMAND INFO compares them)",
       cmd=r"COMMAND", redis=r"\[.*\]", hotkvd=r"\[.*\]",
       example=("COMMAND", '[["set", :-3, ...], ["zintercard", :-3, ...], ...]',
                '[["ping", :-1, ...], ["echo", :2, ...], ...]'))
design("OBJECT IDLETIME is not tracked (reads are answered by the colo caches, which the key's "
       "owner never sees): an error for a key that exists",
       cmd=r"OBJECT IDLETIME .*", redis=r":\d+",
       hotkvd=r"-ERR OBJECT IDLETIME is not tracked: reads are answered by the colo caches, "
              r"which the key's owner does not see",
       example=("OBJECT IDLETIME a", ":3",
                "-ERR OBJECT IDLETIME is not tracked: reads are answered by the colo caches, "
                "which the key's owner does not see"))
design("COMMAND INFO without a name lists the commands hotkvd implements, as COMMAND does",
       cmd=r"COMMAND INFO", redis=r"\[.*\]", hotkvd=r"\[.*\]",
       example=("COMMAND INFO", '[["zdiff", :-3, ...], ...]', '[["ping", :-1, ...], ...]'))
design("COMMAND INFO ping has the no_auth flag: hotkvd answers PING before AUTH (health checks)",
       cmd=r"COMMAND INFO.*", rewrite=_command_info_ping,
       example=("COMMAND INFO ping", '[["ping", :-1, [+fast], :0, :0, :0, [+@fast, +@connection], ...]]',
                '[["ping", :-1, [+fast, +no_auth], :0, :0, :0, [+@fast, +@connection], ...]]'))
design("COMMAND DOCS without a name documents the commands hotkvd implements, as COMMAND lists them",
       cmd=r"COMMAND DOCS", redis=r"\[.*\]|\{.*\}", hotkvd=r"\[.*\]|\{.*\}",
       example=("COMMAND DOCS", '["get", ["summary", ...], "xgroup", [...], ...]',
                '["ping", ["summary", ...], "echo", [...], ...]'))
design("COMMAND COUNT counts the commands hotkvd implements",
       cmd=r"COMMAND COUNT", redis=r":\d+", hotkvd=r":\d+",
       example=("COMMAND COUNT", ":240", ":41"))

CROSSSLOT = r"-CROSSSLOT Keys in request don't hash to the same slot"
design("a command over several keys that do not share an owner answers Redis Cluster's "
       "CROSSSLOT (hotkvd is atomic per owner; a hash tag puts keys on one owner)",
       cmd=r"(MSETNX|RENAME|RENAMENX|COPY|LCS|TOUCH|BITOP) .*", hotkvd=CROSSSLOT,
       check=lambda w, r, h: _spans_owners(_keys(w)),
       example=("RENAME a h:1", "+OK", CROSSSLOT))
design("a transaction whose commands (or watched keys) do not share an owner: CROSSSLOT, for "
       "its multi-key command when queued or for EXEC, and nothing runs",
       cmd=r"<raw> .*", hotkvd=r"\[.*" + CROSSSLOT + r".*\]", check=_tx_spans_owners,
       example=("<raw> MULTI; SET a 1; SET h:1 2; EXEC", "[+OK, +QUEUED, +QUEUED, [+OK, +OK]]",
                "[+OK, +QUEUED, +QUEUED, " + CROSSSLOT + "]"))
design("LCS's table is bounded by proto-max-bulk-len, hotkvd's default 16mb (Redis's 512mb)",
       cmd=r"LCS .*", hotkvd=r"-ERR Insufficient memory, transient memory for LCS exceeds "
       r"proto-max-bulk-len",
       example=("LCS k1 k2   (two values of 3000 bytes)", '"BBB..."',
                "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"))
def _config_wide_glob(words):
    """CONFIG GET with a glob that is not one of the generated names (those
    match only directives both servers have): an extra random word such as
    "*" matches each server's whole table."""
    return _sub(words) == b"GET" and any(
        any(c in w for c in b"*?[") and w not in (b"nonexistent*", b"max?lients")
        for w in words[2:])


design("CONFIG GET of a glob that matches directives one server has and the other has not "
       "(a random extra word such as '*') lists each server's own",
       cmd=r"CONFIG GET .*", when=_config_wide_glob, redis=r"\[.*\]", hotkvd=r"\[.*\]",
       example=("CONFIG GET maxclients *", '["acl-pubsub-default", "resetchannels", ...]',
                '["bind", "127.0.0.1", "cache-max-value", ...]'))
design("CONFIG GET client-output-buffer-limit is the normal class's 'hard soft seconds' triple "
       "(no replicas; the pubsub class is set in the file), with a limit by default (256mb 64mb "
       "60), where Redis prints 'normal 0 0 0 slave ... pubsub ...'",
       cmd=r"CONFIG GET .*", rewrite=_config_obl,
       example=("CONFIG GET client-output-buffer-limit",
                '["client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"]',
                '["client-output-buffer-limit", "268435456 67108864 60"]'))
design("ACL CAT lists hotkvd's three categories (read, write, admin: what a user line may "
       "grant), and the commands of one of them; Redis's other categories are unknown here",
       cmd=r"ACL CAT( .*)?", redis=r"(\[.*\]|-ERR .*)", hotkvd=r"(\[.*\]|-ERR Unknown category .*)",
       example=("ACL CAT", "[keyspace, read, write, set, ...]", "[read, write, admin]"))
design("ACL HELP lists the subcommands hotkvd serves; SETUSER, DELUSER, LOAD, SAVE and LOG are "
       "refused (users are the config file's user lines, changed by a reload)",
       cmd=r"ACL (HELP|SETUSER|DELUSER|LOAD|SAVE|LOG)( .*)?",
       hotkvd=r"(\[.*\]|-ERR ACL \w+ is not supported by hotkvd: .*)",
       example=("ACL LOG", "[]", "-ERR ACL LOG is not supported by hotkvd: users are the config "
                "file's `user` lines, changed by a reload"))
design("PUBSUB HELP lists the subcommands hotkvd serves: not SHARDCHANNELS and SHARDNUMSUB "
       "(sharded pub/sub is not implemented)",
       cmd=r"PUBSUB HELP", redis=r"\[.*SHARDCHANNELS.*\]", hotkvd=r"\[.*\]",
       example=("PUBSUB HELP", "[+PUBSUB <subcommand> ..., +SHARDCHANNELS [<pattern>], ...]",
                "[+PUBSUB <subcommand> ..., +HELP, +    Prints this help.]"))
design("CONFIG GET tls-protocols prints the versions hotkvd accepts by default (TLSv1.2 TLSv1.3) "
       "where Redis prints \"\" for OpenSSL's own default",
       cmd=r"CONFIG GET .*", rewrite=_config_tls_protocols,
       example=("CONFIG GET tls-protocols", '["tls-protocols", ""]',
                '["tls-protocols", "TLSv1.2 TLSv1.3"]'))


# ============================================================================
# 3. KNOWN INCOMPATIBILITIES, TO FIX (issue 13)
# ============================================================================
# Each: a one-line reason, the exact command and both replies seen
# (example: command, redis, hotkvd), and a pattern that covers the random
# variants of it.  Fixing one removes its entry.

# (none left)


# ============================================================================
# 4. NOT GENERATED
# ============================================================================
# Redis 7.0 commands hotkvd does not implement yet: the generator never sends
# them.  When hotkvd gains one, add it to gen.py and remove it from here.
NOT_IMPLEMENTED = {
    # asked for by issue 13
    # not in issue 13
    "keyspace, not asked for": "DUMP RESTORE MIGRATE MOVE SWAPDB SORT SORT_RO",
    "server, not asked for": "BGREWRITEAOF BGSAVE SAVE SHUTDOWN DEBUG MEMORY LATENCY "
                             "SLOWLOG LOLWUT ROLE FAILOVER MODULE",
}

# Implemented, tested against the daemon by tests/integration/check_compat.c,
# and not generated yet (a generator row is still to be written; MONITOR is
# a stream, not one reply per request, and WAIT's reply is the same, only
# Redis takes its timeout to give it).
IMPLEMENTED_NOT_GENERATED = {
    "server": "WAIT MONITOR",
    "CLIENT subcommands": "KILL TRACKING CACHING TRACKINGINFO GETREDIR UNBLOCK HELP",
    "COMMAND subcommands": "GETKEYS LIST HELP",
    "CONFIG subcommands": "HELP",
}

# Not in hotkvd by design (README: strings only, no scripts, no replication):
# not generated either.
NOT_PLANNED = {
    "other data types": "lists, hashes, sets, sorted sets, streams, geo, hyperloglog",
    "scripting": "EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO FUNCTION SCRIPT",
    "replication and cluster": "REPLICAOF SLAVEOF SYNC PSYNC REPLCONF CLUSTER ASKING READONLY "
                               "READWRITE",
    "pub/sub": "SUBSCRIBE PSUBSCRIBE SSUBSCRIBE PUBLISH SPUBLISH PUBSUB and the UNSUBSCRIBEs",
    "CONFIG REWRITE": "README: edit the file (CONFIG SET is lost at the next reload)",
}

# Inside MULTI hotkvd queues only commands with keys (run by their owner)
# and PING ECHO TIME UNWATCH; any other command is refused ("ERR Command not
# allowed inside a transaction: ...") and the transaction aborted (README):
# the generator's transactions (gen.g_tx) hold only what hotkvd queues.

# hotkvd's own commands and options (Redis 7.0 has none of them): not sent.
HOTKVD_ONLY = {
    "HOTKEYS [COUNT n]": "the hottest keys of the colo",
    "CLIENT META ON|OFF": "RESP3 attributes with each read reply",
    "GETMETA key": "a key's value with its age, stamp, stale and degraded flags",
    "CLIENT SETINFO": "Redis 7.2's, accepted for clients that send it",
    "GETWITHETAG key": "Garnet's: [etag, value], the owner's version",
    "GETIFNOTMATCH key etag": "Garnet's: the value only if the etag differs",
    "SETIFMATCH key value etag ...": "Garnet's compare-and-set on the owner's version",
    "SET ... IFEQ old": "Valkey 8.1's; the installed redis-server (7.0) has no IFEQ, so the "
                        "differential test cannot compare it (tests/integration/check_versions.c "
                        "covers it)",
}

# CONFIG GET names are generated only from those both servers define with
# the same configured value (gen.CONFIG_NAMES); port, dir, logfile, loglevel
# and proto-max-bulk-len are set differently by the two test configs or
# have hotkvd's own defaults, and are not asked.


# ============================================================================
# matching
# ============================================================================

def match(words, r, h):
    """The entries that explain the difference between r and h (normalised
    replies to words): [one pattern entry], or the rewrites that together
    make the replies equal (then, if needed, one pattern entry for the
    rest); None when nothing does."""
    cmd = resp.show_cmd(words, 10 ** 6)
    rs, hs = resp.show(r, 10 ** 6), resp.show(h, 10 ** 6)
    for e in ENTRIES:
        if e.matches(words, cmd, rs, hs, r, h):
            return [e]
    used = []
    for e in ENTRIES:
        if e.rewrite is not None and e.applies(words, cmd):
            r2, h2 = e.rewrite(words, r, h)
            if (r2, h2) != (r, h):
                used.append(e)
                r, h = r2, h2
    if not used:
        return None
    if r == h:
        return used
    rs, hs = resp.show(r, 10 ** 6), resp.show(h, 10 ** 6)
    for e in ENTRIES:
        if e.matches(words, cmd, rs, hs, r, h):
            return used + [e]
    return None


def self_check():
    """Every pattern entry's example must match the entry itself."""
    bad = []
    for e in ENTRIES:
        if e.example is None or len(e.example) != 3:
            bad.append("entry without an example (command, redis, hotkvd): %s" % e.key)
        elif e.rewrite is None and e.when is None and e.check is None:
            cmd, rs, hs = e.example
            if not e.matches([], cmd, rs, hs):
                bad.append("example does not match its own entry: %s" % e.key)
    return bad

"""gen.py - the seeded generator of the differential test: a stream of steps
(which connection, the words of one command, or raw protocol bytes) drawn
from random.Random(seed) alone, never from a reply, so a seed replays the
same sequence (absolute expiry times are "now + offset": the offsets replay,
the clock does not).

Every command hotkvd serves today and Redis 7.0 also has is generated, with
random arguments biased to edge cases: negative, huge and malformed numbers,
empty and binary strings, every option and invalid combinations of them,
unknown options, wrong arity, mixed-case names.  Keys come from a small pool
(so commands interact, across owners, pools and durability classes), and so
do most values (so INCR meets numbers and SET GET meets old values).

Expiry arguments are either already past (the key goes at once, on both
servers) or at least a day away: a key that expires while a step is between
the two servers would make the comparison depend on timing.
"""

import random
import time

import resp

# The key pool.  "h:*" is hotkvd's hot class, "d:*" its durable class, the
# rest its cold default (servers.HOTKVD_FIXTURE); "{t}" keys share a hash tag.
KEYS = [b"a", b"b", b"c", b"h:1", b"h:2", b"h:3", b"d:1", b"d:2", b"",
        b"\x00k\xff\r\n", b"{t}1", b"{t}2", b"k y", b"L" * 300,
        b"x\x00y"]  # also written by a raw step (an inline SET)

# Strings that are numbers, almost numbers, or the edges of 64-bit integers.
NUMS = [b"0", b"1", b"-1", b"2", b"10", b"-10", b"100", b"9223372036854775807",
        b"-9223372036854775808", b"9223372036854775806", b"-9223372036854775807",
        b"9223372036854775808", b"-9223372036854775809", b"18446744073709551615",
        b"99999999999999999999", b"1.5", b"1e3", b"0x10", b" 1", b"1 ", b"+1", b"01",
        b"-0", b"", b"abc", b"\x001", b"3\x00", b"\xef\xbc\x91"]

# Relative expiries that are invalid or already past, in seconds or ms.
TTL_BAD = [b"0", b"-1", b"-100", b"abc", b"", b"1.5", b"9223372036854775807",
           b"-9223372036854775808", b"9223372036854775", b"9223372036854776",
           b"4611686018427387", b"4611686018427388", b"18446744073709551615", b" 100000",
           b"100000 ", b"+100000", b"0100000", b"-9223372036854775807"]

WORDS = [b"v", b"hello", b"OK", b"nil", b"*", b"x y", b"\r\n", b"\x00", b"\xff\xfe",
         b"-ERR fake", b"+OK", b":1", b"$3", b"\t", b"NX", b"EX"]

# Keys that share a hash tag (one owner on hotkvd): what commands over
# several keys and transactions mostly use, so they run rather than answer
# CROSSSLOT (differences.py lists that answer for keys that do not share).
TAGGED = [b"{t}1", b"{t}2"]

# INCRBYFLOAT increments: floats, almost floats, infinities, huge exponents.
FLOATS = [b"1.5", b"-0.25", b"0", b"1e3", b"-1e-3", b"inf", b"-inf", b"nan", b"1e308",
          b"-1e308", b"3.0e2", b"0x10", b".5", b"5.", b" 1", b"1 ", b"", b"abc", b"10.50",
          b"-0", b"1e400", b"1.7976931348623157e308", b"0.1", b"100", b"-100", b"1e-320"]

# Bit and byte offsets: small, malformed, or past both servers' bounds (never
# between hotkvd's proto-max-bulk-len, 16mb, and Redis's, 512mb: a by-design
# difference of configuration, not of behaviour).
OFFSETS_BAD = [b"-1", b"abc", b"", b"1.5", b"4294967296", b"9223372036854775807",
               b"-9223372036854775808", b"18446744073709551616", b" 1", b"+1", b"01"]


class Gen:
    def __init__(self, seed, now=None):
        self.rng = random.Random(seed)
        self.now = int(time.time()) if now is None else now  # seconds
        self.table = [(w, getattr(self, "g_" + name)) for name, w in WEIGHTS]
        self.total = sum(w for w, _ in self.table)

    # ---- argument pools ----------------------------------------------------

    def key(self):
        return self.rng.choice(KEYS)

    def keys(self, lo=1, hi=5):
        return [self.key() for _ in range(self.rng.randint(lo, hi))]

    def related(self, n):
        """n keys for a command that needs them on one owner: mostly keys that
        share a hash tag, sometimes one key n times, sometimes any keys."""
        r = self.rng.random()
        if r < 0.6:
            return [self.rng.choice(TAGGED) for _ in range(n)]
        if r < 0.75:
            return [self.key()] * n
        return [self.key() for _ in range(n)]

    def offset(self):
        if self.rng.random() < 0.75:
            return str(self.rng.randint(0, 300)).encode()
        return self.rng.choice(OFFSETS_BAD)

    def index(self):
        """A GETRANGE/BITCOUNT/BITPOS index: small, negative, or any number."""
        if self.rng.random() < 0.7:
            return str(self.rng.randint(-40, 40)).encode()
        return self.num()

    def value(self):
        r = self.rng.random()
        if r < 0.3:
            return self.num()
        if r < 0.55:
            return self.rng.choice(WORDS)
        if r < 0.65:
            return b""
        if r < 0.85:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 24)))
        if r < 0.97:
            return bytes(self.rng.choice(b"abcxyz09") for _ in range(self.rng.randint(1, 64)))
        return b"B" * self.rng.randint(1000, 100000)

    def num(self):
        r = self.rng.random()
        if r < 0.5:
            return self.rng.choice(NUMS)
        if r < 0.8:
            return str(self.rng.randint(-1000, 1000)).encode()
        return str(self.rng.randint(-(1 << 63), (1 << 63) - 1)).encode()

    def word(self):
        return self.rng.choice([self.value(), self.num(), self.key(), b"BOGUS"])

    def ttl_s(self):
        """A relative expiry in seconds: invalid/past, or at least a day away."""
        if self.rng.random() < 0.4:
            return self.rng.choice(TTL_BAD)
        return str(self.rng.randint(100000, 10 ** 9)).encode()

    def ttl_ms(self):
        if self.rng.random() < 0.4:
            return self.rng.choice(TTL_BAD)
        return str(self.rng.randint(10 ** 8, 10 ** 12)).encode()

    def at_s(self):
        """An absolute expiry in seconds: past, invalid, or a day or more ahead."""
        r = self.rng.random()
        if r < 0.25:
            return self.rng.choice([b"1", b"0", str(self.now - self.rng.randint(1000, 10 ** 8)).encode()])
        if r < 0.4:
            return self.rng.choice(TTL_BAD)
        return str(self.now + self.rng.randint(100000, 10 ** 9)).encode()

    def at_ms(self):
        r = self.rng.random()
        if r < 0.25:
            return self.rng.choice([b"1", b"0", str((self.now - self.rng.randint(1000, 10 ** 8)) * 1000).encode()])
        if r < 0.4:
            return self.rng.choice(TTL_BAD)
        return str(self.now * 1000 + self.rng.randint(10 ** 8, 10 ** 12)).encode()

    def case(self, name):
        """The name as written, lower-case, or in random case."""
        r = self.rng.random()
        if r < 0.8:
            return name
        if r < 0.9:
            return name.lower()
        return bytes(c ^ 0x20 if self.rng.random() < 0.5 and 0x41 <= c <= 0x5a else c for c in name)

    # ---- the stream --------------------------------------------------------

    def step(self):
        """The next step: (conn, kind, payload).  conn is 0 or 1 (the second
        connection gets about one step in seven); kind "cmd" (payload: the
        words) or "raw" (payload: bytes sent as they are)."""
        conn = 1 if self.rng.random() < 0.15 else 0
        x = self.rng.random() * self.total
        for w, fn in self.table:
            x -= w
            if x < 0:
                break
        out = fn()
        if isinstance(out, bytes):
            return conn, "raw", out
        words = out
        words[0] = self.case(words[0])
        r = self.rng.random()
        if r < 0.04 and len(words) > 1:
            words = words[:-1]                   # one argument short
        elif r < 0.07:
            words = words + [self.word()]        # one argument too many
        return conn, "cmd", words

    # ---- keyspace and string commands ----------------------------------

    def g_get(self):
        return [b"GET", self.key()]

    def g_mget(self):
        return [b"MGET"] + self.keys(1, 6)

    def g_exists(self):
        return [b"EXISTS"] + self.keys(1, 5)

    def g_strlen(self):
        return [b"STRLEN", self.key()]

    def g_type(self):
        return [b"TYPE", self.key()]

    def g_ttl(self):
        return [self.rng.choice([b"TTL", b"PTTL"]), self.key()]

    def g_set(self):
        w = [b"SET", self.key(), self.value()]
        opts = [lambda: [b"NX"], lambda: [b"XX"], lambda: [b"GET"], lambda: [b"KEEPTTL"],
                lambda: [b"EX", self.ttl_s()], lambda: [b"PX", self.ttl_ms()],
                lambda: [b"EXAT", self.at_s()], lambda: [b"PXAT", self.at_ms()],
                lambda: [self.rng.choice([b"EX", b"PX", b"EXAT", b"PXAT"])],  # number missing
                lambda: [self.rng.choice([b"BOGUS", b"", b"N", b"NXX", b"GETX"])]]
        for _ in range(self.rng.choice([0, 0, 1, 1, 1, 2, 2, 3])):
            # Valid options far more often than the malformed two.
            o = self.rng.choice(opts[:8] * 3 + opts[8:])()
            o[0] = self.case(o[0])
            w += o
        return w

    def g_setex(self):
        if self.rng.random() < 0.5:
            return [b"SETEX", self.key(), self.ttl_s(), self.value()]
        return [b"PSETEX", self.key(), self.ttl_ms(), self.value()]

    def g_setnx(self):
        return [b"SETNX", self.key(), self.value()]

    def g_getset(self):
        return [b"GETSET", self.key(), self.value()]

    def g_getdel(self):
        return [b"GETDEL", self.key()]

    def g_getex(self):
        w = [b"GETEX", self.key()]
        opts = [lambda: [b"EX", self.ttl_s()], lambda: [b"PX", self.ttl_ms()],
                lambda: [b"EXAT", self.at_s()], lambda: [b"PXAT", self.at_ms()],
                lambda: [b"PERSIST"], lambda: [self.rng.choice([b"EX", b"PXAT"])],
                lambda: [self.rng.choice([b"BOGUS", b"KEEPTTL", b"NX"])]]
        for _ in range(self.rng.choice([0, 0, 1, 1, 1, 2])):
            o = self.rng.choice(opts[:5] * 3 + opts[5:])()
            o[0] = self.case(o[0])
            w += o
        return w

    def g_mset(self):
        w = [b"MSET"]
        for _ in range(self.rng.randint(1, 4)):
            w += [self.key(), self.value()]
        return w

    def g_del(self):
        return [self.rng.choice([b"DEL", b"UNLINK"])] + self.keys(1, 4)

    def g_expire(self):
        name = self.rng.choice([b"EXPIRE", b"PEXPIRE", b"EXPIREAT", b"PEXPIREAT"])
        t = {b"EXPIRE": self.ttl_s, b"PEXPIRE": self.ttl_ms, b"EXPIREAT": self.at_s,
             b"PEXPIREAT": self.at_ms}[name]()
        w = [name, self.key(), t]
        for _ in range(self.rng.choice([0, 0, 0, 1, 1, 2])):
            w.append(self.case(self.rng.choice([b"NX", b"XX", b"GT", b"LT", b"NX", b"XX", b"GT",
                                                b"LT", b"FOO", b""])))
        return w

    def g_persist(self):
        return [b"PERSIST", self.key()]

    def g_incr(self):
        name = self.rng.choice([b"INCR", b"DECR", b"INCRBY", b"DECRBY"])
        if name in (b"INCR", b"DECR"):
            return [name, self.key()]
        return [name, self.key(), self.num()]

    def g_dbsize(self):
        return [b"DBSIZE"]

    # ---- issue 13: run by the owner (CALL) --------------------------------

    def g_append(self):
        return [b"APPEND", self.key(), self.value()]

    def g_setrange(self):
        return [b"SETRANGE", self.key(), self.offset(), self.value()]

    def g_setbit(self):
        return [b"SETBIT", self.key(), self.offset(),
                self.rng.choice([b"0", b"1", b"0", b"1", b"2", b"-1", b"a", b"", b"01"])]

    def g_incrbyfloat(self):
        inc = self.rng.choice(FLOATS) if self.rng.random() < 0.7 else self.num()
        return [b"INCRBYFLOAT", self.key(), inc]

    def g_msetnx(self):
        n = self.rng.randint(1, 3)
        w = [b"MSETNX"]
        for k in self.related(n):
            w += [k, self.value()]
        return w

    def g_rename(self):
        return [self.rng.choice([b"RENAME", b"RENAMENX"])] + self.related(2)

    def g_copy(self):
        w = [b"COPY"] + self.related(2)
        for _ in range(self.rng.choice([0, 0, 1, 1, 2])):
            w += self.rng.choice([[b"REPLACE"], [b"DB", b"0"], [b"DB", b"1"], [b"DB", b"abc"],
                                  [b"BOGUS"], [b"DB"]])
        return w

    def g_touch(self):
        return [b"TOUCH"] + self.related(self.rng.randint(1, 3))

    def g_expiretime(self):
        return [self.rng.choice([b"EXPIRETIME", b"PEXPIRETIME"]), self.key()]

    # ---- issue 13: computed at the edge over the value read --------------

    def g_getrange(self):
        return [self.rng.choice([b"GETRANGE", b"SUBSTR"]), self.key(), self.index(), self.index()]

    def g_getbit(self):
        return [b"GETBIT", self.key(), self.offset()]

    def g_bitcount(self):
        w = [b"BITCOUNT", self.key()]
        if self.rng.random() < 0.7:
            w += [self.index(), self.index()]
            if self.rng.random() < 0.5:
                w.append(self.case(self.rng.choice([b"BYTE", b"BIT", b"BYTE", b"BIT", b"WORD"])))
        elif self.rng.random() < 0.3:
            w.append(self.index())
        return w

    def g_bitfield_ro(self):
        # BITFIELD_RO key GET type offset ...: signed and unsigned widths at
        # their bounds and past them, offsets plain and in type units (#N),
        # and the words Redis refuses (SET/INCRBY/OVERFLOW are not read-only).
        w = [b"BITFIELD_RO", self.key()]
        for _ in range(self.rng.choice([0, 1, 1, 2, 3])):
            if self.rng.random() < 0.08:
                w += self.rng.choice([[b"SET", b"u8", b"0", b"1"], [b"INCRBY", b"i5", b"0", b"1"],
                                      [b"OVERFLOW", b"SAT"], [b"GET", b"u8"], [b"BOGUS"]])
                continue
            t = self.rng.choice([b"u1", b"u8", b"i8", b"u16", b"i16", b"i32", b"u63", b"i64",
                                 b"u64", b"i65", b"x8", b"u0", b"U8"])
            # (offsets within 16mb, or past both servers' bounds: see OFFSETS_BAD)
            off = self.rng.choice([b"0", b"1", b"7", b"8", b"13", b"#0", b"#1", b"#3", b"-1",
                                   b"x", b"134217727", b"4294967296", b"#-1"])
            w += [self.case(b"GET"), t, off]
        return w

    def g_bitfield(self):
        # BITFIELD key [GET|SET|INCRBY|OVERFLOW ...]: values at and past each
        # width's bounds under WRAP, SAT and FAIL, writes that grow the
        # string, GET-only lines (a read), and the parse errors in order.
        w = [b"BITFIELD", self.key()]
        for _ in range(self.rng.choice([0, 1, 2, 2, 3, 4])):
            r = self.rng.random()
            if r < 0.05:
                w += self.rng.choice([[b"SET", b"u8", b"0"], [b"INCRBY", b"i5"], [b"BOGUS"],
                                      [b"OVERFLOW", b"BAD"], [b"OVERFLOW"]])
                continue
            if r < 0.25:
                w += [self.case(b"OVERFLOW"), self.case(self.rng.choice([b"WRAP", b"SAT", b"FAIL"]))]
                continue
            t = self.rng.choice([b"u1", b"u2", b"i2", b"u8", b"i8", b"i5", b"u16", b"i16", b"i32",
                                 b"u63", b"i63", b"i64", b"u64", b"i0"])
            off = self.rng.choice([b"0", b"1", b"3", b"7", b"8", b"13", b"100", b"#0", b"#1", b"#3",
                                   b"-1", b"x", b"#-1"])
            op = self.rng.choice([b"GET", b"SET", b"INCRBY", b"INCRBY"])
            w += [self.case(op), t, off]
            if op != b"GET":
                w.append(self.rng.choice([b"0", b"1", b"-1", b"5", b"-5", b"100", b"127", b"128",
                                          b"-128", b"-129", b"255", b"256", b"65535", b"-32768",
                                          b"9223372036854775807", b"-9223372036854775808",
                                          b"4611686018427387904", b"x", b"1.5"]))
        return w

    def g_bitpos(self):
        w = [b"BITPOS", self.key(), self.rng.choice([b"0", b"1", b"0", b"1", b"2", b"-1", b"x"])]
        for _ in range(self.rng.choice([0, 1, 2, 2, 3])):
            w.append(self.index())
        if len(w) == 5 and self.rng.random() < 0.7:
            w.append(self.case(self.rng.choice([b"BYTE", b"BIT", b"WORD"])))
        return w

    def g_bitop(self):
        # BITOP op dest src...: every op, NOT with one source and with two,
        # missing and shorter sources, dest among the sources, a bad op
        op = self.rng.choice([b"AND", b"OR", b"XOR", b"NOT", b"not", b"Or", b"NAND", b""])
        n = 1 if op.upper() == b"NOT" and self.rng.random() < 0.8 else self.rng.randint(1, 3)
        return [b"BITOP", op] + self.related(n + 1)

    def g_lcs(self):
        w = [b"LCS"] + self.related(2)
        for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3])):
            w += self.rng.choice([[b"LEN"], [b"IDX"], [b"WITHMATCHLEN"],
                                  [b"MINMATCHLEN", self.rng.choice([b"0", b"1", b"2", b"4", b"-1",
                                                                   b"abc"])],
                                  [b"MINMATCHLEN"], [b"BOGUS"]])
        return w

    # ---- issue 13: transactions -------------------------------------------

    def g_txcmd(self):
        """EXEC, DISCARD or UNWATCH on their own (outside MULTI: errors or OK)."""
        return [self.rng.choice([b"EXEC", b"DISCARD", b"UNWATCH"])]

    def txkey(self):
        return self.rng.choice(TAGGED) if self.rng.random() < 0.85 else self.key()

    def tx_body(self):
        k = self.txkey()
        return self.rng.choice([
            lambda: [b"SET", k, self.value()], lambda: [b"GET", k], lambda: [b"INCR", k],
            lambda: [b"APPEND", k, self.value()], lambda: [b"GETRANGE", k, self.index(), self.index()],
            lambda: [b"MGET", k, self.txkey()], lambda: [b"DEL", k], lambda: [b"PING"],
            lambda: [b"ECHO", self.value()], lambda: [b"EXPIRE", k, self.ttl_s()],
            lambda: [b"SETBIT", k, self.offset(), b"1"], lambda: [b"BITCOUNT", k],
            lambda: [b"INCRBYFLOAT", k, self.rng.choice(FLOATS)], lambda: [b"EXISTS", k],
            lambda: [b"MSETNX", k, self.value(), self.txkey(), self.value()],
            lambda: [b"GETDEL", k], lambda: [b"STRLEN", k],
            lambda: [b"FOOBAR"], lambda: [b"GET"]])()

    def g_tx(self):
        """A whole transaction as one raw step (the servers stay in step:
        nothing of it is left on the connection): [WATCH k [SET k v]] MULTI
        body... EXEC|DISCARD, at most 7 replies.  The SET after WATCH is the
        client's own write, which fails the EXEC on both servers."""
        cmds = []
        if self.rng.random() < 0.3:
            k = self.rng.choice(TAGGED)
            cmds.append([b"WATCH", k])
            if self.rng.random() < 0.5:
                cmds.append([b"SET", k, self.value()])
        cmds.append([b"MULTI"])
        for _ in range(self.rng.randint(0, 6 - len(cmds))):
            cmds.append(self.tx_body())
        cmds.append([b"EXEC" if self.rng.random() < 0.85 else b"DISCARD"])
        return b"".join(resp.encode(c) for c in cmds)

    def g_scan(self):
        cursor = b"0" if self.rng.random() < 0.8 else \
            self.rng.choice([b"abc", b"-1", b"", b"1.5", b"18446744073709551616", b" 0", b"00"])
        w = [b"SCAN", cursor]
        for _ in range(self.rng.choice([0, 1, 1, 2, 3])):
            o = self.rng.choice([
                lambda: [b"MATCH", self.rng.choice([b"*", b"h:*", b"d:*", b"?", b"[ab]", b"*\x00*",
                                                    b"{t}*", b"\\*", b"", b"L*", b"[^a]*", b"[a-c]",
                                                    b"*y", b"k\\ y", b"["])],
                lambda: [b"COUNT", self.rng.choice([b"1", b"2", b"3", b"10", b"1000", b"0", b"-1",
                                                    b"abc", b"9223372036854775807"])],
                lambda: [b"TYPE", self.rng.choice([b"string", b"STRING", b"list", b"hash", b"bogus",
                                                   b""])],
                lambda: [self.rng.choice([b"BOGUS", b"MATCH"])]])()
            o[0] = self.case(o[0])
            w += o
        return w

    # ---- keyspace administration (FLUSHALL, KEYS, RANDOMKEY, OBJECT) ----

    def g_flushall(self):
        # Both servers flush: they stay in step (the pool refills as it goes).
        w = [self.rng.choice([b"FLUSHALL", b"FLUSHDB"])]
        r = self.rng.random()
        if r < 0.6:
            w.append(self.case(self.rng.choice([b"ASYNC", b"SYNC"])))
        elif r < 0.75:
            w.append(self.rng.choice([b"BOGUS", b"", b"ASYNCX", b"\x00"]))
        elif r < 0.8:
            w += [b"ASYNC", b"SYNC"]
        return w

    def g_keys(self):
        return [b"KEYS", self.rng.choice(
            [b"*", b"h:*", b"d:*", b"?", b"[ab]", b"*\x00*", b"{t}*", b"\\*", b"", b"L*", b"[^a]*",
             b"[a-c]", b"*y", b"k\\ y", b"[", b"[^", b"\\", b"a*b*c", b"*[", b"[b-a]", b"?*?",
             b"h:[1-2]", b"*:*", b"x\x00y", b"\x00*"])]

    def g_randomkey(self):
        return [b"RANDOMKEY"]

    def g_object(self):
        # No subcommand with a NUL byte: Redis finds "encoding\0" or not
        # depending on its per-process hash seed (it hashes every byte and
        # compares as a C string), so its own answer is not reproducible.
        sub = self.rng.choice([b"ENCODING"] * 5 + [b"REFCOUNT"] * 3 +
                              [b"FREQ", b"IDLETIME", b"HELP", b"BOGUS", b"", b"ENCODINGS"])
        w = [b"OBJECT", self.case(sub)]
        if sub != b"HELP" or self.rng.random() < 0.2:
            w.append(self.key())
        return w

    # ---- connection and server commands --------------------------------

    def g_ping(self):
        return [b"PING"] + ([self.value()] if self.rng.random() < 0.5 else [])

    def g_echo(self):
        return [b"ECHO", self.value()]

    def g_select(self):
        return [b"SELECT", self.rng.choice([b"0", b"0", b"1", b"15", b"16", b"-1", b"abc", b"",
                                            b"00", b"0 ", b"9223372036854775808", b"1.0"])]

    def g_time(self):
        return [b"TIME"]

    def g_acl(self):
        # the read side over the default user (both servers have only it)
        return self.rng.choice([
            [b"ACL", b"WHOAMI"], [b"ACL", b"USERS"], [b"ACL", b"LIST"],
            [b"ACL", b"GETUSER", b"default"], [b"ACL", b"GETUSER", b"nobody"],
            [b"ACL", b"DRYRUN", b"default", b"GET", self.key()],
            [b"ACL", b"DRYRUN", b"default", b"SET", self.key(), b"v"],
            [b"ACL", b"DRYRUN", b"nobody", b"GET", b"k"],
            [b"ACL", b"DRYRUN", b"default", b"NOSUCH"],
            [b"ACL", b"DRYRUN", b"default", b"GET"], [b"ACL", b"WHOAMI", b"x"],
            [b"ACL", b"GETUSER"], [b"acl", b"whoami"], [b"ACL", b"CAT", b"a", b"b"],
            [b"ACL", b"GENPASS", b"0"], [b"ACL", b"GENPASS", b"abc"],
            [b"ACL", b"GENPASS", b"5", b"6"], [b"ACL", b"CAT", b"nosuch"],
            # LOG where both answer alike (entries carry client ids and times)
            [b"ACL", b"LOG", b"RESET"], [b"ACL", b"LOG", b"-1"], [b"ACL", b"LOG", b"0"],
            [b"ACL", b"LOG", b"x"], [b"ACL", b"LOG", b"1", b"2"], [b"ACL", b"log", b"reset"]])

    def g_lastsave(self):
        return [b"LASTSAVE"] if self.rng.random() < 0.9 else [b"LASTSAVE", b"now"]

    def g_command(self):
        r = self.rng.random()
        if r < 0.35:
            return [b"COMMAND", b"COUNT"]
        if r < 0.7:
            return [b"COMMAND", b"INFO"] + [self.rng.choice(CMD_NAMES + [b"bogus", b""])
                                            for _ in range(self.rng.randint(0, 3))]
        if r < 0.8:
            return [b"COMMAND", b"DOCS"] + [self.rng.choice(CMD_NAMES) for _ in range(self.rng.randint(0, 2))]
        if r < 0.92:
            # keys and their flags by the key specs: the variable ones (SET with
            # or without GET), keyword searches (BITOP), ranges, bad arities
            k = self.key
            line = self.rng.choice([
                [b"GET", k()], [b"SET", k(), b"v"], [b"SET", k(), b"v", b"GET"],
                [b"SET", k(), b"v", b"NX", b"get", b"EX", b"5"], [b"MSET", k(), b"1", k(), b"2"],
                [b"MSET", k(), b"1", k()], [b"COPY", k(), k()], [b"RENAME", k(), k()],
                [b"BITOP", b"AND", k(), k(), k()], [b"LCS", k(), k()], [b"DEL", k(), k()],
                [b"OBJECT", b"ENCODING", k()], [b"GETEX", k(), b"PX", b"5"], [b"EXISTS", k()],
                [b"BITFIELD_RO", k(), b"GET", b"u8", b"0"], [b"GET"],
                [b"BITFIELD", k(), b"GET", b"u8", b"0"], [b"BITFIELD", k(), b"INCRBY", b"u8", b"0", b"1"], [b"PING"], [b"BOGUS", k()],
                [b"MGET", k(), k(), k()], [b"EXPIRE", k(), b"1"], [b"GETDEL", k()]])
            return [b"COMMAND", self.rng.choice([b"GETKEYSANDFLAGS", b"getkeys"])] + line
        return [b"COMMAND", self.rng.choice([b"BOGUS", b"", b"COUNT"]), self.word()]

    def g_client(self):
        r = self.rng.random()
        if r < 0.2:
            return [b"CLIENT", b"SETNAME", self.rng.choice([b"n1", b"conn-2", b"", b"a b",
                                                            b"\x00", b"x" * 200, b"\xff"])]
        if r < 0.4:
            return [b"CLIENT", b"GETNAME"]
        if r < 0.5:
            return [b"CLIENT", b"ID"]
        if r < 0.65:
            return [b"CLIENT", b"INFO"]
        if r < 0.75:
            return [b"CLIENT", b"LIST"]
        if r < 0.87:
            # PAUSE and REPLY only where they change nothing (a 0 ms pause,
            # REPLY ON) or are refused: one reply per request stays true
            rc = self.rng.choice
            return rc([
                [b"CLIENT", b"PAUSE", rc([b"x", b"-1", b"", b"1.5", b"99999999999999999999"])],
                [b"CLIENT", b"PAUSE", b"0", rc([b"WRITE", b"ALL", b"all", b"READ", b""])],
                [b"CLIENT", b"PAUSE", rc([b"x", b"-5"]), rc([b"WRITE", b"BAD"])],
                [b"CLIENT", b"PAUSE"], [b"CLIENT", b"PAUSE", b"0", b"ALL", b"x"],
                [b"CLIENT", b"UNPAUSE"], [b"CLIENT", b"UNPAUSE", b"x"], [b"CLIENT", b"REPLY"],
                [b"CLIENT", b"REPLY", rc([b"ON", b"on", b"MAYBE", b""])],
                [b"CLIENT", b"REPLY", b"ON", b"x"], [b"CLIENT", b"NO-EVICT", rc([b"on", b"x"])]])
        return [b"CLIENT", self.rng.choice([b"BOGUS", b"", b"GETNAME", b"ID", b"SETNAME", b"INFO"])] + \
            [self.word() for _ in range(self.rng.randint(0, 2))]

    def g_config(self):
        r = self.rng.random()
        if r < 0.6:
            return [b"CONFIG", b"GET"] + [self.rng.choice(CONFIG_NAMES)
                                          for _ in range(self.rng.randint(1, 3))]
        if r < 0.8:
            return [b"CONFIG", b"SET"] + self.rng.choice([
                [b"nonexistent", b"1"], [b"timeout", b"abc"], [b"timeout", b"-1"],
                [b"maxclients", b"abc"], [b"timeout", b"0", b"bogus", b"1"], [b"timeout"],
                [b"timeout", b"0"], [b"protected-mode", b"maybe"], [b"", b""]])
        if r < 0.9:
            return [b"CONFIG", b"RESETSTAT"]
        return [b"CONFIG", self.rng.choice([b"BOGUS", b"", b"GET", b"RESETSTAT", b"SET"])] + \
            [self.word() for _ in range(self.rng.randint(0, 1))]

    def g_info(self):
        return [b"INFO"] + [self.rng.choice([b"keyspace", b"server", b"clients", b"stats", b"memory",
                                             b"cpu", b"errorstats", b"commandstats", b"bogus",
                                             b"all", b"default", b"everything", b"KEYSPACE"])
                            for _ in range(self.rng.choice([0, 1, 1, 1, 2]))]

    def g_hello(self):
        w = [b"HELLO"]
        if self.rng.random() < 0.85:
            w.append(self.rng.choice([b"2", b"3", b"2", b"3", b"1", b"4", b"abc", b"", b"-1",
                                      b"02", b"3 "]))
            for _ in range(self.rng.choice([0, 0, 1])):
                w += self.rng.choice([[b"SETNAME", self.rng.choice([b"h1", b"a b", b""])],
                                      [b"AUTH", b"default", b"pw"], [b"AUTH", b"nobody", b"pw"],
                                      [b"BOGUS"], [b"AUTH", b"default"], [b"SETNAME"]])
        return w

    def g_auth(self):
        return [b"AUTH"] + self.rng.choice([[b"pw"], [b"default", b"pw"], [b"nobody", b"pw"],
                                            [b"a", b"b", b"c"], [b""]])

    def g_reset(self):
        return [b"RESET"]

    def g_quit(self):
        return [b"QUIT"]

    # ---- pub/sub, where both servers' answers are defined: nobody is
    # subscribed on either (SUBSCRIBE's replies are tested by check_pubsub)

    def g_publish(self):
        return [b"PUBLISH", self.rng.choice([b"ch", b"", b"news.1", b"\x00"]), self.value()]

    def g_pubsub(self):
        r = self.rng.random()
        if r < 0.3:
            return [b"PUBSUB", b"NUMSUB"] + [self.rng.choice([b"ch", b"x", b""])
                                            for _ in range(self.rng.randint(0, 3))]
        if r < 0.5:
            return [b"PUBSUB", b"CHANNELS"] + [self.rng.choice([b"*", b"c*", b"[", b""])
                                              for _ in range(self.rng.choice([0, 1, 1, 2]))]
        if r < 0.65:
            return [b"PUBSUB", b"NUMPAT"]
        if r < 0.75:
            return [b"PUBSUB", b"HELP"]
        return [b"PUBSUB", self.rng.choice([b"BOGUS", b"", b"SHARDNUMSUB2"])] + \
            [self.word() for _ in range(self.rng.randint(0, 1))]

    def g_unknown(self):
        # Not "SET\0": Redis hashes every byte of a command name but compares
        # it as a C string, so whether "SET\0" finds SET depends on its
        # per-process hash seed (about one start in 256 it does: seed
        # 792268730), and its answer is not reproducible.
        return [self.rng.choice([b"FOOBAR", b"GETT", b"\x00", b"", b"SETX"])] + \
            [self.word() for _ in range(self.rng.randint(0, 3))]

    def g_raw(self):
        """Protocol edge cases (the runner sends ECHO <marker> after each and
        reads the replies up to the marker's, a closed connection or a bound)."""
        return self.rng.choice([
            b"*-10\r\n", b"*-1\r\n", b"*0\r\n", b"\r\n", b"PING\r\n", b"ECHO inline\r\n",
            b"GET a\r\n", b"  PING  \r\n", b"echo \"a b\" \r\n", b"*1\r\n$-1\r\n",
            b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", b"*1\r\n$4\r\nping\r\n",
            b"set \"x\\x00y\" \"\\n\"\r\n", b"echo 'unbalanced\r\n"])


# Names of the commands generated, for COMMAND INFO.
CMD_NAMES = [b"get", b"set", b"mget", b"mset", b"del", b"unlink", b"exists", b"strlen", b"type",
             b"ttl", b"pttl", b"scan", b"setex", b"psetex", b"setnx", b"getset", b"getdel",
             b"getex", b"expire", b"pexpire", b"expireat", b"pexpireat", b"persist", b"incr",
             b"decr", b"incrby", b"decrby", b"dbsize", b"ping", b"echo", b"select", b"time", b"lastsave", b"acl",
             b"info", b"client", b"config", b"command", b"hello", b"auth", b"reset", b"quit",
             b"append", b"setrange", b"setbit", b"incrbyfloat", b"msetnx", b"rename",
             b"renamenx", b"copy", b"touch", b"expiretime", b"pexpiretime", b"getrange", b"substr",
             b"getbit", b"bitcount", b"bitpos", b"bitfield", b"bitfield_ro", b"bitop", b"lcs", b"multi", b"exec", b"discard", b"watch",
             b"unwatch", b"flushall", b"flushdb", b"keys", b"randomkey", b"object", b"GET", b"Set"]

# CONFIG GET names both servers define (and a few neither does).
CONFIG_NAMES = [b"bind", b"client-query-buffer-limit", b"maxclients", b"pidfile", b"protected-mode",
                b"tls-port", b"tls-auth-clients", b"tls-cert-file", b"timeout", b"tcp-keepalive",
                b"shutdown-timeout", b"client-output-buffer-limit", b"tls-protocols",
                b"nonexistent", b"nonexistent*", b"", b"MAXCLIENTS", b"max?lients"]

# (name, weight): how often each generator runs.
WEIGHTS = [
    ("get", 10), ("mget", 4), ("exists", 4), ("strlen", 3), ("type", 3), ("ttl", 6),
    ("set", 16), ("setex", 4), ("setnx", 3), ("getset", 3), ("getdel", 3), ("getex", 6),
    ("mset", 4), ("del", 5), ("expire", 8), ("persist", 3), ("incr", 8), ("dbsize", 2),
    ("scan", 2), ("ping", 1), ("echo", 1), ("select", 0.7), ("time", 0.3), ("lastsave", 0.3), ("acl", 0.5), ("command", 0.7),
    ("client", 1), ("config", 0.7), ("info", 0.5), ("hello", 0.8), ("auth", 0.4),
    ("reset", 0.3), ("quit", 0.2), ("unknown", 0.5), ("raw", 0.5),
    ("append", 3), ("setrange", 2), ("setbit", 2), ("incrbyfloat", 2), ("msetnx", 2),
    ("rename", 2), ("copy", 1.5), ("touch", 1), ("expiretime", 1.5), ("getrange", 3),
    ("getbit", 2), ("bitcount", 2), ("bitpos", 2), ("bitfield_ro", 2), ("bitfield", 3), ("bitop", 2), ("lcs", 1.5), ("txcmd", 0.5), ("tx", 4),
    ("flushall", 0.3), ("keys", 1.5), ("randomkey", 1), ("object", 3),
    ("publish", 1), ("pubsub", 1),
]

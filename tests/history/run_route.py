"""run_route.py - where hotkvd keeps a key: the owner of a key in its pool,
computed as server/core/router.c does (SipHash-2-4 under the fixed ROUTE_KEY,
leaf = the top ROUTER_LEAF_BITS bits, leaves dealt round-robin to the pool's
owners).  Part of the history runner (run.py)."""

import struct

ROUTE_KEY = b"hotkvd-route-v1\x00"
ROUTER_LEAF_BITS = 10
M64 = 0xFFFFFFFFFFFFFFFF


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, data):
    """SipHash-2-4 as proto/siphash.c: 16-byte key, 64-bit result."""
    k0, k1 = struct.unpack("<QQ", key)
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0, v1, v2, v3, n):
        for _ in range(n):
            v0 = (v0 + v1) & M64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & M64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & M64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & M64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = (n & 0xFF) << 56
    for i, byte in enumerate(data[end:]):
        last |= byte << (8 * i)
    v3 ^= last
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def check_siphash():
    """The paper's vector and some of the reference table (tests/unit/check_siphash.c)."""
    key = bytes(range(16))
    assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5
    assert siphash24(key, b"") == 0x726FDB47DD0E0E31
    assert siphash24(key, bytes(range(8))) == 0x93F5F5799A932462
    assert siphash24(key, bytes(range(16))) == 0x3F2ACC7F57C29BDB


def owner_of(key, pool, nowners):
    """Owner index of key in its pool: leaf = top ROUTER_LEAF_BITS bits of the
    hash, leaves dealt round-robin (router.c map_init)."""
    data = key.encode()
    # hash tags as Redis Cluster (router.c router_hash_tag): "{tag}" places by tag
    i = data.find(b"{")
    if i >= 0:
        j = data.find(b"}", i + 1)
        if j > i + 1:
            data = data[i + 1:j]
    leaf = siphash24(ROUTE_KEY, data) >> (64 - ROUTER_LEAF_BITS)
    return leaf % nowners

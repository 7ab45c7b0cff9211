// tracking_csc.mjs - node-redis 6.3.1's client-side cache (RESP3,
// CLIENT TRACKING on) against hotkvd, run by tests/integration/check_csc.c:
//   CSC_NPM=DIR node tracking_csc.mjs PORT [ROUNDS] [BOUND_MS]
// DIR is the --prefix the test step installed redis@6.3.1 into (npm install
// --prefix DIR redis@6.3.1); never vendored in the repository.
//
// Two caching readers on two different edges (connections are made until
// INFO server shows two edge_pids), a writer on any edge.  What is asserted
// is hotkvd's promise for tracking clients (README):
//  - ordering: an invalidation is sent before any reply on that connection
//    computed after the new version reached the colo.  A write's OK means
//    its version reached the colo, so after a reader's PING (a reply
//    computed after the OK) its cached GET must give the written value:
//    either the entry was invalidated and refetched, or it was never stale;
//  - bound: a cached read never returns a value older than the class's
//    staleness bound (fresh + miss-wait, BOUND_MS) after the write that
//    superseded it was answered OK, and a reader never goes back to an
//    older value than one it already read;
//  - FLUSHALL empties every reader's cache (the next read is a miss: nil);
//  - the cache is used: each reader's hitCount > 0, and each reader did
//    get invalidated (a cache that never caches, or never invalidates,
//    fails).
// CSC_ONE_EDGE=1 skips the search for two edges (redis-server has one).
// Prints one line "csc ok ..." with the counts, or "csc FAIL: ..." and
// exits 1.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(resolve(process.env.CSC_NPM || '.', 'package.json'));
const { createClient } = require('redis');

const port = Number(process.argv[2]);
const rounds = Number(process.argv[3] || 200);
const boundMs = Number(process.argv[4] || 1200);
const deadline = Date.now() + 60000;

function fail(msg) {
    console.log(`csc FAIL: ${msg}`);
    process.exit(1);
}

async function edgePid(c) {
    const s = await c.info('server');
    const m = /edge_pid:(\d+)/.exec(s);
    return m ? Number(m[1]) : -1;
}

async function caching() {
    const c = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false },
                             RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
    c.on('error', (e) => fail(`reader error: ${e.message}`));
    await c.connect();
    return c;
}

// Two caching readers whose edges differ; at most 40 connections.
async function readersOnTwoEdges() {
    const first = await caching();
    const p1 = await edgePid(first);
    if (process.env.CSC_ONE_EDGE) // redis-server, to check this script
        return [first, await caching(), p1, p1];
    if (p1 <= 0)
        fail('INFO server has no edge_pid');
    for (let i = 0; i < 40; i++) {
        const c = await caching();
        const p = await edgePid(c);
        if (p > 0 && p !== p1)
            return [first, c, p1, p];
        c.destroy();
    }
    fail('40 connections all landed on one edge');
}

const seqOf = (v) => (v === null ? -1 : Number(v.split(':')[1]));

async function main() {
    const [r1, r2, p1, p2] = await readersOnTwoEdges();
    const readers = [r1, r2];
    const w = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
    w.on('error', (e) => fail(`writer error: ${e.message}`));
    await w.connect();
    let invalidations = [0, 0];
    readers.forEach((r, i) => r.clientSideCache.on('invalidate', () => { invalidations[i]++; }));

    const KEYS = 8;
    const key = (k) => `csc:${k}`;
    const last = new Array(KEYS).fill(-1);      // last value written (seq) per key
    const okAt = new Array(KEYS).fill(0);       // when its OK came
    const seen = readers.map(() => new Array(KEYS).fill(-1));
    for (let k = 0; k < KEYS; k++) {
        if ((await w.set(key(k), `v:0`)) !== 'OK')
            fail('first SET');
        last[k] = 0;
        okAt[k] = Date.now();
    }
    const tracking = Number(/tracking_clients:(\d+)/.exec(await w.info())?.[1] ?? -1);
    let maxLagMs = 0;     // the oldest cached value read, after its successor's OK
    // One read through reader i: never older than the bound, never backwards.
    async function read(i, k) {
        const v = await readers[i].get(key(k));
        const s = seqOf(v);
        const now = Date.now();
        if (s < seen[i][k])
            fail(`reader ${i} went back on ${key(k)}: read v:${s} after v:${seen[i][k]}`);
        seen[i][k] = s;
        if (s < last[k]) {
            const lag = now - okAt[k];
            maxLagMs = Math.max(maxLagMs, lag);
            if (lag > boundMs)
                fail(`reader ${i} read v:${s} of ${key(k)} ${lag} ms after v:${last[k]}'s OK`);
        }
        return s;
    }
    for (let n = 1; n <= rounds && Date.now() < deadline; n++) {
        const k = n % KEYS;
        // Reads of every key (mostly hits), some racing the write below.
        const racing = [];
        for (let i = 0; i < 2; i++)
            for (let j = 0; j < KEYS; j++)
                racing.push(read(i, j));
        if ((await w.set(key(k), `v:${n}`)) !== 'OK')
            fail(`SET ${key(k)}`);
        last[k] = n;
        okAt[k] = Date.now();
        await Promise.all(racing);
        // The ordering promise: after a reply computed after the OK, the
        // cache holds nothing older than the write.
        for (let i = 0; i < 2; i++) {
            await readers[i].ping();
            const s = await read(i, k);
            if (s !== n)
                fail(`reader ${i} (edge ${i ? p2 : p1}) read v:${s} of ${key(k)} after PING, after v:${n}'s OK`);
        }
    }
    // FLUSHALL: every cache empties (a flush push), so the next read is nil.
    if ((await w.flushAll()) !== 'OK')
        fail('FLUSHALL');
    for (let i = 0; i < 2; i++) {
        await readers[i].ping();
        for (let k = 0; k < KEYS; k++)
            if ((await readers[i].get(key(k))) !== null)
                fail(`reader ${i} read ${key(k)} after FLUSHALL`);
    }
    // And caching goes on after the flush.
    await w.set(key(0), 'v:after');
    for (let i = 0; i < 2; i++) {
        await readers[i].ping();
        if ((await readers[i].get(key(0))) !== 'v:after' || (await readers[i].get(key(0))) !== 'v:after')
            fail(`reader ${i}: no new value after FLUSHALL`);
    }
    const st = readers.map((r) => r.clientSideCache.stats());
    for (let i = 0; i < 2; i++) {
        if (st[i].hitCount <= 0)
            fail(`reader ${i}: no cache hits (hits ${st[i].hitCount}, misses ${st[i].missCount})`);
        if (invalidations[i] <= 0)
            fail(`reader ${i}: never invalidated`);
    }
    if (tracking < 2)
        fail(`INFO tracking_clients ${tracking}, want >= 2`);
    console.log(`csc ok edges ${p1},${p2} rounds ${rounds} hits ${st[0].hitCount},${st[1].hitCount} ` +
                `misses ${st[0].missCount},${st[1].missCount} invalidations ${invalidations[0]},${invalidations[1]} ` +
                `max_lag_ms ${maxLagMs} tracking_clients ${tracking}`);
    await Promise.all([r1.close(), r2.close(), w.close()]);
    process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));

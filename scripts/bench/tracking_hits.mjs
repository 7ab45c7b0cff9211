// tracking_hits.mjs - node-redis 6.3.1 with its client-side cache (RESP3,
// CLIENT TRACKING on) reads one key N times, for scripts/bench/tracking:
//   CSC_NPM=DIR node tracking_hits.mjs PORT N
// The first GET is a miss (the server answers and tracks it); the other
// N-1 are served from the client's memory.  Waits for a line on stdin
// before the reads (the caller samples the server's CPU first) and prints
//   HITS hits=H misses=M secs=S
// when done, then waits for another line before closing (the CPU is
// sampled again while the connection is still open).
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

const require = createRequire(resolve(process.env.CSC_NPM || '.', 'package.json'));
const { createClient } = require('redis');
const port = Number(process.argv[2]);
const n = Number(process.argv[3] || 1000000);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const c = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false },
                         RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
c.on('error', (e) => { console.log(`HITS error ${e.message}`); process.exit(1); });
await c.connect();
await c.set('trk:hit', 'x'.repeat(64));
console.log('READY');
await lines.next();
const t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++)
    if ((await c.get('trk:hit')) === null) { console.log('HITS error nil'); process.exit(1); }
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const st = c.clientSideCache.stats();
console.log(`HITS hits=${st.hitCount} misses=${st.missCount} secs=${secs.toFixed(3)}`);
await lines.next();
await c.close();
process.exit(0);

// The dedupe store alone, to profile its writes (docs/benchmarks.md, "Batched writes"), no Kafka:
//   node --cpu-prof --import tsx tools/bench/state-profile.ts <ids> <deliveries> memory|disk
// fills one store with <ids> ids as a restore does, then runs <deliveries> through it as the router does
// (a third retries of known ids; commit every 1,000; a flush once a second, as checkpoints do). Prints
// the fill time and the deliveries a second.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DedupeStore, IdSetBacking } from '../../processors/dedupe-router/dedupe-store.js';
import { hashIdBytes } from '../../runtime/streams/id-set.js';
import { TaskStateDir } from '../../runtime/streams/state-dir.js';
import { routeThrough } from './state-store-loop.js';

const ids = Number(process.argv[2] ?? 1_000_000);
const deliveries = Number(process.argv[3] ?? 300_000);
const kind = process.argv[4] ?? 'disk';
const WEEK = 7 * 86_400_000;
const root = mkdtempSync(join(tmpdir(), 'hookledger-state-profile-'));
const dir =
  kind === 'memory'
    ? undefined
    : new TaskStateDir({ root, appId: 'bench', instanceId: 'bench', topic: 'profile', partition: 0 });
try {
  const store = new DedupeStore(WEEK, IdSetBacking.of(dir));
  const now = Date.now();
  const started = performance.now();
  for (let i = 0; i < ids; i++) store.ids.ids.setHashed(hashIdBytes(Buffer.from(`bench/wh_${i}`)), now, 1);
  store.restored(now);
  console.log(`fill ${ids}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  console.log(`${kind}: ${routeThrough(store, deliveries, ids).toFixed(0)} deliveries/s`);
} finally {
  await dir?.close();
  rmSync(root, { recursive: true, force: true });
}

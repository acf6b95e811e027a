// The dedupe store alone, to profile its writes (docs/benchmarks.md, "Batched writes"), no Kafka:
//   node --cpu-prof --import tsx tools/bench/state-profile.ts <ids> <deliveries> memory|disk|disk-async [flush ms]
// fills one store with <ids> ids as a restore does, then runs <deliveries> through it as the router does
// (a third retries of known ids; commit every 1,000; a flush once a second, as checkpoints do: disk
// writes it on this thread, disk-async as a running task does, by LMDB's thread). Prints the fill time,
// the deliveries a second, and the CPU time of this thread and of the whole process per delivery.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DedupeStore, IdSetBacking } from '../../processors/dedupe-router/dedupe-store.js';
import { digestIdBytes } from '../../runtime/streams/id-set.js';
import { TaskStateDir } from '../../runtime/streams/state-dir.js';
import { routeThrough, routeThroughAsync } from './state-store-loop.js';

const ids = Number(process.argv[2] ?? 1_000_000);
const deliveries = Number(process.argv[3] ?? 300_000);
const kind = process.argv[4] ?? 'disk';
/** How often the store flushes (a checkpoint), 1,000 ms by default. */
const flushEveryMs = Number(process.argv[5] ?? 1_000);
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
  for (let i = 0; i < ids; i++) store.ids.ids.setHashed(digestIdBytes(Buffer.from(`bench/wh_${i}`)), now, 1);
  store.restored(now);
  console.log(`fill ${ids}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const cpuBefore = process.cpuUsage();
  const threadBefore = performance.eventLoopUtilization();
  const rate =
    kind === 'disk-async'
      ? await routeThroughAsync(store, dir!, deliveries, ids, flushEveryMs)
      : routeThrough(store, deliveries, ids, flushEveryMs);
  const cpu = process.cpuUsage(cpuBefore);
  const thread = performance.eventLoopUtilization(threadBefore);
  console.log(
    `${kind}: ${rate.toFixed(0)} deliveries/s; µs a delivery: ${((thread.active * 1000) / deliveries).toFixed(2)} busy on this thread, ${((cpu.user + cpu.system) / deliveries).toFixed(2)} CPU in all threads`,
  );
} finally {
  await dir?.close();
  rmSync(root, { recursive: true, force: true });
}

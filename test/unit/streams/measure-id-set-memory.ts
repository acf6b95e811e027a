// Measures the memory an IdSet holds per tracked id, and its speed, at one million ids.
// Run: node --expose-gc --import tsx test/unit/streams/measure-id-set-memory.ts [ids]
import { IdSet } from '../../../runtime/streams/id-set.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const count = Number(process.argv[2] ?? 1_000_000);

function used(): { heap: number; arrayBuffers: number } {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, arrayBuffers: m.arrayBuffers };
}

const before = used();
// Sized for the count up front, and grown from the default, to show both cases.
const sets: [string, () => IdSet][] = [
  ['grown from empty', () => new IdSet()],
  ['sized up front', () => new IdSet({ initialCapacity: Math.ceil((count * 4) / 3) })],
];
const t0 = Date.now();
// Kept alive, so that measuring the second set does not free the first.
const keep: IdSet[] = [];
for (const [label, create] of sets) {
  const start = used();
  const ids = create();
  keep.push(ids);
  const t = process.hrtime.bigint();
  for (let i = 0; i < count; i++) ids.set(`energy/wh_${i.toString(36)}_${i}`, t0 + i, 1);
  const insertNs = Number(process.hrtime.bigint() - t) / count;
  const end = used();
  const heap = end.heap - start.heap;
  const buffers = end.arrayBuffers - start.arrayBuffers;
  const t2 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) ids.has(`energy/wh_${i.toString(36)}_${i}`);
  const lookupNs = Number(process.hrtime.bigint() - t2) / count;
  console.log(
    `${label}: ${count} ids, ${ids.byteLength} bytes of arrays, ` +
      `${((heap + buffers) / count).toFixed(1)} bytes/id measured (heap ${(heap / count).toFixed(1)} + array buffers ${(buffers / count).toFixed(1)}), ` +
      `insert ${(insertNs / 1000).toFixed(2)} µs, lookup ${(lookupNs / 1000).toFixed(2)} µs`,
  );
  const t3 = process.hrtime.bigint();
  const removed = ids.expireBefore(t0 + count / 2);
  console.log(
    `  expireBefore half: removed ${removed} in ${(Number(process.hrtime.bigint() - t3) / 1e6).toFixed(0)} ms`,
  );
}
console.log(`baseline heap ${before.heap} bytes; ${keep.length} sets measured`);

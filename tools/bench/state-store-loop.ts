// What the state benchmarks (state.ts, state-direct.ts, state-profile.ts) share: the store's share of
// the router's work, the heap a store holds, and a progress line with the time and the machine's load.
import { loadavg } from 'node:os';
import type { DedupeStore } from '../../processors/dedupe-router/dedupe-store.js';
import type { TaskStateDir } from '../../runtime/streams/state-dir.js';

/**
 * The store's share of the router's work: decide (recent), record a first delivery, commit every 1,000,
 * and flush once a second (what a checkpoint does: a store on disk writes its committed ids then; the
 * router's partitions each take a few thousand new ids a second, a store alone here ten times that, so
 * `flushEveryMs` may shorten the interval to keep the batches the router's size).
 * A third of the deliveries are retries of the `knownIds` ids the store holds (`bench/wh_<n>`); the rest
 * new ids. Returns deliveries a second.
 */
export function routeThrough(
  store: DedupeStore,
  deliveries: number,
  knownIds: number,
  flushEveryMs = 1_000,
): number {
  const started = performance.now();
  let flushedAt = started;
  const now = Date.now();
  for (let i = 0; i < deliveries; i++) {
    const key = i % 3 === 0 ? `bench/wh_${(i * 7919) % knownIds}` : `bench/new_${i}`;
    store.beginRecord();
    if (store.recent(key, now) === undefined) store.put(key, { kind: 'routed', seenAt: now }, now);
    if (i % 1_000 === 999) {
      store.takeChangelog();
      store.commit();
      if (performance.now() - flushedAt >= flushEveryMs) {
        store.flush();
        flushedAt = performance.now();
      }
    }
  }
  store.takeChangelog();
  store.commit();
  store.flush();
  return deliveries / ((performance.now() - started) / 1000);
}

/**
 * routeThrough with the flush a running task on disk does (TaskStateDir.writeAsync: LMDB's thread writes
 * the batch and a checkpoint while routing goes on, one write in flight at a time), the event loop
 * turning at each commit as the router's does between transactions. Returns deliveries a second.
 */
export async function routeThroughAsync(
  store: DedupeStore,
  dir: TaskStateDir,
  deliveries: number,
  knownIds: number,
  flushEveryMs = 1_000,
): Promise<number> {
  const started = performance.now();
  let flushedAt = started;
  const now = Date.now();
  const write = () => dir.writeAsync(() => store.flushAsync!(), { offsets: {}, streamTime: now });
  for (let i = 0; i < deliveries; i++) {
    const key = i % 3 === 0 ? `bench/wh_${(i * 7919) % knownIds}` : `bench/new_${i}`;
    store.beginRecord();
    if (store.recent(key, now) === undefined) store.put(key, { kind: 'routed', seenAt: now }, now);
    if (i % 1_000 === 999) {
      store.takeChangelog();
      store.commit();
      if (performance.now() - flushedAt >= flushEveryMs && !dir.writing) {
        void write();
        flushedAt = performance.now();
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  store.takeChangelog();
  store.commit();
  await dir.settled();
  await write();
  return deliveries / ((performance.now() - started) / 1000);
}

/** Heap and array buffers in use after two full collections (run under --expose-gc). */
export function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** A progress line on stderr: `[<bench> +<s> s, load <1-min>] message`. */
export function progressLog(bench: string): (message: string) => void {
  const startedAt = performance.now();
  return (message) =>
    process.stderr.write(
      `[${bench} +${((performance.now() - startedAt) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(1)}] ${message}\n`,
    );
}

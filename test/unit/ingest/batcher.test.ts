import { describe, expect, it } from 'vitest';
import {
  Batcher,
  type BatcherOptions,
  BatchRejected,
  type BatchStats,
} from '../../../ingest/producer/batcher.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function recorder(options: Partial<BatcherOptions<number>> = {}) {
  const batches: number[][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const gates: Array<ReturnType<typeof deferred>> = [];
  const batcher = new Batcher<number>({
    lingerMs: 2,
    maxBatchRecords: 100,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: 10_000_000,
    send: async (items) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      batches.push(items);
      const gate = deferred();
      gates.push(gate);
      try {
        await gate.promise;
        // Every item stored.
        return undefined;
      } finally {
        inFlight--;
      }
    },
    ...options,
  });
  return { batcher, batches, gates, maxInFlight: () => maxInFlight };
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 2_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await tick(1);
  }
}

describe('batcher', () => {
  it('gathers items added together into one batch', async () => {
    const { batcher, batches, gates } = recorder();
    const answers = [1, 2, 3].map((n) => batcher.add(n, 10));
    await until(() => batches.length === 1);
    expect(batches[0]).toEqual([1, 2, 3]);
    gates[0]!.resolve();
    await Promise.all(answers);
  });

  it('answers an item only when its own batch is acknowledged', async () => {
    const { batcher, batches, gates } = recorder();
    let firstDone = false;
    let secondDone = false;
    const first = batcher.add(1, 10).then(() => {
      firstDone = true;
    });
    await until(() => batches.length === 1);
    const second = batcher.add(2, 10).then(() => {
      secondDone = true;
    });
    await tick(10);
    expect(batches).toHaveLength(1);
    gates[0]!.resolve();
    await first;
    await until(() => batches.length === 2);
    expect(secondDone).toBe(false);
    expect(firstDone).toBe(true);
    gates[1]!.resolve();
    await second;
  });

  it('sends up to maxInFlight batches at once, in queue order, each answered on its own', async () => {
    const { batcher, batches, gates, maxInFlight } = recorder({
      maxBatchRecords: 2,
      lingerMs: 0,
      maxInFlight: 3,
    });
    const done = new Set<number>();
    const answers = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => batcher.add(n, 1).then(() => done.add(n)));
    await until(() => batches.length === 3);
    await tick(10);
    // Three in flight, the fourth waits for a slot.
    expect(batches).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    gates[1]!.resolve();
    await until(() => done.has(4));
    expect([...done].sort()).toEqual([3, 4]);
    await until(() => batches.length === 4);
    expect(batches[3]).toEqual([7, 8]);
    gates[0]!.reject(new Error('broker away'));
    await expect(answers[0]).rejects.toThrow('broker away');
    await expect(answers[1]).rejects.toThrow('broker away');
    gates[2]!.resolve();
    gates[3]!.resolve();
    await Promise.all(answers.slice(2));
    expect(maxInFlight()).toBe(3);
    expect(batcher.pendingBytes).toBe(0);
  });

  it('drains only when every batch in flight has settled', async () => {
    const { batcher, batches, gates } = recorder({ maxBatchRecords: 1, lingerMs: 0, maxInFlight: 2 });
    const answers = [1, 2].map((n) => batcher.add(n, 5));
    await until(() => batches.length === 2);
    let drained = false;
    const draining = batcher.drain().then(() => {
      drained = true;
    });
    gates[1]!.resolve();
    await tick(10);
    expect(drained).toBe(false);
    expect(batcher.pendingBytes).toBe(5);
    gates[0]!.resolve();
    await draining;
    await Promise.all(answers);
  });

  it('never has two sends in flight by default', async () => {
    const { batcher, gates, maxInFlight } = recorder({ maxBatchRecords: 3, lingerMs: 0 });
    const answers = Array.from({ length: 20 }, (_, n) => batcher.add(n, 1));
    const release = setInterval(() => {
      for (const gate of gates) gate.resolve();
    }, 1);
    await Promise.all(answers);
    clearInterval(release);
    expect(maxInFlight()).toBe(1);
  });

  it('bounds a batch by records and by bytes, a single larger item going alone', async () => {
    const { batcher, batches, gates } = recorder({ maxBatchRecords: 3, maxBatchBytes: 100 });
    const release = setInterval(() => {
      for (const gate of gates) gate.resolve();
    }, 1);
    await Promise.all([
      batcher.add(1, 10),
      batcher.add(2, 10),
      batcher.add(3, 10),
      batcher.add(4, 10),
      batcher.add(5, 60),
      batcher.add(6, 60),
      batcher.add(7, 500),
      batcher.add(8, 10),
    ]);
    clearInterval(release);
    expect(batches).toEqual([[1, 2, 3], [4, 5], [6], [7], [8]]);
  });

  it('lingers for company before sending a lone item', async () => {
    const { batcher, batches, gates } = recorder({ lingerMs: 30 });
    const first = batcher.add(1, 1);
    await tick(10);
    const second = batcher.add(2, 1);
    expect(batches).toHaveLength(0);
    await until(() => batches.length === 1);
    expect(batches[0]).toEqual([1, 2]);
    gates[0]!.resolve();
    await Promise.all([first, second]);
  });

  it('rejects every item of a failed batch with the send error', async () => {
    const { batcher, batches, gates } = recorder();
    const answers = [1, 2].map((n) => batcher.add(n, 1));
    await until(() => batches.length === 1);
    gates[0]!.reject(new Error('broker gone'));
    for (const answer of answers) await expect(answer).rejects.toThrow('broker gone');
  });

  it('settles each item from its own outcome: one item refused fails alone, the others resolve', async () => {
    const stats: BatchStats[] = [];
    const refused = new Error('Broker: Not enough in-sync replicas');
    const batcher = new Batcher<number>({
      lingerMs: 2,
      maxBatchRecords: 100,
      maxBatchBytes: 1_000_000,
      maxPendingBytes: 10_000_000,
      send: async (items) => items.map((n) => (n === 3 ? refused : undefined)),
      onBatch: (s) => stats.push(s),
    });
    const answers = await Promise.allSettled([1, 2, 3, 4].map((n) => batcher.add(n, 10)));
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((answers[2] as PromiseRejectedResult).reason).toBe(refused);
    expect(stats).toEqual([expect.objectContaining({ records: 4, failed: 1, error: refused })]);
  });

  it('rejects at once when the pending bytes pass the cap, and accepts again once they drain', async () => {
    const { batcher, batches, gates } = recorder({ maxPendingBytes: 100 });
    const first = batcher.add(1, 60);
    await expect(batcher.add(2, 60)).rejects.toMatchObject({ reason: 'full' });
    await until(() => batches.length === 1);
    gates[0]!.resolve();
    await first;
    const third = batcher.add(3, 60);
    await until(() => batches.length === 2);
    gates[1]!.resolve();
    await third;
  });

  it('accepts a single item larger than the cap when nothing else is pending', async () => {
    const { batcher, batches, gates } = recorder({ maxPendingBytes: 100 });
    const big = batcher.add(1, 500);
    await until(() => batches.length === 1);
    gates[0]!.resolve();
    await big;
  });

  it('rejects an item at its deadline while the send hangs, and never sends a queued item past it', async () => {
    const { batcher, batches } = recorder({ lingerMs: 0 });
    const inFlight = batcher.add(1, 10, 50);
    await until(() => batches.length === 1);
    const queued = batcher.add(2, 10, 50);
    await expect(inFlight).rejects.toBeInstanceOf(BatchRejected);
    await expect(queued).rejects.toMatchObject({ reason: 'deadline' });
    expect(batcher.queued).toBe(0);
    expect(batches).toHaveLength(1);
  });

  it('waits for the ready gate before taking a batch, skipping items that expired meanwhile', async () => {
    const gate = deferred();
    const { batcher, batches, gates } = recorder({ lingerMs: 0, ready: () => gate.promise });
    const expired = batcher.add(1, 10, 20);
    await expect(expired).rejects.toMatchObject({ reason: 'deadline' });
    const fresh = batcher.add(2, 10, 5_000);
    gate.resolve();
    await until(() => batches.length === 1);
    expect(batches[0]).toEqual([2]);
    gates[0]!.resolve();
    await fresh;
  });

  it('sends what is queued on close, without lingering, and refuses new items', async () => {
    const { batcher, batches, gates } = recorder({ lingerMs: 10_000 });
    const queued = batcher.add(1, 1);
    const closing = batcher.close();
    await until(() => batches.length === 1);
    await expect(batcher.add(2, 1)).rejects.toMatchObject({ reason: 'closed' });
    gates[0]!.resolve();
    await queued;
    await closing;
  });

  it('frees the memory of expired queued items during a long outage', async () => {
    const { batcher } = recorder({ lingerMs: 0, ready: () => new Promise(() => {}) });
    const answers = Array.from({ length: 3_000 }, (_, n) => batcher.add(n, 1, 5).catch((e) => e));
    const errors = await Promise.all(answers);
    expect(errors.every((e) => e instanceof BatchRejected && e.reason === 'deadline')).toBe(true);
    expect(batcher.queued).toBe(0);
    expect(batcher.pendingBytes).toBe(0);
  });
});

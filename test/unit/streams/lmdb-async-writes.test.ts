// A running task's checkpoint on disk is written by LMDB's own thread (TaskStateDir.writeAsync): the ids it
// covers and the checkpoint in that one asynchronous transaction, lookups finding them in memory until it
// has landed, and nothing written synchronously to the directory meanwhile.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DedupeStore, IdSetBacking } from '../../../processors/dedupe-router/dedupe-store.js';
import { CheckpointWriter } from '../../../runtime/streams/checkpoint-writer.js';
import { StateStoreFailedError } from '../../../runtime/streams/errors.js';
import { LmdbIdSet } from '../../../runtime/streams/lmdb-id-set.js';
import type { TaskStateDir } from '../../../runtime/streams/state-dir.js';
import { StateDirs } from '../../../runtime/streams/state-dirs.js';
import { StreamTask } from '../../../runtime/streams/stream-task.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { topology } from './runner-fixtures.js';

const T0 = Date.parse('2026-11-20T00:00:00Z');
const WEEK = 7 * 86_400_000;
const CHANGELOG = 'in-changelog';
const CHECKPOINT = { offsets: { [CHANGELOG]: '5' }, streamTime: T0 };
const dirs = useTempStateDirs();

/** The ids a directory's dedupe database holds, read through a handle of its own (after `dir` closed). */
function idsOnDisk(root: string): Map<string, number> {
  const reader = new LmdbIdSet(dirs.open(0, root), 'dedupe');
  return new Map([...reader.entries()].map((e) => [e.hash.toString('hex'), e.seenAt]));
}

/** Makes the directory's next asynchronous transactions land and then report a refusal (a full disk). */
function refuseWrites(dir: TaskStateDir): void {
  const write = dir.asyncTransaction.bind(dir);
  dir.asyncTransaction = (queue) =>
    write(queue).then(() => {
      throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
    });
}

describe('the id set on disk written by LMDB’s thread', () => {
  it('recognises the ids while the write is in flight, and holds them with the checkpoint once it landed', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const ids = new LmdbIdSet(dir, 'dedupe');
    for (let i = 0; i < 1_000; i++) ids.set(`s/wh_${i}`, T0 + (i % 3) * 1000, 1);
    const written = dir.writeAsync(() => ids.flushAsync(), CHECKPOINT);
    expect(dir.writing).toBe(true);
    // Not on disk yet: found in memory.
    expect(dir.checkpoint).toBeUndefined();
    for (let i = 0; i < 1_000; i += 97) expect(ids.get(`s/wh_${i}`)?.seenAt).toBe(T0 + (i % 3) * 1000);
    await written;
    expect(dir.writing).toBe(false);
    expect(dir.checkpoint).toEqual(CHECKPOINT);
    for (let i = 0; i < 1_000; i += 97) expect(ids.get(`s/wh_${i}`)?.seenAt).toBe(T0 + (i % 3) * 1000);
    await dir.close();
    expect(idsOnDisk(root).size).toBe(1_000);
  });

  it('writes nothing synchronously while a write is in flight: no batch, no expiry, a transaction refused', async () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/old', T0, 1);
    const written = dir.writeAsync(() => ids.flushAsync(), CHECKPOINT);
    for (let i = 0; i < 100_001; i++) ids.set(`s/wh_${i}`, T0 + 5_000, 1);
    // A full batch waits for the next write; expiry for the next punctuation (late, never early).
    expect(ids.expireBefore(T0 + 60_000)).toBe(0);
    expect(ids.has('s/old')).toBe(true);
    expect(() => dir.transaction(() => undefined)).toThrow(/asynchronous one is in flight/);
    expect(ids.size).toBe(100_002);
    await written;
    ids.flush();
    expect(ids.size).toBe(100_002);
    expect(ids.expireBefore(T0 + 60_000)).toBe(100_002);
  }, 30_000); // a full batch of 100,000 ids set, written and expired: seconds on a loaded machine

  it('counts waiting and in-flight ids in its size, once each, without writing them (a /metrics scrape writes nothing)', async () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/a', T0, 1);
    ids.set('s/b', T0, 1);
    ids.flush();
    let writes = 0;
    const transaction = dir.transaction.bind(dir);
    dir.transaction = (write) => {
      writes++;
      return transaction(write);
    };
    // Waiting: b (also on disk) and c (new).
    ids.set('s/b', T0 + 1_000, 1);
    ids.set('s/c', T0, 1);
    expect(ids.size).toBe(3);
    expect(writes).toBe(0);
    const written = dir.writeAsync(() => ids.flushAsync(), CHECKPOINT);
    // In flight: b and c; waiting again: c (in flight too) and d.
    ids.set('s/c', T0 + 2_000, 1);
    ids.set('s/d', T0, 1);
    expect(ids.size).toBe(4);
    await written;
    expect(ids.size).toBe(4);
    expect(writes).toBe(0);
  });

  it('answers its size while the directory refuses every write (a full disk)', () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/a', T0, 1);
    ids.flush();
    dir.transaction = () => {
      throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
    };
    for (let i = 0; i < 10; i++) ids.set(`s/x${i}`, T0, 1);
    expect(ids.size).toBe(11);
  });

  it('answers as the id set in memory whatever the writes, synchronous or not, landed or in flight', async () => {
    let s = 11;
    const random = () => {
      s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0;
      return s / 2 ** 32;
    };
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const memory = new DedupeStore(WEEK);
    const disk = new DedupeStore(WEEK, new IdSetBacking(new LmdbIdSet(dir, 'dedupe')));
    let now = T0;
    let inFlight: Promise<void> | undefined;
    for (let step = 0; step < 3_000; step++) {
      const key = `s/wh_${Math.floor(random() * 600)}`;
      now += Math.floor(random() * 400);
      for (const store of [memory, disk]) {
        store.beginRecord();
        if (store.recent(key, now) === undefined) store.put(key, { kind: 'routed', seenAt: now }, now);
      }
      expect(disk.recent(key, now)).toEqual(memory.recent(key, now));
      const roll = random();
      if (roll < 0.1) for (const store of [memory, disk]) store.commit();
      else if (roll < 0.12) for (const store of [memory, disk]) store.rollback();
      if (roll < 0.03 && !dir.writing)
        inFlight = dir.writeAsync(() => disk.flushAsync!(), { offsets: {}, streamTime: now });
      else if (roll < 0.04 && inFlight !== undefined) await inFlight;
      else if (roll < 0.045 && !dir.writing) disk.flush();
      // Expiry is skipped while a write is in flight: compared once none is.
      if (roll > 0.998) {
        await dir.settled();
        expect(disk.expire(now)).toBe(memory.expire(now));
      }
    }
    for (const store of [memory, disk]) store.commit();
    for (let i = 0; i < 600; i++) expect(disk.get(`s/wh_${i}`)).toEqual(memory.get(`s/wh_${i}`));
    await dir.settled();
    disk.flush();
    await dir.close();
    const reopened = new LmdbIdSet(dirs.open(0, root), 'dedupe');
    const hex = (entries: Iterable<{ hash: Buffer; seenAt: number; tag: number }>) =>
      new Set([...entries].map((e) => `${e.hash.toString('hex')}@${e.seenAt}/${e.tag}`));
    expect(hex(reopened.entries())).toEqual(hex(memory.ids.ids.entries()));
  });

  it('keeps a batch LMDB refused recognised, waiting again behind newer values, for the next write', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/a', T0, 1);
    ids.set('s/b', T0, 1);
    refuseWrites(dir);
    const written = dir.writeAsync(() => ids.flushAsync(), CHECKPOINT);
    ids.set('s/b', T0 + 9_000, 2);
    await expect(written).rejects.toThrow(/MDB_MAP_FULL/);
    // Not taken as written: the checkpoint stays as it was, the ids are recognised, b with its newer value.
    expect(dir.checkpoint).toBeUndefined();
    expect(ids.get('s/a')).toEqual({ seenAt: T0, tag: 1 });
    expect(ids.get('s/b')).toEqual({ seenAt: T0 + 9_000, tag: 2 });
    ids.flush();
    await dir.close();
    const onDisk = idsOnDisk(root);
    expect([...onDisk.values()].sort()).toEqual([T0, T0 + 9_000]);
  });

  it('forgets a checkpoint forgotten while the write carrying it was in flight', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/a', T0, 1);
    const written = dir.writeAsync(() => ids.flushAsync(), CHECKPOINT);
    dir.forgetCheckpoint();
    await written;
    await dir.settled();
    expect(dir.checkpoint).toBeUndefined();
    await dir.close();
    expect(dirs.open(0, root).checkpoint).toBeUndefined();
  });
});

/** A running task over the dedupe store on disk, with one id committed and not written yet. */
function runningTask(stateDirs: StateDirs): { task: StreamTask<number>; store: DedupeStore } {
  let created: DedupeStore | undefined;
  const dedupeOnDisk: Topology<number> = {
    ...topology,
    stores: topology.stores.map((spec) => ({
      ...spec,
      create: (_partition, stateDir) => {
        created = new DedupeStore(WEEK, IdSetBacking.of(stateDir));
        return created;
      },
    })),
  };
  const task = new StreamTask<number>({
    topology: dedupeOnDisk,
    source: dedupeOnDisk.sources[0]!,
    partition: 0,
    port: { pause: () => undefined, resume: () => undefined },
    logger: pino({ level: 'silent' }),
    stateDirs,
  });
  task.machine.transitionTo('restoring');
  task.resetStores();
  task.restoreFrom(CHANGELOG, { low: 0n, high: 0n });
  task.restoredTo(CHANGELOG, 0n);
  task.finishRestore();
  task.machine.transitionTo('running');
  const store = created!;
  store.put('s/wh_1', { kind: 'routed', seenAt: T0 }, T0);
  store.commit();
  return { task, store };
}

describe('a running task’s checkpoint on disk', () => {
  it('is written with its committed ids by LMDB’s thread, the checkpoint taken only once it landed', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const { task, store } = runningTask(stateDirs);
    const dir = task.stateDir!;
    const written = task.checkpoint(new Map([[CHANGELOG, 1n]]), T0);
    expect(written).toBeInstanceOf(Promise);
    expect(dir.checkpoint?.offsets).toEqual({ [CHANGELOG]: '0' });
    expect(store.recent('s/wh_1', T0)).toEqual({ kind: 'routed', seenAt: T0 });
    await written;
    expect(dir.checkpoint?.offsets).toEqual({ [CHANGELOG]: '1' });
    expect(new LmdbIdSet(dir, 'dedupe').has('s/wh_1')).toBe(true);
    task.close();
    await stateDirs.closeAll();
  });

  it('stops the first commit after LMDB refused it, the ids still recognised', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const { task, store } = runningTask(stateDirs);
    refuseWrites(task.stateDir!);
    const writer = new CheckpointWriter<number>(
      { queryHighWatermark: async () => 1 },
      pino({ level: 'silent' }),
      1_000,
    );
    writer.committed([task], 10_000);
    await writer.settled();
    await task.stateDir!.settled();
    await expect(writer.settled()).rejects.toThrow(StateStoreFailedError);
    await expect(writer.settled()).rejects.toThrow(/could not write its committed state.*MDB_MAP_FULL/);
    expect(store.recent('s/wh_1', T0)).toEqual({ kind: 'routed', seenAt: T0 });
    task.close();
    await stateDirs.closeAll();
  });

  it('takes no checkpoint while the directory still writes the last one, and takes it at the next commit', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const { task } = runningTask(stateDirs);
    const dir = task.stateDir!;
    const asked: number[] = [];
    const writer = new CheckpointWriter<number>(
      {
        queryHighWatermark: async () => {
          asked.push(asked.length);
          return 2;
        },
      },
      pino({ level: 'silent' }),
      1_000,
    );
    const first = task.checkpoint(new Map([[CHANGELOG, 1n]]), T0);
    writer.committed([task], 10_000);
    await writer.settled();
    expect(asked).toEqual([]);
    await first;
    writer.committed([], 11_000);
    await writer.settled();
    await dir.settled();
    expect(dir.checkpoint?.offsets).toEqual({ [CHANGELOG]: '2' });
    task.close();
    await stateDirs.closeAll();
  });
});

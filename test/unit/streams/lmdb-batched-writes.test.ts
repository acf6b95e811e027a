// The stores on disk batch committed writes in memory and write them at a checkpoint (or a full batch):
// lookups see them before they are written, and a checkpoint is never ahead of what is on disk.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeDedupeDecision } from '../../../processors/dedupe-router/dedupe-decision.js';
import { DedupeStore, IdSetBacking } from '../../../processors/dedupe-router/dedupe-store.js';
import { LmdbBacking } from '../../../runtime/streams/lmdb-backing.js';
import { LmdbIdSet } from '../../../runtime/streams/lmdb-id-set.js';
import { StateDirs } from '../../../runtime/streams/state-dirs.js';
import { ChangelogKeyValueStore } from '../../../runtime/streams/store.js';
import { StreamTask } from '../../../runtime/streams/stream-task.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { codec, topology } from './runner-fixtures.js';

const T0 = Date.parse('2026-11-20T00:00:00Z');
const CHANGELOG = 'in-changelog';
const WEEK = 7 * 86_400_000;
const dirs = useTempStateDirs();

/** How many ids the dedupe database of the directory holds, read through a fresh handle. */
function idsOnDisk(root: string): number {
  return new LmdbIdSet(dirs.open(0, root), 'dedupe').size;
}

describe('the id set on disk between two writes', () => {
  it('recognises an id committed and not written yet; closed before a flush, the directory does not hold it', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const store = new DedupeStore(WEEK, new IdSetBacking(new LmdbIdSet(dir, 'dedupe')));
    store.put('s/wh_1', { kind: 'routed', seenAt: T0 }, T0);
    store.commit();
    expect(store.recent('s/wh_1', T0)).toEqual({ kind: 'routed', seenAt: T0 });
    // The commit did not write: another reader of the directory sees nothing yet.
    await dir.close();
    expect(idsOnDisk(root)).toBe(0);
  });

  it('expires waiting ids in memory, counted once, without writing the others before their checkpoint', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/again', T0, 1);
    ids.set('s/gone', T0, 1);
    ids.flush();
    // Set again later (waiting), and old ones waiting: expiry decides each by its latest second.
    ids.set('s/again', T0 + 120_000, 1);
    ids.set('s/old-waiting', T0 + 1_000, 1);
    ids.set('s/new-waiting', T0 + 120_000, 1);
    expect(ids.expireBefore(T0 + 60_000)).toBe(2); // s/gone on disk, s/old-waiting in memory
    expect(ids.has('s/gone')).toBe(false);
    expect(ids.has('s/old-waiting')).toBe(false);
    expect(ids.get('s/again')?.seenAt).toBe(T0 + 120_000);
    expect(ids.has('s/new-waiting')).toBe(true);
    await dir.close();
    // The waiting ids were not written by the expiry: only a checkpoint (or a full batch) writes them.
    expect(idsOnDisk(root)).toBe(0);
  });

  it('writes restored ids to disk when the restore ends, before the checkpoint a standby writes next', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const store = new DedupeStore(WEEK, new IdSetBacking(new LmdbIdSet(dir, 'dedupe')));
    const decision = encodeDedupeDecision({ kind: 'routed', seenAt: T0 });
    for (let i = 0; i < 50; i++) store.restore({ key: `s/wh_${i}`, value: decision, timestamp: T0 });
    // What StandbyTask.settle does: restored(), then the checkpoint, outside any transaction of the store's.
    store.restored(T0);
    await dir.close();
    expect(idsOnDisk(root)).toBe(50);
  });

  it('keeps a batch LMDB refused waiting, still recognised, and writes it when the disk takes it again', () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/committed', T0, 1);
    const transaction = dir.transaction.bind(dir);
    dir.transaction = () => {
      throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
    };
    expect(() => ids.flush()).toThrow(/MDB_MAP_FULL/);
    expect(ids.get('s/committed')).toEqual({ seenAt: T0, tag: 1 });
    dir.transaction = transaction;
    ids.flush();
    expect([...ids.entries()].map((e) => e.seenAt)).toEqual([T0]);
  });

  it('writes a full batch of 100,000 waiting ids without waiting for a checkpoint', async () => {
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const ids = new LmdbIdSet(dir, 'dedupe');
    for (let i = 0; i < 100_001; i++) ids.set(`s/wh_${i}`, T0, 1);
    await dir.close();
    expect(idsOnDisk(root)).toBe(100_000);
  });

  it('answers as the id set in memory whatever the flush points, and holds the same ids once written', async () => {
    let s = 7;
    const random = () => {
      s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0;
      return s / 2 ** 32;
    };
    const root = dirs.root();
    const dir = dirs.open(0, root);
    const memory = new DedupeStore(WEEK);
    const disk = new DedupeStore(WEEK, new IdSetBacking(new LmdbIdSet(dir, 'dedupe')));
    let now = T0;
    for (let step = 0; step < 3_000; step++) {
      const key = `s/wh_${Math.floor(random() * 800)}`;
      now += Math.floor(random() * 400);
      for (const store of [memory, disk]) {
        store.beginRecord();
        if (store.recent(key, now) === undefined) store.put(key, { kind: 'routed', seenAt: now }, now);
      }
      expect(disk.recent(key, now)).toEqual(memory.recent(key, now));
      const roll = random();
      if (roll < 0.1) for (const store of [memory, disk]) store.commit();
      else if (roll < 0.12) for (const store of [memory, disk]) store.rollback();
      if (roll < 0.02) disk.flush();
      if (roll > 0.999) expect(disk.expire(now)).toBe(memory.expire(now));
    }
    for (const store of [memory, disk]) store.commit();
    for (let i = 0; i < 800; i++) expect(disk.get(`s/wh_${i}`)).toEqual(memory.get(`s/wh_${i}`));
    disk.flush();
    await dir.close();
    const reopened = new LmdbIdSet(dirs.open(0, root), 'dedupe');
    const hex = (entries: Iterable<{ hash: Buffer; seenAt: number; tag: number }>) =>
      new Set([...entries].map((e) => `${e.hash.toString('hex')}@${e.seenAt}/${e.tag}`));
    expect(hex(reopened.entries())).toEqual(hex(memory.ids.ids.entries()));
  });
});

describe('the key-value backing on disk between two writes', () => {
  it('shows committed values and deletions before writing them, and writes them when flushed', () => {
    const backing = new LmdbBacking<number>(dirs.open(), 's', codec, () => undefined);
    const store = new ChangelogKeyValueStore<number>('s', backing, codec);
    store.put('a', 1, 10);
    store.put('b', 2, 10);
    store.commit();
    store.delete('a', 11);
    store.commit();
    expect(store.get('a')).toBeUndefined();
    expect(store.get('b')).toBe(2);
    store.flush();
    expect(store.get('a')).toBeUndefined();
    expect(store.get('b')).toBe(2);
    expect(store.size).toBe(1);
  });

  it('keeps values LMDB refused waiting, still found, and writes them when the disk takes them again', () => {
    const dir = dirs.open();
    const backing = new LmdbBacking<number>(dir, 's', codec, () => undefined);
    backing.set('committed', 1);
    const transaction = dir.transaction.bind(dir);
    dir.transaction = () => {
      throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
    };
    expect(() => backing.flush()).toThrow(/MDB_MAP_FULL/);
    // Before, the refused batch was already gone from memory: later merges read the older state.
    expect(backing.get('committed')).toBe(1);
    dir.transaction = transaction;
    backing.flush();
    expect(new LmdbBacking<number>(dir, 's', codec, () => undefined).get('committed')).toBe(1);
  });

  it('counts the writes waiting in its size without writing them (a /metrics scrape writes nothing)', () => {
    const dir = dirs.open();
    const backing = new LmdbBacking<number>(dir, 's', codec, () => undefined);
    backing.set('a', 1);
    backing.set('b', 2);
    backing.flush();
    // Waiting: a deleted, b set again, c new, d deleted though never held.
    backing.delete('a');
    backing.set('b', 3);
    backing.set('c', 4);
    backing.delete('d');
    let writes = 0;
    const transaction = dir.transaction.bind(dir);
    dir.transaction = (write) => {
      writes++;
      return transaction(write);
    };
    expect(backing.size).toBe(2);
    expect(writes).toBe(0);
    expect(new LmdbBacking<number>(dir, 's', codec, () => undefined).get('c')).toBeUndefined();
    backing.flush();
    expect(backing.size).toBe(2);
  });
});

/** The runner fixtures' topology with its store on disk (the tables' backing). */
const onDisk: Topology<number> = {
  ...topology,
  stores: topology.stores.map((spec) => ({
    ...spec,
    create: (_partition, stateDir) =>
      new ChangelogKeyValueStore<number>(
        spec.name,
        new LmdbBacking<number>(stateDir!, spec.name, codec, () => undefined),
        codec,
      ),
  })),
};

/** A task over the topology on disk, restored (empty) and running, with one record committed (key a). */
function runningTaskWithACommit(stateDirs: StateDirs): StreamTask<number> {
  const task = new StreamTask<number>({
    topology: onDisk,
    source: onDisk.sources[0]!,
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
  task.process({ topic: 'in', partition: 0, offset: '0', key: 'a', value: 1, timestamp: T0, headers: {} }, 0);
  task.keepRecord();
  task.takeChangelog();
  task.committed(() => undefined);
  return task;
}

describe('a task on disk', () => {
  it('writes its committed state waiting in memory with its checkpoint, in that transaction and not before', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    const task = runningTaskWithACommit(stateDirs);
    const dir = task.stateDir!;
    const reader = () => new LmdbBacking<number>(dir, 'last', codec, () => undefined).get('a');
    // Committed, not written: the disk still holds the restore's checkpoint and nothing after it.
    expect(reader()).toBeUndefined();
    expect(dir.checkpoint?.offsets).toEqual({ [CHANGELOG]: '0' });
    task.checkpoint(new Map([[CHANGELOG, 1n]]), T0);
    expect(reader()).toBe(1);
    expect(dir.checkpoint?.offsets).toEqual({ [CHANGELOG]: '1' });
    task.close();
    await stateDirs.closeAll();
  });

  it('takes no checkpoint once the app closed its directories (an answer that came in late)', async () => {
    const root = dirs.root();
    const stateDirs = new StateDirs(root, 'app', 'i1');
    const task = runningTaskWithACommit(stateDirs);
    await stateDirs.closeAll();
    expect(() => task.checkpoint(new Map([[CHANGELOG, 1n]]), T0)).not.toThrow();
    task.close();
  });
});

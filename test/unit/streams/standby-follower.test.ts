// The standby follower over a fake group-less consumer and real state directories: what it follows and
// when, a partition gained released (settled, checkpointed) before the active task opens its directory,
// a partition lost followed from its checkpoint, errors retried with back-off, and a clean stop.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbBacking } from '../../../runtime/streams/lmdb-backing.js';
import { StandbyFollower } from '../../../runtime/streams/standby-follower.js';
import { IllegalStandbyTransitionError, StandbyTask } from '../../../runtime/streams/standby-task.js';
import { StateDirs } from '../../../runtime/streams/state-dirs.js';
import { ChangelogKeyValueStore, type ChangelogRecord } from '../../../runtime/streams/store.js';
import { StreamTask } from '../../../runtime/streams/stream-task.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';
import { CHANGELOG, FakeChangelog, p, topology } from './fake-standby-consumer.js';
import { codec, until } from './runner-fixtures.js';

const log = pino({ level: 'silent' });
const dirs = useTempStateDirs();
const followers: StandbyFollower<number>[] = [];
const stateDirsOpen: StateDirs[] = [];
afterEach(async () => {
  for (const follower of followers.splice(0)) await follower.close();
  for (const stateDirs of stateDirsOpen.splice(0)) await stateDirs.closeAll();
});

function setUp(partitions = 2, options: { retryInitialMs?: number } = {}) {
  const changelog = new FakeChangelog(partitions);
  const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
  stateDirsOpen.push(stateDirs);
  const follower = new StandbyFollower<number>({
    topology,
    stateDirs,
    createConsumer: changelog.create,
    logger: log,
    idleMs: 5,
    retryInitialMs: options.retryInitialMs ?? 5,
    retryMaxMs: 20,
  });
  followers.push(follower);
  return { changelog, stateDirs, follower };
}

const offsetOf = (stateDirs: StateDirs, partition: number) =>
  stateDirs.acquire('in', partition).checkpoint?.offsets[CHANGELOG];

/** The values on disk for a partition, read through a fresh store over its directory. */
function onDisk(stateDirs: StateDirs, partition: number): Map<string, number> {
  const backing = new LmdbBacking<number>(stateDirs.acquire('in', partition), 'last', codec, () => undefined);
  return new Map(
    [0, 1, 2, 3, 4].flatMap((k) => {
      const v = backing.get(`k${k}`);
      return v === undefined ? [] : [[`k${k}`, v] as [string, number]];
    }),
  );
}

describe('the standby follower', () => {
  it('follows nothing before the first assignment, then every partition the instance does not own', async () => {
    const { changelog, stateDirs, follower } = setUp(3);
    changelog.write(0, 1, 2);
    changelog.write(2, 7);
    await new Promise((r) => setTimeout(r, 30));
    expect(follower.state).toBe('waiting');
    expect(changelog.consumers).toHaveLength(0);

    follower.assigned([p(1)]);
    expect(follower.state).toBe('following');
    // Everything applied; the checkpoint is past the last record applied (its commit marker comes after).
    await until(() => offsetOf(stateDirs, 0) === '2' && offsetOf(stateDirs, 2) === '1', 'checkpoints');
    expect(onDisk(stateDirs, 0)).toEqual(
      new Map([
        ['k1', 1],
        ['k2', 2],
      ]),
    );
    expect(onDisk(stateDirs, 2)).toEqual(new Map([['k2', 7]]));
    expect(stateDirs.acquire('in', 0).checkpoint?.streamTime).toBe(2_000);
    expect(changelog.last.calls).toContain('assign 0@0,2@0');
    expect(changelog.last.calls.some((c) => c.includes('1@'))).toBe(false);
    expect(follower.lag()).toEqual([
      { topic: CHANGELOG, partition: 0, behind: 0 },
      { topic: CHANGELOG, partition: 2, behind: 0 },
    ]);
  });

  it('shows how far behind a followed partition is', async () => {
    const { changelog, follower } = setUp(1);
    follower.assigned([]);
    await until(() => follower.lag().length === 1, 'following');
    // Written after the last batch: behind until the next one.
    changelog.records.get(0)!.push({ key: 'k1', value: 1, timestamp: 1 }, 'marker');
    expect(follower.lag()).toEqual([{ topic: CHANGELOG, partition: 0, behind: 2 }]);
    await until(() => follower.lag()[0]?.behind === 0, 'caught up');
  });

  it('releases a gained partition before returning: settled and checkpointed, nothing written after', async () => {
    const { changelog, stateDirs, follower } = setUp(2);
    changelog.write(0, 1, 2, 3);
    follower.assigned([p(1)]);
    await until(() => offsetOf(stateDirs, 0) === '3', 'partition 0 followed');

    follower.assigned([p(0)]);
    // Released synchronously: the active task may open the directory now.
    expect(follower.lag()).toEqual([]);
    const checkpoint = offsetOf(stateDirs, 0);
    changelog.write(0, 4, 5);
    await new Promise((r) => setTimeout(r, 40));
    expect(offsetOf(stateDirs, 0)).toBe(checkpoint);
    expect(onDisk(stateDirs, 0)).toEqual(
      new Map([
        ['k1', 1],
        ['k2', 2],
        ['k3', 3],
      ]),
    );
    expect(changelog.last.calls.at(-1)).toMatch(/^assign $/);

    // The active task restores only what came after the standby's checkpoint.
    const task = new StreamTask<number>({
      topology,
      source: topology.sources[0]!,
      partition: 0,
      port: { pause: () => undefined, resume: () => undefined },
      logger: log,
      stateDirs,
    });
    task.machine.transitionTo('restoring');
    expect(task.restoreFrom(CHANGELOG, changelog.bounds(0))).toBe(3n);
    task.close();
  });

  it('never applies a batch that arrives after the partition was released', async () => {
    const { changelog, stateDirs, follower } = setUp(1);
    follower.assigned([]);
    await until(() => follower.lag().length === 1, 'following');
    // The batch is fetched, then the partition is gained before it is handed to the follower.
    changelog.beforeHandOver = (batch) => {
      if (batch.length > 0) follower.assigned([p(0)]);
    };
    changelog.write(0, 9);
    await until(() => follower.lag().length === 0, 'released');
    await new Promise((r) => setTimeout(r, 20));
    expect(onDisk(stateDirs, 0)).toEqual(new Map());
    expect(offsetOf(stateDirs, 0)).toBeUndefined();
  });

  it('follows a partition the instance gave back, from the checkpoint its active task left', async () => {
    const { changelog, stateDirs, follower } = setUp(1);
    changelog.write(0, 1, 2, 3, 4);
    follower.assigned([p(0)]);
    // The active task restored and checkpointed at offset 3 (its last commit's records not in it yet).
    stateDirs.acquire('in', 0).writeCheckpoint({ offsets: { [CHANGELOG]: '3' }, streamTime: 3_000 });
    follower.revoked([p(0)]);
    await until(() => offsetOf(stateDirs, 0) === '4', 'followed to the end');
    expect(changelog.last.calls).toContain('assign 0@3');
    expect(onDisk(stateDirs, 0)).toEqual(new Map([['k4', 4]]));
    expect(stateDirs.acquire('in', 0).checkpoint?.streamTime).toBe(4_000);
  });

  it('follows in full, over a wiped directory, a partition whose checkpoint was forgotten (lost)', async () => {
    const { changelog, stateDirs, follower } = setUp(1);
    changelog.write(0, 1, 2);
    follower.assigned([p(0)]);
    const dir = stateDirs.acquire('in', 0);
    new LmdbBacking<number>(dir, 'last', codec, () => undefined).set('stale', 99);
    dir.forgetCheckpoint();
    follower.revoked([p(0)]);
    await until(() => offsetOf(stateDirs, 0) === '2', 'followed');
    expect(changelog.last.calls).toContain('assign 0@0');
    expect(onDisk(stateDirs, 0)).toEqual(
      new Map([
        ['k1', 1],
        ['k2', 2],
      ]),
    );
  });

  it('retries a failure with a new consumer from the checkpoint, and never throws to the instance', async () => {
    const { changelog, stateDirs, follower } = setUp(1, { retryInitialMs: 30 });
    changelog.write(0, 1);
    follower.assigned([]);
    await until(() => offsetOf(stateDirs, 0) === '1', 'followed');
    changelog.failNextConsume = new Error('broker gone');
    changelog.write(0, 2);
    await until(() => follower.state === 'backing-off', 'backing off');
    expect(follower.lastError).toBe('broker gone');
    expect(changelog.consumers[0]!.closed).toBe(true);
    // A partition gained meanwhile is released without waiting for the retry.
    follower.assigned([]);
    await until(() => offsetOf(stateDirs, 0) === '3', 'followed again');
    expect(changelog.consumers).toHaveLength(2);
    expect(changelog.last.calls).toContain('assign 0@1');
    expect(onDisk(stateDirs, 0)).toEqual(
      new Map([
        ['k1', 1],
        ['k2', 2],
      ]),
    );
  });

  it('never takes the consumer’s position for its checkpoint (it may be an earlier assignment’s)', async () => {
    const { changelog, stateDirs, follower } = setUp(1);
    changelog.write(0, 1);
    follower.assigned([]);
    await until(() => follower.lag()[0]?.behind === 0, 'caught up, past the marker');
    changelog.last.position = (partitions) => partitions.map((tp) => ({ ...tp, offset: 100 }));
    changelog.write(0, 2);
    await until(() => offsetOf(stateDirs, 0) === '3', 'the record applied');
    await new Promise((r) => setTimeout(r, 20));
    expect(offsetOf(stateDirs, 0)).toBe('3');
  });

  it('never leaves a checkpoint ahead of the state when a write fails', async () => {
    const { changelog, stateDirs, follower } = setUp(1, { retryInitialMs: 1_000 });
    changelog.write(0, 1);
    follower.assigned([]);
    await until(() => offsetOf(stateDirs, 0) === '1', 'followed');
    const dir = stateDirs.acquire('in', 0);
    const transaction = dir.transaction.bind(dir);
    dir.transaction = () => {
      throw new Error('MDB_MAP_FULL');
    };
    changelog.write(0, 2, 3);
    await until(() => follower.state === 'backing-off', 'backing off');
    expect(follower.lastError).toBe('MDB_MAP_FULL');
    expect(offsetOf(stateDirs, 0)).toBe('1');
    dir.transaction = transaction;
    expect(onDisk(stateDirs, 0)).toEqual(new Map([['k1', 1]]));
  });

  it('leaves out a partition whose directory another live process holds, and follows the others', async () => {
    const { changelog, stateDirs, follower } = setUp(2);
    const taken = join(stateDirs.root, 'app', 'i1', 'in-1');
    mkdirSync(taken, { recursive: true });
    writeFileSync(join(taken, 'LOCK'), String(process.ppid));
    changelog.write(0, 1);
    changelog.write(1, 2);
    follower.assigned([]);
    await until(() => offsetOf(stateDirs, 0) === '1', 'partition 0 followed');
    expect(follower.state).toBe('following');
    expect(follower.lag().map((l) => l.partition)).toEqual([0]);
  });

  it('stops cleanly: the last batch settled, the consumer closed, nothing read after', async () => {
    const { changelog, stateDirs, follower } = setUp(1);
    changelog.write(0, 1, 2);
    follower.assigned([]);
    await until(() => offsetOf(stateDirs, 0) === '2', 'followed');
    await follower.close();
    expect(follower.state).toBe('closed');
    expect(changelog.last.closed).toBe(true);
    const calls = changelog.last.calls.length;
    follower.assigned([p(0)]);
    follower.revoked([p(0)]);
    await new Promise((r) => setTimeout(r, 20));
    expect(changelog.last.calls).toHaveLength(calls);
    expect(changelog.consumers).toHaveLength(1);
  });
});

describe('a standby task', () => {
  it('moves pending → following → released, and nothing brings a released task back', async () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    stateDirsOpen.push(stateDirs);
    const task = new StandbyTask<number>({ topology, topic: 'in', partition: 0, stateDirs, logger: log });
    expect(task.state).toBe('pending');
    task.start(new Map([[CHANGELOG, { low: 0n, high: 0n }]]));
    expect(task.state).toBe('following');
    task.release();
    expect(task.state).toBe('released');
    expect(() => task.start(new Map([[CHANGELOG, { low: 0n, high: 0n }]]))).toThrow(
      IllegalStandbyTransitionError,
    );
    expect(task.apply(CHANGELOG, { offset: 0n, key: null, value: null, timestamp: 0 })).toBe(false);
  });

  it('takes its stream time from a store’s eventTimeOf when it has one, not from the records’ stamps', () => {
    const stateDirs = new StateDirs(dirs.root(), 'app', 'i1');
    stateDirsOpen.push(stateDirs);
    // Values are the seconds they were decided at; records are stamped when written (the dedupe store's way).
    class Stamped extends ChangelogKeyValueStore<number> {
      eventTimeOf(record: ChangelogRecord): number {
        return record.value === null ? record.timestamp : Number(record.value.toString()) * 1_000;
      }
    }
    const stamped: Topology<number> = {
      ...topology,
      stores: [
        {
          name: 'last',
          changelogTopic: () => CHANGELOG,
          create: (_partition, dir) =>
            new Stamped('last', new LmdbBacking<number>(dir!, 'last', codec, () => undefined), codec),
        },
      ],
    };
    const task = new StandbyTask<number>({
      topology: stamped,
      topic: 'in',
      partition: 0,
      stateDirs,
      logger: log,
    });
    task.start(new Map([[CHANGELOG, { low: 0n, high: 2n }]]));
    const written = 9_000_000;
    task.apply(CHANGELOG, {
      offset: 0n,
      key: Buffer.from('k1'),
      value: Buffer.from('1'),
      timestamp: written,
    });
    task.apply(CHANGELOG, {
      offset: 1n,
      key: Buffer.from('k2'),
      value: Buffer.from('2'),
      timestamp: written,
    });
    expect(task.streamTime).toBe(2_000);
    task.release();
  });
});

// The stream runner on the failure path, with a fake Kafka client: after any error every partition reads
// again from its first record not committed, a commit with no outcome hands over to new clients, a lost
// partition never commits, a wait that never ends stops the loop, and a record that always fails is
// dead-lettered after a bounded number of attempts. Each of these failed on the runtime before issue 18.
import { createServer, type Server } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ERRORS } from '../../../runtime/kafka/rdkafka.js';
import {
  CommitOutcomeUnknownError,
  classifyRecordError,
  LoopStalledError,
  RECORD_ATTEMPTS,
  StateStoreFailedError,
} from '../../../runtime/streams/errors.js';
import type { InputRecord } from '../../../runtime/streams/processor.js';
import { needsNewClients, startRejoiningApp } from '../../../runtime/streams/rejoining-app.js';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { createSerde } from '../../../schemas/serde.js';
import { AppliedThenFailed, deferred, FakeKafka } from './fake-stream-clients.js';
import { apps, closeApps, codec, Forwarding, p0, p1, rd, start, topology, until } from './runner-fixtures.js';

afterEach(closeApps);

const p2 = { topic: 'in', partition: 2 };

/** The registry client's answer when the registry's port is closed: a 400 that names the real cause. */
const connectionRefused = () =>
  Object.assign(new Error('hookledger - Error, status 400: connect ECONNREFUSED 127.0.0.1:8081'), {
    name: 'ResponseError',
    status: 400,
  });

/** The forwarding topology, its values read by `read` (which may throw or never answer). */
function readingWith(read: (value: number) => Promise<number>): Topology<number> {
  return {
    ...topology,
    sources: [{ topic: 'in', deserialize: async ({ value }) => read(Number(value?.toString())) }],
  };
}

describe('a failure in the middle of a batch', () => {
  it('reads every partition again from its last commit, so records after the failure are never skipped', async () => {
    const kafka = new FakeKafka();
    // One batch: in[0]'s record, then in[1] whose first record in the transaction fails once (the
    // registry is down), then in[1]'s next record and in[2]'s, handed over but not reached.
    kafka.produce('in', 0, [1]);
    kafka.produce('in', 1, [2, 3]);
    kafka.produce('in', 2, [4]);
    let failures = 0;
    const app = await start(kafka, {
      topology: readingWith(async (value) => {
        if (value === 2 && failures++ === 0) throw connectionRefused();
        return value;
      }),
    });
    kafka.consumer.rebalance('assign', [p0, p1, p2]);

    await until(
      () => [0, 1, 2].every((p) => kafka.committed.get(`in[${p}]`) === (p === 1 ? 2 : 1)),
      'every partition committed to its end',
    );
    expect(failures).toBe(2);
    expect(kafka.values('out').sort()).toEqual([1, 2, 3, 4]);
    // Each running partition was moved back, the two that had nothing in the transaction included.
    for (const partition of ['in[0] 0', 'in[1] 0', 'in[2] 0'])
      expect(kafka.log).toContain(`seek ${partition}`);
    expect(app.failure()).toBeUndefined();
  });

  it('stops for new clients when a running partition cannot be moved back', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    kafka.seekSteps = [new Error('Local: Erroneous state')];
    let failed = false;
    const app = await start(kafka, {
      topology: readingWith(async (value) => {
        if (value === 2 && !failed) {
          failed = true;
          throw connectionRefused();
        }
        return value;
      }),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await app.stopped;
    expect(app.failure()?.message).toMatch(/could not move in\[0\] to offset 0: Local: Erroneous state/);
    expect(needsNewClients(app.failure())).toBe(true);
    expect(kafka.values('out')).toEqual([]);
  });
});

describe('a commit whose outcome is unknown', () => {
  it('never goes on over rolled-back state: new clients start from what the brokers committed', async () => {
    const kafka = new FakeKafka();
    // EndTxn reached the coordinator, yet commitTransaction answered with a time-out.
    kafka.commitSteps = [
      new AppliedThenFailed(
        rd(ERRORS.ERR__TIMED_OUT, 'commitTransaction: Local: Timed out', { isRetriable: true }),
      ),
    ];
    kafka.produce('in', 0, [1, 2]);
    const starts: StreamApp[] = [];
    const app = await startRejoiningApp({
      start: async () => {
        const next = await start(kafka);
        starts.push(next);
        // The group gives the partition back to the new member.
        if (starts.length > 1) queueMicrotask(() => kafka.consumer.rebalance('assign', [p0]));
        return next;
      },
      logger: pino({ level: 'silent' }),
      instanceId: 'i1',
    });
    kafka.consumer.rebalance('assign', [p0]);

    await until(() => starts.length === 2, 'a second app with new clients');
    expect(starts[0]!.failure()).toBeInstanceOf(CommitOutcomeUnknownError);
    kafka.produce('in', 0, [3]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the next record committed by the new app');
    // The records of the commit that went through are never processed again.
    expect(kafka.values('out')).toEqual([1, 2, 3]);
    expect(kafka.sent.filter((r) => r.topic === 'out').map((r) => Number(r.value?.toString()))).toEqual([
      1, 2, 3,
    ]);
    await app.close();
  });
});

describe('a commit and a close with a lost partition', () => {
  it('aborts at close when a loss is queued, so nothing of the lost partition commits', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 2, 'two records in the open transaction');

    kafka.consumer.rebalance('revoke', [p0], true);
    await app.close();
    apps.length = 0;
    expect(kafka.log).not.toContain('commit');
    expect(kafka.values('out')).toEqual([]);
    expect(kafka.committed.size).toBe(0);
  });

  it('refuses to commit a transaction holding a partition lost meanwhile, and aborts it', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    kafka.produce('in', 1, [2]);
    await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sent.length === 2, 'a record of each partition in the open transaction');

    // in[1] is revoked in order, and in[0] lost right after, before the loop handled either: the commit
    // that in[1]'s revoke asks for would carry in[0]'s outputs.
    kafka.consumer.rebalance('revoke', [p1]);
    kafka.consumer.rebalance('revoke', [p0], true);
    await until(() => kafka.log.includes('unassign in[0]'), 'both partitions given back');
    expect(kafka.log).not.toContain('commit');
    expect(kafka.values('out')).toEqual([]);
  });
});

describe('a partition lost while a commit is under way', () => {
  it('aborts the commit, so nothing of the lost partitions commits', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    kafka.produce('in', 1, [2]);
    const offsetsAnswered = deferred();
    kafka.sendOffsetsSteps = [offsetsAnswered];
    await start(kafka);
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sendOffsetsSteps.length === 0, 'the commit sending its offsets');

    // The loss reaches the app during the round trip, after the commit's first look at its partitions.
    kafka.consumer.rebalance('revoke', [p0, p1], true);
    offsetsAnswered.resolve();
    await until(() => kafka.log.includes('unassign in[0]'), 'the lost partitions given back');
    expect(kafka.log).toContain('abort');
    expect(kafka.log).not.toContain('commit');
    expect(kafka.committed.size).toBe(0);
    expect(kafka.values('out')).toEqual([]);
  });
});

describe('a wait that never ends', () => {
  it('fails a registry request that is never answered within the timeout, as a transient error', async () => {
    // A registry frozen with SIGSTOP: connections are accepted, nothing is ever answered.
    const sockets: import('node:net').Socket[] = [];
    const server: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const serde = createSerde({ registryUrl: `http://127.0.0.1:${port}`, timeoutMs: 200 });
      const started = Date.now();
      const framed = Buffer.from([0, 0, 0, 0, 7, 2]);
      const error = await serde.decode(framed).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((error as Error).message).toMatch(/Timeout \(200ms\)/);
      expect(classifyRecordError(error)).toBe('transient');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('stops the loop for new clients when a cycle waits past its limit, saying why meanwhile', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    const never = deferred<number>();
    const app = await start(kafka, {
      topology: readingWith(() => never.promise),
      stallTimeoutMs: 600,
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(
      () => app.readiness().reasons.some((r) => /poll loop processing in\[0\] offset 0 for/.test(r)),
      'readiness naming the wait',
    );
    await app.stopped;
    expect(app.failure()).toBeInstanceOf(LoopStalledError);
    expect(app.failure()?.message).toMatch(/the poll loop has been processing in\[0\] offset 0 for \d+ s/);
    expect(needsNewClients(app.failure())).toBe(true);
    expect(kafka.openProducers).toBe(0);
    expect(kafka.consumer.connected).toBe(false);
  });
});

/** The forwarding topology's sinks plus a `dlq` one, and a dead-letter hook that tells `seen` each failure. */
function deadLettersTo(
  seen: (failure: { reason: string; message: string }) => void,
): Pick<Topology<number>, 'sinks' | 'deadLetter'> {
  return {
    sinks: [...topology.sinks, { name: 'dlq', topic: 'dlq', serialize: (v) => Buffer.from(String(v)) }],
    deadLetter: {
      sink: 'dlq',
      build(record, failure) {
        seen(failure);
        return { key: record.key!, value: record.value };
      },
    },
  };
}

/** Forwards every record; a record of value 99 writes a state value larger than any topic takes. */
class HugeStateFor99 extends Forwarding {
  override process(record: InputRecord<number>) {
    if (record.value !== 99) return super.process(record);
    this.context.getStore<ChangelogKeyValueStore<string>>('big').put(record.key!, 'x'.repeat(1_100_000), 0);
  }
}

/**
 * The fixtures' topology with in's values in `failing` unreadable every time (the error `error` makes;
 * -1 their poison value), dead letters to `onDeadLetter`.
 */
function failingOn(
  failing: readonly number[],
  error: (value: number) => Error,
  onDeadLetter: Parameters<typeof deadLettersTo>[0] = () => undefined,
): Topology<number> {
  return {
    ...topology,
    sources: [
      {
        topic: 'in',
        deserialize: async ({ value }) => {
          const v = Number(value?.toString());
          if (failing.includes(v)) throw error(v);
          return v;
        },
        poison: () => -1,
      },
    ],
    ...deadLettersTo(onDeadLetter),
  };
}

describe('a record that fails every time', () => {
  /** Records 1, 2, 3 on in[0], the second failing every time with a bug (a TypeError carrying a string code). */
  async function secondRecordAlwaysFails(deadLetterAfterMs: number) {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const seen = { attempts: 0, deadLetters: [] as string[] };
    const app = await start(kafka, {
      deadLetterAfterMs,
      topology: failingOn(
        [2],
        () => {
          seen.attempts++;
          return Object.assign(new TypeError('Cannot read properties of undefined'), {
            code: 'ERR_INVALID_ARG_TYPE',
          });
        },
        (failure) => seen.deadLetters.push(failure.message),
      ),
    });
    kafka.consumer.rebalance('assign', [p0]);
    return { kafka, app, seen };
  }

  it(`is dead-lettered after ${RECORD_ATTEMPTS} attempts, and its partition goes on`, async () => {
    const { kafka, app, seen } = await secondRecordAlwaysFails(0);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition past the failing record', 10_000);
    expect(seen.attempts).toBe(RECORD_ATTEMPTS);
    expect(kafka.values('out')).toEqual([1, 3]);
    expect(kafka.values('dlq')).toEqual([-1]);
    expect(seen.deadLetters).toEqual([
      `failed ${RECORD_ATTEMPTS} times: Cannot read properties of undefined`,
    ]);
    expect(app.failure()).toBeUndefined();
  }, 20_000);

  it('is dead-lettered no sooner than deadLetterAfterMs after its first failure (a registry starting answers "not found" for a moment)', async () => {
    const started = Date.now();
    const { kafka, seen } = await secondRecordAlwaysFails(4_000);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition past the failing record', 15_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect(seen.attempts).toBe(RECORD_ATTEMPTS);
    expect(kafka.values('dlq')).toEqual([-1]);
  }, 20_000);

  it('dead-letters a record whose state would not fit its changelog, instead of failing every commit', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 99, 3]);
    const reasons: string[] = [];
    await start(kafka, {
      topology: {
        ...topology,
        processor: { name: 'huge', create: () => new HugeStateFor99() },
        stores: [
          ...topology.stores,
          {
            name: 'big',
            changelogTopic: () => 'big-changelog',
            create: () =>
              new ChangelogKeyValueStore<string>('big', new MapBacking<string>(), {
                encode: (v) => Buffer.from(v),
                decode: (b) => b.toString(),
              }),
          },
        ],
        ...deadLettersTo((failure) => reasons.push(failure.reason)),
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition committed past the record');
    expect(reasons).toEqual(['output-too-large']);
    expect(kafka.values('out')).toEqual([1, 3]);
    expect(kafka.values('dlq')).toEqual([99]);
    expect(kafka.output.some((r) => r.topic === 'big-changelog')).toBe(false);
  });
});

/** Forwards every record to `out` and `copy`, whose sink throws `error` for 99 the first `times` times. */
function copyFailing99(times: number, error: () => Error, seen: (reason: string) => void) {
  let thrown = 0;
  const dead = deadLettersTo((failure) => seen(failure.reason));
  class ForwardingTwice extends Forwarding {
    override process(record: InputRecord<number>) {
      super.process(record);
      this.context.forward('copy', record.key!, record.value);
    }
  }
  return {
    ...topology,
    processor: { name: 'twice', create: () => new ForwardingTwice() },
    sinks: [
      ...dead.sinks,
      {
        name: 'copy',
        topic: 'copy',
        serialize: (v: unknown) => {
          if (v === 99 && thrown++ < times) throw error();
          return Buffer.from(String(v));
        },
      },
    ],
    deadLetter: dead.deadLetter,
  };
}

describe('a sink that refuses a value at once (no promise)', () => {
  it('sends none of the record’s outputs, dead-letters it, and its partition reads on past it', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 99, 3]);
    const reasons: string[] = [];
    // `copy`'s sink throws for 99 after `out` serialized it.
    const refuses99 = () => new Error('value 99 does not fit the schema');
    await start(kafka, {
      topology: copyFailing99(Number.POSITIVE_INFINITY, refuses99, (reason) => reasons.push(reason)),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition committed past the record');
    expect(reasons).toEqual(['processor-error']);
    expect(kafka.values('out')).toEqual([1, 3]);
    expect(kafka.values('copy')).toEqual([1, 3]);
    expect(kafka.values('dlq')).toEqual([99]);
  });
});

describe('a dead letter that cannot be written', () => {
  it('counts the record skipped, and nothing its dead-letter hook counted', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 99, 3]);
    const events: string[] = [];
    const failing = copyFailing99(
      Number.POSITIVE_INFINITY,
      () => new TypeError('no 99'),
      () => undefined,
    );
    await start(kafka, {
      instrument: (event) => events.push(event),
      topology: {
        ...failing,
        sinks: failing.sinks.map((sink) =>
          sink.name !== 'dlq'
            ? sink
            : {
                ...sink,
                serialize: (v: unknown) => {
                  if (v === 99) throw new TypeError('the dead letter does not fit its schema either');
                  return Buffer.from(String(v));
                },
              },
        ),
        deadLetter: {
          ...failing.deadLetter!,
          build(record, failure, context) {
            context.instrument('hook.dead-lettered', {}, 1);
            return failing.deadLetter!.build(record, failure, context);
          },
        },
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition committed past the record');
    expect(kafka.values('dlq')).toEqual([]);
    expect(events.filter((e) => e === 'stream.skipped')).toHaveLength(1);
    expect(events).not.toContain('hook.dead-lettered');
    expect(events).not.toContain('stream.dead-letter');
  });
});

describe('a dead letter for every record', () => {
  it('is logged in full once, the rest at debug, every one still dead-lettered', async () => {
    const kafka = new FakeKafka();
    kafka.produce(
      'in',
      0,
      Array.from({ length: 10 }, () => 99),
    );
    const lines: { level: number; msg: string; recordKey?: string; stack?: string }[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const reasons: string[] = [];
    await start(kafka, {
      logger,
      topology: copyFailing99(
        Number.POSITIVE_INFINITY,
        () => new TypeError('x is undefined'),
        (r) => reasons.push(r),
      ),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 10, 'every record past');
    expect(reasons).toHaveLength(10);
    const warned = lines.filter((l) => l.msg.startsWith('record dead-lettered') && l.level === 40);
    expect(warned).toHaveLength(1);
    // The record's key is shown (a field named `key` is redacted: it means a signing key elsewhere).
    expect(warned[0]!.recordKey).toBeDefined();
    expect(warned[0]!.recordKey).not.toBe('[redacted]');
    expect(lines.filter((l) => l.msg === 'record dead-lettered' && l.level === 20)).toHaveLength(9);
  });
});

describe("a registry's answer while an output is encoded", () => {
  const registryAnswer = (status: number) =>
    Object.assign(new Error(`Error, status ${status}: schema not found`), { status });

  it('is retried as the record’s failure: a registry that answers 404 for a moment loses nothing', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 99, 3]);
    const reasons: string[] = [];
    await start(kafka, {
      topology: copyFailing99(
        2,
        () => registryAnswer(404),
        (r) => reasons.push(r),
      ),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition committed past the record', 10_000);
    expect(reasons).toEqual([]);
    expect(kafka.values('out')).toEqual([1, 99, 3]);
    expect(kafka.values('copy')).toEqual([1, 99, 3]);
    expect(kafka.values('dlq')).toEqual([]);
  });

  it('is dead-lettered only after the record’s attempts when the registry keeps refusing', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 99, 3]);
    const reasons: string[] = [];
    let attempts = 0;
    const topology401 = copyFailing99(
      Number.POSITIVE_INFINITY,
      () => {
        attempts++;
        return registryAnswer(401);
      },
      (r) => reasons.push(r),
    );
    await start(kafka, { deadLetterAfterMs: 0, topology: topology401 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition committed past the record', 20_000);
    expect(attempts).toBe(RECORD_ATTEMPTS);
    expect(reasons).toEqual(['processor-error']);
    expect(kafka.values('out')).toEqual([1, 3]);
    expect(kafka.values('dlq')).toEqual([99]);
  });
});

describe('where a restored partition starts', () => {
  it('is moved to the committed offset while still paused, so nothing from where it stood is handed over', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    kafka.committed.set('in[0]', 2);
    await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.values('out').length === 1, 'the record after the committed offset');
    const log = kafka.log;
    expect(log.indexOf('seek in[0] 2')).toBeGreaterThan(-1);
    expect(log.indexOf('seek in[0] 2')).toBeLessThan(log.lastIndexOf('resume in[0]'));
    expect(kafka.values('out')).toEqual([3]);
  });

  it('stops for new clients when that move fails, and never runs from an unknown position', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    kafka.committed.set('in[0]', 0);
    kafka.seekSteps = [new Error('seek: Local: Timed out')];
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await app.stopped;
    expect(app.failure()?.message).toMatch(
      /could not move in\[0\] to offset 0 before it runs: seek: Local: Timed out/,
    );
    expect(needsNewClients(app.failure())).toBe(true);
    expect(kafka.log).not.toContain('resume in[0]');
    expect(kafka.values('out')).toEqual([]);
  });

  it('is looked up before the restore fixes the changelog’s end, so the state holds the commit it starts after', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    // The previous owner committed record 1 (its state k1, offset 1); its last transaction, record 2's,
    // is still under way: a read_committed lookup waits while that transaction's offsets are pending.
    kafka.committed.set('in[0]', 1);
    const changelog = ['k1'];
    const lastCommit = deferred();
    let lookingUp = false;
    const committed = kafka.consumer.committed.bind(kafka.consumer);
    kafka.consumer.committed = async (partitions) => {
      lookingUp = true;
      await lastCommit.promise;
      return committed(partitions);
    };
    const restored: string[] = [];
    await start(kafka, {
      // Reads the changelog up to the end it has when the restore starts (read-to-end.ts).
      restore: (tasks) => {
        const end = changelog.length;
        return {
          done: (async () => {
            for (const task of tasks)
              for (const key of changelog.slice(0, end)) {
                task.restoreRecord('last', { key, value: Buffer.from('0'), timestamp: 1_000 });
                restored.push(key);
              }
            return { durationMs: 0, records: end };
          })(),
          cancel: () => undefined,
        };
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => lookingUp, 'the committed offset looked up');
    // The previous owner's last transaction commits: record 2's state k2, and offset 2.
    changelog.push('k2');
    kafka.committed.set('in[0]', 2);
    lastCommit.resolve();
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition past record 3');
    // Before, the restore had fixed its end at k1 and the task started at offset 2 anyway: record 2 was
    // never processed here and its state never read (its id's retry passed again).
    expect(restored).toEqual(['k1', 'k2']);
    expect(kafka.values('out')).toEqual([3]);
  });
});

describe('a record given up on after the records before it in its transaction', () => {
  it('keeps their state writes: only the failing record is dead-lettered, the state stays with its outputs', async () => {
    const kafka = new FakeKafka();
    // In one batch: record 1 writes its state and is forwarded, record 2 fails every time it is read.
    kafka.produce('in', 0, [1, 2, 3]);
    await start(kafka, {
      deadLetterAfterMs: 0,
      topology: failingOn([2], () => new TypeError('Cannot read properties of undefined')),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the partition past the failing record', 10_000);
    expect(kafka.values('out')).toEqual([1, 3]);
    // Record 1's output is committed, so its state write must be too (else a restore, or a retry of
    // its id, disagrees with what downstream holds).
    const changelog = kafka.output.filter((r) => r.topic === 'in-changelog').map((r) => r.key?.toString());
    expect(changelog).toEqual(['k1', 'k3']);
  }, 20_000);
});

describe('a store that cannot take a commit made before a revoke', () => {
  it('stops the stage, and never reads again records whose commit went through', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 1, [1]);
    kafka.produce('in', 0, [2]);
    /** in[1]'s store refuses the committed writes, as a store on disk whose batch write finds the disk full. */
    class FullDisk extends ChangelogKeyValueStore<number> {
      override commit(): void {
        throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
      }
    }
    const app = await start(kafka, {
      commitIntervalMs: 60_000,
      topology: {
        ...topology,
        stores: [
          {
            name: 'last',
            changelogTopic: () => 'in-changelog',
            create: (partition) =>
              partition === 1
                ? new FullDisk('last', new MapBacking<number>(), codec)
                : new ChangelogKeyValueStore<number>('last', new MapBacking<number>(), codec),
          },
        ],
      },
    });
    // in[1]'s task comes first: the commit reaches its store before in[0]'s.
    kafka.consumer.rebalance('assign', [p1, p0, p2]);
    await until(() => kafka.sent.filter((r) => r.topic === 'out').length === 2, 'both records processed');

    // in[1] revoked in order, and in[2] (nothing of it in the transaction) lost right after: the loop
    // leaves the commit to the revoke, which commits in[1] and in[0].
    kafka.consumer.rebalance('revoke', [p1]);
    kafka.consumer.rebalance('revoke', [p2], true);
    await until(() => app.failure() !== undefined, 'the stage stopped', 1_000);
    expect(app.failure()).toBeInstanceOf(StateStoreFailedError);
    await app.stopped;
    expect(kafka.committed.get('in[0]')).toBe(1);
    // The transaction committed in[0]'s offset 1: in[0] never goes back to offset 0 to send 2 again.
    expect(kafka.log).not.toContain('seek in[0] 0');
    expect(kafka.values('out').sort()).toEqual([1, 2]);
  });
});

describe('two records in a row that fail every time', () => {
  it('dead-letters both: the first stays given up on when the second aborts its transaction', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3, 4]);
    const attempts = new Map<number, number>();
    const app = await start(kafka, {
      deadLetterAfterMs: 0,
      // Ten failed batches in a row: the production back-off (200 ms doubling to 5 s) would take 23 s.
      retryInitialMs: 20,
      retryMaxMs: 100,
      topology: failingOn([2, 3], (v) => {
        attempts.set(v, (attempts.get(v) ?? 0) + 1);
        return new TypeError(`record ${v} cannot be read`);
      }),
    });
    kafka.consumer.rebalance('assign', [p0]);
    // Before, record 3's first failure aborted record 2's dead letter and its attempts started again:
    // 2 and 3 took turns for ever and the partition never moved.
    await until(
      () => kafka.committed.get('in[0]') === 4 || (attempts.get(2) ?? 0) > RECORD_ATTEMPTS,
      'the partition past both records, or record 2 tried again after it was given up on',
      10_000,
    );
    expect(attempts.get(2)).toBe(RECORD_ATTEMPTS);
    expect(kafka.committed.get('in[0]')).toBe(4);
    expect(kafka.values('out')).toEqual([1, 4]);
    expect(kafka.values('dlq')).toEqual([-1, -1]);
    expect(app.failure()).toBeUndefined();
  }, 15_000);
});

describe('a restore whose last write is refused', () => {
  it('is retried with a back-off and named in readiness, like a read that fails, and the partition then runs', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    let refusals = 1;
    /** Refuses the restore's final flush once, as a store on disk whose disk is full at that moment. */
    class FullOnce extends ChangelogKeyValueStore<number> {
      override restored(streamTime: number): void {
        if (refusals-- > 0) throw new Error('MDB_MAP_FULL: Environment mapsize limit reached');
        super.restored(streamTime);
      }
    }
    const app = await start(kafka, {
      topology: {
        ...topology,
        stores: [
          {
            name: 'last',
            changelogTopic: () => 'in-changelog',
            create: () => new FullOnce('last', new MapBacking<number>(), codec),
          },
        ],
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => app.tasks()[0]?.restoreFailures === 1, 'the failed restore counted', 1_000);
    expect(app.tasks()[0]?.restoreError).toMatch(/MDB_MAP_FULL/);
    await until(() => kafka.committed.get('in[0]') === 2, 'the partition running after a second restore');
    expect(kafka.restores).toHaveLength(2);
    expect(kafka.values('out')).toEqual([1, 2]);
  });
});

describe('an abort while another partition restores', () => {
  it('leaves the restoring partition’s stream time as its changelog says', async () => {
    const kafka = new FakeKafka();
    const gate = deferred();
    let failures = 0;
    const app = await start(kafka, {
      topology: readingWith(async (value) => {
        if (value === 7 && failures++ === 0) throw connectionRefused();
        return value;
      }),
      // in[1]'s changelog holds one record stamped 50 s; its restore then waits for the test.
      restore: (tasks) => ({
        done: (async () => {
          for (const task of tasks) {
            if (task.partition !== 1) continue;
            task.restoreRecord('last', { key: 'k', value: Buffer.from('5'), timestamp: 50_000 });
            await gate.promise;
          }
          return { durationMs: 0, records: 1 };
        })(),
        cancel: () => undefined,
      }),
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => app.tasks()[0]?.status === 'running', 'in[0] running');
    kafka.consumer.rebalance('assign', [p1]);
    await until(() => app.tasks().find((t) => t.partition === 1)?.streamTime === 50_000, 'in[1] restoring');

    // A transient failure on in[0] aborts the transaction while in[1] is still restoring.
    kafka.produce('in', 0, [7]);
    await until(() => kafka.log.includes('abort'), 'the transaction aborted');
    gate.resolve();
    await until(() => app.tasks().find((t) => t.partition === 1)?.status === 'running', 'in[1] running');
    expect(app.tasks().find((t) => t.partition === 1)?.streamTime).toBe(50_000);
    await until(() => kafka.committed.get('in[0]') === 1, 'in[0] past its record');
  });
});

describe('a close while the loop waits on a call that never answers', () => {
  it('still ends once the wait is past the stall limit, and commits nothing of the record left half done', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    const never = deferred<Buffer>();
    const app = await start(kafka, {
      commitIntervalMs: 60_000,
      stallTimeoutMs: 600,
      topology: {
        ...topology,
        // Record 2's state is written and its output's serialization never answers.
        sinks: [
          { name: 'out', topic: 'out', serialize: (v) => (v === 2 ? never.promise : Buffer.from(String(v))) },
        ],
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => /processing in\[0\] offset 1/.test(app.readiness().reasons.join()), 'the loop waiting');
    // SIGTERM now: before, the watchdog stood down once closing began and close() waited for ever.
    let closed = false;
    void app.close().then(() => {
      closed = true;
    });
    await until(() => closed, 'the app closed', 3_000);
    apps.length = 0;
    expect(kafka.openProducers).toBe(0);
    expect(kafka.consumer.connected).toBe(false);
    // Aborted: offset 2 would skip record 2, whose output was never sent (record 1 is simply read again).
    expect(kafka.committed.get('in[0]')).toBeUndefined();
    expect(kafka.output).toEqual([]);
  });
});

describe('a step given up that answers after all', () => {
  it('sends and commits nothing once the loop aborted its transaction and stopped', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    const late = deferred<Buffer>();
    // The consumer's close takes a while (it leaves the group): the producer is still open meanwhile.
    const consumerClosing = deferred<void>();
    const disconnect = kafka.consumer.disconnect.bind(kafka.consumer);
    kafka.consumer.disconnect = async () => {
      await consumerClosing.promise;
      return disconnect();
    };
    const app = await start(kafka, {
      commitIntervalMs: 300,
      stallTimeoutMs: 600,
      topology: {
        ...topology,
        // Record 2's output answers only after the watchdog gave its step up (a slow registry, not a dead one).
        sinks: [
          { name: 'out', topic: 'out', serialize: (v) => (v === 2 ? late.promise : Buffer.from(String(v))) },
        ],
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => /processing in\[0\] offset 1/.test(app.readiness().reasons.join()), 'the loop waiting');
    await until(() => kafka.log.includes('abort'), 'the transaction aborted as the app stops');
    const afterAbort = kafka.log.length;
    late.resolve(Buffer.from('2'));
    await new Promise((r) => setTimeout(r, 400));
    consumerClosing.resolve();
    await app.stopped;
    apps.length = 0;
    // Before: the step sent record 2's output into a transaction of its own and committed it, without the
    // offset (still before record 1) or the state: the next owner would route both records again.
    expect(kafka.log.slice(afterAbort).filter((l) => /^(begin|send|offsets|commit)/.test(l))).toEqual([]);
    expect(kafka.committed.get('in[0]')).toBeUndefined();
    expect(kafka.output).toEqual([]);
    expect(app.failure()?.message).toMatch(/the poll loop has been processing in\[0\] offset 1/);
  });
});

describe('a rebalance the consumer refuses to apply', () => {
  // The binding throws from incrementalAssign/incrementalUnassign when librdkafka refuses (a consumer in
  // an erroneous state). The group then counts the partitions as this member's either way: carrying on
  // would own partitions nobody reads (an assignment) or hold a rebalance that never ends (a revoke).
  const refused = () => new Error('Local: Erroneous state');

  it('stops for new clients when an assignment is refused, instead of owning partitions it never reads', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    kafka.assignSteps = [refused()];
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => app.failure() !== undefined, 'the stage stopped', 1_000);
    await app.stopped;
    expect(app.failure()?.message).toMatch(
      /could not take the assignment of in\[0\]: Local: Erroneous state/,
    );
    expect(needsNewClients(app.failure())).toBe(true);
    expect(kafka.values('out')).toEqual([]);
  });

  it('commits what was processed, then stops for new clients when a revoke cannot be given back', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    kafka.produce('in', 1, [2]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sent.filter((r) => r.topic === 'out').length === 2, 'both records processed');

    kafka.unassignSteps = [refused()];
    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => app.failure() !== undefined, 'the stage stopped', 1_000);
    await app.stopped;
    expect(app.failure()?.message).toMatch(/could not give back in\[0\]: Local: Erroneous state/);
    expect(needsNewClients(app.failure())).toBe(true);
    // The revoke committed the transaction before giving the partition back: nothing is read twice.
    expect(kafka.committed.get('in[0]')).toBe(1);
    expect(kafka.committed.get('in[1]')).toBe(1);
    expect(kafka.values('out').sort()).toEqual([1, 2]);
  });
});

describe('a failure while the app closes', () => {
  /** What the brokers hold of in[0]: its committed offset, outputs and changelog keys. */
  const committedOf = (kafka: FakeKafka) => ({
    offset: kafka.committed.get('in[0]'),
    out: kafka.values('out'),
    changelog: kafka.output.filter((r) => r.topic === 'in-changelog').map((r) => r.key?.toString()),
  });

  it('aborts the transaction: a record whose state is written and whose output failed never commits', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [10, 11, 12]);
    const registry = deferred<Buffer>();
    let waiting = false;
    /** Record 11's state is written, then its output waits for the registry. */
    const serialize = (v: number) => {
      if (v !== 11) return Buffer.from(String(v));
      waiting = true;
      return registry.promise;
    };
    const app = await start(kafka, {
      commitIntervalMs: 60_000,
      topology: { ...topology, sinks: [{ name: 'out', topic: 'out', serialize }] },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => waiting, 'record 11 waiting for the registry');

    // SIGTERM while record 11 waits, then the registry turns out to be out of reach.
    const closed = app.close();
    await until(() => app.readiness().reasons.includes('closing'), 'the close begun');
    registry.reject(connectionRefused());
    await closed;
    apps.length = 0;
    // Before, the close committed offset 2 and record 11's state without its output: the record was
    // lost, and its retries were taken for duplicates. Now every partition stays at its last commit.
    expect(kafka.log).not.toContain('commit');
    expect(committedOf(kafka)).toEqual({ offset: undefined, out: [], changelog: [] });
    expect(app.failure()).toBeUndefined();
  });

  it('aborts a commit whose changelog records were partly sent, instead of committing it without them', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    // The second changelog record's send waits, then fails.
    const secondChangelog = deferred<void>();
    const app = await start(kafka, { commitMaxRecords: 2, commitIntervalMs: 60_000 });
    const producer = kafka.producers[0]!;
    const send = producer.send.bind(producer);
    let changelogSends = 0;
    producer.send = async (record) => {
      if (record.topic === 'in-changelog' && ++changelogSends === 2) await secondChangelog.promise;
      return send(record);
    };
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => changelogSends === 2, 'the commit sending its second changelog record');

    const closed = app.close();
    await until(() => app.readiness().reasons.includes('closing'), 'the close begun');
    secondChangelog.reject(
      rd(ERRORS.ERR__TRANSPORT, 'Local: Broker transport failure', { isRetriable: true }),
    );
    await closed;
    apps.length = 0;
    // Before, the close's commit went through with k1 only: record 2's state was never written.
    expect(kafka.log).not.toContain('commit');
    expect(committedOf(kafka)).toEqual({ offset: undefined, out: [], changelog: [] });
  });

  it('still commits at close what was processed when nothing failed', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.filter((r) => r.topic === 'out').length === 2, 'both records processed');
    await app.close();
    apps.length = 0;
    expect(committedOf(kafka)).toEqual({ offset: 2, out: [1, 2], changelog: ['k1', 'k2'] });
  });
});

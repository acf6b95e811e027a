import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ERRORS, type KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { createStreamMetrics } from '../../../runtime/streams/metrics.js';
import type { InputRecord, Processor, ProcessorContext } from '../../../runtime/streams/processor.js';
import { isFencedConsumer, needsNewClients } from '../../../runtime/streams/rejoining-app.js';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';
import type { StreamApp } from '../../../runtime/streams/stream-runner.js';
import type { Topology } from '../../../runtime/streams/topology.js';
import { deferred, FakeKafka } from './fake-stream-clients.js';
import {
  apps,
  closeApps,
  Forwarding,
  invalidTxnState,
  p0,
  p1,
  rd,
  start,
  topology,
  until,
} from './runner-fixtures.js';

afterEach(closeApps);

/** An app that processed a record of in[0], then lost the partition (its session ran out). */
async function appThatLostItsPartition(rejoinTimeoutMs: number, kafka = new FakeKafka()): Promise<StreamApp> {
  kafka.produce('in', 0, [1]);
  const app = await start(kafka, { rejoinTimeoutMs });
  kafka.consumer.rebalance('assign', [p0]);
  await until(() => kafka.sent.length === 1, 'a record processed');
  kafka.consumer.rebalance('revoke', [p0], true);
  await until(() => kafka.log.includes('unassign in[0]'), 'the lost partition unassigned');
  return app;
}

const statusOf = (app: StreamApp, partition: number) =>
  app.tasks().find((t) => t.topic === 'in' && t.partition === partition)?.status;

describe('the stream runner with a fake Kafka client', () => {
  it('sends outputs in the order forwarded, whether their sinks serialize at once or through a promise', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3, 4]);
    const later = (v: unknown) => new Promise<Buffer>((r) => setTimeout(() => r(Buffer.from(String(v))), 1));
    class ForwardingTwice implements Processor<number> {
      #context!: ProcessorContext;
      init(context: ProcessorContext) {
        this.#context = context;
      }
      process(record: InputRecord<number>) {
        this.#context.forward('out', record.key!, record.value);
        this.#context.forward('out', record.key!, record.value * 10 + 1);
      }
    }
    await start(kafka, {
      topology: {
        ...topology,
        processor: { name: 'forward-twice', create: () => new ForwardingTwice() },
        // Odd values through a promise (a schema not cached yet), even ones at once.
        sinks: [
          {
            name: 'out',
            topic: 'out',
            serialize: (v) => (Number(v) % 2 === 1 ? later(v) : Buffer.from(String(v))),
          },
        ],
      },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.values('out').length === 8, 'every record and its second output sent');
    expect(kafka.values('out')).toEqual([1, 11, 2, 21, 3, 31, 4, 41]);
  });

  it('retries a failed restore with a back-off, names the failure in readiness, then runs the partition', async () => {
    const kafka = new FakeKafka();
    kafka.restoreSteps = [
      new Error('changelog in-changelog unreachable'),
      new Error('changelog in-changelog unreachable'),
    ];
    kafka.produce('in', 0, [1, 2, 3]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);

    await until(() => app.tasks()[0]?.restoreFailures === 1, 'a first failed restore');
    const { ready, reasons } = app.readiness();
    expect(ready).toBe(false);
    expect(reasons.join('\n')).toMatch(
      /in\[0\] restoring: restore failed 1 time, retrying \(last error: changelog in-changelog unreachable\)/,
    );
    expect(app.tasks()[0]).toMatchObject({
      status: 'restoring',
      restoreError: 'changelog in-changelog unreachable',
    });

    await until(() => kafka.values('out').length === 3, 'the records routed after the restore succeeded');
    expect(kafka.restores).toHaveLength(3);
    // Back-off: 20 ms, then 40 ms.
    expect(kafka.restores[1]!.at - kafka.restores[0]!.at).toBeGreaterThanOrEqual(18);
    expect(kafka.restores[2]!.at - kafka.restores[1]!.at).toBeGreaterThanOrEqual(38);
    expect(statusOf(app, 0)).toBe('running');
    expect(app.tasks()[0]!.restoreError).toBeUndefined();
    expect(app.readiness()).toEqual({ ready: true, reasons: [] });
    expect(app.isReady()).toBe(true);
  });

  it('counts the stores only when their sizes are read: readiness and the other task figures do not', async () => {
    let counted = 0;
    class CountedBacking extends MapBacking<number> {
      override get size(): number {
        counted++;
        return super.size;
      }
    }
    const counting: Topology<number> = {
      ...topology,
      stores: [
        {
          ...topology.stores[0]!,
          create: () =>
            new ChangelogKeyValueStore<number>('last', new CountedBacking(), {
              encode: (v) => Buffer.from(String(v)),
              decode: (b) => Number(b.toString()),
            }),
        },
      ],
    };
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const app = await start(kafka, { topology: counting });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.values('out').length === 3, 'the records routed');
    counted = 0;
    expect(app.readiness().ready).toBe(true);
    expect(app.tasks().map((t) => t.status)).toEqual(['running']);
    expect(counted).toBe(0);
    expect(app.tasks()[0]!.stores).toEqual({ last: 3 });
    expect(counted).toBe(1);
  });

  it('polls no longer than until the open transaction is due, so a lone record is committed on time', async () => {
    const kafka = new FakeKafka();
    const app = await start(kafka, { commitIntervalMs: 30 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.consumeWaits.length > 3, 'idle polls');
    expect(kafka.consumeWaits.every((ms) => ms === 50)).toBe(true);

    kafka.produce('in', 0, [1]);
    await until(() => kafka.committed.get('in[0]') === 1, 'the lone record committed');
    const polledInTransaction = kafka.consumeWaits.filter((ms) => ms < 50);
    expect(polledInTransaction.length).toBeGreaterThan(0);
    expect(Math.max(...polledInTransaction)).toBeLessThanOrEqual(30);
    expect(app.failure()).toBeUndefined();
  });

  it('sends a poll’s outputs at once when no backlog is behind it, and lets a backlog’s linger to batch', async () => {
    const kafka = new FakeKafka();
    // Polls of at most 2: the first two are full (a backlog), the third is not.
    kafka.produce('in', 0, [1, 2, 3, 4, 5]);
    const app = await start(kafka, { maxBatchRecords: 2, commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sentNowAt.length > 0, 'the outputs sent now');
    expect(kafka.sent).toHaveLength(5);
    expect(kafka.sentNowAt.every((sent) => sent === 5)).toBe(true);
    expect(kafka.committed.get('in[0]')).toBeUndefined();

    kafka.produce('in', 0, [6]);
    await until(() => kafka.sentNowAt.includes(6), 'a live record sent now');
    expect(kafka.committed.get('in[0]')).toBeUndefined();
    expect(app.failure()).toBeUndefined();
  });

  it('resumes a partition lost with an open transaction once it is assigned back, and routes its records', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 2, 'two records processed in an open transaction');

    kafka.consumer.rebalance('revoke', [p0], true);
    await until(() => kafka.log.includes('unassign in[0]'), 'the lost partition unassigned');
    expect(kafka.consumer.paused.has('in[0]')).toBe(true);

    // Not ready while it has lost its partitions and not been assigned any since (no task says so).
    await until(
      () => app.readiness().reasons.some((r) => /^partitions lost \d+ s ago, rejoining/.test(r)),
      'named',
    );
    expect(app.readiness().ready).toBe(false);

    kafka.produce('in', 0, [3]);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 5, 'the three records processed again by the new task');
    await until(() => app.readiness().ready, 'ready again once assigned');
    expect(kafka.log.lastIndexOf('resume in[0]')).toBeGreaterThan(kafka.log.lastIndexOf('assign in[0]'));
    expect(kafka.consumer.paused.has('in[0]')).toBe(false);
    expect(statusOf(app, 0)).toBe('running');
    // The close commits what the new task processed: every record once, from offset 0.
    await app.close();
    apps.length = 0;
    expect(kafka.values('out')).toEqual([1, 2, 3]);
    expect(kafka.committed.get('in[0]')).toBe(3);
  });

  it('reports the lag of every running partition after a poll, zero once caught up, idle ones included', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    const lag = new Map<string, number>();
    await start(kafka, {
      instrument: (event, labels = {}, value) => {
        if (event === 'stream.lag') lag.set(`${labels.topic}[${labels.partition}]`, value ?? -1);
      },
    });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sent.length === 3, 'three records processed');
    await until(() => lag.get('in[0]') === 0 && lag.get('in[1]') === 0, 'both partitions at lag 0');
    kafka.produce('in', 1, [4]);
    await until(
      () => kafka.sent.length === 4 && lag.get('in[1]') === 0,
      'the idle partition caught up again',
    );
  });

  it('replaces a fenced producer, rewinds, and the partition keeps moving', async () => {
    const kafka = new FakeKafka();
    kafka.commitSteps = [rd(ERRORS.ERR__FENCED, 'fenced')];
    kafka.produce('in', 0, [1, 2]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 2, 'the records committed by the new producer');
    expect(kafka.producers.map((p) => p.isOpen)).toEqual([false, true]);
    expect(kafka.log).toContain('seek in[0] 0');
    expect(kafka.values('out')).toEqual([1, 2]);
    kafka.produce('in', 0, [3]);
    await until(() => kafka.committed.get('in[0]') === 3, 'a later record');
    expect(statusOf(app, 0)).toBe('running');
  });

  it('renews the producer, sized for them, when a failed batch finds the topics’ limits changed', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 1, 'the first record committed');
    expect(kafka.producers.map((p) => p.sizedFor)).toEqual([
      { maxMessageBytes: 1_000_000, smallestTopicLimit: 1_000_000 },
    ]);

    // An operator lowers out's limit: the broker refuses the next transaction's batch, which was sized
    // for the old one, and librdkafka wants the transaction aborted.
    kafka.topicLimits.set('out', 4_000);
    const refused = rd(ERRORS.ERR_MSG_SIZE_TOO_LARGE, 'Broker: Message size too large', {
      isTxnRequiresAbort: true,
    });
    kafka.commitSteps = [refused];
    kafka.produce('in', 0, [2, 3]);
    await until(() => kafka.committed.get('in[0]') === 3, 'the records committed by a new producer');
    expect(kafka.producers.map((p) => [p.isOpen, p.sizedFor])).toEqual([
      [false, { maxMessageBytes: 1_000_000, smallestTopicLimit: 1_000_000 }],
      [true, { maxMessageBytes: 1_000_000, smallestTopicLimit: 4_000 }],
    ]);
    // Which offset next, which output: the abort moved in[0] back to its last commit, the new producer
    // sent 2 and 3 again, and only its transaction committed them.
    expect(kafka.log).toContain('seek in[0] 1');
    expect(kafka.log.indexOf('close #1')).toBeLessThan(kafka.log.indexOf('open #2'));
    const committedOut = () => kafka.output.filter((r) => r.topic === 'out').map((r) => String(r.value));
    expect(committedOut()).toEqual(['1', '2', '3']);

    // A failure with the limits as they were keeps the producer.
    kafka.commitSteps = [refused];
    kafka.produce('in', 0, [4]);
    await until(() => kafka.committed.get('in[0]') === 4, 'a later record committed after a retry');
    expect(kafka.producers).toHaveLength(2);
    expect(committedOut()).toEqual(['1', '2', '3', '4']);
  });

  it('cancels the restore of a partition revoked while it restores, and closes its task cleanly', async () => {
    const kafka = new FakeKafka();
    const never = deferred();
    kafka.restoreSteps = [never];
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.restores.length === 1, 'the restore started');

    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => kafka.log.includes('unassign in[0]'), 'the partition given back');
    expect(kafka.restores[0]!.cancelled).toBe(true);
    expect(app.tasks()).toEqual([]);
    expect(kafka.log).not.toContain('resume in[0]');
    expect(kafka.log).not.toContain('commit');
    // Nothing left to restore: ready again, and no further restore is tried.
    await new Promise((r) => setTimeout(r, 50));
    expect(kafka.restores).toHaveLength(1);
    expect(app.isReady()).toBe(true);
  });

  it('starts no restore for a partition revoked while its committed offset is looked up', async () => {
    const kafka = new FakeKafka();
    const answer = deferred();
    let lookingUp = false;
    const committed = kafka.consumer.committed.bind(kafka.consumer);
    kafka.consumer.committed = async (partitions) => {
      lookingUp = true;
      await answer.promise;
      return committed(partitions);
    };
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => lookingUp, 'the committed offset looked up');

    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => kafka.log.includes('unassign in[0]'), 'the partition given back');
    answer.resolve();
    await new Promise((r) => setTimeout(r, 50));
    expect(kafka.restores).toHaveLength(0);
    expect(app.tasks()).toEqual([]);
    expect(kafka.log).not.toContain('resume in[0]');
    expect(app.isReady()).toBe(true);
  });

  it('commits the open transaction before it gives revoked partitions back', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    kafka.produce('in', 1, [3]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(() => kafka.sent.length === 3, 'three records processed');
    expect(kafka.log).not.toContain('commit');

    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => kafka.log.includes('unassign in[0]'), 'the revoked partition given back');
    const log = kafka.log;
    expect(log.indexOf('committed')).toBeGreaterThan(-1);
    expect(log.indexOf('committed')).toBeLessThan(log.indexOf('unassign in[0]'));
    expect(log.find((l) => l.startsWith('offsets'))).toBe('offsets in[0]=2 in[1]=1');
    expect(kafka.committed.get('in[0]')).toBe(2);
    expect(statusOf(app, 1)).toBe('running');
  });

  it('aborts the open transaction of lost partitions and never commits it', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2]);
    await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 2, 'two records processed');

    kafka.consumer.rebalance('revoke', [p0], true);
    await until(() => kafka.log.includes('unassign in[0]'), 'the lost partition unassigned');
    expect(kafka.log.indexOf('abort')).toBeLessThan(kafka.log.indexOf('unassign in[0]'));
    expect(kafka.log).not.toContain('commit');
    expect(kafka.log.some((l) => l.startsWith('offsets'))).toBe(false);
    expect(kafka.committed.size).toBe(0);
    expect(kafka.values('out')).toEqual([]);
  });

  it('stops as a fenced consumer when no assignment follows a loss in time, so it rejoins with new clients', async () => {
    const app = await appThatLostItsPartition(150);
    // The group never assigns anything again: the app gives up on this consumer.
    await app.stopped;
    expect(app.failure()?.message).toMatch(/partitions lost \d+ s ago and no assignment since/);
    expect(isFencedConsumer(app.failure())).toBe(true);
  });

  it('gives lost partitions back even when the abort of their transaction fails, and goes on once it aborts', async () => {
    const kafka = new FakeKafka();
    // The coordinator is down: the first abort times out, the loop's retry gets through.
    kafka.abortSteps = [
      rd(ERRORS.ERR__TIMED_OUT, 'abortTransaction: Local: Timed out', { isRetriable: true }),
    ];
    kafka.produce('in', 0, [1, 2]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 2, 'two records processed');

    kafka.consumer.rebalance('revoke', [p0], true);
    // Without the unassign the consumer never finishes its rebalance, so it never rejoins.
    await until(() => kafka.log.includes('unassign in[0]'), 'the lost partition given back');
    await until(() => kafka.log.filter((l) => l === 'abort').length === 2, 'the abort tried again');
    expect(kafka.log).not.toContain('commit');

    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 4, 'the records processed again once the partition is back');
    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => kafka.committed.get('in[0]') === 2, 'the records committed as the partition goes');
    expect(kafka.values('out')).toEqual([1, 2]);
    expect(app.failure()).toBeUndefined();
  });

  it('stops for new clients when its producer fails for good aborting a lost transaction', async () => {
    const kafka = new FakeKafka();
    kafka.abortSteps = [invalidTxnState()];
    kafka.produce('in', 0, [1]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 1, 'a record processed');

    kafka.consumer.rebalance('revoke', [p0], true);
    await app.stopped;
    expect(kafka.log).toContain('unassign in[0]');
    expect((app.failure() as KafkaError).code).toBe(ERRORS.ERR_INVALID_TXN_STATE);
    expect(needsNewClients(app.failure())).toBe(true);
    expect(kafka.committed.size).toBe(0);
    expect(kafka.openProducers).toBe(0);
  });

  it('stops for new clients when a commit fails for good, never replaying over state it may have committed', async () => {
    const kafka = new FakeKafka();
    kafka.commitSteps = [invalidTxnState()];
    kafka.produce('in', 0, [1]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await app.stopped;
    expect((app.failure() as KafkaError).code).toBe(ERRORS.ERR_INVALID_TXN_STATE);
    expect(app.failure()?.message).toMatch(/invalid state/);
    // Stopped rather than going on with a new producer over rewound state: whether the failed commit
    // went through or not, the app started in its place restores what was committed.
    expect(kafka.producers).toHaveLength(1);
    expect(kafka.openProducers).toBe(0);
  });

  it('stops for good, without new clients, when the producer is not authorized', async () => {
    const kafka = new FakeKafka();
    kafka.commitSteps = [
      rd(ERRORS.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'Broker: Transactional Id authorization failed', {
        isFatal: true,
      }),
    ];
    kafka.produce('in', 0, [1]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await app.stopped;
    expect(app.failure()?.message).toMatch(/Transactional Id authorization failed/);
    expect(needsNewClients(app.failure())).toBe(false);
  });

  it('keeps its consumer when an assignment follows a loss in time', async () => {
    const kafka = new FakeKafka();
    const app = await appThatLostItsPartition(300, kafka);
    // An empty assignment counts too: the instance rejoined, with nothing to do for now.
    kafka.consumer.rebalance('assign', []);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(app.failure()).toBeUndefined();
  });

  it('stops with the reason when another consumer runs with its instance id', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1]);
    const app = await start(kafka, { commitIntervalMs: 60_000 });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.sent.length === 1, 'a record processed');

    kafka.consumer.emitError(
      rd(
        ERRORS.ERR_FENCED_INSTANCE_ID,
        'Broker: Static consumer fenced by other consumer with same group.instance.id',
      ),
    );
    await app.stopped;
    expect(app.failure()?.message).toMatch(/Static consumer fenced by other consumer/);
    expect(app.readiness().ready).toBe(false);
    expect(app.readiness().reasons[0]).toMatch(/^stopped: Broker: Static consumer fenced/);
    // A failure leaves the open transaction to the abort: nothing of it commits.
    expect(kafka.log).toContain('abort');
    expect(kafka.log).not.toContain('commit');
    expect(kafka.openProducers).toBe(0);
    expect(kafka.consumer.connected).toBe(false);
  });

  it('stops for good with one line naming the variable and the broker setting when the brokers refuse its session timeout', async () => {
    const kafka = new FakeKafka();
    // What librdkafka hands the poll after JoinGroup answered INVALID_SESSION_TIMEOUT; it would send the
    // same JoinGroup again and again.
    kafka.consumeSteps = Array.from({ length: 20 }, () =>
      rd(ERRORS.ERR_INVALID_SESSION_TIMEOUT, 'JoinGroup failed: Broker: Invalid session timeout'),
    );
    const app = await start(kafka, { sessionTimeoutMs: 3_000 });
    await app.stopped;
    const message = app.failure()?.message ?? '';
    expect(message).not.toContain('\n');
    expect(message).toContain('session timeout of 3000 ms (PROCESSOR_SESSION_TIMEOUT_MS)');
    expect(message).toContain('group.min.session.timeout.ms');
    // Stopped at the first refusal: no retry loop, no new clients (they would be refused alike).
    expect(kafka.log.filter((line) => line === 'consume failed')).toHaveLength(1);
    expect(needsNewClients(app.failure())).toBe(false);
    expect(kafka.consumer.connected).toBe(false);
    expect(kafka.openProducers).toBe(0);
  });

  it('stops the same way when the refusal comes as a consumer error event', async () => {
    const kafka = new FakeKafka();
    const app = await start(kafka, { sessionTimeoutMs: 2_000 });
    kafka.consumer.emitError(rd(ERRORS.ERR_INVALID_SESSION_TIMEOUT, 'Broker: Invalid session timeout'));
    await app.stopped;
    expect(app.failure()?.message).toMatch(
      /^the brokers refused the consumer group's session timeout of 2000 ms \(PROCESSOR_SESSION_TIMEOUT_MS\)/,
    );
  });

  it('stops with the reason when its producer is fenced again and again', async () => {
    const kafka = new FakeKafka();
    const fenced = rd(ERRORS.ERR__FENCED, 'fenced');
    kafka.commitSteps = [fenced, fenced, fenced, fenced];
    kafka.produce('in', 0, [1]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await app.stopped;
    expect(app.failure()?.message).toBe(
      'producer app-i1 fenced repeatedly: another instance runs with instance id i1',
    );
    expect(kafka.openProducers).toBe(0);
  });
});

describe('a batch of slow records', () => {
  it('stops halfway through the transaction’s time, commits, and reads the rest again', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3, 4, 5, 6, 7, 8]);
    // 40 ms a record against a transaction of 200 ms: the whole batch (320 ms) would outlive it.
    class Slow extends Forwarding {
      override process(record: InputRecord<number>) {
        const until = Date.now() + 40;
        while (Date.now() < until);
        super.process(record);
      }
    }
    await start(kafka, {
      transactionTimeoutMs: 200,
      topology: { ...topology, processor: { name: 'slow', create: () => new Slow() } },
    });
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.committed.get('in[0]') === 8, 'every record committed');
    expect(kafka.values('out')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(kafka.log).not.toContain('abort');
    // A transaction stops once it is past 100 ms: after at most three records of 40 ms.
    const offsets = kafka.log.filter((l) => l.startsWith('offsets')).map((l) => Number(l.split('=')[1]));
    expect(offsets.length).toBeGreaterThan(2);
    offsets.forEach((offset, n) => {
      expect(offset - (offsets[n - 1] ?? 0)).toBeLessThanOrEqual(3);
    });
  });
});

describe('the lag series of a partition', () => {
  it('goes with the partition: a revoked one leaves no frozen backlog in the sum', async () => {
    const kafka = new FakeKafka();
    const registry = new Registry();
    const metrics = createStreamMetrics({ app: 'app', registry });
    kafka.produce('in', 0, [1, 2]);
    kafka.produce('in', 1, [3]);
    await start(kafka, { instrument: metrics.instrument });
    kafka.consumer.rebalance('assign', [p0, p1]);
    await until(
      () => kafka.committed.get('in[0]') === 2 && kafka.committed.get('in[1]') === 1,
      'both committed',
    );
    const lagLines = async () =>
      (await registry.metrics()).split('\n').filter((l) => l.startsWith('hookledger_stream_consumer_lag{'));
    expect(await lagLines()).toHaveLength(2);
    kafka.consumer.rebalance('revoke', [p0]);
    await until(() => kafka.log.includes('unassign in[0]'), 'in[0] given back');
    expect(await lagLines()).toEqual([
      'hookledger_stream_consumer_lag{app="app",topic="in",partition="1"} 0',
    ]);
  });
});

describe('a failure that shows only at the commit', () => {
  it('counts in a row until a commit goes through: readiness names it from the third, and the back-off grows', async () => {
    const kafka = new FakeKafka();
    kafka.produce('in', 0, [1, 2, 3]);
    // A produce refused for every batch: librdkafka says so at the commit, after the records were sent.
    const refused = () =>
      rd(ERRORS.ERR__STATE, 'Local: Transaction requires abort (a produce was refused)', {
        isTxnRequiresAbort: true,
      });
    kafka.commitSteps = Array.from({ length: 5 }, refused);
    const app = await start(kafka, { retryInitialMs: 20, retryMaxMs: 1_000 });
    kafka.consumer.rebalance('assign', [p0]);
    const reasons = new Set<string>();
    const commitsAt: number[] = [];
    while (kafka.committed.get('in[0]') !== 3) {
      const readiness = app.readiness();
      for (const reason of readiness.reasons) reasons.add(reason);
      const commits = kafka.log.filter((line) => line === 'commit').length;
      if (commits > commitsAt.length) commitsAt.push(Date.now());
      await new Promise((r) => setTimeout(r, 2));
    }
    expect([...reasons].some((r) => /Transaction requires abort/.test(r))).toBe(true);
    // Waits of 20, 40, 80, 160 ms between the failed commits (each after the records are processed again).
    const gaps = commitsAt.slice(1).map((at, i) => at - commitsAt[i]!);
    expect(gaps[3]!).toBeGreaterThanOrEqual(150);
    expect(kafka.values('out')).toEqual([1, 2, 3]);
    // Committed at last: ready again, nothing named.
    await until(() => app.readiness().ready, 'ready after the commit');
  });
});

describe('the stream runner opening and closing', () => {
  it('closes its producer when the start fails after the producer opened', async () => {
    const kafka = new FakeKafka();
    kafka.connectStep = new Error('connect: all brokers down');
    await expect(start(kafka)).rejects.toThrow(/all brokers down/);
    expect(kafka.producers).toHaveLength(1);
    expect(kafka.openProducers).toBe(0);
  });

  it('never installs a producer fenced while it opens: the start fails and nothing is connected', async () => {
    const kafka = new FakeKafka();
    kafka.openSteps = [rd(ERRORS.ERR__FENCED, 'fenced while opening')];
    await expect(start(kafka)).rejects.toThrow(/fenced while opening/);
    expect(kafka.openProducers).toBe(0);
    expect(kafka.log).not.toContain('connect');
  });

  it('closes a replacement producer that finishes opening after close began', async () => {
    const kafka = new FakeKafka();
    kafka.commitSteps = [rd(ERRORS.ERR__FENCED, 'fenced')];
    const slowOpen = deferred();
    kafka.openSteps = [undefined, slowOpen];
    kafka.produce('in', 0, [1]);
    const app = await start(kafka);
    kafka.consumer.rebalance('assign', [p0]);
    await until(() => kafka.log.includes('open #2'), 'the replacement producer opening');

    const closed = app.close();
    slowOpen.resolve();
    await closed;
    apps.length = 0;
    expect(kafka.producers).toHaveLength(2);
    expect(kafka.openProducers).toBe(0);
    expect(app.failure()).toBeUndefined();
  });

  it('makes no task of an assignment that comes after close, and only acknowledges it', async () => {
    const kafka = new FakeKafka();
    const app = await start(kafka);
    await app.close();
    apps.length = 0;
    const before = kafka.log.length;
    kafka.consumer.rebalance('assign', [p0]);
    expect(kafka.log.slice(before)).toEqual(['assign in[0]']);
    expect(app.tasks()).toEqual([]);
    expect(kafka.restores).toHaveLength(0);
    expect(kafka.producers).toHaveLength(1);
    expect(kafka.openProducers).toBe(0);
  });
});

// The transactional producer lingers to batch a backlog (eos-producer.ts EOS_LINGER_MS), and sendNow()
// sends a live stage's records without waiting out that linger. Against the real broker, with a linger
// far longer than the test: a record sent now reaches the partition while its transaction is open (a
// read_uncommitted reader sees it), one not sent now stays in the client, and the commit sends and
// commits both at once. An aborted transaction's records, sent early, stay invisible to read_committed
// readers. A record one call could not send in its time (100 ms) is sent by the next.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EosProducer } from '../../runtime/streams/eos-producer.js';
import { createTestTopic, deleteTestTopics, readFromStart, testSettings } from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';

const suffix = randomUUID().slice(0, 8);
const sentNow = `t-send-now-${suffix}`;
const lingering = `t-lingering-${suffix}`;
const settings = () => testSettings(testStack().brokers);
const LINGER_MS = 20_000;

const record = (topic: string, key: string) => ({
  topic,
  partition: 0,
  key: Buffer.from(key),
  value: Buffer.from(`value of ${key}`),
  timestamp: Date.now(),
});

/** A transactional producer whose records wait the whole LINGER_MS unless sent now. */
const lingeringProducer = (transactionalId: string) =>
  new EosProducer({
    settings: settings(),
    transactionalId,
    // librdkafka requires the delivery timeout (the transaction timeout here) above the linger.
    transactionTimeoutMs: 45_000,
    maxMessageBytes: 1_048_588,
    lingerMs: LINGER_MS,
  });

/**
 * Reads a partition's first `count` records as read_uncommitted while asking the producer to send now every
 * 250 ms, as a live stage does after each poll: one sendNow() flushes for 100 ms at most, and on a busy
 * broker a partition's first record in a transaction can take longer (the coordinator adds the partition
 * first), which leaves it for the next call.
 */
async function readWhileSendingNow(producer: EosProducer, topic: string, count: number) {
  producer.sendNow();
  const again = setInterval(() => producer.sendNow(), 250);
  try {
    return await readFromStart(settings(), topic, count, 15_000, 'read_uncommitted');
  } finally {
    clearInterval(again);
  }
}

describe('the transactional producer’s sendNow()', () => {
  beforeAll(async () => {
    await createTestTopic(settings(), sentNow, 1);
    await createTestTopic(settings(), lingering, 1);
  });
  afterAll(() => deleteTestTopics(settings(), [sentNow, lingering]));

  it('sends an open transaction’s records before their linger, and the commit sends the rest', async () => {
    const producer = lingeringProducer(`test-send-now-${suffix}`);
    await producer.open();
    try {
      await producer.begin();
      expect(producer.send(record(lingering, 'stays'))).toBeUndefined();
      // Not sent now: a second on, it is still in the client, not on the partition.
      expect(await readFromStart(settings(), lingering, 1, 1_000, 'read_uncommitted')).toEqual([]);

      expect(producer.send(record(sentNow, 'goes'))).toBeUndefined();
      const uncommitted = await readWhileSendingNow(producer, sentNow, 1);
      expect(uncommitted.map((m) => m.key?.toString())).toEqual(['goes']);
      // Not committed yet: invisible to the stages' read_committed readers.
      expect(await readFromStart(settings(), sentNow, 1, 1_000)).toEqual([]);

      const started = Date.now();
      await producer.commit(20_000);
      expect(Date.now() - started).toBeLessThan(LINGER_MS / 2);
      expect((await readFromStart(settings(), lingering, 1, 15_000)).map((m) => m.key?.toString())).toEqual([
        'stays',
      ]);
      expect((await readFromStart(settings(), sentNow, 1, 15_000)).map((m) => m.key?.toString())).toEqual([
        'goes',
      ]);
    } finally {
      await producer.close();
    }
  });

  it('lets an aborted transaction’s records, sent before its end, reach no read_committed reader', async () => {
    const aborted = `t-send-now-aborted-${suffix}`;
    await createTestTopic(settings(), aborted, 1);
    const producer = lingeringProducer(`test-send-now-abort-${suffix}`);
    await producer.open();
    try {
      await producer.begin();
      expect(producer.send(record(aborted, 'undone'))).toBeUndefined();
      // On the partition before the abort (as a stage's records are when a rebalance or a failure aborts)…
      const early = await readWhileSendingNow(producer, aborted, 1);
      expect(early.map((m) => m.key?.toString())).toEqual(['undone']);
      await producer.abort(20_000);
      // …then aborted: the stages' readers never see it, and the next transaction's record alone is there.
      await producer.begin();
      expect(producer.send(record(aborted, 'kept'))).toBeUndefined();
      await producer.commit(20_000);
      const committed = await readFromStart(settings(), aborted, 2, 3_000);
      expect(committed.map((m) => m.key?.toString())).toEqual(['kept']);
    } finally {
      await producer.close();
      await deleteTestTopics(settings(), [aborted]);
    }
  });

  it('sends now, at the next call, what a call before could not send in its time', async () => {
    // The topic does not exist yet when its record is produced: the first sendNow() cannot send it (no
    // partition leader known) and times out. Once the topic exists, the next call must send it, well
    // before the 20 s linger would.
    const late = `t-send-now-late-${suffix}`;
    const producer = lingeringProducer(`test-send-now-late-${suffix}`);
    await producer.open();
    try {
      await producer.begin();
      expect(producer.send(record(late, 'late'))).toBeUndefined();
      producer.sendNow();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await createTestTopic(settings(), late, 1);
      const started = Date.now();
      const uncommitted = await readWhileSendingNow(producer, late, 1);
      expect(uncommitted.map((m) => m.key?.toString())).toEqual(['late']);
      expect(Date.now() - started).toBeLessThan(LINGER_MS / 2);
      await producer.commit(20_000);
    } finally {
      await producer.close();
      await deleteTestTopics(settings(), [late]);
    }
  });
});

// readToEnd (changelog restore, replay, redrive, tail) against the real broker: a read_committed read
// ends at the high watermark its start saw, so a transaction still open below it (committed a moment
// before the read, its markers not written yet; or still being written) is waited for, never left out.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import {
  createTestTopic,
  deleteTestTopics,
  openTransaction,
  produceAll,
  testSettings,
} from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';

const topic = `t-read-to-end-${randomUUID().slice(0, 8)}`;
const settings = () => testSettings(testStack().brokers);

/** Reads the partition to its end; the keys read, and whether it ended within `ms`. */
function read(): { keys: string[]; done: Promise<void> } {
  const keys: string[] = [];
  const done = readToEnd({
    settings: settings(),
    topic,
    partitions: [{ partition: 0 }],
    onRecord: ({ key }) => {
      keys.push(key?.toString() ?? '');
    },
  }).then(() => undefined);
  return { keys, done };
}

const settledWithin = (promise: Promise<void>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('reading a partition to its end, read_committed', () => {
  beforeAll(async () => {
    await createTestTopic(settings(), topic, 1);
    await produceAll(settings(), topic, [{ key: 'before', value: Buffer.from('1'), partition: 0 }]);
  });
  afterAll(() => deleteTestTopics(settings(), [topic]));

  it('waits for a transaction open below the end and reads it once committed', async () => {
    const open = await openTransaction(settings(), topic, [
      { key: 'in-txn-1', value: '2', partition: 0 },
      { key: 'in-txn-2', value: '3', partition: 0 },
    ]);
    const reading = read();
    // Up to the last stable offset it would have ended by now, without the transaction's records.
    expect(await settledWithin(reading.done, 1_500)).toBe(false);
    await open.commit();
    await reading.done;
    expect(reading.keys).toEqual(['before', 'in-txn-1', 'in-txn-2']);
  });

  it('waits for a transaction open below the end and leaves it out once aborted', async () => {
    const open = await openTransaction(settings(), topic, [{ key: 'aborted', value: '4', partition: 0 }]);
    const reading = read();
    expect(await settledWithin(reading.done, 1_500)).toBe(false);
    await open.abort();
    await reading.done;
    expect(reading.keys).toEqual(['before', 'in-txn-1', 'in-txn-2']);
  });
});

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
  produceAborted,
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

describe('reading partitions to their ends in many batches', () => {
  const many = `t-read-to-end-batches-${randomUUID().slice(0, 8)}`;
  const PER_PARTITION = 400;
  const expected = new Map<number, string[]>();

  beforeAll(async () => {
    await createTestTopic(settings(), many, 3);
    for (let partition = 0; partition < 3; partition++) {
      const keys = Array.from({ length: PER_PARTITION }, (_, i) => `p${partition}-${i}`);
      expected.set(partition, keys);
      // In transactions, as changelogs are written: markers between the records, one at each end.
      for (let from = 0; from < keys.length; from += 100) {
        const open = await openTransaction(
          settings(),
          many,
          keys.slice(from, from + 100).map((key) => ({ key, value: 'v', partition })),
        );
        await open.commit();
      }
    }
    await produceAborted(settings(), many, [{ key: 'aborted', value: 'x', partition: 1 }]);
  });
  afterAll(() => deleteTestTopics(settings(), [many]));

  // The next batch is taken while the last is handed over: every record below the end still comes
  // exactly once, in order, whether a batch ends at a partition's end or not, the callback synchronous
  // (restore) or not (replay, redrive: end-of-partition events then fire between its records).
  for (const [batchSize, async, partitions] of [
    [7, false, [0, 1, 2]],
    [100, false, [0, 1, 2]],
    [1_200, false, [0, 1, 2]],
    [13, true, [0, 1, 2]],
    // One partition, awaiting: the last batch's end-of-partition event fires while the batch before it
    // is still handed over, so the partition counts as read before that last batch's records are.
    [13, 'slowly', [1]],
  ] as const) {
    it(`reads every committed record of partitions ${partitions.join(', ')} once, in order, in batches of ${batchSize}${async ? `, awaiting each${async === 'slowly' ? ' slowly' : ''}` : ''}`, async () => {
      const read = new Map<number, string[]>();
      const result = await readToEnd({
        settings: settings(),
        topic: many,
        partitions: partitions.map((partition) => ({ partition })),
        batchSize,
        onRecord: async
          ? async ({ partition, key }) => {
              read.set(partition, [...(read.get(partition) ?? []), key!.toString()]);
              // Slowly: the next batch (and its end-of-partition event) surely arrives meanwhile.
              await new Promise((r) => (async === 'slowly' ? setTimeout(r, 1) : setImmediate(r)));
            }
          : ({ partition, key }) => {
              read.set(partition, [...(read.get(partition) ?? []), key!.toString()]);
            },
      });
      for (const partition of partitions) {
        expect(read.get(partition)).toEqual(expected.get(partition));
        expect(result.records.get(partition)).toBe(PER_PARTITION);
      }
    });
  }
});

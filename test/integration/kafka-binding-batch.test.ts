// The Kafka client's binding as hookledger installs it (tools/build/kafka-javascript-1.10.1.patch): a
// batch of consumed messages arrives as the same objects as before the patch (the same properties, in
// the same order, with the same values), its keys and values now Buffers over one block of memory per
// batch. Against the real broker, with what a batch can hold: two topics, null and empty keys and
// values, headers, a large value, explicit timestamps.
import { randomUUID } from 'node:crypto';
import type { Message } from '@confluentinc/kafka-javascript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, connect, createConsumer, disconnect, type RdConsumer } from '../../runtime/kafka/rdkafka.js';
import { writeRecords } from '../../runtime/kafka/write-records.js';
import {
  createTestTopic,
  deleteTestTopics,
  produceAll,
  type TestRecord,
  testSettings,
} from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';

const suffix = randomUUID().slice(0, 8);
const topicA = `t-binding-a-${suffix}`;
const topicB = `t-binding-b-${suffix}`;
const settings = () => testSettings(testStack().brokers);
const at = Date.UTC(2026, 10, 28, 3, 0, 0);

/** The properties a message had before the patch, in their order: `headers` only when it has any. */
const PROPERTIES = ['value', 'size', 'key', 'topic', 'offset', 'partition', 'timestamp', 'leaderEpoch'];
const WITH_HEADERS = ['value', 'headers', ...PROPERTIES.slice(1)];

const records: Record<string, TestRecord[]> = {
  [topicA]: [
    { key: 'wh_1', value: '{"a":1}', partition: 0, timestamp: at },
    { key: null, value: 'no key', partition: 0, timestamp: at + 1 },
    { key: 'tombstone', value: null, partition: 0, timestamp: at + 2 },
    { key: 'empty', value: Buffer.alloc(0), partition: 0, timestamp: at + 3 },
    { key: Buffer.alloc(0), value: 'empty key', partition: 0, timestamp: at + 4 },
    { key: 'large', value: Buffer.alloc(70_000, 'x'), partition: 0, timestamp: at + 5 },
    {
      key: 'headers',
      value: 'h',
      partition: 0,
      timestamp: at + 6,
      headers: { one: '1', two: Buffer.from([0, 2]) },
    },
    { key: 'wh_2', value: 'ü€😀', partition: 0, timestamp: at + 7 },
  ],
  [topicB]: [
    { key: 'b-1', value: 'first of b', partition: 0, timestamp: at + 8 },
    { key: 'b-2', value: 'second of b', partition: 0, timestamp: at + 9 },
  ],
};
/**
 * A zero-length value and key with memory behind them (a slice of Node's pool) go to the broker as empty,
 * not as null: a Buffer.alloc(0) has no memory, and the producer sends it as null (the records above).
 */
const emptyBytes = () => Buffer.from('x').subarray(1);
const emptyOnTheWire: TestRecord[] = [
  { key: 'empty-bytes', value: emptyBytes(), partition: 0, timestamp: at + 10 },
  { key: emptyBytes(), value: Buffer.from('empty key bytes'), partition: 0, timestamp: at + 11 },
];
records[topicB].push(...emptyOnTheWire);
const expectedCount = records[topicA].length + records[topicB].length;

const bytes = (value: string | Buffer | null) => (value === null ? null : Buffer.from(value));

/** Every message of both topics from their first offsets, in as few consume calls as it takes. */
async function consumeAll(): Promise<Message[][]> {
  const consumer = createConsumer(
    settings(),
    { 'group.id': `test-binding-${suffix}`, 'enable.auto.commit': false } as never,
    'test-binding',
  );
  await connect(consumer);
  try {
    consumer.setDefaultConsumeTimeout(1_000);
    (consumer as RdConsumer).setDefaultIsTimeoutOnlyForFirstMessage(false);
    consumer.assign([
      { topic: topicA, partition: 0, offset: -2 },
      { topic: topicB, partition: 0, offset: -2 },
    ]);
    const batches: Message[][] = [];
    const deadline = Date.now() + 30_000;
    while (batches.flat().length < expectedCount && Date.now() < deadline) {
      const batch = await call<Message[]>('consume', (cb) => consumer.consume(1_000, cb as never));
      if (batch.length > 0) batches.push(batch);
    }
    return batches;
  } finally {
    await disconnect(consumer);
  }
}

describe("the Kafka client's batch of consumed messages", () => {
  let batches: Message[][] = [];

  beforeAll(async () => {
    await createTestTopic(settings(), topicA, 1);
    await createTestTopic(settings(), topicB, 1);
    await produceAll(settings(), topicA, records[topicA]);
    await produceAll(settings(), topicB, records[topicB].slice(0, -emptyOnTheWire.length));
    await writeRecords(settings(), topicB, emptyOnTheWire as never);
    batches = await consumeAll();
  });
  afterAll(() => deleteTestTopics(settings(), [topicA, topicB]));

  it('has every message with the properties, order and values it had before the patch', () => {
    const messages = batches.flat();
    expect(messages).toHaveLength(expectedCount);
    for (const topic of [topicA, topicB]) {
      const read = messages.filter((m) => m.topic === topic);
      expect(read).toHaveLength(records[topic].length);
      read.forEach((message, offset) => {
        const sent = records[topic][offset];
        expect(Object.keys(message)).toEqual(sent.headers === undefined ? PROPERTIES : WITH_HEADERS);
        expect(message.offset).toBe(offset);
        expect(message.partition).toBe(0);
        expect(message.timestamp).toBe(sent.timestamp);
        expect(message.leaderEpoch).toBeGreaterThanOrEqual(0);
        const onTheWire = emptyOnTheWire.includes(sent);
        // A Buffer.alloc(0) was sent as null (no memory to point at); an empty slice as empty bytes.
        const value =
          sent.value === null || (!onTheWire && bytes(sent.value)?.length === 0) ? null : bytes(sent.value);
        if (value === null) expect(message.value).toBeNull();
        else {
          expect(Buffer.isBuffer(message.value)).toBe(true);
          expect(message.value?.equals(value)).toBe(true);
        }
        expect(message.size).toBe(value?.length ?? 0);
        const key =
          sent.key === null || (!onTheWire && bytes(sent.key)?.length === 0) ? null : bytes(sent.key);
        if (key === null) expect(message.key).toBeNull();
        else {
          expect(Buffer.isBuffer(message.key)).toBe(true);
          expect(Buffer.from(message.key as Buffer).equals(key)).toBe(true);
        }
      });
    }
    const withHeaders = messages.find((m) => m.headers !== undefined);
    expect(withHeaders?.headers).toEqual([{ one: Buffer.from('1') }, { two: Buffer.from([0, 2]) }]);
  });

  it("holds a batch's keys and values in one block, each a Buffer of its own range (the patch is installed)", () => {
    const [first] = batches;
    const buffers = first
      .flatMap((m) => [m.key, m.value])
      .filter((b): b is Buffer => Buffer.isBuffer(b) && b.length > 0);
    expect(buffers.length).toBeGreaterThan(2);
    // Without the patch each key and value has an ArrayBuffer of its own.
    expect(new Set(buffers.map((b) => b.buffer)).size).toBe(1);
    const ranges = buffers.map((b) => [b.byteOffset, b.byteOffset + b.length]).sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0]).toBeGreaterThanOrEqual(ranges[i - 1][1]);
    // The block holds exactly the batch's keys and values: none went to a Buffer of its own.
    const held = first.flatMap((m) => [m.key, m.value]).filter((b): b is Buffer => Buffer.isBuffer(b));
    expect(held.reduce((sum, b) => sum + b.length, 0)).toBe(buffers[0].buffer.byteLength);
  });

  it('keeps what a batch handed over intact when it is written to, and after later batches', async () => {
    const messages = batches.flat();
    const before = messages.map((m) => [bytes(m.key as Buffer | null), bytes(m.value)]);
    const large = messages.find((m) => m.key?.toString() === 'large');
    large?.value?.fill(0);
    await consumeAll();
    messages.forEach((message, i) => {
      if (message === large) return;
      expect(bytes(message.key as Buffer | null)).toEqual(before[i][0]);
      expect(bytes(message.value)).toEqual(before[i][1]);
    });
  });
});

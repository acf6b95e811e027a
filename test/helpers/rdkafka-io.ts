// Test-side Kafka plumbing on librdkafka: write records and wait for their delivery; read a topic from
// its start; create and delete test topics.
import { randomUUID } from 'node:crypto';
import type { Message } from '@confluentinc/kafka-javascript';
import { pino } from 'pino';
import { withAdmin } from '../../runtime/kafka/admin.js';
import {
  call,
  connect,
  createConsumer,
  createProducer,
  disconnect,
  type KafkaError,
  type KafkaSettings,
} from '../../runtime/kafka/rdkafka.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';

/** Settings for a test client: quiet unless TEST_LOG_LEVEL says otherwise. */
export function testSettings(
  brokers: readonly string[],
  clientId = `test-${randomUUID().slice(0, 8)}`,
): KafkaSettings {
  return { brokers, clientId, logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) };
}

export type TestRecord = Omit<OutRecord, 'value'> & {
  /** null: a tombstone. */
  value: string | Buffer | null;
};

/** Produces every record (idempotent, acks=all) and resolves once each has its delivery report. */
export async function produceAll(
  settings: KafkaSettings,
  topic: string,
  records: readonly TestRecord[],
): Promise<void> {
  await writeRecords(
    settings,
    topic,
    records.map((r) => ({ ...r, value: r.value === null ? null : Buffer.from(r.value) })),
  );
}

export interface ReadMessage {
  partition: number;
  key: Buffer | null;
  value: Buffer | null;
}

/**
 * Reads every partition of `topic` from its first offset (no group, nothing committed) until `count`
 * messages came, or `timeoutMs` passed: then it returns what it has. read_committed (librdkafka's default)
 * unless `isolation` says otherwise.
 */
export async function readFromStart(
  settings: KafkaSettings,
  topic: string,
  count: number,
  timeoutMs = 30_000,
  isolation: 'read_committed' | 'read_uncommitted' = 'read_committed',
): Promise<ReadMessage[]> {
  const [description] = await withAdmin(settings, (admin) => admin.describeTopics([topic]));
  if (description === undefined) throw new Error(`topic ${topic} does not exist`);
  const consumer = createConsumer(
    settings,
    {
      'group.id': `test-reader-${randomUUID()}`,
      'enable.auto.commit': false,
      'isolation.level': isolation,
    } as never,
    'test-reader',
  );
  const messages: ReadMessage[] = [];
  await connect(consumer);
  try {
    // -2: librdkafka's logical "first offset of the partition".
    consumer.assign(description.partitions.map(({ partition }) => ({ topic, partition, offset: -2 })));
    const deadline = Date.now() + timeoutMs;
    while (messages.length < count && Date.now() < deadline) {
      const batch = await call<Message[]>('consume', (cb) => consumer.consume(100, cb as never)).catch(
        (error: KafkaError) => {
          // A broker restarting: the consumer reconnects by itself, keep reading until the deadline.
          if (error.retriable) return [] as Message[];
          throw error;
        },
      );
      for (const m of batch)
        messages.push({
          partition: m.partition,
          key: m.key ? Buffer.from(m.key) : null,
          value: m.value ?? null,
        });
    }
  } finally {
    await disconnect(consumer);
  }
  return messages;
}

/** Creates a topic for a test (replication factor 1), with the given configuration. */
export async function createTestTopic(
  settings: KafkaSettings,
  topic: string,
  partitions: number,
  config: Record<string, string> = {},
): Promise<void> {
  await withAdmin(settings, (admin) =>
    admin.createTopics([{ name: topic, partitions, replicationFactor: 1, configs: config }]),
  );
}

/** Deletes test topics; ones already gone are fine. */
export async function deleteTestTopics(settings: KafkaSettings, topics: readonly string[]): Promise<void> {
  await withAdmin(settings, (admin) => admin.deleteTopics(topics)).catch(() => undefined);
}

/** A transaction left open with records in it (flushed to the broker): the test ends it when it wants. */
export interface OpenTransaction {
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** Writes the records in a transaction and leaves it open: the caller commits or aborts it. */
export async function openTransaction(
  settings: KafkaSettings,
  topic: string,
  records: readonly TestRecord[],
): Promise<OpenTransaction> {
  const producer = createProducer(
    settings,
    { 'transactional.id': `test-txn-${randomUUID()}`, 'enable.idempotence': true },
    'test-transactional-producer',
  );
  await connect(producer);
  const end = async (how: 'commit' | 'abort') => {
    try {
      if (how === 'commit') await call('commit transaction', (cb) => producer.commitTransaction(10_000, cb));
      else await call('abort transaction', (cb) => producer.abortTransaction(10_000, cb));
    } finally {
      await disconnect(producer);
    }
  };
  try {
    await call('init transactions', (cb) => producer.initTransactions(10_000, cb));
    await call('begin transaction', (cb) => producer.beginTransaction(cb));
    for (const { key, value, partition } of records) {
      producer.produce(
        topic,
        partition ?? null,
        value === null ? null : Buffer.from(value),
        key === null ? null : Buffer.from(key),
      );
    }
    await call('flush', (cb) => producer.flush(10_000, cb));
  } catch (error) {
    await disconnect(producer);
    throw error;
  }
  return { commit: () => end('commit'), abort: () => end('abort') };
}

/** Writes the records in a transaction and aborts it: a read_committed reader must never see them. */
export async function produceAborted(
  settings: KafkaSettings,
  topic: string,
  records: readonly TestRecord[],
): Promise<void> {
  await (await openTransaction(settings, topic, records)).abort();
}

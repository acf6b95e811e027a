// Reads changelog partitions read_committed from their start to the end offset taken when restore began.
//
// kafkajs has no manual assignment (#373), so the reader is a throwaway consumer group (a unique id, no
// commits) that gets every partition of the changelog and reads only the ones asked for. Its end is the
// fetch position reaching the end offset, not "saw offset end-1": the last offset may be a transaction
// marker, which a read_committed reader never receives as a message. kafkajs reports batches that held
// only such records through END_BATCH_PROCESS (runner.js, isEmptyDueToFiltering, #1256) without calling
// eachBatch, so the position is followed from both.
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Logger } from '../log.js';
import type { ChangelogRecord } from './store.js';

export interface RestoreOptions {
  kafka: Kafka;
  topic: string;
  partitions: readonly number[];
  /** Called for every committed record below the end offset, in offset order per partition. */
  onRecord(partition: number, record: ChangelogRecord): void;
  logger: Logger;
  /** The throwaway group is named `<prefix>.restore.<uuid>`. */
  groupIdPrefix: string;
  /** Gives up after this long without progress (the broker is gone): the caller retries. */
  stallTimeoutMs?: number;
}

export interface RestoreResult {
  /** Records applied per partition. */
  records: Map<number, number>;
  durationMs: number;
}

/** The [low, high) offsets of each partition of a topic right now. */
async function endOffsets(kafka: Kafka, topic: string): Promise<Map<number, { low: bigint; high: bigint }>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
  } finally {
    await admin.disconnect();
  }
}

export async function restoreChangelog({
  kafka,
  topic,
  partitions,
  onRecord,
  logger,
  groupIdPrefix,
  stallTimeoutMs = 60_000,
}: RestoreOptions): Promise<RestoreResult> {
  const started = Date.now();
  const records = new Map<number, number>(partitions.map((p) => [p, 0]));
  const offsets = await endOffsets(kafka, topic);
  // An empty partition (low = high) needs no reading at all.
  const ends = new Map<number, bigint>();
  for (const partition of partitions) {
    const found = offsets.get(partition);
    if (found === undefined) throw new Error(`changelog ${topic} has no partition ${partition}`);
    if (found.high > found.low) ends.set(partition, found.high);
  }
  if (ends.size === 0) return { records, durationMs: Date.now() - started };

  const positions = new Map<number, bigint>();
  const groupId = `${groupIdPrefix}.restore.${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
    retry: { retries: 10 },
  });
  const log = logger.child({ component: 'restore', topic, groupId });

  let finish!: () => void;
  let fail!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  let lastProgress = Date.now();
  const advance = (partition: number, next: bigint) => {
    if (!ends.has(partition)) return;
    if (next > (positions.get(partition) ?? -1n)) {
      positions.set(partition, next);
      lastProgress = Date.now();
    }
    for (const [p, end] of ends) if ((positions.get(p) ?? -1n) < end) return;
    finish();
  };

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const others = (payload.memberAssignment[topic] ?? []).filter((p) => !ends.has(p));
    if (others.length > 0) consumer.pause([{ topic, partitions: others }]);
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic === topic) advance(payload.partition, BigInt(payload.lastOffset) + 1n);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => fail(payload.error));
  const stall = setInterval(() => {
    if (Date.now() - lastProgress > stallTimeoutMs) {
      fail(new Error(`restore of ${topic} made no progress for ${stallTimeoutMs} ms`));
    }
  }, 1_000);

  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const end = ends.get(batch.partition);
        if (end === undefined) return;
        let applied = 0;
        for (const message of batch.messages) {
          // Nothing past the end belongs to this restore (none should exist: we own the producer).
          if (BigInt(message.offset) >= end) break;
          onRecord(batch.partition, {
            key: message.key?.toString('utf8') ?? '',
            value: message.value,
            timestamp: Number(message.timestamp),
          });
          applied++;
        }
        records.set(batch.partition, (records.get(batch.partition) ?? 0) + applied);
        advance(batch.partition, BigInt(batch.lastOffset()) + 1n);
      },
    });
    await done;
  } finally {
    clearInterval(stall);
    await consumer
      .disconnect()
      .catch((error: unknown) => log.warn({ err: error }, 'restore reader disconnect failed'));
  }
  const durationMs = Date.now() - started;
  log.debug({ partitions: Object.fromEntries(records), durationMs }, 'changelog restored');
  return { records, durationMs };
}

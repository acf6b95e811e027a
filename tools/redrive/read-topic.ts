// Reads a topic read_committed from its start to the end offsets taken at the start, in a throwaway
// group that commits nothing, handing each record (async) to the caller in offset order per partition.
import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';

export interface ReadRecord {
  partition: number;
  message: KafkaMessage;
}

export async function readTopicToEnd(
  kafka: Kafka,
  topic: string,
  onRecord: (record: ReadRecord) => Promise<void>,
  groupIdPrefix: string,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  let offsets: { partition: number; low: string; high: string }[];
  try {
    offsets = await admin.fetchTopicOffsets(topic);
  } finally {
    await admin.disconnect();
  }
  const ends = new Map(
    offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]),
  );
  if (ends.size === 0) return;
  const positions = new Map<number, bigint>();
  let finish!: () => void;
  let fail!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  // The last offset may be a transaction marker a read_committed reader never receives (the router
  // writes the DLQ in transactions): the end is the position reaching the end offset.
  const advance = (partition: number, next: bigint) => {
    if (next > (positions.get(partition) ?? -1n)) positions.set(partition, next);
    for (const [p, end] of ends) if ((positions.get(p) ?? -1n) < end) return;
    finish();
  };
  const consumer = kafka.consumer({
    groupId: `${groupIdPrefix}.${randomUUID()}`,
    readUncommitted: false,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic === topic) advance(payload.partition, BigInt(payload.lastOffset) + 1n);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) fail(payload.error);
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const end = ends.get(batch.partition);
        if (end === undefined) return;
        for (const message of batch.messages) {
          if (BigInt(message.offset) >= end) break;
          await onRecord({ partition: batch.partition, message });
        }
        advance(batch.partition, BigInt(batch.lastOffset()) + 1n);
      },
    });
    await done;
  } finally {
    await consumer.disconnect();
  }
}

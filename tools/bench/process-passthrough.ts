// The baseline of `npm run bench:process`: a bare kafkajs exactly-once pass-through (consume, copy
// the bytes to another topic, offsets in the same transaction; one transactional producer per input
// partition), with nothing else: what exactly-once costs with kafkajs before any processing.
import kafkajs, { type Kafka, type Producer } from 'kafkajs';

export interface PassThroughResult {
  records: number;
  seconds: number;
}

export async function runPassThrough({
  kafka,
  input,
  output,
  groupId,
  expected,
  concurrency,
  onRecords = () => undefined,
}: {
  kafka: Kafka;
  input: string;
  output: string;
  groupId: string;
  expected: number;
  concurrency: number;
  /** Called with each committed batch's record count (the bench follows progress through it). */
  onRecords?: (count: number) => void;
}): Promise<PassThroughResult> {
  const producers = new Map<number, Producer>();
  const producerFor = async (partition: number) => {
    let producer = producers.get(partition);
    if (producer === undefined) {
      producer = kafka.producer({
        transactionalId: `${groupId}-${input}-${partition}`,
        idempotent: true,
        maxInFlightRequests: 1,
        transactionTimeout: 10_000,
        createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      producers.set(partition, producer);
    }
    return producer;
  };
  const consumer = kafka.consumer({ groupId, readUncommitted: false });
  let seen = 0;
  let started = 0;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [input], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: concurrency,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (started === 0) started = performance.now();
      const producer = await producerFor(batch.partition);
      const transaction = await producer.transaction();
      try {
        await transaction.send({
          topic: output,
          messages: batch.messages.map((m) => ({ key: m.key, value: m.value, partition: batch.partition })),
        });
        await transaction.sendOffsets({
          consumerGroupId: groupId,
          topics: [
            {
              topic: input,
              partitions: [
                { partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() },
              ],
            },
          ],
        });
        await transaction.commit();
      } catch (error) {
        await transaction.abort().catch(() => undefined);
        throw error;
      }
      resolveOffset(batch.lastOffset());
      await heartbeat();
      seen += batch.messages.length;
      onRecords(batch.messages.length);
      if (seen >= expected) finish();
    },
  });
  await done;
  const seconds = (performance.now() - started) / 1000;
  await consumer.disconnect();
  for (const producer of producers.values()) await producer.disconnect();
  return { records: seen, seconds };
}

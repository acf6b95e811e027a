// Producers for the stream kit: one transactional producer per input partition (exactly-once), or one
// idempotent producer shared by the app (at-least-once).
import kafkajs, { type Kafka, type Producer } from 'kafkajs';

// The Java-compatible murmur2 partitioner (kafkajs 2's default), named so kafkajs does not warn about it.
const createPartitioner = kafkajs.Partitioners.DefaultPartitioner;

/** `<app>-<topic>-<partition>`: one id per input partition, so its owner fences the previous owner. */
export function transactionalIdFor(app: string, topic: string, partition: number): string {
  return `${app}-${topic}-${partition}`;
}

export interface OpenTransactionalOptions {
  kafka: Kafka;
  transactionalId: string;
  /** Short (~10 s): a dead owner's open transaction blocks read_committed readers until it times out. */
  transactionTimeoutMs: number;
}

/**
 * Connects a transactional producer and fences any previous owner of its transactional id.
 *
 * Zombie fencing happens here. InitProducerId with our transactional id bumps its epoch: the broker
 * then refuses every request of a producer with an older epoch (a paused or partitioned instance that
 * still believes it owns the partition), and aborts the transaction it left open. Only after this may
 * the caller restore the changelog: what the zombie committed is then final and visible, what it had
 * open is aborted, and nothing more can come from it. Because kafkajs's sendOffsets carries no group
 * generation (no KIP-447), this per-partition fencing is what keeps a zombie's offsets and outputs out.
 *
 * kafkajs 2.2.4 detail (producer/index.js): `connect()` of an idempotent producer runs a
 * *non-transactional* InitProducerId (no transactional id, so it fences nothing); the transactional
 * one runs on the first `transaction()`. So we open and abort an empty transaction (which sends no
 * EndTxn) to make the fencing happen now, before restore, rather than at the first batch.
 */
export async function openTransactionalProducer({
  kafka,
  transactionalId,
  transactionTimeoutMs,
}: OpenTransactionalOptions): Promise<Producer> {
  const producer = kafka.producer({
    transactionalId,
    idempotent: true,
    // One request in flight and one transaction at a time: kafkajs loses records with concurrent
    // sends on one idempotent producer (#1005, #598).
    maxInFlightRequests: 1,
    transactionTimeout: transactionTimeoutMs,
    allowAutoTopicCreation: false,
    createPartitioner,
  });
  await producer.connect();
  try {
    const fence = await producer.transaction();
    await fence.abort();
  } catch (error) {
    await producer.disconnect().catch(() => undefined);
    throw error;
  }
  return producer;
}

/** The idempotent (not transactional) producer of an at-least-once app. */
export async function openIdempotentProducer(kafka: Kafka): Promise<Producer> {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  return producer;
}

/** Serializes calls: one send at a time on an idempotent producer shared by several partitions. */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(work, work);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

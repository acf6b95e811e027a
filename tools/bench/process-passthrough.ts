// The floor of `npm run bench:process`: a bare librdkafka exactly-once pass-through in the runtime's
// model (runtime/streams/stream-runner.ts, KIP-447): one read_committed consumer and one transactional
// producer; consume a batch → produce byte copies to the same partition of another topic → at 100 ms
// or N records sendOffsetsToTransaction(offsets, consumer) → commitTransaction. Nothing else: what
// exactly-once costs with librdkafka before any processing.
import type { KafkaConsumer, Message, Producer } from '@confluentinc/kafka-javascript';
import {
  call,
  connect,
  createConsumer,
  createProducer,
  disconnect,
  ERRORS,
  type KafkaSettings,
  type RdConsumer,
  toKafkaError,
} from '../../runtime/kafka/rdkafka.js';

/**
 * The router's writes without its work (`--fan-out`): per record read, the records the dedupe-router
 * writes for a delivery, in their measured shape (docs/benchmarks.md, "The router's writes without its
 * work"), made of byte ranges of the record read. Every 11th record writes nothing, as a retry does
 * (the bench's load: 20,000 retries among 220,000 deliveries).
 */
export interface FanOutTopics {
  /** webhooks.unique: the envelope's bytes as read. */
  unique: string;
  /** The six entity streams, one a record in turn; the third (energy-switch) also writes a commission. */
  entities: readonly string[];
  commission: string;
  /** The dedupe changelog: the key and a 10-byte value. */
  changelog: string;
}

/** The fan-out's topics under a bench prefix (made by process-run.ts's prefill, shaped as the router's). */
export function fanOutTopics(prefix: string): FanOutTopics {
  return {
    unique: `${prefix}fanout.unique`,
    entities: Array.from({ length: 6 }, (_, n) => `${prefix}fanout.entity-${n}`),
    commission: `${prefix}fanout.commission`,
    changelog: `${prefix}fanout.changelog`,
  };
}

/** Mean value bytes the router wrote per topic in the bench's load (its log segments, 40,000 ids). */
const ENTITY_BYTES = 225;
const ENERGY_SWITCH_INDEX = 2;
const COMMISSION_BYTES = 373;
const CHANGELOG_VALUE = Buffer.alloc(10, 1);
const RETRY_EVERY = 11;

/** The router's records for the `index`th record read, as [topic, value] (its key is the record's). */
export function fanOutOf(message: Message, fanOut: FanOutTopics, index: number): [string, Buffer][] {
  if (index % RETRY_EVERY === RETRY_EVERY - 1) return [];
  const value = message.value ?? Buffer.alloc(0);
  const kind = index % fanOut.entities.length;
  const entityBytes = kind === ENERGY_SWITCH_INDEX ? value.length : ENTITY_BYTES;
  const out: [string, Buffer][] = [
    [fanOut.unique, value],
    [fanOut.entities[kind]!, value.subarray(0, entityBytes)],
    [fanOut.changelog, CHANGELOG_VALUE],
  ];
  if (kind === ENERGY_SWITCH_INDEX) out.push([fanOut.commission, value.subarray(0, COMMISSION_BYTES)]);
  return out;
}

export interface PassThroughResult {
  records: number;
  transactions: number;
  seconds: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function produceCopy(
  producer: Producer,
  topic: string,
  message: Message,
  value = message.value,
): Promise<void> | undefined {
  try {
    producer.produce(topic, message.partition, value, message.key, message.timestamp ?? null);
    return undefined;
  } catch (error) {
    const e = toKafkaError(error, `produce to ${topic}`);
    if (e.code !== ERRORS.ERR__QUEUE_FULL) throw e;
    // The local queue is full (as the runtime's EosProducer): librdkafka drains it; wait and retry.
    return (async () => {
      for (;;) {
        producer.poll();
        await sleep(5);
        try {
          producer.produce(topic, message.partition, value, message.key, message.timestamp ?? null);
          return;
        } catch (again) {
          if (toKafkaError(again).code !== ERRORS.ERR__QUEUE_FULL) throw again;
        }
      }
    })();
  }
}

export async function runPassThrough({
  settings,
  input,
  output,
  groupId,
  expected,
  commitIntervalMs = 100,
  commitMaxRecords = 10_000,
  maxBatchRecords = 500,
  transactionTimeoutMs = 10_000,
  fanOut,
  onCommit = () => undefined,
}: {
  settings: KafkaSettings;
  input: string;
  output: string;
  groupId: string;
  /** The records to copy before it stops by itself. */
  expected: number;
  /** The runtime's defaults: a transaction commits after 100 ms or 10,000 records. */
  commitIntervalMs?: number;
  commitMaxRecords?: number;
  /** Records taken from the consumer per consume() (the runtime's 500). */
  maxBatchRecords?: number;
  transactionTimeoutMs?: number;
  /** Writes the router's records per record read instead of one copy. */
  fanOut?: FanOutTopics;
  /** Called with each committed transaction's record count and commit seconds (the bench follows progress through it). */
  onCommit?: (records: number, seconds: number) => void;
}): Promise<PassThroughResult> {
  const opTimeoutMs = Math.max(30_000, transactionTimeoutMs * 2);
  // The runtime's EosProducer settings.
  const producer = createProducer(
    settings,
    {
      'transactional.id': `${groupId}-0`,
      'enable.idempotence': true,
      'transaction.timeout.ms': transactionTimeoutMs,
      dr_cb: false,
      'linger.ms': 100,
    } as never,
    'bench-passthrough-producer',
  );
  // The runtime's consumer settings, without static membership and cooperative assignment (one member).
  const consumer = createConsumer(
    settings,
    {
      'group.id': groupId,
      'isolation.level': 'read_committed',
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'max.partition.fetch.bytes': 1_048_576,
      'fetch.wait.max.ms': 50,
      'allow.auto.create.topics': false,
    } as never,
    'bench-passthrough-consumer',
    { 'auto.offset.reset': 'earliest' },
  ) as RdConsumer;
  consumer.setDefaultConsumeTimeout(50);
  consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);
  await connect(producer);
  await call('initTransactions', (cb) => producer.initTransactions(transactionTimeoutMs + 20_000, cb));
  await connect(consumer);
  consumer.subscribe([input]);
  const consume = () =>
    call<Message[]>('consume', (cb) => (consumer as KafkaConsumer).consume(maxBatchRecords, cb as never));

  let seen = 0;
  let transactions = 0;
  let started = 0;
  let seconds = 0;
  let inTransaction = false;
  let txStartedAt = 0;
  let txRecords = 0;
  let read = 0;
  /** The next offset to read per partition, in the open transaction. */
  const next = new Map<number, number>();
  const commit = async () => {
    const at = performance.now();
    await call('sendOffsetsToTransaction', (cb) =>
      producer.sendOffsetsToTransaction(
        [...next].map(([partition, offset]) => ({ topic: input, partition, offset })),
        consumer,
        opTimeoutMs,
        cb,
      ),
    );
    await call('commitTransaction', (cb) => producer.commitTransaction(opTimeoutMs, cb));
    inTransaction = false;
    next.clear();
    seen += txRecords;
    transactions++;
    onCommit(txRecords, (performance.now() - at) / 1000);
    txRecords = 0;
  };
  try {
    while (seen < expected) {
      const batch = await consume();
      if (batch.length > 0) {
        if (started === 0) started = performance.now();
        if (!inTransaction) {
          await call('beginTransaction', (cb) => producer.beginTransaction(cb));
          inTransaction = true;
          txStartedAt = Date.now();
        }
        for (const message of batch) {
          if (fanOut === undefined) {
            const waiting = produceCopy(producer, output, message);
            if (waiting !== undefined) await waiting;
          } else {
            for (const [topic, value] of fanOutOf(message, fanOut, read++)) {
              const waiting = produceCopy(producer, topic, message, value);
              if (waiting !== undefined) await waiting;
            }
          }
          next.set(message.partition, message.offset + 1);
        }
        txRecords += batch.length;
      }
      if (
        inTransaction &&
        (txRecords >= commitMaxRecords ||
          Date.now() - txStartedAt >= commitIntervalMs ||
          seen + txRecords >= expected)
      )
        await commit();
    }
    seconds = (performance.now() - started) / 1000;
  } catch (error) {
    if (inTransaction)
      await call('abortTransaction', (cb) => producer.abortTransaction(opTimeoutMs, cb)).catch(
        () => undefined,
      );
    throw error;
  } finally {
    await disconnect(consumer, 10_000);
    await disconnect(producer);
  }
  return { records: seen, transactions, seconds };
}

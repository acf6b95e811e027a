// Producing records and knowing each one landed: every record carries its own delivery callback (as
// librdkafka's opaque), so a caller awaits exactly its records, acknowledged with acks=all.
import type { Producer } from '@confluentinc/kafka-javascript';
import { withAdmin } from './admin.js';
import { batchBytesFor, maxMessageBytesOf } from './batch-size.js';
import {
  connect,
  createProducer,
  disconnect,
  type KafkaError,
  type KafkaSettings,
  toKafkaError,
} from './rdkafka.js';

export interface OutRecord {
  key: string | Buffer | null;
  /** null: a tombstone. */
  value: Buffer | null;
  /** The partitioner's choice (murmur2 of the key, as Java clients) when absent. */
  partition?: number;
  /** Epoch ms; the producer's clock when absent. */
  timestamp?: number;
  headers?: Readonly<Record<string, string | Buffer>>;
}

type Delivered = (error: KafkaError | undefined) => void;

/** Hands each delivery report to the callback its record was produced with. Once per producer. */
export function routeDeliveryReports(producer: Producer): void {
  producer.on('delivery-report', (error, report) => {
    (report.opaque as Delivered)(error ? toKafkaError(error, 'delivery') : undefined);
  });
}

/**
 * Produces the records on a connected producer set up with routeDeliveryReports; resolves once each
 * has its delivery report, rejects with the first failure.
 */
export async function deliverAll(
  producer: Producer,
  topic: string,
  records: readonly OutRecord[],
): Promise<void> {
  let failure: KafkaError | undefined;
  await produceEach(producer, topic, records, (_, error) => {
    failure ??= error;
  });
  if (failure) throw failure;
}

/**
 * Produces the records like deliverAll, but never rejects: resolves once each has its delivery report,
 * with each record's own outcome in order (undefined: acknowledged), so one record refused (its partition
 * under min.insync.replicas, a record too large) does not fail the others.
 */
export async function deliverEach(
  producer: Producer,
  topic: string,
  records: readonly OutRecord[],
): Promise<Array<KafkaError | undefined>> {
  const outcomes = new Array<KafkaError | undefined>(records.length).fill(undefined);
  await produceEach(producer, topic, records, (index, error) => {
    outcomes[index] = error;
  });
  return outcomes;
}

/** Produces each record with a callback of its own; resolves once every record has had its report. */
function produceEach(
  producer: Producer,
  topic: string,
  records: readonly OutRecord[],
  reported: (index: number, error: KafkaError | undefined) => void,
): Promise<void> {
  return new Promise((resolve) => {
    let waiting = records.length;
    if (waiting === 0) resolve();
    records.forEach((r, index) => {
      let done = false;
      const delivered: Delivered = (error) => {
        if (done) return;
        done = true;
        reported(index, error);
        if (--waiting === 0) resolve();
      };
      try {
        producer.produce(
          topic,
          r.partition ?? null,
          r.value,
          r.key,
          r.timestamp ?? null,
          delivered,
          r.headers ? Object.entries(r.headers).map(([name, value]) => ({ [name]: value })) : undefined,
        );
      } catch (error) {
        // Refused before queueing (local queue full, record too large, a fatal error raised): it gets no report.
        delivered(toKafkaError(error, 'produce'));
      }
    });
  });
}

/** A producer kept open for several writes to one topic: a tool that writes in chunks as it reads. */
export interface RecordWriter {
  /** Resolves once every record has its acknowledgement (acks=all); rejects with the first failure. */
  write(records: readonly OutRecord[]): Promise<void>;
  /** Like write, but resolves with each record's own outcome (deliverEach): undefined, acknowledged. */
  writeEach(records: readonly OutRecord[]): Promise<Array<KafkaError | undefined>>;
  close(): Promise<void>;
}

/**
 * The topic's max.message.bytes, or undefined when it cannot be read (a principal without DescribeConfigs):
 * the writer then batches as librdkafka does by default, which fits the broker's default limit.
 */
async function topicLimit(settings: KafkaSettings, topic: string): Promise<number | undefined> {
  try {
    const configs = await withAdmin(settings, (admin) => admin.topicConfigs([topic]));
    return maxMessageBytesOf(configs.get(topic));
  } catch {
    return undefined;
  }
}

/** Opens an idempotent producer (acks=all) for `topic`, its batches under the topic's limit (batch-size.ts). */
export async function openWriter(
  settings: KafkaSettings,
  topic: string,
  component = 'writer',
): Promise<RecordWriter> {
  const batchBytes = batchBytesFor(await topicLimit(settings, topic));
  const producer = await connect(
    createProducer(
      settings,
      { 'enable.idempotence': true, acks: -1, 'linger.ms': 5, 'batch.size': batchBytes },
      component,
    ),
  );
  routeDeliveryReports(producer);
  producer.setPollInBackground(true);
  return {
    write: (records) => deliverAll(producer, topic, records),
    writeEach: (records) => deliverEach(producer, topic, records),
    close: () => disconnect(producer),
  };
}

/** A one-off write (tools, tests): an idempotent producer, acks=all, every record acknowledged. */
export async function writeRecords(
  settings: KafkaSettings,
  topic: string,
  records: readonly OutRecord[],
): Promise<void> {
  const writer = await openWriter(settings, topic);
  try {
    await writer.write(records);
  } finally {
    await writer.close();
  }
}

// Shared by the ingest integration tests: a raw topic under a random prefix, a running ingest, and a
// reader that decodes what landed in webhooks.raw through the registry.
import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { pino } from 'pino';
import { type RunningIngest, startIngest } from '../../ingest/main.js';
import { parseSources } from '../../ingest/sources.js';
import { loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { createKafka } from '../../runtime/kafka/client.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { createSerde } from '../../schemas/serde.js';
import { topicCatalog, topicNames } from '../../schemas/topics.js';

export const quietLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export function randomPrefix(name: string): string {
  return `it-${name}-${randomBytes(4).toString('hex')}.`;
}

/** Creates webhooks.raw (only) under the prefix, as `hookledger topics` would for this body limit. */
export async function createRawTopic(
  brokers: string[],
  prefix: string,
  bodyLimit = 1_048_576,
): Promise<string> {
  const kafka = createKafka({ brokers, clientId: 'it-ingest-topics', logger: quietLogger() });
  const raw = topicNames(prefix).raw;
  const specs = topicCatalog({
    prefix,
    bodyLimit,
    dedupeWindowMs: 7 * 86_400_000,
    partitions: 3,
    replicationFactor: 1,
  }).filter((t) => t.name === raw);
  await withAdmin(kafka, (admin) => ensureTopics(admin, specs));
  return raw;
}

export interface IngestUnderTest extends RunningIngest {
  rawTopic: string;
  post(path: string, body: Buffer | string, headers?: Record<string, string>): Promise<Response>;
}

export async function runIngest(options: {
  brokers: string[];
  registryUrl: string;
  prefix: string;
  sources: unknown;
  env?: Record<string, string>;
}): Promise<IngestUnderTest> {
  const config = loadConfig({
    KAFKA_BROKERS: options.brokers.join(','),
    SCHEMA_REGISTRY_URL: options.registryUrl,
    TOPIC_PREFIX: options.prefix,
    INGEST_HOST: '127.0.0.1',
    INGEST_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  const running = await startIngest({
    config,
    sources: parseSources(JSON.stringify(options.sources)),
    logger: quietLogger(),
  });
  await waitReady(running.url);
  return {
    ...running,
    rawTopic: topicNames(options.prefix).raw,
    post: (path, body, headers = {}) =>
      fetch(`${running.url}${path}`, { method: 'POST', body: new Uint8Array(Buffer.from(body)), headers }),
  };
}

export async function waitReady(url: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${url}/readyz`).catch(() => undefined);
    if (response?.status === 200) return;
    if (Date.now() > end) throw new Error(`ingest at ${url} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface RawRecordRead {
  key: string;
  timestamp: number;
  partition: number;
  envelope: RawEnvelope;
}

/** Everything in the raw topic now (up to its end offsets), decoded through the registry. */
export async function readRaw(
  brokers: string[],
  registryUrl: string,
  topic: string,
): Promise<RawRecordRead[]> {
  const kafka: Kafka = createKafka({ brokers, clientId: 'it-ingest-reader', logger: quietLogger() });
  const serde = createSerde({ registryUrl });
  const ends = await withAdmin(kafka, (admin) => admin.fetchTopicOffsets(topic));
  const remaining = new Map(ends.map((p) => [p.partition, Number(p.high)]));
  const expected = [...remaining.values()].reduce((a, b) => a + b, 0);
  const records: RawRecordRead[] = [];
  if (expected === 0) return records;
  const consumer = kafka.consumer({ groupId: `it-reader-${randomBytes(6).toString('hex')}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const raw: Array<{ key: string; timestamp: number; partition: number; value: Buffer }> = [];
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        raw.push({
          key: message.key!.toString('utf8'),
          timestamp: Number(message.timestamp),
          partition,
          value: message.value!,
        });
        if (raw.length >= expected) done();
      },
    });
    await Promise.race([
      finished,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`read ${raw.length}/${expected}`)), 60_000),
      ),
    ]);
    for (const r of raw) {
      records.push({
        key: r.key,
        timestamp: r.timestamp,
        partition: r.partition,
        envelope: await serde.decode<RawEnvelope>(r.value),
      });
    }
  } finally {
    await consumer.disconnect();
  }
  return records;
}

// Shared by the ingest integration tests: a raw topic under a random prefix, a running ingest, and a
// reader that decodes what landed in webhooks.raw through the registry.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { type RunningIngest, startIngest } from '../../ingest/main.js';
import { parseSources } from '../../ingest/sources.js';
import { loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { type ReadRecord, readToEnd } from '../../runtime/kafka/read-to-end.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { createSerde } from '../../schemas/serde.js';
import { topicCatalog, topicNames } from '../../schemas/topics.js';
import { testSettings } from '../helpers/rdkafka-io.js';

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
  const raw = topicNames(prefix).raw;
  const specs = topicCatalog({
    prefix,
    bodyLimit,
    dedupeWindowMs: 7 * 86_400_000,
    partitions: 3,
    replicationFactor: 1,
  }).filter((t) => t.name === raw);
  await withAdmin(testSettings(brokers, 'it-ingest-topics'), (admin) => ensureTopics(admin, specs));
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
    INGEST_OPS_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  const running = await startIngest({
    config,
    sources: parseSources(JSON.stringify(options.sources)),
    logger: quietLogger(),
  });
  await waitReady(running.opsUrl);
  return {
    ...running,
    rawTopic: topicNames(options.prefix).raw,
    post: (path, body, headers = {}) =>
      fetch(`${running.url}${path}`, { method: 'POST', body: new Uint8Array(Buffer.from(body)), headers }),
  };
}

/** The environment of a `hookledger ingest` child process on the test stack, one signed source `energy`. */
export function ingestCommandEnv(options: {
  brokers: string[];
  registryUrl: string;
  prefix: string;
  port: number;
  opsPort: number;
  key: string;
}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    KAFKA_BROKERS: options.brokers.join(','),
    SCHEMA_REGISTRY_URL: options.registryUrl,
    TOPIC_PREFIX: options.prefix,
    INGEST_HOST: '127.0.0.1',
    INGEST_PORT: String(options.port),
    INGEST_OPS_PORT: String(options.opsPort),
    HOOKLEDGER_SOURCES: JSON.stringify({ energy: { keys: { k1: options.key } } }),
  };
}

/** Waits for /readyz at an ops server's base URL (ingest's opsUrl). */
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
  const settings = testSettings(brokers, 'it-ingest-reader');
  const serde = createSerde({ registryUrl });
  const partitions = await withAdmin(settings, async (admin) => {
    const [description] = await admin.describeTopics([topic]);
    if (description === undefined) throw new Error(`topic ${topic} does not exist`);
    return description.partitions.map(({ partition }) => ({ partition }));
  });
  const raw: ReadRecord[] = [];
  await readToEnd({ settings, topic, partitions, onRecord: (record) => raw.push(record) });
  const records: RawRecordRead[] = [];
  for (const r of raw) {
    records.push({
      key: r.key!.toString('utf8'),
      timestamp: r.timestamp,
      partition: r.partition,
      envelope: await serde.decode<RawEnvelope>(r.value!),
    });
  }
  return records;
}

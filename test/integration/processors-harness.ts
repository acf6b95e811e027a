// Shared by the processor integration tests: every topic under a random prefix, raw records written as
// ingest writes them, topics read back read_committed and decoded, and the stages run in-process or as
// a child process that can really be killed.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs, { type Kafka, type Message } from 'kafkajs';
import { pino } from 'pino';
import { expect } from 'vitest';
import { type Config, loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { createKafka } from '../../runtime/kafka/client.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { retry } from '../../runtime/streams/retry.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { topicCatalog, topicNames, valueSubject } from '../../schemas/topics.js';

export const quietLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function randomPrefix(name: string): string {
  return `it-${name}-${randomBytes(4).toString('hex')}.`;
}

export interface ReadRecord<T = unknown> {
  topic: string;
  partition: number;
  key: string;
  value: T | null;
  timestamp: number;
}

export class ProcessorsHarness {
  readonly kafka: Kafka;
  readonly serde: Serde;
  readonly names;
  #rawSchemaId: number | undefined;

  constructor(
    readonly stack: { brokers: string[]; registryUrl: string },
    readonly prefix: string,
    readonly partitions = 3,
    readonly env: Record<string, string> = {},
  ) {
    this.kafka = createKafka({ brokers: stack.brokers, clientId: 'it-processors', logger: quietLogger() });
    this.serde = createSerde({ registryUrl: stack.registryUrl });
    this.names = topicNames(prefix);
  }

  /** The environment a stage runs with (also passed to child processes). */
  environment(extra: Record<string, string> = {}): Record<string, string> {
    return {
      KAFKA_BROKERS: this.stack.brokers.join(','),
      SCHEMA_REGISTRY_URL: this.stack.registryUrl,
      TOPIC_PREFIX: this.prefix,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      PROCESSOR_HOST: '127.0.0.1',
      PROCESSOR_PORT: '0',
      PROCESSOR_SESSION_TIMEOUT_MS: '10000',
      ...this.env,
      ...extra,
    };
  }

  config(extra: Record<string, string> = {}): Config {
    return loadConfig(this.environment(extra));
  }

  /** Creates every topic as `hookledger topics` would and registers the value schemas. */
  async setUp(dedupeWindowMs = 7 * 86_400_000): Promise<void> {
    const specs = topicCatalog({
      prefix: this.prefix,
      bodyLimit: 1_048_576,
      dedupeWindowMs,
      partitions: this.partitions,
      replicationFactor: 1,
    });
    await withAdmin(this.kafka, async (admin) => {
      // kafkajs's createTopics (waitForLeaders) gives up on UNKNOWN_TOPIC_OR_PARTITION while the
      // broker's metadata catches up with many new partitions; a second run only verifies them.
      await retry(() => ensureTopics(admin, specs), { retries: 10, initialDelayMs: 200, maxDelayMs: 2_000 });
      // Freshly created partitions can answer "not hosted here" for a moment (metadata propagation,
      // more so when other test files create topics at the same time): wait until each one answers.
      for (const spec of specs) {
        await retry(() => admin.fetchTopicOffsets(spec.name), {
          retries: 20,
          initialDelayMs: 100,
          maxDelayMs: 1_000,
        });
      }
    });
    await this.serde.registerAll(this.prefix);
    this.#rawSchemaId = await this.serde.latestSchemaId(valueSubject(this.names.raw));
  }

  /** Writes raw envelopes as ingest does (key = webhook id, Avro via the registry), in order. */
  async produceRaw(
    envelopes: readonly RawEnvelope[],
    options: { timestamps?: readonly number[]; headers?: Record<string, string>; partition?: number } = {},
  ): Promise<void> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    try {
      const messages: Message[] = [];
      for (const [i, envelope] of envelopes.entries()) {
        messages.push({
          key: envelope.webhookId,
          value: await this.serde.encode(this.#rawSchemaId!, envelope),
          timestamp: String(options.timestamps?.[i] ?? envelope.receivedAt),
          ...(options.headers ? { headers: options.headers } : {}),
          ...(options.partition === undefined ? {} : { partition: options.partition }),
        });
      }
      for (let i = 0; i < messages.length; i += 500) {
        await producer.send({ topic: this.names.raw, messages: messages.slice(i, i + 500), acks: -1 });
      }
    } finally {
      await producer.disconnect();
    }
  }

  /** Writes raw bytes (a poison record) to the raw topic. */
  async produceBytes(key: string, value: Buffer, partition?: number): Promise<void> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    await producer.send({
      topic: this.names.raw,
      messages: [{ key, value, ...(partition === undefined ? {} : { partition }) }],
      acks: -1,
    });
    await producer.disconnect();
  }

  /** Every committed record of a topic, read_committed, values decoded (changelog values raw). */
  async read<T = unknown>(topic: string, { decode = true } = {}): Promise<ReadRecord<T>[]> {
    const admin = this.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    const raw: { partition: number; key: string; value: Buffer | null; timestamp: number }[] = [];
    await readToEnd({
      settings: { brokers: this.stack.brokers, clientId: 'it-reader', logger: quietLogger() },
      topic,
      partitions: offsets.map((o) => ({ partition: o.partition })),
      onRecord: ({ partition, key, value, timestamp }) =>
        raw.push({ partition, key: key?.toString('utf8') ?? '', value, timestamp }),
    });
    const out: ReadRecord<T>[] = [];
    for (const r of raw) {
      const value = r.value === null ? null : decode ? await this.serde.decode<T>(r.value) : (r.value as T);
      out.push({ topic, partition: r.partition, key: r.key, value, timestamp: r.timestamp });
    }
    return out;
  }

  /** Waits until the group has committed every raw offset (the stage caught up). */
  async waitCaughtUp(groupId: string, topics: readonly string[], timeoutMs = 90_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      for (;;) {
        let behind = 0;
        for (const topic of topics) {
          const highs = await admin.fetchTopicOffsets(topic);
          const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
          for (const { partition, high, low } of highs) {
            if (BigInt(high) === BigInt(low)) continue;
            const found = committed?.partitions.find((p) => p.partition === partition);
            const at = found && found.offset !== '-1' ? BigInt(found.offset) : -1n;
            if (at < BigInt(high)) behind++;
          }
        }
        if (behind === 0) return;
        if (Date.now() > end)
          throw new Error(`${groupId} did not catch up on ${topics.join(', ')} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 250));
      }
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Runs `hookledger process` as a child process (so a test can SIGKILL it); resolves once it serves
   * its ops endpoints, with their URL.
   */
  async spawnProcess(
    args: readonly string[],
    extra: Record<string, string> = {},
    startTimeoutMs = 60_000,
  ): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'tools/cli/hookledger.js'), 'process', ...args],
      {
        cwd: repoRoot,
        // Each child is its own instance (transactional id, static member) unless the test names one
        // (a restart as the same instance).
        env: {
          ...process.env,
          ...this.environment({
            LOG_LEVEL: 'info',
            HOOKLEDGER_INSTANCE_ID: `it-${randomBytes(4).toString('hex')}`,
            ...extra,
          }),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const echo = process.env.TEST_LOG_LEVEL !== undefined && process.env.TEST_LOG_LEVEL !== 'silent';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      child.stdout!.on('data', (d: Buffer) => {
        if (echo) process.stdout.write(d);
        buffered += d.toString('utf8');
        let nl = buffered.indexOf('\n');
        while (nl >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf('\n');
          try {
            const entry = JSON.parse(line) as { msg?: string; url?: string };
            if (entry.msg === 'processors running' && entry.url) resolve(entry.url);
          } catch {
            // not a log line
          }
        }
      });
      child.stderr!.on('data', (d: Buffer) => process.stderr.write(d));
      void exited.then((code) => reject(new Error(`hookledger process exited with ${code} before running`)));
      // Joining the group can wait for a rebalance; past this, say so rather than hang the test.
      setTimeout(
        () =>
          reject(
            new Error(`hookledger process ${args.join(' ')} was not running after ${startTimeoutMs} ms`),
          ),
        startTimeoutMs,
      ).unref();
    });
    return { child, url, exited };
  }
}

/** Waits for `url` to answer 200. */
export async function waitReady(url: string, timeoutMs = 90_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(url).catch(() => undefined);
    if (response?.status === 200) return;
    if (Date.now() > end) throw new Error(`${url} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const ENTITY_STREAMS = ['user', 'account', 'document', 'todo', 'energy-switch', 'other'] as const;

/** How many times each webhook id appears among the records (by the value's webhookId). */
function countById(records: { value: unknown }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records) {
    const id = (r.value as { webhookId: string }).webhookId;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Reads unique and the entity streams and checks one record per id in each, for exactly `ids`. */
export async function expectExactlyOnce(harness: ProcessorsHarness, ids: readonly string[]): Promise<void> {
  const unique = countById(await harness.read(harness.names.unique));
  expect(unique.size).toBe(ids.length);
  expect([...unique.values()].every((n) => n === 1)).toBe(true);
  const entities = new Map<string, number>();
  for (const stream of ENTITY_STREAMS) {
    for (const [id, n] of countById(await harness.read(harness.names.entity(stream)))) {
      entities.set(id, (entities.get(id) ?? 0) + n);
    }
  }
  expect(entities.size).toBe(ids.length);
  const twice = [...entities].filter(([, n]) => n !== 1);
  expect(twice).toEqual([]);
}

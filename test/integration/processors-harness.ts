// Shared by the processor integration tests: every topic under a random prefix, raw records written as
// ingest writes them, topics read back read_committed and decoded, and the stages run in-process or as
// a child process that can really be killed.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GroupDescriptions } from '@confluentinc/kafka-javascript';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { expect, onTestFailed } from 'vitest';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import { type Config, loadConfig } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import {
  call,
  connect,
  createAdmin,
  createConsumer,
  disconnect,
  type KafkaSettings,
} from '../../runtime/kafka/rdkafka.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { type OutRecord, writeRecords } from '../../runtime/kafka/write-records.js';
import { retry } from '../../runtime/streams/retry.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicCatalog, topicNames, valueSubject } from '../../schemas/topics.js';
import { testSettings } from '../helpers/rdkafka-io.js';

export const quietLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** What a `hookledger` command run in process is given: stdout is kept, stderr (progress) dropped. */
export interface InProcessIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

/** Runs a `hookledger` command in process (its run…Command function): its exit code and what it printed. */
export async function runInProcess(
  command: (args: string[], io: InProcessIo) => Promise<number>,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; text: string }> {
  const printed: string[] = [];
  const code = await command(args, {
    stdout: { write: (text: string) => printed.push(text) },
    stderr: { write: () => true },
    env,
  });
  return { code, text: printed.join('') };
}
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
  headers: Readonly<Record<string, Buffer>>;
}

export class ProcessorsHarness {
  /** librdkafka settings for the harness's own clients. */
  readonly settings: KafkaSettings;
  readonly serde: Serde;
  readonly names;
  #rawSchemaId: number | undefined;

  constructor(
    readonly stack: { brokers: string[]; registryUrl: string },
    readonly prefix: string,
    readonly partitions = 3,
    readonly env: Record<string, string> = {},
  ) {
    this.settings = testSettings(stack.brokers, 'it-processors');
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

  /** The real dedupe-router on this harness's topics and group, in this process, quiet, with its own metrics. */
  startRouter(): Promise<RunningStage> {
    return startDedupeRouter({ config: this.config(), logger: quietLogger(), registry: new Registry() });
  }

  /**
   * The real dedupe-router and tables stages in this process, sharing one metrics registry, once both
   * have caught up with what is in webhooks.raw (the caller closes them).
   */
  async startRouterAndTables(): Promise<RunningStage[]> {
    const config = this.config();
    const registry = new Registry();
    const stages = [await startDedupeRouter({ config, logger: quietLogger(), registry })];
    stages.push(await startTables({ config, logger: quietLogger(), registry }));
    await this.waitCaughtUp(dedupeRouterAppId(this.prefix), [this.names.raw]);
    await this.waitCaughtUp(
      tablesAppId(this.prefix),
      TABLE_STREAMS.map((s) => this.names.entity(s)),
    );
    return stages;
  }

  /** Creates every topic as `hookledger topics` would and registers the value schemas. */
  async setUp(dedupeWindowMs = 7 * 86_400_000, replicationFactor = 1): Promise<void> {
    const specs = topicCatalog({
      prefix: this.prefix,
      bodyLimit: 1_048_576,
      dedupeWindowMs,
      partitions: this.partitions,
      replicationFactor,
    });
    await withAdmin(this.settings, async (admin) => {
      // The broker's metadata can lag behind many new partitions: a second run only verifies them.
      await retry(() => ensureTopics(admin, specs), { retries: 10, initialDelayMs: 200, maxDelayMs: 2_000 });
      // Freshly created partitions can answer "not hosted here" for a moment (metadata propagation,
      // more so when other test files create topics at the same time): wait until each one answers.
      for (const spec of specs) {
        await retry(
          async () => {
            const found = await admin.watermarks(spec.name);
            if (found.length !== spec.partitions)
              throw new Error(`${spec.name}: ${found.length} partitions so far`);
          },
          { retries: 20, initialDelayMs: 100, maxDelayMs: 1_000 },
        );
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
    const records: OutRecord[] = [];
    for (const [i, envelope] of envelopes.entries()) {
      records.push({
        key: Buffer.from(envelope.webhookId, 'utf8'),
        value: await this.serde.encode(this.#rawSchemaId!, envelope),
        timestamp: options.timestamps?.[i] ?? envelope.receivedAt,
        ...(options.headers ? { headers: options.headers } : {}),
        ...(options.partition === undefined ? {} : { partition: options.partition }),
      });
    }
    await writeRecords(this.settings, this.names.raw, records);
  }

  /** Writes raw bytes (a poison record) to the raw topic. */
  async produceBytes(key: string, value: Buffer, partition?: number): Promise<void> {
    await writeRecords(this.settings, this.names.raw, [
      { key: Buffer.from(key, 'utf8'), value, ...(partition === undefined ? {} : { partition }) },
    ]);
  }

  /** Every committed record of a topic, read_committed, values decoded (changelog values raw). */
  async read<T = unknown>(topic: string, { decode = true } = {}): Promise<ReadRecord<T>[]> {
    const offsets = await this.watermarks(topic);
    const raw: Omit<ReadRecord<Buffer>, 'topic'>[] = [];
    await readToEnd({
      settings: this.settings,
      topic,
      partitions: offsets.map((o) => ({ partition: o.partition })),
      onRecord: ({ partition, key, value, timestamp, headers }) =>
        raw.push({ partition, key: key?.toString('utf8') ?? '', value, timestamp, headers }),
    });
    const out: ReadRecord<T>[] = [];
    for (const r of raw) {
      const value = r.value === null ? null : decode ? await this.serde.decode<T>(r.value) : (r.value as T);
      out.push({
        topic,
        partition: r.partition,
        key: r.key,
        value,
        timestamp: r.timestamp,
        headers: r.headers,
      });
    }
    return out;
  }

  /** Each partition's watermarks; retried while a (restarted) broker's metadata settles. */
  watermarks(topic: string) {
    return retry(() => withAdmin(this.settings, (admin) => admin.watermarks(topic)), {
      retries: 20,
      initialDelayMs: 200,
      maxDelayMs: 1_000,
    });
  }

  /** A group's members now: each one's static instance id and how many partitions it is assigned. */
  async groupMembers(groupId: string): Promise<{ instanceId: string | undefined; partitions: number }[]> {
    const admin = createAdmin(this.settings, 'it-groups');
    try {
      const { groups } = await new Promise<GroupDescriptions>((resolve, reject) =>
        admin.describeGroups([groupId], { timeout: 10_000 }, (error, result) =>
          error ? reject(error) : resolve(result),
        ),
      );
      return (groups[0]?.members ?? []).map((member) => ({
        instanceId: member.groupInstanceId,
        partitions: member.assignment.topicPartitions.length,
      }));
    } finally {
      admin.disconnect();
    }
  }

  /** The group's committed offset of each partition of `topic` (-1n: none), asked of its coordinator. */
  async committedOffsets(groupId: string, topic: string): Promise<Map<number, bigint>> {
    const partitions = await this.watermarks(topic);
    // Not subscribed: it never joins the group, it only fetches the group's offsets.
    const consumer = createConsumer(
      this.settings,
      { 'group.id': groupId, 'enable.auto.commit': false } as never,
      'it-offsets',
    );
    await connect(consumer);
    try {
      const found = await retry(
        () =>
          call<{ partition: number; offset?: number }[]>('committed', (cb) =>
            consumer.committed(
              partitions.map(({ partition }) => ({ topic, partition })),
              10_000,
              cb as never,
            ),
          ),
        { retries: 20, initialDelayMs: 200, maxDelayMs: 1_000 },
      );
      return new Map(
        found.map(({ partition, offset }) => [
          partition,
          typeof offset === 'number' && offset >= 0 ? BigInt(offset) : -1n,
        ]),
      );
    } finally {
      await disconnect(consumer);
    }
  }

  /** Waits until the group has committed every raw offset (the stage caught up). */
  async waitCaughtUp(groupId: string, topics: readonly string[], timeoutMs = 90_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      let behind = 0;
      for (const topic of topics) {
        const highs = await this.watermarks(topic);
        const committed = await this.committedOffsets(groupId, topic);
        for (const { partition, high, low } of highs) {
          if (high === low) continue;
          if ((committed.get(partition) ?? -1n) < BigInt(high)) behind++;
        }
      }
      if (behind === 0) return;
      if (Date.now() > end)
        throw new Error(`${groupId} did not catch up on ${topics.join(', ')} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
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
  ): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null>; logs: string[] }> {
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
    // The child's last log lines, printed if the test fails: what it was doing is the first question.
    const recent: string[] = [];
    /** Every log line, for a test that checks what the process said. */
    const logs: string[] = [];
    onTestFailed(() => {
      process.stderr.write(
        `--- last ${recent.length} log lines of hookledger process ${args.join(' ')} (pid ${child.pid}) ---\n${recent.join('\n')}\n---\n`,
      );
    });
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
          recent.push(line);
          logs.push(line);
          if (recent.length > RECENT_LOG_LINES) recent.shift();
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
    return { child, url, exited, logs };
  }
}

/** How many of a spawned process's log lines a failed test prints. */
const RECENT_LOG_LINES = 200;

/**
 * Produces the envelopes in small batches at a steady pace, as live traffic arrives, until stopped: the
 * router then has a transaction open almost all the time. `stop` resolves with how many were produced.
 */
export function feed(
  harness: ProcessorsHarness,
  envelopes: Parameters<ProcessorsHarness['produceRaw']>[0],
  { batch = 100, pauseMs = 50 }: { batch?: number; pauseMs?: number } = {},
) {
  let stopping = false;
  const fed = (async () => {
    let next = 0;
    while (next < envelopes.length && !stopping) {
      await harness.produceRaw(envelopes.slice(next, next + batch));
      next = Math.min(next + batch, envelopes.length);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    return next;
  })();
  return {
    stop: () => {
      stopping = true;
      return fed;
    },
  };
}

/** `promise`, or a failure naming `what` once `ms` have passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms).unref(),
    ),
  ]);
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

/** How many times each webhook id is in webhooks.unique, and in the entity streams together. */
async function readOutputs(harness: ProcessorsHarness) {
  const unique = countById(await harness.read(harness.names.unique));
  const entities = new Map<string, number>();
  for (const stream of ENTITY_STREAMS) {
    for (const [id, n] of countById(await harness.read(harness.names.entity(stream)))) {
      entities.set(id, (entities.get(id) ?? 0) + n);
    }
  }
  return { unique, entities };
}

/** Reads unique and the entity streams and checks one record per id in each, for exactly `ids`. */
export async function expectExactlyOnce(harness: ProcessorsHarness, ids: readonly string[]): Promise<void> {
  // A killed instance's open transaction holds back every read_committed reader of the partitions it
  // wrote (the LSO) until the coordinator aborts it (transaction timeout, then its abort check): the
  // outputs after it cannot be read yet, in any of its topics. Wait for that, within a bound, before
  // comparing; nothing is compared until then, so a real loss or duplicate still fails below.
  let { unique, entities } = await readOutputs(harness);
  for (
    const end = Date.now() + 40_000;
    (unique.size < ids.length || entities.size < ids.length) && Date.now() < end;
  ) {
    await new Promise((r) => setTimeout(r, 1_000));
    ({ unique, entities } = await readOutputs(harness));
  }
  expect(unique.size).toBe(ids.length);
  expect(
    [...unique].filter(([, n]) => n !== 1),
    'ids in webhooks.unique more than once',
  ).toEqual([]);
  expect(entities.size).toBe(ids.length);
  const twice = [...entities].filter(([, n]) => n !== 1);
  expect(twice).toEqual([]);
}

/** The records a group has committed on a topic, summed over its partitions. */
export async function committedRecords(harness: ProcessorsHarness, groupId: string): Promise<bigint> {
  const committed = await harness.committedOffsets(groupId, harness.names.raw);
  return [...committed.values()].reduce((sum, offset) => sum + (offset < 0n ? 0n : offset), 0n);
}

/** Polls `check` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
  what = 'condition',
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

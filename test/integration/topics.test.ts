import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../runtime/config.js';
import { type TopicAdmin, topicStates } from '../../runtime/kafka/admin.js';
import { ensureTopics, TopicConflictError } from '../../runtime/kafka/ensure-topics.js';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';
import type { TopicSpec } from '../../runtime/kafka/topic-spec.js';
import { createLogger } from '../../runtime/log.js';
import {
  assertRawTopicFitsBodyLimit,
  DurabilityError,
  RawTopicError,
  rawDurabilityCheck,
} from '../../schemas/topic-checks.js';
import { topicCatalog, topicNames } from '../../schemas/topics.js';
import { setUpTopics } from '../../tools/cli/commands/topics.js';
import { testStack } from '../helpers/stack.js';

const BIN = resolve(import.meta.dirname, '../../tools/cli/hookledger.js');
const logger = createLogger({ level: 'warn', name: 'test' });
let admin: TopicAdmin & { close(): void };
const prefixes: string[] = [];

/** A fresh prefix per test, so runs and tests never share a topic. */
function freshPrefix(): string {
  const prefix = `t-${randomUUID().slice(0, 8)}.`;
  prefixes.push(prefix);
  return prefix;
}

beforeAll(async () => {
  admin = createTopicAdmin({ brokers: testStack().brokers, clientId: 'topics-test', logger });
});

/** Removes the test's subjects from the registry (soft, then permanent, as the Confluent API requires). */
async function deleteSubjects(registryUrl: string, startsWith: string[]): Promise<void> {
  const subjects = (await (await fetch(`${registryUrl}/subjects`)).json()) as string[];
  for (const subject of subjects.filter((s) => startsWith.some((p) => s.startsWith(p)))) {
    for (const query of ['', '?permanent=true']) {
      await fetch(`${registryUrl}/subjects/${encodeURIComponent(subject)}${query}`, { method: 'DELETE' });
    }
  }
}

afterAll(async () => {
  await deleteSubjects(testStack().registryUrl, prefixes);
  const ours = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
  await admin.deleteTopics(ours);
  admin.close();
});

const spec = (name: string, overrides: Partial<TopicSpec> = {}): TopicSpec => ({
  name,
  partitions: 3,
  replicationFactor: 1,
  configs: {
    'cleanup.policy': 'compact,delete',
    'retention.ms': { atLeast: 86_400_000 },
    'segment.ms': { atMost: 3_600_000 },
  },
  ...overrides,
});

describe('ensureTopics against a real broker', () => {
  it('creates missing topics with their partitions and configuration', async () => {
    const p = freshPrefix();
    const result = await ensureTopics(admin, [spec(`${p}a`), spec(`${p}b`, { partitions: 2 })]);
    expect(result.changed).toBe(true);
    expect(result.topics.map((t) => [t.name, t.action, t.partitions])).toEqual([
      [`${p}a`, 'created', 3],
      [`${p}b`, 'created', 2],
    ]);
    const found = await topicStates(admin, [`${p}a`, `${p}b`]);
    expect(found.get(`${p}a`)).toMatchObject({ partitions: 3, replicationFactor: 1 });
    expect(found.get(`${p}a`)!.configs).toMatchObject({
      'cleanup.policy': 'compact,delete',
      'retention.ms': '86400000',
      'segment.ms': '3600000',
    });
  });

  it('creates twenty topics at once and returns when every partition has a leader', async () => {
    const p = freshPrefix();
    const many = Array.from({ length: 20 }, (_, i) => spec(`${p}many-${i}`, { partitions: 4 }));
    const result = await ensureTopics(admin, many);
    expect(result.topics.map((t) => t.action)).toEqual(many.map(() => 'created'));
    const topics = await admin.describeTopics(many.map((s) => s.name));
    expect(topics).toHaveLength(20);
    for (const topic of topics) {
      expect(topic.partitions).toHaveLength(4);
      expect(topic.partitions.every((partition) => partition.leader >= 0)).toBe(true);
    }
  });

  it('changes nothing on a second run, and says so', async () => {
    const p = freshPrefix();
    await ensureTopics(admin, [spec(`${p}a`)]);
    const again = await ensureTopics(admin, [spec(`${p}a`)]);
    expect(again.changed).toBe(false);
    expect(again.topics).toEqual([
      { name: `${p}a`, action: 'verified', partitions: 3, replicationFactor: 1 },
    ]);
  });

  it('refuses to change a partition count, and creates nothing else in that run', async () => {
    const p = freshPrefix();
    await ensureTopics(admin, [spec(`${p}a`)]);
    const attempt = ensureTopics(admin, [spec(`${p}a`, { partitions: 6 }), spec(`${p}new`)]);
    await expect(attempt).rejects.toBeInstanceOf(TopicConflictError);
    await expect(attempt).rejects.toMatchObject({
      conflicts: [{ topic: `${p}a`, setting: 'partitions', found: '3', expected: '6' }],
    });
    expect((await topicStates(admin, [`${p}a`, `${p}new`])).size).toBe(1);
    expect((await topicStates(admin, [`${p}a`])).get(`${p}a`)!.partitions).toBe(3);
  });

  it('stops on a conflicting setting with one line naming the topic, the setting, the found and the expected value', async () => {
    const p = freshPrefix();
    await admin.createTopics([
      { name: `${p}a`, partitions: 3, replicationFactor: 1, configs: { 'retention.ms': '1000' } },
    ]);
    const error = await ensureTopics(admin, [spec(`${p}a`)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TopicConflictError);
    const { message } = error as TopicConflictError;
    expect(message).not.toContain('\n');
    expect(message).toContain(`topic "${p}a" setting "retention.ms": found 1000, expected at least 86400000`);
    expect(message).toContain(
      `topic "${p}a" setting "cleanup.policy": found delete, expected compact,delete`,
    );
  });
});

describe('DescribeConfigs against a real broker', () => {
  it("reads a topic's own settings and the broker's defaults for the rest", async () => {
    const p = freshPrefix();
    await admin.createTopics([
      { name: `${p}a`, partitions: 1, replicationFactor: 1, configs: { 'segment.ms': '3600000' } },
    ]);
    await ensureTopics(admin, [{ name: `${p}a`, partitions: 1, replicationFactor: 1, configs: {} }]);
    const configs = (await admin.topicConfigs([`${p}a`])).get(`${p}a`)!;
    expect(configs['segment.ms']).toBe('3600000');
    // Not set on the topic: the broker's effective default is reported, as verification needs.
    expect(configs['cleanup.policy']).toBe('delete');
    expect(Number(configs['max.message.bytes'])).toBeGreaterThan(0);
    expect(configs['unclean.leader.election.enable']).toBe('false');
  });

  it('names a topic that does not exist', async () => {
    const p = freshPrefix();
    await expect(admin.topicConfigs([`${p}missing`])).rejects.toThrow(
      `cannot describe the configs of topic "${p}missing": UNKNOWN_TOPIC_OR_PARTITION`,
    );
  });

  it("reads a broker's configuration from that broker, found in librdkafka's metadata", async () => {
    const [broker] = await admin.brokers();
    const configs = await admin.brokerConfigs(broker!.id);
    expect(Number(configs['log.retention.hours'] ?? configs['log.retention.ms'])).toBeGreaterThan(0);
    expect(configs['num.partitions']).toMatch(/^\d+$/);
  });

  it("gives a topic's watermarks by partition", async () => {
    const p = freshPrefix();
    await ensureTopics(admin, [spec(`${p}w`, { partitions: 2 })]);
    expect(await admin.watermarks(`${p}w`)).toEqual([
      { partition: 0, low: 0, high: 0 },
      { partition: 1, low: 0, high: 0 },
    ]);
  });
});

describe('the raw topic on a single-broker stack', () => {
  const catalog = (prefix: string) =>
    topicCatalog({
      prefix,
      bodyLimit: 1_048_576,
      dedupeWindowMs: 7 * 86_400_000,
      partitions: 1,
      replicationFactor: 1,
    });

  it('is refused without --local, before any topic is created', async () => {
    const p = freshPrefix();
    const warn = vi.fn();
    const attempt = ensureTopics(admin, catalog(p), {
      check: rawDurabilityCheck({ rawTopic: topicNames(p).raw, local: false, warn }),
    });
    await expect(attempt).rejects.toBeInstanceOf(DurabilityError);
    await expect(attempt).rejects.toThrow(/replication factor 1 \(needs at least 3\).*--local/);
    expect(warn).not.toHaveBeenCalled();
    expect((await admin.listTopics()).filter((t) => t.startsWith(p))).toEqual([]);
  });

  it('is created with a warning when the stack is local', async () => {
    const p = freshPrefix();
    const warn = vi.fn();
    const result = await ensureTopics(admin, catalog(p), {
      check: rawDurabilityCheck({ rawTopic: topicNames(p).raw, local: true, warn }),
    });
    expect(result.topics.every((t) => t.action === 'created')).toBe(true);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/replication factor 1.*local stack/));
  });

  it('takes a body of the limit at start, and refuses a larger limit with a clear line', async () => {
    const p = freshPrefix();
    const rawTopic = topicNames(p).raw;
    await expect(assertRawTopicFitsBodyLimit(admin, { rawTopic, bodyLimit: 1_048_576 })).rejects.toThrow(
      /does not exist: run `hookledger topics`/,
    );
    await ensureTopics(admin, catalog(p));
    await expect(
      assertRawTopicFitsBodyLimit(admin, { rawTopic, bodyLimit: 1_048_576 }),
    ).resolves.toBeUndefined();
    const larger = assertRawTopicFitsBodyLimit(admin, { rawTopic, bodyLimit: 4 * 1_048_576 });
    await expect(larger).rejects.toBeInstanceOf(RawTopicError);
    await expect(larger).rejects.toThrow(/max\.message\.bytes 1114112, but INGEST_BODY_LIMIT 4194304/);
  });
});

describe('hookledger topics', () => {
  it('creates every topic and registers the schemas, then verifies and changes nothing', async () => {
    const p = freshPrefix();
    const { brokers, registryUrl } = testStack();
    const config = loadConfig({
      KAFKA_BROKERS: brokers.join(','),
      SCHEMA_REGISTRY_URL: registryUrl,
      TOPIC_PREFIX: p,
      TOPIC_PARTITIONS: '1',
    });
    const options = { config, logger, local: true, warn: () => {} };
    const first = await setUpTopics(options);
    expect(first.changed).toBe(true);
    const catalog = topicCatalog({
      prefix: p,
      bodyLimit: config.INGEST_BODY_LIMIT,
      dedupeWindowMs: config.DEDUPE_WINDOW,
      partitions: 1,
      replicationFactor: 1,
    });
    expect(first.topics.map((t) => t.name).sort()).toEqual(catalog.map((t) => t.name).sort());
    // Every topic but the internal changelogs has a registered value schema.
    const withSchema = catalog.filter((t) => t.valueSchema !== undefined);
    expect(withSchema.length).toBeGreaterThan(0);
    expect(first.schemas.map((s) => s.subject).sort()).toEqual(
      withSchema.map((t) => `${t.name}-value`).sort(),
    );
    expect(first.schemas).toContainEqual(
      expect.objectContaining({ subject: `${p}webhooks.raw-value`, schema: 'raw-envelope' }),
    );
    expect(first.schemas).toContainEqual(
      expect.objectContaining({ subject: `${p}entity.user.latest-value`, schema: 'entity-latest' }),
    );
    const second = await setUpTopics(options);
    expect(second.changed).toBe(false);
    expect(second.topics.every((t) => t.action === 'verified')).toBe(true);
    expect(second.schemas.map((s) => s.id)).toEqual(first.schemas.map((s) => s.id));
  });
});

/** `hookledger <args>` as a script runs it, against the shared stack; stdout, stderr and the exit code. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const { brokers, registryUrl } = testStack();
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          ...process.env,
          KAFKA_BROKERS: brokers.join(','),
          SCHEMA_REGISTRY_URL: registryUrl,
          HOOKLEDGER_LOCAL_STACK: 'true',
          TOPIC_PARTITIONS: '1',
          ...env,
        },
      },
      (error, stdout, stderr) => done({ code: error ? ((error.code as number) ?? null) : 0, stdout, stderr }),
    );
  });
}

describe('hookledger topics and config check, as scripts run them', () => {
  it('topics --check exits 1 on drift and changes nothing, --json says what; after topics, 0', async () => {
    const p = freshPrefix();
    const before = await cli(['--json', 'topics', '--check'], { TOPIC_PREFIX: p });
    expect(before.code, before.stderr).toBe(1);
    const drift = JSON.parse(before.stdout);
    expect(drift.drift).toBe(true);
    expect(drift.changed).toBe(false);
    expect(drift.topics.length).toBeGreaterThan(10);
    expect(drift.topics.every((t: { action: string }) => t.action === 'would create')).toBe(true);
    expect(drift.schemas.every((s: { id?: number }) => s.id === undefined)).toBe(true);
    expect((await admin.listTopics()).filter((t) => t.startsWith(p))).toEqual([]);
    const subjects = (await (await fetch(`${testStack().registryUrl}/subjects`)).json()) as string[];
    expect(subjects.filter((s) => s.startsWith(p))).toEqual([]);

    const created = await cli(['topics', '--json'], { TOPIC_PREFIX: p });
    expect(created.code, created.stderr).toBe(0);
    const result = JSON.parse(created.stdout);
    expect(result.changed).toBe(true);
    expect(result.schemas.every((s: { id?: number }) => typeof s.id === 'number')).toBe(true);

    const after = await cli(['topics', '--check'], { TOPIC_PREFIX: p });
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.trim().split('\n').at(-1)).toBe(
      'no drift: every topic and schema as expected; nothing was changed',
    );
  });

  it('topics --check exits 3, not 1, when it cannot reach Kafka', async () => {
    const result = await cli(['topics', '--check'], {
      KAFKA_BROKERS: '127.0.0.1:1',
      TOPIC_PREFIX: freshPrefix(),
    });
    expect(result.code).toBe(3);
    expect(result.stderr.trim()).toMatch(/^hookledger: Kafka at 127\.0\.0\.1:1 cannot be reached/);
  });

  it('config check --connect reaches the brokers and the registry, and names the one out of reach', async () => {
    const ok = await cli(['config', 'check', '--connect', '--json'], {
      HOOKLEDGER_SOURCES: '{"s":{"signature":"none"}}',
      INGEST_UNSIGNED_SOURCES: 's',
    });
    expect(ok.code, ok.stdout).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({
      ok: true,
      problems: [],
      warnings: [],
      reached: { kafka: true, registry: true },
    });
    const away = await cli(['config', 'check', '--connect'], {
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
      HOOKLEDGER_SOURCES: '{"s":{"signature":"none"}}',
      INGEST_UNSIGNED_SOURCES: 's',
    });
    expect(away.code).toBe(1);
    expect(away.stdout).toContain(
      'error: SCHEMA_REGISTRY_URL: schema registry at http://127.0.0.1:1 cannot be reached',
    );
    expect(away.stdout).toContain('reached: Kafka yes, registry no');
  });
});

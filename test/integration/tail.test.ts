// hookledger tail against the real broker and registry: fixture envelopes in, JSON lines out; a compacted
// table in, one line per live key out.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { RAW_ENVELOPE_SCHEMA, type RawEnvelope } from '../../schemas/raw-envelope.js';
import { loadSchema } from '../../schemas/schema-files.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import { CommandFailed } from '../../tools/cli/command.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import {
  createTestTopic,
  deleteTestTopics,
  produceAborted,
  produceAll,
  type TestRecord,
  testSettings,
} from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';

const prefix = `t-tail-${randomUUID().slice(0, 8)}.`;
const rawTopic = topicNames(prefix).raw;
const tableTopic = topicNames(prefix).latest('energy-switch');
const fixtures = storedDeliveries().slice(0, 6);
let serde: Serde;
let schemaId: number;

function env(): NodeJS.ProcessEnv {
  const { brokers, registryUrl } = testStack();
  return {
    KAFKA_BROKERS: brokers.join(','),
    SCHEMA_REGISTRY_URL: registryUrl,
    TOPIC_PREFIX: prefix,
    LOG_LEVEL: 'warn',
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the printed JSON is checked field by field
type Line = any;

/** Runs `hookledger tail` in-process; resolves to the lines it printed, parsed. */
async function tailLines(args: string[], signal?: AbortSignal) {
  const out: string[] = [];
  const code = await runTail(args, {
    stdout: { write: (text: string) => out.push(text) },
    env: env(),
    signal: signal ?? new AbortController().signal,
  });
  expect(code).toBe(0);
  const text = out.join('');
  expect(text.endsWith('\n') || text === '').toBe(true);
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
}

async function produce(messages: { key: string; value: Buffer | null; partition?: number }[]) {
  await produceAll(testSettings(testStack().brokers), rawTopic, messages);
}

async function deleteSubject(topic: string) {
  const { registryUrl } = testStack();
  for (const query of ['', '?permanent=true']) {
    await fetch(`${registryUrl}/subjects/${encodeURIComponent(valueSubject(topic))}${query}`, {
      method: 'DELETE',
    });
  }
}

beforeAll(async () => {
  const { brokers, registryUrl } = testStack();
  await createTestTopic(testSettings(brokers), rawTopic, 2);
  serde = createSerde({ registryUrl });
  schemaId = await serde.register(valueSubject(rawTopic), loadSchema(RAW_ENVELOPE_SCHEMA));
  await produce(
    await Promise.all(
      fixtures.map(async ({ envelope }) => ({
        key: envelope.webhookId,
        value: await serde.encode(schemaId, envelope),
      })),
    ),
  );
});

afterAll(async () => {
  await deleteSubject(rawTopic);
  await deleteTestTopics(testSettings(testStack().brokers), [rawTopic]);
});

describe('hookledger tail', () => {
  it('prints the fixture records as JSON lines, values decoded through the registry, then stops', async () => {
    const lines = await tailLines(['webhooks.raw', '--from-beginning']);
    expect(lines).toHaveLength(fixtures.length);
    const byKey = new Map(lines.map((line) => [line.key, line]));
    for (const { envelope } of fixtures) {
      const line = byKey.get(envelope.webhookId);
      expect(line).toMatchObject({
        topic: rawTopic,
        partition: expect.any(Number),
        offset: expect.any(Number),
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        value: {
          webhookId: envelope.webhookId,
          source: envelope.source,
          trigger: envelope.trigger,
          webhookDate: envelope.webhookDate,
          receivedAt: envelope.receivedAt,
          headers: envelope.headers,
          verifiedKeyId: envelope.verifiedKeyId,
          ingestId: envelope.ingestId,
        },
        encodings: { 'value.body': 'utf8' },
      });
      // The body comes back as the exact text received: 199.90 stays 199.90.
      expect(line.value.body).toBe(envelope.body.toString('utf8'));
    }
    expect(byKey.get('wh_0001').value.body).toContain('"amount":199.90');
  });

  it('filters by key and stops at the limit', async () => {
    const keyed = await tailLines(['webhooks.raw', '--from-beginning', '--key', 'wh_0001']);
    expect(keyed.map((line) => line.key)).toEqual(['wh_0001']);
    const limited = await tailLines(['webhooks.raw', '--from-beginning', '--limit', '2']);
    expect(limited).toHaveLength(2);
  });

  it('starts where --partition, --offset and --from say, and stops once caught up', async () => {
    const all = await tailLines(['webhooks.raw', '--from-beginning']);
    const inZero = all.filter((line) => line.partition === 0);
    const inOne = all.filter((line) => line.partition === 1);
    expect(inZero.length + inOne.length).toBe(fixtures.length);

    const zero = await tailLines(['webhooks.raw', '--partition', '0', '--offset', '0']);
    expect(zero.map((line) => line.key)).toEqual(inZero.map((line) => line.key));
    const lastOfOne = await tailLines(['webhooks.raw', '--partition', '1', '--offset', '-1']);
    expect(lastOfOne.map((line) => line.offset)).toEqual(inOne.slice(-1).map((line) => line.offset));
    const fromSecond = await tailLines(['webhooks.raw', '--partition', '0,1', '--offset', '1']);
    expect(fromSecond).toHaveLength(fixtures.length - 2);

    expect(await tailLines(['webhooks.raw', '--from', '1h'])).toHaveLength(fixtures.length);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect(await tailLines(['webhooks.raw', '--from', later])).toEqual([]);
    await expect(tailLines(['webhooks.raw', '--partition', '7', '--offset', '0'])).rejects.toThrow(
      /has no partition 7 \(it has 2: 0-1\)/,
    );
  });

  it('shows bytes that are not UTF-8 as base64, a tombstone as null, and skips aborted transactions', async () => {
    const binary: RawEnvelope = {
      ...fixtures[0]!.envelope,
      webhookId: 'binary-1',
      body: Buffer.from([0x7b, 0xff, 0x00, 0x7d]),
    };
    await produce([
      { key: 'binary-1', value: await serde.encode(schemaId, binary), partition: 0 },
      { key: 'gone-1', value: null, partition: 1 },
    ]);
    await produceAborted(testSettings(testStack().brokers), rawTopic, [
      { key: 'aborted-1', value: Buffer.from('never'), partition: 0 },
    ]);

    // The partition now ends with an abort marker that a read_committed reader never receives: tail still stops.
    const lines = await tailLines(['webhooks.raw', '--from-beginning']);
    const byKey = new Map(lines.map((line) => [line.key, line]));
    expect(byKey.has('aborted-1')).toBe(false);
    expect(byKey.get('gone-1').value).toBeNull();
    const line = byKey.get('binary-1');
    expect(line.encodings).toEqual({ 'value.body': 'base64' });
    expect(Buffer.from(line.value.body, 'base64')).toEqual(binary.body);
  });

  it('without --from-beginning follows, printing only records written after it started', async () => {
    const controller = new AbortController();
    const printed: string[] = [];
    const running = runTail(['webhooks.raw'], {
      stdout: { write: (text: string) => printed.push(text) },
      env: env(),
      signal: controller.signal,
    });
    const key = `late-${randomUUID()}`;
    const envelope = { ...fixtures[1]!.envelope, webhookId: key };
    // Produce until the consumer has joined and sees one (it only reads what comes after it starts).
    const deadline = Date.now() + 60_000;
    while (!printed.some((text) => text.includes(key)) && Date.now() < deadline) {
      await produce([{ key, value: await serde.encode(schemaId, envelope) }]);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    controller.abort();
    await expect(running).resolves.toBe(0);
    const lines = printed
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((line) => line.key === key)).toBe(true);
  });

  it('with --offset past a partition’s end and --follow, prints from that offset on, nothing before it', async () => {
    const marks = await withAdmin(testSettings(testStack().brokers), (admin) => admin.watermarks(rawTopic));
    const from = marks.find((m) => m.partition === 0)!.high + 2;
    const controller = new AbortController();
    const printed: string[] = [];
    const running = runTail(['webhooks.raw', '--partition', '0', '--offset', String(from), '--follow'], {
      stdout: { write: (text: string) => printed.push(text) },
      env: env(),
      signal: controller.signal,
    });
    const envelope = fixtures[1]!.envelope;
    // Offsets high and high + 1 are written first: neither may be printed, nor anything older.
    const deadline = Date.now() + 60_000;
    while (!printed.join('').includes(`"offset":${from}`) && Date.now() < deadline) {
      const key = `past-end-${randomUUID()}`;
      await produce([
        { key, value: await serde.encode(schemaId, { ...envelope, webhookId: key }), partition: 0 },
      ]);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    controller.abort();
    await expect(running).resolves.toBe(0);
    const offsets = printed
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((text) => (JSON.parse(text) as Line).offset);
    expect(offsets).toContain(from);
    expect(offsets.every((offset) => offset >= from)).toBe(true);
  });

  it('shows a record an older version wrote with this version’s fields, their defaults filled in', async () => {
    // The raw envelope before `verifiedKeyId`, registered under a subject of its own (ids are global).
    const older = JSON.parse(loadSchema(RAW_ENVELOPE_SCHEMA)) as { fields: { name: string }[] };
    older.fields = older.fields.filter((f) => f.name !== 'verifiedKeyId');
    const olderId = await serde.register(`${prefix}older-envelope-value`, JSON.stringify(older));
    const key = `older-${randomUUID()}`;
    const { verifiedKeyId: _dropped, ...envelope } = { ...fixtures[2]!.envelope, webhookId: key };
    await produce([{ key, value: await serde.encode(olderId, envelope) }]);
    const line = (await tailLines(['webhooks.raw', '--from-beginning'])).find((l) => l.key === key);
    expect(line.value).toHaveProperty('verifiedKeyId', null);
    expect(line.value.webhookId).toBe(key);
  });

  it('fails in one line for a topic that does not exist', async () => {
    await expect(tailLines([`no-such-topic-${randomUUID()}`, '--from-beginning'])).rejects.toThrow(
      CommandFailed,
    );
    await expect(tailLines(['no-such-topic', '--from-beginning'])).rejects.toThrow(
      /topic "no-such-topic" does not exist/,
    );
  });
});

describe('hookledger tail on a table (a compacted topic)', () => {
  let tableSchemaId: number;
  /** One row of entity.energy-switch.latest: the switch's status as of one delivery. */
  const row = async (
    key: string,
    status: string,
    webhookId: string,
    partition: number,
  ): Promise<TestRecord> => ({
    key,
    partition,
    value: await serde.encode(tableSchemaId, {
      fields: { status },
      occurredAt: Date.UTC(2026, 10, 20, 10, Number(webhookId.slice(-2))),
      webhookId,
    }),
  });
  const tombstone = (key: string, partition: number): TestRecord => ({ key, partition, value: null });
  const produceRows = (records: TestRecord[]) =>
    produceAll(testSettings(testStack().brokers), tableTopic, records);

  beforeAll(async () => {
    await createTestTopic(testSettings(testStack().brokers), tableTopic, 2, { 'cleanup.policy': 'compact' });
    tableSchemaId = await serde.register(valueSubject(tableTopic), loadSchema('entity-latest'));
    // Several versions per key across both partitions; es-3 is deleted, es-5 deleted and added again.
    await produceRows([
      await row('energy/es-1', 'requested', 'wh_01', 0),
      await row('energy/es-2', 'requested', 'wh_02', 1),
      await row('energy/es-3', 'requested', 'wh_03', 0),
      await row('energy/es-1', 'confirmed', 'wh_04', 0),
      await row('energy/es-5', 'requested', 'wh_05', 1),
      tombstone('energy/es-3', 0),
      await row('energy/es-2', 'switched', 'wh_07', 1),
      tombstone('energy/es-5', 1),
      await row('energy/es-1', 'switched', 'wh_09', 0),
      await row('energy/es-5', 'requested-again', 'wh_10', 1),
    ]);
  });

  afterAll(async () => {
    await deleteSubject(tableTopic);
    await deleteTestTopics(testSettings(testStack().brokers), [tableTopic]);
  });

  const summary = (lines: Line[]) =>
    lines.map((line) => `${line.key}=${line.value === null ? 'null' : line.value.fields.status}`);

  it('prints one row per live key, its last version, and none for a deleted key', async () => {
    const lines = await tailLines(['entity.energy-switch.latest', '--from-beginning']);
    // In partition and offset order: the order a consumer of the table ends up with them.
    expect(summary(lines)).toEqual([
      'energy/es-1=switched',
      'energy/es-2=switched',
      'energy/es-5=requested-again',
    ]);
    expect(lines[0]).toMatchObject({
      topic: tableTopic,
      partition: 0,
      offset: 4,
      value: { fields: { status: 'switched' }, webhookId: 'wh_09' },
    });
  });

  it('prints every version with --history, tombstones included', async () => {
    const lines = await tailLines(['entity.energy-switch.latest', '--from-beginning', '--history']);
    expect(lines).toHaveLength(10);
    expect(summary(lines.filter((line) => line.partition === 0))).toEqual([
      'energy/es-1=requested',
      'energy/es-3=requested',
      'energy/es-1=confirmed',
      'energy/es-3=null',
      'energy/es-1=switched',
    ]);
  });

  it('filters the table by key and stops at the limit in rows', async () => {
    const keyed = await tailLines([
      'entity.energy-switch.latest',
      '--from-beginning',
      '--key',
      'energy/es-1',
    ]);
    expect(summary(keyed)).toEqual(['energy/es-1=switched']);
    const deleted = await tailLines([
      'entity.energy-switch.latest',
      '--from-beginning',
      '--key',
      'energy/es-3',
    ]);
    expect(deleted).toEqual([]);
    const limited = await tailLines(['entity.energy-switch.latest', '--from-beginning', '--limit', '2']);
    expect(summary(limited)).toEqual(['energy/es-1=switched', 'energy/es-2=switched']);
  });

  it('with --follow prints the table, then each change as it comes, a deletion as value null', async () => {
    const controller = new AbortController();
    const printed: string[] = [];
    const lines = () =>
      printed
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((text) => JSON.parse(text) as Line);
    const running = runTail(['entity.energy-switch.latest', '--from-beginning', '--follow'], {
      stdout: { write: (text: string) => printed.push(text) },
      env: env(),
      signal: controller.signal,
    });
    const waitFor = async (count: number) => {
      const deadline = Date.now() + 60_000;
      while (lines().length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    };
    await waitFor(3);
    // Written after the table was printed: the follow starts where the table's read ended, so none is missed.
    await produceRows([await row('energy/es-2', 'cancelled', 'wh_11', 1), tombstone('energy/es-1', 0)]);
    await waitFor(5);
    controller.abort();
    await expect(running).resolves.toBe(0);
    const all = summary(lines());
    expect(all.slice(0, 3)).toEqual([
      'energy/es-1=switched',
      'energy/es-2=switched',
      'energy/es-5=requested-again',
    ]);
    // The two partitions interleave as they come; nothing else is printed.
    expect(all.slice(3).sort()).toEqual(['energy/es-1=null', 'energy/es-2=cancelled']);
  });
});

// hookledger tail against the real broker and registry: fixture envelopes in, JSON lines out.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  testSettings,
} from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';

const prefix = `t-tail-${randomUUID().slice(0, 8)}.`;
const rawTopic = topicNames(prefix).raw;
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
  const { registryUrl } = testStack();
  for (const query of ['', '?permanent=true']) {
    await fetch(`${registryUrl}/subjects/${encodeURIComponent(valueSubject(rawTopic))}${query}`, {
      method: 'DELETE',
    });
  }
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

  it('fails in one line for a topic that does not exist', async () => {
    await expect(tailLines([`no-such-topic-${randomUUID()}`, '--from-beginning'])).rejects.toThrow(
      CommandFailed,
    );
    await expect(tailLines(['no-such-topic', '--from-beginning'])).rejects.toThrow(
      /topic "no-such-topic" does not exist/,
    );
  });
});

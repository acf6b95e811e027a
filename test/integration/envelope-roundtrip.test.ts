import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TopicAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { createTopicAdmin } from '../../runtime/kafka/rdkafka-admin.js';
import { createLogger } from '../../runtime/log.js';
import { RAW_ENVELOPE_SCHEMA, type RawEnvelope } from '../../schemas/raw-envelope.js';
import { loadSchema } from '../../schemas/schema-files.js';
import { createSerde, SchemaNotRegisteredError, type Serde, schemaIdOf } from '../../schemas/serde.js';
import { topicCatalog, topicNames, valueSubject } from '../../schemas/topics.js';
import { produceAll, readFromStart, testSettings } from '../helpers/rdkafka-io.js';
import { testStack } from '../helpers/stack.js';

const logger = createLogger({ level: 'warn', name: 'test' });
const prefix = `t-${randomUUID().slice(0, 8)}.`;
const rawTopic = topicNames(prefix).raw;
let settings: KafkaSettings;
let admin: TopicAdmin & { close(): void };
let serde: Serde;

beforeAll(async () => {
  const { brokers, registryUrl } = testStack();
  settings = { ...testSettings(brokers, 'roundtrip-test'), logger };
  admin = createTopicAdmin(settings);
  serde = createSerde({ registryUrl });
  const catalog = topicCatalog({
    prefix,
    bodyLimit: 1_048_576,
    dedupeWindowMs: 7 * 86_400_000,
    partitions: 1,
    replicationFactor: 1,
  });
  await ensureTopics(
    admin,
    catalog.filter((t) => t.name === rawTopic),
  );
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
  await deleteSubjects(testStack().registryUrl, [prefix]);
  await admin.deleteTopics([rawTopic]);
  admin.close();
});

const envelope: RawEnvelope = {
  webhookId: `wh-${randomUUID()}`,
  source: 'energy',
  trigger: 'EnergySwitchUpdated',
  webhookDate: '2026-01-31T10:00:00.000+01:00',
  receivedAt: Date.UTC(2026, 0, 31, 9, 0, 1, 234),
  // Not valid UTF-8 on purpose: the bytes must come back exactly.
  body: Buffer.from([0x7b, 0x22, 0xff, 0x00, 0xc3, 0x28, 0x7d]),
  headers: { 'content-type': 'application/json', 'x-signature': 'sha1=0123abcd', 'user-agent': 'platform/1' },
  query: 'tenant=42&x=%20',
  verifiedKeyId: 'k2026a',
  ingestId: randomUUID(),
};

describe('the raw envelope through Kafka and the registry', () => {
  it('is produced and consumed Avro-encoded in the Confluent framing, every field intact', async () => {
    const [registered] = (await serde.registerAll(prefix)).filter(
      (s) => s.subject === valueSubject(rawTopic),
    );
    expect(registered).toMatchObject({ subject: `${rawTopic}-value`, schema: RAW_ENVELOPE_SCHEMA });
    const schemaId = registered!.id;
    expect(await serde.latestSchemaId(`${rawTopic}-value`)).toBe(schemaId);

    await produceAll(settings, rawTopic, [
      { key: envelope.webhookId, value: await serde.encode(schemaId, envelope) },
    ]);
    const [message] = await readFromStart(settings, rawTopic, 1);
    expect(message).toBeDefined();

    expect(message!.key?.toString('utf8')).toBe(envelope.webhookId);
    const value = message!.value!;
    // Confluent framing: magic byte 0, then the schema id as a big-endian int32.
    expect(value[0]).toBe(0);
    expect(value.readInt32BE(1)).toBe(schemaId);
    expect(schemaIdOf(value)).toBe(schemaId);

    const decoded = await serde.decode<RawEnvelope>(value);
    expect({ ...decoded }).toEqual(envelope);
    expect(Buffer.compare(decoded.body, envelope.body)).toBe(0);
    // Read as the newest schema would read it (webhooks.raw is kept forever and read with the newest).
    const asNewest = await serde.decode<RawEnvelope>(value, {
      readerSchema: loadSchema(RAW_ENVELOPE_SCHEMA),
    });
    expect({ ...asNewest }).toEqual(envelope);
  });

  it('the registry refuses a schema that could not read what is stored (BACKWARD_TRANSITIVE)', async () => {
    const subject = `${prefix}compat-${randomUUID().slice(0, 8)}-value`;
    const schema = JSON.parse(loadSchema(RAW_ENVELOPE_SCHEMA));
    await serde.register(subject, JSON.stringify(schema));
    const compatible = {
      ...schema,
      fields: [...schema.fields, { name: 'tenant', type: ['null', 'string'], default: null }],
    };
    await expect(serde.register(subject, JSON.stringify(compatible))).resolves.toBeGreaterThan(0);
    const breaking = { ...schema, fields: [...schema.fields, { name: 'region', type: 'string' }] };
    await expect(serde.register(subject, JSON.stringify(breaking))).rejects.toThrow();
  });

  it('takes over a subject another client registered without a compatibility rule', async () => {
    const { registryUrl } = testStack();
    const subject = `${prefix}foreign-${randomUUID().slice(0, 8)}-value`;
    const schema = loadSchema(RAW_ENVELOPE_SCHEMA);
    const response = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema }),
    });
    expect(response.ok).toBe(true);
    await expect(serde.register(subject, schema)).resolves.toBeGreaterThan(0);
    const config = (await (await fetch(`${registryUrl}/config/${subject}`)).json()) as {
      compatibilityLevel: string;
    };
    expect(config.compatibilityLevel).toBe('BACKWARD_TRANSITIVE');
  });

  it('in lookup-only mode (SCHEMA_REGISTRY_AUTO_REGISTER=false) registers nothing, and finds what topics registered', async () => {
    const { registryUrl } = testStack();
    const lookupOnly = createSerde({ registryUrl, autoRegister: false });
    const subject = `${prefix}lookup-${randomUUID().slice(0, 8)}-value`;
    const schema = loadSchema(RAW_ENVELOPE_SCHEMA);
    await expect(lookupOnly.register(subject, schema)).rejects.toThrow(SchemaNotRegisteredError);
    await expect(lookupOnly.register(subject, schema)).rejects.toThrow('run `hookledger topics`');
    const subjects = (await (await fetch(`${registryUrl}/subjects`)).json()) as string[];
    expect(subjects).not.toContain(subject);

    const id = await serde.register(subject, schema);
    await expect(lookupOnly.register(subject, schema)).resolves.toBe(id);
    // A newer schema than the subject holds is not registered behind the operator's back either.
    const newer = JSON.parse(schema);
    newer.fields.push({ name: 'tenant', type: ['null', 'string'], default: null });
    await expect(lookupOnly.register(subject, JSON.stringify(newer))).rejects.toThrow(
      SchemaNotRegisteredError,
    );
  });
});

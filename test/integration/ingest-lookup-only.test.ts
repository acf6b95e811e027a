// SCHEMA_REGISTRY_AUTO_REGISTER=false: ingest never registers a schema. Before `hookledger topics` has
// registered it, ingest is not ready and stores nothing; once it has, ingest finds it and takes deliveries.
import { afterAll, describe, expect, it } from 'vitest';
import { startIngest } from '../../ingest/main.js';
import { parseSources } from '../../ingest/sources.js';
import { loadConfig } from '../../runtime/config.js';
import { RAW_ENVELOPE_SCHEMA } from '../../schemas/raw-envelope.js';
import { loadSchema } from '../../schemas/schema-files.js';
import { createSerde } from '../../schemas/serde.js';
import { valueSubject } from '../../schemas/topics.js';
import { testStack } from '../helpers/stack.js';
import { createRawTopic, quietLogger, randomPrefix, readRaw, waitReady } from './ingest-harness.js';

describe('ingest with a read-only registry login (SCHEMA_REGISTRY_AUTO_REGISTER=false)', () => {
  const { brokers, registryUrl } = testStack();
  const prefix = randomPrefix('lookup');
  const subjects = async () => (await (await fetch(`${registryUrl}/subjects`)).json()) as string[];
  let close: (() => Promise<void>) | undefined;

  afterAll(async () => {
    await close?.();
    for (const query of ['', '?permanent=true'])
      await fetch(`${registryUrl}/subjects/${encodeURIComponent(`${prefix}webhooks.raw-value`)}${query}`, {
        method: 'DELETE',
      });
  });

  it('waits unready until topics registered the schema, registering nothing itself, then stores', async () => {
    const rawTopic = await createRawTopic(brokers, prefix);
    const config = loadConfig({
      KAFKA_BROKERS: brokers.join(','),
      SCHEMA_REGISTRY_URL: registryUrl,
      SCHEMA_REGISTRY_AUTO_REGISTER: 'false',
      TOPIC_PREFIX: prefix,
      INGEST_HOST: '127.0.0.1',
      INGEST_PORT: '0',
      INGEST_OPS_PORT: '0',
    });
    const ingest = await startIngest({
      config,
      sources: parseSources('{"sandbox":{"signature":"none"}}'),
      logger: quietLogger(),
    });
    close = () => ingest.close();
    const post = () =>
      fetch(`${ingest.url}/webhooks/sandbox`, {
        method: 'POST',
        body: '{"webhook":{"id":"wh_lookup","trigger":"UserAdded"}}',
        headers: { 'content-type': 'application/json' },
      });

    await new Promise((r) => setTimeout(r, 1_000));
    expect((await fetch(`${ingest.opsUrl}/readyz`)).status).toBe(503);
    expect((await post()).status).toBe(503);
    expect((await subjects()).filter((s) => s.startsWith(prefix))).toEqual([]);

    // What `hookledger topics` does with a login that may write.
    const id = await createSerde({ registryUrl }).register(
      valueSubject(rawTopic),
      loadSchema(RAW_ENVELOPE_SCHEMA),
    );
    await waitReady(ingest.opsUrl, 30_000);
    expect((await post()).status).toBe(200);
    const [stored] = await readRaw(brokers, registryUrl, rawTopic);
    expect(stored?.envelope.webhookId).toBe('wh_lookup');
    expect((await subjects()).filter((s) => s.startsWith(prefix))).toEqual([`${prefix}webhooks.raw-value`]);
    expect(id).toBeGreaterThan(0);
  });
});

// Hundreds of concurrent signed deliveries through the batcher: every 200 has its record, exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { testStack } from '../helpers/stack.js';
import { createRawTopic, type IngestUnderTest, randomPrefix, readRaw, runIngest } from './ingest-harness.js';

const KEY = 'concurrency-key-0123456789abcdef0123456789';
const COUNT = 600;

describe('ingest under concurrent deliveries', () => {
  const stack = testStack();
  const prefix = randomPrefix('concurrency');
  let ingest: IngestUnderTest;

  beforeAll(async () => {
    await createRawTopic(stack.brokers, prefix);
    ingest = await runIngest({
      ...stack,
      prefix,
      sources: { energy: { keys: { k1: KEY } } },
      // Small batches so many produce calls run one after another on the same producer.
      env: { INGEST_LINGER_MS: '2', INGEST_MAX_BATCH_RECORDS: '50' },
    });
  });

  afterAll(async () => {
    await ingest?.close();
  });

  it('answers every delivery 200 and stores each exactly once', async () => {
    const bodies = Array.from({ length: COUNT }, (_, n) =>
      JSON.stringify({
        webhook: { id: `wh_c${n}`, trigger: 'EnergySwitchUpdated', date: new Date().toISOString() },
        data: { getEnergySwitch: { __typename: 'EnergySwitch', id: `es_${n}`, pad: 'x'.repeat(n % 700) } },
      }),
    );
    const statuses = await Promise.all(
      bodies.map(async (body) => {
        const response = await ingest.post('/webhooks/energy', body, {
          'content-type': 'application/json',
          'x-signature': signBody(body, KEY),
        });
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    const records = await readRaw(stack.brokers, stack.registryUrl, ingest.rawTopic);
    const counts = new Map<string, number>();
    for (const r of records) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
    for (let n = 0; n < COUNT; n++) expect(counts.get(`wh_c${n}`), `wh_c${n}`).toBe(1);
    expect(records).toHaveLength(COUNT);
    for (const r of records) {
      const n = Number(r.key.slice(4));
      expect(Buffer.from(r.envelope.body).toString()).toBe(bodies[n]);
    }

    // The deliveries went out in batches, not one produce call each.
    const metrics = await (await fetch(`${ingest.opsUrl}/metrics`)).text();
    const calls = Number(/hookledger_ingest_produce_batch_records_count (\d+)/.exec(metrics)?.[1]);
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(COUNT / 2);
  });
});

// Every fixture delivery against the real broker and registry: its status, and for each 200 the record in
// webhooks.raw, byte for byte, decoded through the registry.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testStack } from '../helpers/stack.js';
import {
  createRawTopic,
  type IngestUnderTest,
  type RawRecordRead,
  randomPrefix,
  readRaw,
  runIngest,
} from './ingest-harness.js';

interface Delivery {
  name: string;
  file: string;
  headers: Record<string, string>;
  expect: { status: number; rawKey?: 'sha1'; verifiedKeyId?: string; duplicateOf?: string };
}
interface Manifest {
  source: { name: string; config: unknown };
  deliveries: Delivery[];
}

const FIXTURES = new URL('../fixtures/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', FIXTURES), 'utf8')) as Manifest;
const bodyOf = (d: Delivery) => readFileSync(new URL(d.file, FIXTURES));

function expectedKey(delivery: Delivery, body: Buffer): string {
  if (delivery.expect.rawKey === 'sha1') return `sha1:${createHash('sha1').update(body).digest('hex')}`;
  return (JSON.parse(body.toString('utf8')) as { webhook: { id: string } }).webhook.id;
}

describe('ingest with the fixture deliveries', () => {
  const stack = testStack();
  const prefix = randomPrefix('fixtures');
  let ingest: IngestUnderTest;
  const statuses = new Map<string, number>();
  const ingestIds = new Map<string, string>();
  let records: RawRecordRead[] = [];

  beforeAll(async () => {
    await createRawTopic(stack.brokers, prefix);
    ingest = await runIngest({ ...stack, prefix, sources: manifest.source.config });
    // In order, as the manifest says: the platform's retries come after their originals.
    for (const delivery of manifest.deliveries) {
      const response = await ingest.post(
        `/webhooks/${manifest.source.name}`,
        bodyOf(delivery),
        delivery.headers,
      );
      statuses.set(delivery.name, response.status);
      if (response.status === 200)
        ingestIds.set(delivery.name, ((await response.json()) as { ingestId: string }).ingestId);
    }
    records = await readRaw(stack.brokers, stack.registryUrl, ingest.rawTopic);
  });

  afterAll(async () => {
    await ingest?.close();
  });

  it.each(manifest.deliveries.map((d) => [d.name, d] as const))(
    '%s gets the status it expects',
    (_name, delivery) => {
      expect(statuses.get(delivery.name)).toBe(delivery.expect.status);
    },
  );

  it.each(manifest.deliveries.filter((d) => d.expect.status === 200).map((d) => [d.name, d] as const))(
    '%s is in webhooks.raw byte for byte, with its headers, key and key id',
    (_name, delivery) => {
      const body = bodyOf(delivery);
      const mine = records.filter((r) => r.envelope.ingestId === ingestIds.get(delivery.name));
      expect(mine).toHaveLength(1);
      const { key, timestamp, envelope } = mine[0]!;
      expect(Buffer.from(envelope.body).equals(body)).toBe(true);
      expect(key).toBe(expectedKey(delivery, body));
      expect(envelope.webhookId).toBe(key);
      expect(envelope.source).toBe(manifest.source.name);
      expect(envelope.verifiedKeyId).toBe(delivery.expect.verifiedKeyId);
      expect(timestamp).toBe(Number(envelope.receivedAt));
      // Every header the platform sends is kept, but the signature: a reader of raw cannot replay it.
      for (const [name, value] of Object.entries(delivery.headers)) {
        const kept = name.toLowerCase() === 'x-signature' ? undefined : value;
        expect(envelope.headers[name.toLowerCase()]).toBe(kept);
      }
    },
  );

  it('stores nothing for a delivery refused with 401', () => {
    const refused = manifest.deliveries.filter((d) => d.expect.status !== 200).map((d) => bodyOf(d));
    expect(refused.length).toBeGreaterThan(0);
    for (const body of refused) {
      expect(records.some((r) => Buffer.from(r.envelope.body).equals(body))).toBe(false);
    }
    expect(records).toHaveLength(manifest.deliveries.filter((d) => d.expect.status === 200).length);
  });

  it('stores both retries again under their original webhook id (de-duplication is downstream)', () => {
    const retries = manifest.deliveries.filter((d) => d.expect.duplicateOf);
    expect(retries).toHaveLength(2);
    for (const retry of retries) {
      expect(records.filter((r) => r.key === retry.expect.duplicateOf)).toHaveLength(2);
    }
  });

  it('carries trigger and date as sent, and the same key lands in the same partition', () => {
    const byKey = new Map<string, Set<number>>();
    for (const r of records) byKey.set(r.key, (byKey.get(r.key) ?? new Set()).add(r.partition));
    for (const partitions of byKey.values()) expect(partitions.size).toBe(1);
    const first = records.find((r) => r.key === 'wh_0001')!;
    expect(first.envelope).toMatchObject({
      trigger: 'EnergySwitchAdded',
      webhookDate: '2026-11-20T10:15:30.123Z',
    });
  });
});

// The shared fixtures through both stages, against the real broker and registry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { testStack } from '../helpers/stack.js';
import { manifest, storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, type ReadRecord, randomPrefix } from './processors-harness.js';

const OUTPUTS = [
  'webhooks.unique',
  'entity.user',
  'entity.account',
  'entity.document',
  'entity.todo',
  'entity.energy-switch',
  'entity.energy-switch-commission',
  'entity.other',
  'webhooks.failures',
  'webhooks.dlq',
] as const;

describe('the fixtures, sent in manifest order', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('fixtures'));
  const deliveries = storedDeliveries();
  const stages: RunningStage[] = [];
  const landed = new Map<string, ReadRecord<Record<string, unknown>>[]>();

  beforeAll(async () => {
    await harness.setUp();
    await harness.produceRaw(deliveries.map((d) => d.envelope));
    stages.push(...(await harness.startRouterAndTables()));
    for (const logical of OUTPUTS) landed.set(logical, await harness.read(`${harness.prefix}${logical}`));
  });

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it('land in exactly the topics their manifest names, with the expected keys', () => {
    for (const { delivery, envelope } of deliveries) {
      const reached = OUTPUTS.filter((logical) =>
        landed
          .get(logical)!
          .some((r) => (r.value as { ingestId?: string } | null)?.ingestId === envelope.ingestId),
      );
      expect([...reached].sort(), delivery.name).toEqual([...delivery.expect.topics].sort());
      for (const logical of reached) {
        const records = landed
          .get(logical)!
          .filter((r) => (r.value as { ingestId?: string }).ingestId === envelope.ingestId);
        expect(records, `${delivery.name} → ${logical}`).toHaveLength(1);
        const key = records[0]!.key;
        if (logical === 'webhooks.unique' || logical === 'webhooks.dlq') expect(key).toBe(envelope.webhookId);
        else if (logical === 'webhooks.failures') expect(key).toBe(delivery.expect.failureKey);
        else expect(key, `${delivery.name} → ${logical}`).toBe(delivery.expect.entityKey);
        if (delivery.expect.rawKey === 'sha1') expect(envelope.webhookId).toMatch(/^sha1:[0-9a-f]{40}$/);
      }
    }
  });

  it('let the two retries reach nothing twice', () => {
    const unique = landed.get('webhooks.unique')!;
    const ids = unique.map((r) => r.key);
    expect(new Set(ids).size).toBe(ids.length);
    const retries = manifest.deliveries.filter((d) => d.expect.duplicateOf !== undefined);
    expect(retries).toHaveLength(2);
    for (const retry of retries) expect(ids.filter((id) => id === retry.expect.duplicateOf)).toHaveLength(1);
    expect(unique).toHaveLength(deliveries.length - retries.length);
  });

  it('write one changelog record per decision, on the raw record’s partition', async () => {
    const changelog = await harness.read(harness.names.dedupeChangelog, { decode: false });
    const unique = landed.get('webhooks.unique')!;
    expect(changelog).toHaveLength(unique.length);
    for (const u of unique) {
      const entry = changelog.find((c) => c.key === `fixtures/${u.key}`);
      expect(entry?.partition, u.key).toBe(u.partition);
    }
  });

  it('leave the tables holding exactly the manifest’s finalTables', async () => {
    for (const [table, rows] of Object.entries(manifest.finalTables)) {
      const records = await harness.read<{ fields: Record<string, string | null> }>(
        `${harness.prefix}${table}`,
      );
      // Compaction aside, the last record of a key is its row; a null value is a tombstone.
      const latest = new Map<string, Record<string, string | null> | null>();
      for (const r of records) latest.set(r.key, r.value === null ? null : r.value.fields);
      for (const [key, expected] of Object.entries(rows)) {
        expect(latest.has(key), `${table} ${key}`).toBe(true);
        const actual = latest.get(key)!;
        if (expected === null) {
          expect(actual, `${table} ${key}`).toBeNull();
        } else {
          expect(actual, `${table} ${key}`).not.toBeNull();
          const shown = Object.fromEntries(Object.keys(expected).map((field) => [field, actual![field]]));
          expect(shown, `${table} ${key}`).toEqual(expected);
        }
      }
    }
  });
});

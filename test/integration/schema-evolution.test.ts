// Writers label their records with their own schema's id, never the subject's newest version. Here a
// later version (one optional field more, BACKWARD_TRANSITIVE compatible) is registered under every
// subject the router and the tables write before they start, as in a rolling upgrade whose schemas' Job
// ran first, a rollback, or a deployment started before it: every record they write must still carry
// this code's schema id and decode. Labelled with the newer id, the router's hand-written Avro read as
// "truncated buffer" and the tables skipped such records after their retries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { loadSchema } from '../../schemas/schema-files.js';
import { schemaIdOf } from '../../schemas/serde.js';
import { catalogSubjects, TABLE_STREAMS } from '../../schemas/topics.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

/** What the router and the tables write (their changelogs are JSON or bytes, without a registry schema). */
const WRITTEN = [
  'webhooks.unique',
  'webhooks.failures',
  'webhooks.dlq',
  ...['user', 'account', 'document', 'todo', 'energy-switch', 'energy-switch-commission', 'other'].map(
    (e) => `entity.${e}`,
  ),
  ...TABLE_STREAMS.map((s) => `entity.${s}.latest`),
];

/** A schema with one optional field more, at the end: what a later version would register. */
function withOneFieldMore(schema: string): string {
  const parsed = JSON.parse(schema) as { fields: unknown[] };
  parsed.fields.push({ name: 'addedLater', type: ['null', 'string'], default: null });
  return JSON.stringify(parsed);
}

describe('a later schema version registered under the subjects the processors write', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('evolution'));
  const stages: RunningStage[] = [];
  /** This code's schema id per written topic, and the later version's. */
  const ownIds = new Map<string, number>();
  const laterIds = new Map<string, number>();

  beforeAll(async () => {
    await harness.setUp();
    for (const { subject, schema } of catalogSubjects(harness.prefix)) {
      const topic = subject.replace(/-value$/, '');
      if (!WRITTEN.includes(topic.slice(harness.prefix.length))) continue;
      ownIds.set(topic, await harness.serde.register(subject, loadSchema(schema)));
      laterIds.set(topic, await harness.serde.register(subject, withOneFieldMore(loadSchema(schema))));
    }
    await harness.produceRaw(storedDeliveries().map((d) => d.envelope));
    stages.push(...(await harness.startRouterAndTables()));
  }, 180_000);

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it('registered a later version under each of them', () => {
    expect(ownIds.size).toBe(WRITTEN.length);
    for (const [topic, id] of ownIds) expect(laterIds.get(topic), topic).not.toBe(id);
  });

  it("label every record with this code's schema id, and every record decodes", async () => {
    let records = 0;
    for (const topic of ownIds.keys()) {
      for (const record of await harness.read<Buffer>(topic, { decode: false })) {
        if (record.value === null) continue;
        records++;
        expect(schemaIdOf(record.value), `${topic} ${record.key}`).toBe(ownIds.get(topic));
        await expect(harness.serde.decode(record.value), `${topic} ${record.key}`).resolves.toBeTypeOf(
          'object',
        );
      }
    }
    // The fixtures reach the entity streams, their tables, webhooks.unique and the dead letters.
    expect(records).toBeGreaterThan(20);
  });
});

// Decoding with this version's schema (tail, replay diff): a record an older version wrote reads with
// the newer fields' defaults, resolved once per writer id; a writer the reader cannot resolve reads as
// written; and the schema a topic is read with is found for a catalog topic and a replay's copy of one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { route } from '../../../processors/dedupe-router/route.js';
import { currentSchemaOf } from '../../../schemas/own-schema-id.js';
import { loadSchema } from '../../../schemas/schema-files.js';
import { createSerde } from '../../../schemas/serde.js';
import { valueSubject } from '../../../schemas/topics.js';
import { type LocalRegistry, localRegistry } from '../../../tools/bench/local-registry.js';
import { storedDeliveries } from '../processors/fixtures.js';

let registry: LocalRegistry;
beforeAll(async () => {
  registry = await localRegistry();
});
afterAll(() => registry.close());

const SWITCH = 'entity.energy-switch';
const current = loadSchema('entity-energy-switch');

/** The energy-switch event's schema before the enrich stage added `queryApi` and `origin`. */
function beforeEnrich(): string {
  const schema = JSON.parse(current) as { fields: { name: string }[] };
  schema.fields = schema.fields.filter((f) => f.name !== 'queryApi' && f.name !== 'origin');
  return JSON.stringify(schema);
}

/** Every energy-switch event the router writes for the fixtures. */
function switchEvents(): Record<string, unknown>[] {
  return storedDeliveries().flatMap(({ envelope }) =>
    route(envelope)
      .outputs.filter((o) => o.topic === SWITCH)
      .map((o) => o.value as unknown as Record<string, unknown>),
  );
}

describe('decode with a reader schema', () => {
  it('reads an older version’s records with the newer fields’ defaults, and this version’s as decode does', async () => {
    const serde = createSerde({ registryUrl: registry.url, timeoutMs: 2_000 });
    const oldId = registry.add(beforeEnrich());
    const events = switchEvents();
    expect(events.length).toBeGreaterThan(3);
    for (const event of events) {
      const { queryApi: _q, origin: _o, ...older } = event;
      const written = await serde.encode(oldId, older);
      const asWritten = await serde.decode<Record<string, unknown>>(written);
      expect(asWritten).not.toHaveProperty('origin');
      const read = await serde.decode<Record<string, unknown>>(written, { readerSchema: current });
      expect(read).toEqual({ ...asWritten, queryApi: null, origin: 'delivery' });
      // Twice: the resolver is kept, and gives the same.
      expect(await serde.decode(written, { readerSchema: current })).toEqual(read);
      const now = await serde.encode(registry.idOf.get(valueSubject(SWITCH))!, event);
      expect(await serde.decode(now, { readerSchema: current })).toEqual(await serde.decode(now));
    }
  });

  it('reads a record of a schema the reader cannot resolve as written', async () => {
    const serde = createSerde({ registryUrl: registry.url, timeoutMs: 2_000 });
    const userId = registry.idOf.get(valueSubject('entity.user'))!;
    const [user] = storedDeliveries().flatMap(({ envelope }) =>
      route(envelope).outputs.filter((o) => o.topic === 'entity.user'),
    );
    const written = await serde.encode(userId, user!.value);
    expect(await serde.decode(written, { readerSchema: loadSchema('raw-envelope') })).toEqual(
      await serde.decode(written),
    );
  });
});

describe('currentSchemaOf', () => {
  it('finds a catalog topic’s schema, and a replay copy’s by its live topic, with the prefix', () => {
    expect(currentSchemaOf('prod.', `prod.${SWITCH}`)).toBe(current);
    expect(currentSchemaOf('prod.', `prod.${SWITCH}.replay-20261122-160501`)).toBe(current);
    expect(currentSchemaOf('prod.', 'prod.entity.user.latest.replay-try1')).toBe(loadSchema('entity-latest'));
    expect(currentSchemaOf('prod.', 'prod.webhooks.dedupe-changelog')).toBeUndefined();
    expect(currentSchemaOf('prod.', SWITCH)).toBeUndefined();
  });
});

// The serde's synchronous paths (schema cached) are the asynchronous ones without the wait: same bytes,
// same values, same errors; and the router's webhooks.unique value is the raw record's own bytes only
// where encoding the envelope again would give exactly those bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeFast } from '../../../processors/dedupe-router/fast-route.js';
import type { RawInput } from '../../../processors/dedupe-router/poison.js';
import { route } from '../../../processors/dedupe-router/route.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../../processors/dedupe-router/topology.js';
import type { EntityInput } from '../../../processors/tables/table-processor.js';
import { ENTITY_INPUT_FIELDS } from '../../../processors/tables/topology.js';
import type { SourceMessage } from '../../../runtime/streams/topology.js';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';
import { createSerde, EncodedAvroValue, type Serde } from '../../../schemas/serde.js';
import { TABLE_STREAMS, valueSubject } from '../../../schemas/topics.js';
import { type LocalRegistry, localRegistry } from '../../../tools/bench/local-registry.js';
import { generateLoad } from '../../integration/processors-load.js';
import { storedDeliveries } from '../processors/fixtures.js';

let registry: LocalRegistry;
beforeAll(async () => {
  registry = await localRegistry();
});
afterAll(() => registry.close());

const newSerde = (): Serde => createSerde({ registryUrl: registry.url, timeoutMs: 2_000 });
const idOf = (topic: string) => registry.idOf.get(valueSubject(topic))!;

/** Every value the router writes for the fixtures, with its topic's schema id. */
function fixtureOutputs(): { label: string; schemaId: number; value: unknown }[] {
  return storedDeliveries().flatMap(({ delivery, envelope }) =>
    route(envelope).outputs.map((output) => ({
      label: `${delivery.name} → ${output.topic}`,
      schemaId: idOf(output.topic),
      value: output.value,
    })),
  );
}

function bigEnvelope(bodyBytes: number): RawEnvelope {
  const envelope = storedDeliveries()[0]!.envelope;
  return { ...envelope, body: Buffer.alloc(bodyBytes, 0x61) };
}

describe('encodeCached', () => {
  it('gives nothing for a schema id not fetched yet (encode asks the registry)', () => {
    expect(newSerde().encodeCached(idOf('entity.user'), {})).toBeUndefined();
  });

  it('writes the bytes encode writes, for every value the router writes from every fixture', async () => {
    const serde = newSerde();
    const outputs = fixtureOutputs();
    expect(outputs.length).toBeGreaterThan(20);
    for (const { label, schemaId, value } of outputs) {
      const framed = await serde.encode(schemaId, value);
      expect(serde.encodeCached(schemaId, value), label).toEqual(framed);
    }
  });

  it('writes the bytes encode writes for every fixture’s raw envelope (ingest encodes with it)', async () => {
    const serde = newSerde();
    const id = idOf('webhooks.raw');
    const envelopes = storedDeliveries().map(({ envelope }) => envelope);
    expect(envelopes.length).toBeGreaterThan(10);
    for (const envelope of envelopes) {
      const framed = await serde.encode(id, envelope);
      expect(serde.encodeCached(id, envelope), envelope.webhookId).toEqual(framed);
    }
  });

  it('writes values larger than its reused buffer whole, and smaller ones after them', async () => {
    const serde = newSerde();
    const id = idOf('webhooks.raw');
    await serde.encode(id, bigEnvelope(1));
    for (const size of [10, 20_000, 70_000, 300, 1_500_000, 5]) {
      const envelope = bigEnvelope(size);
      const cached = serde.encodeCached(id, envelope)!;
      expect(cached.length, `${size}`).toBeGreaterThan(size);
      // Buffer.equals: a deep comparison of 1.5 MB byte by byte is slow.
      expect(cached.equals(await serde.encode(id, envelope)), `${size}`).toBe(true);
    }
  });

  it('leaves a value the schema refuses to encode, whose error is encode’s to give', async () => {
    const serde = newSerde();
    const id = idOf('webhooks.raw');
    await serde.encode(id, bigEnvelope(1));
    const invalid = { ...bigEnvelope(1), receivedAt: 'yesterday' };
    expect(serde.encodeCached(id, invalid)).toBeUndefined();
    await expect(serde.encode(id, invalid)).rejects.toThrow('invalid "long": "yesterday"');
  });
});

describe('decodeCached', () => {
  it('gives nothing for a writer schema not fetched yet, then the value decode gives', async () => {
    const serde = newSerde();
    const id = idOf('webhooks.raw');
    for (const { envelope } of storedDeliveries()) {
      const framed = await serde.encode(id, envelope);
      const fresh = newSerde();
      expect(fresh.decodeCached(framed)).toBeUndefined();
      const decoded = await fresh.decode(framed);
      expect(fresh.decodeCached(framed)).toEqual(decoded);
      expect(decoded).toEqual(envelope);
    }
  });

  it('throws what decode rejects with: bad framing, truncated bytes, trailing bytes', async () => {
    const serde = newSerde();
    const framed = await serde.encode(idOf('webhooks.raw'), bigEnvelope(100));
    await serde.decode(framed);
    for (const bad of [
      Buffer.from([1, 0, 0, 0, 1, 2]),
      framed.subarray(0, framed.length - 10),
      Buffer.concat([framed, Buffer.from([7])]),
    ]) {
      const error = await serde.decode(bad).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error).toBeInstanceOf(Error);
      expect(() => serde.decodeCached(bad)).toThrow(error!.message);
    }
  });
});

describe('fieldsReader (the tables read their entity events with it)', () => {
  /** Every field of EntityInput: the compiler refuses this object when the type gains one. */
  const everyInputField: Record<keyof EntityInput, true> = {
    webhookId: true,
    entity: true,
    deleted: true,
    occurredAt: true,
    fields: true,
    data: true,
    receivedAt: true,
  };
  const pick = (value: Record<string, unknown>) =>
    Object.fromEntries(ENTITY_INPUT_FIELDS.map((f) => [f, value[f]] as const));

  /** Every value route() writes to a table stream, from every fixture and the bench's load, framed. */
  async function tableStreamValues(serde: Serde): Promise<{ label: string; framed: Buffer }[]> {
    const tableTopics = new Set<string>(TABLE_STREAMS.map((s) => `entity.${s}`));
    const envelopes = [
      ...storedDeliveries().map(({ delivery, envelope }) => ({ label: delivery.name, envelope })),
      ...generateLoad({ ids: 600, retries: 60, startAt: Date.now() }).envelopes.map((envelope, i) => ({
        label: `load ${i}`,
        envelope,
      })),
    ];
    const out: { label: string; framed: Buffer }[] = [];
    for (const { label, envelope } of envelopes)
      for (const output of route(envelope).outputs)
        if (tableTopics.has(output.topic))
          out.push({
            label: `${label} → ${output.topic}`,
            framed: await serde.encode(idOf(output.topic), output.value),
          });
    return out;
  }

  it('reads every field of EntityInput', () => {
    expect(Object.keys(everyInputField).sort()).toEqual([...ENTITY_INPUT_FIELDS].sort());
  });

  it('gives decode’s fields for every value the router writes to a table stream', async () => {
    const serde = newSerde();
    const values = await tableStreamValues(serde);
    expect(values.length).toBeGreaterThan(500);
    const read = newSerde().fieldsReader<Record<string, unknown>>(ENTITY_INPUT_FIELDS);
    const fresh = newSerde();
    const freshRead = fresh.fieldsReader<Record<string, unknown>>(ENTITY_INPUT_FIELDS);
    expect(freshRead(values[0]!.framed)).toBeUndefined();
    for (const { label, framed } of values) {
      const decoded = await fresh.decode<Record<string, unknown>>(framed);
      expect(freshRead(framed), label).toEqual(pick(decoded));
      expect(read(framed), label).toBeUndefined();
    }
  });

  it('throws where decode rejects: truncated bytes, trailing bytes, bad framing', async () => {
    const serde = newSerde();
    const read = serde.fieldsReader(ENTITY_INPUT_FIELDS);
    const values = await tableStreamValues(serde);
    for (const { framed } of values.slice(0, 50)) {
      await serde.decode(framed);
      for (const bad of [
        Buffer.from([1, 0, 0, 0, 1, 2]),
        framed.subarray(0, framed.length - 3),
        Buffer.concat([framed, Buffer.from([7])]),
      ]) {
        const error = await serde.decode(bad).then(
          () => undefined,
          (e: unknown) => e as Error,
        );
        expect(error).toBeInstanceOf(Error);
        expect(() => read(bad)).toThrow();
      }
    }
  });

  it('gives nothing for a writer that lacks a field (decode is called instead)', async () => {
    const serde = newSerde();
    const framed = await serde.encode(idOf('webhooks.raw'), storedDeliveries()[0]!.envelope);
    expect(serde.fieldsReader(ENTITY_INPUT_FIELDS)(framed)).toBeUndefined();
  });
});

describe("the router's webhooks.unique value", () => {
  const message = (value: Buffer): SourceMessage => ({
    topic: 'webhooks.raw',
    partition: 0,
    offset: '0',
    key: null,
    value,
    timestamp: 0,
  });
  const topologyWith = (serde: Serde, uniqueSchemaId: number) =>
    dedupeTopology({
      rawTopic: 'webhooks.raw',
      changelogTopic: 'webhooks.dedupe-changelog',
      topicOf: (logical) => logical,
      schemaIds: new Map(
        ROUTER_OUTPUTS.map((t) => [t, t === 'webhooks.unique' ? uniqueSchemaId : idOf(t)] as const),
      ),
      serde,
      windowMs: 60_000,
    });

  it('is the raw record’s bytes, equal to the envelope encoded again, when both have one schema id', async () => {
    const serde = newSerde();
    const id = idOf('webhooks.raw');
    expect(idOf('webhooks.unique')).toBe(id);
    const topology = topologyWith(serde, id);
    const unique = topology.sinks.find((s) => s.name === 'webhooks.unique')!;
    for (const { envelope } of storedDeliveries()) {
      const raw = await serde.encode(id, envelope);
      const input = (await topology.sources[0]!.deserialize(message(raw))) as RawInput & { ok: true };
      const written = await unique.serialize(input.envelope);
      expect(written).toBe(raw);
      expect(written).toEqual(await serde.encode(id, input.envelope));
      // Any other object (an envelope not decoded last) is encoded.
      const copy = { ...input.envelope };
      expect(await unique.serialize(copy)).not.toBe(raw);
      expect(await unique.serialize(copy)).toEqual(raw);
    }
  });

  it('takes a raw record written under another registered schema for poison, cached or not', async () => {
    const serde = newSerde();
    const topology = topologyWith(serde, idOf('webhooks.raw'));
    // An entity event written to webhooks.raw by hand (the wrong subject): it decodes, as an entity event.
    // (A dead letter would not do: it carries an envelope's fields, and redrive makes it one again.)
    const event = fixtureOutputs().find((o) => o.schemaId === idOf('entity.user'))!;
    const bytes = await serde.encode(event.schemaId, event.value);
    const expected = {
      ok: false,
      message: `not a raw envelope: schema id ${idOf('entity.user')} is another record's`,
    };
    // First through the registry (the schema not cached by a decode yet), then from the cache.
    expect(await topology.sources[0]!.deserialize(message(bytes))).toMatchObject(expected);
    expect(await topology.sources[0]!.deserialize(message(bytes))).toMatchObject(expected);
  });

  it('is encoded with its own schema when webhooks.unique has another schema id than the raw record', async () => {
    const serde = newSerde();
    const rawId = idOf('webhooks.raw');
    // webhooks.dlq's schema stands in for another one: an envelope does not fit it, so encoding (not the
    // raw bytes passed through) shows as the dead-letter schema's refusal.
    const topology = topologyWith(serde, idOf('webhooks.dlq'));
    const unique = topology.sinks.find((s) => s.name === 'webhooks.unique')!;
    const raw = await serde.encode(rawId, storedDeliveries()[0]!.envelope);
    const input = (await topology.sources[0]!.deserialize(message(raw))) as RawInput & { ok: true };
    await expect(Promise.resolve().then(() => unique.serialize(input.envelope))).rejects.toThrow();
  });
});

describe("the router's values written as Avro by its fast route", () => {
  it('go out from their sink as encode writes route()’s values: the header with the sink’s schema id, then the same bytes', async () => {
    const serde = newSerde();
    const topology = dedupeTopology({
      rawTopic: 'webhooks.raw',
      changelogTopic: 'webhooks.dedupe-changelog',
      topicOf: (logical) => logical,
      schemaIds: new Map(ROUTER_OUTPUTS.map((t) => [t, idOf(t)] as const)),
      serde,
      windowMs: 60_000,
    });
    const load = generateLoad({ ids: 60, retries: 0, startAt: Date.parse('2026-11-22T10:00:00Z') });
    const envelopes = [...storedDeliveries().map((d) => d.envelope), ...load.envelopes];
    let fast = 0;
    for (const envelope of envelopes) {
      const decision = routeFast(envelope);
      if (decision === undefined) continue;
      const expected = route(envelope).outputs;
      expect(decision.outputs.map((o) => [o.topic, o.key])).toEqual(expected.map((o) => [o.topic, o.key]));
      for (const [n, output] of decision.outputs.entries()) {
        if (!(output.value instanceof EncodedAvroValue)) continue;
        fast++;
        const sink = topology.sinks.find((s) => s.name === output.topic)!;
        expect(await sink.serialize(output.value)).toEqual(
          await serde.encode(idOf(output.topic), expected[n]!.value),
        );
      }
    }
    expect(fast).toBeGreaterThan(40);
  });
});

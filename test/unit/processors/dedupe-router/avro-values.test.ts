import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import type { EntityEvent } from '../../../../processors/dedupe-router/entity-event.js';
import { route } from '../../../../processors/dedupe-router/route.js';
import { applyEvent, type EntityState, latestValue } from '../../../../processors/tables/merge.js';
import { envelopeFor, storedDeliveries } from '../fixtures.js';
import { SCHEMA_OF } from './written-decision.js';

const schemasDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../schemas');

function schema(name: string): { json: unknown; type: avro.Type } {
  const json = JSON.parse(readFileSync(path.join(schemasDir, `${name}.avsc`), 'utf8'));
  return { json, type: avro.Type.forSchema(json) };
}

const NEW_SCHEMAS = [
  'entity-event',
  'entity-energy-switch',
  'entity-energy-switch-commission',
  'entity-latest',
  'webhook-failure',
  'dead-letter',
];

function expectValid(type: avro.Type, value: unknown, label: string): void {
  const problems: string[] = [];
  type.isValid(value, {
    errorHook: (p: string[], v: unknown) => problems.push(`${p.join('.')}: ${JSON.stringify(v)}`),
  });
  expect(problems, label).toEqual([]);
  // And it survives a round trip unchanged.
  expect(type.fromBuffer(type.toBuffer(value)), label).toEqual(value);
}

describe("the values built from every fixture are valid Avro for their topic's schema", () => {
  const outputs = storedDeliveries().flatMap(({ delivery, envelope }) =>
    route(envelope).outputs.map((output) => ({ name: delivery.name, output })),
  );

  it.each(outputs.map(({ name, output }) => [`${name} → ${output.topic}`, output] as const))(
    '%s',
    (label, output) => {
      expectValid(schema(SCHEMA_OF[output.topic]).type, output.value, label);
    },
  );

  it('so are dead letters of every kind and a failure with no description', () => {
    const bodies = [
      Buffer.from([0xff]),
      '[]',
      '{"webhook":{"id":"x","trigger":"UserAdded","date":"2026-01-01T00:00:00Z"},"data":null}',
      '{"webhook":{"id":"x","trigger":"UserAdded","date":"2026-01-01T00:00:00Z"},"query":{"variables":{"id":"u"}},"data":{"getUser":{"__typename":"OperationFailure"}}}',
    ];
    for (const body of bodies) {
      const envelope = Buffer.isBuffer(body) ? { ...envelopeFor('{}'), body } : envelopeFor(body);
      for (const output of route(envelope).outputs) {
        expectValid(schema(SCHEMA_OF[output.topic]).type, output.value, output.topic);
      }
    }
  });

  it('so are the table values the fixtures merge into', () => {
    const { type } = schema('entity-latest');
    const states = new Map<string, EntityState>();
    for (const { output } of outputs) {
      if (!/^entity\.(user|account|document|todo|energy-switch)$/.test(output.topic)) continue;
      const id = `${output.topic}|${output.key}`;
      states.set(id, applyEvent(states.get(id), output.value as EntityEvent).state);
    }
    expect(states.size).toBeGreaterThan(5);
    for (const [id, state] of states) {
      const value = latestValue(state);
      if (value !== null) expectValid(type, value, id);
    }
  });
});

describe('typed values read from another representation are written as their schema types', () => {
  it('an integer sent as 2.0 or "2" is an Avro long 2, an amount sent as "210.10" the string 210.10', () => {
    const text =
      '{"webhook":{"id":"wh_1","trigger":"EnergySwitchUpdated","date":"2026-11-20T12:00:00Z"},' +
      '"data":{"getEnergySwitch":{"__typename":"EnergySwitch","id":"es_1","fuelsSwitched":2.0,' +
      '"savings":{"currency":"GBP","amount":"210.10"},"projectedSpend":{"amount":1.5e3},' +
      '"commission":{"fuelsWithCommissionReceived":"1","fuelsWaitingForUpdate":20e-1}}}}';
    const written = new Map(
      route(envelopeFor(text)).outputs.map((o) => {
        const { type } = schema(SCHEMA_OF[o.topic]);
        expectValid(type, o.value, o.topic);
        return [o.topic, type.fromBuffer(type.toBuffer(o.value))] as const;
      }),
    );
    expect(written.get('entity.energy-switch')).toMatchObject({
      fuelsSwitched: 2,
      savings: { currency: 'GBP', amount: '210.10' },
      projectedSpend: { currency: null, amount: '1.5e3' },
      commission: { fuelsWithCommissionReceived: 1, fuelsWaitingForUpdate: 2 },
    });
    expect(written.get('entity.energy-switch-commission')).toMatchObject({
      fuelsWithCommissionReceived: 1,
      fuelsWaitingForUpdate: 2,
    });
  });
});

describe('the new schemas can evolve BACKWARD_TRANSITIVE', () => {
  it.each(NEW_SCHEMAS)('%s: every nullable field is ["null", …] with default null', (name) => {
    const fields: { name: string; type: unknown; default?: unknown }[] = [];
    const walk = (t: unknown): void => {
      if (Array.isArray(t)) t.forEach(walk);
      else if (t && typeof t === 'object' && 'fields' in t) {
        for (const f of (t as { fields: typeof fields }).fields) {
          fields.push(f);
          walk(f.type);
        }
      }
    };
    walk(schema(name).json);
    for (const f of fields) {
      if (Array.isArray(f.type) && f.type.includes('null')) {
        expect(f.type[0], `${name}.${f.name}`).toBe('null');
        expect(f.default, `${name}.${f.name}`).toBeNull();
      }
    }
  });
});

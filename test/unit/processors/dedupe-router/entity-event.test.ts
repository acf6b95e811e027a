import { describe, expect, it } from 'vitest';
import { energySwitchSchema } from '../../../../processors/dedupe-router/contract.js';
import {
  buildCommissionEvent,
  buildEnergySwitchEvent,
  buildEntityEvent,
  type Delivery,
  resolveEntityId,
  variablesId,
} from '../../../../processors/dedupe-router/entity-event.js';
import { type JsonObject, parseBody } from '../../../../processors/dedupe-router/parse-body.js';
import { parseTrigger } from '../../../../processors/dedupe-router/trigger.js';
import { envelopeFor } from '../fixtures.js';

function json(text: string): JsonObject {
  const result = parseBody(Buffer.from(text));
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

const delivery = (trigger: string, variables: JsonObject | null = json('{"id":"es_1"}')): Delivery => ({
  envelope: envelopeFor({ webhook: { id: 'wh_1' } }, { receivedAt: 1_800_000_000_500, source: 'energy' }),
  trigger: parseTrigger(trigger)!,
  occurredAt: 1_800_000_000_000,
  variables,
});

describe('entity ids', () => {
  it("come from the record, else query.variables.id, else the variables' single value", () => {
    expect(resolveEntityId(json('{"id":"rec"}'), json('{"id":"var"}'))).toBe('rec');
    expect(resolveEntityId(json('{"name":"x"}'), json('{"id":"var"}'))).toBe('var');
    expect(resolveEntityId(json('{}'), json('{"switchId":"only"}'))).toBe('only');
    expect(resolveEntityId(json('{}'), json('{"a":"1","b":"2"}'))).toBeUndefined();
    expect(resolveEntityId(json('{"id":42}'), null)).toBe('42');
    expect(resolveEntityId(json('{"id":""}'), null)).toBeUndefined();
    expect(variablesId(null)).toBeUndefined();
  });
});

describe('buildEntityEvent', () => {
  it('carries the delivery, the fields and the record as lossless JSON text', () => {
    const record = json('{"__typename":"EnergySwitch","id":"es_1","savings":{"amount":210.10}}');
    const event = buildEntityEvent(delivery('EnergySwitchUpdated'), 'es_1', record, true);
    expect(event).toEqual({
      webhookId: 'wh_1',
      source: 'energy',
      ingestId: 'ingest-1',
      trigger: 'EnergySwitchUpdated',
      entity: 'EnergySwitch',
      action: 'Updated',
      deleted: false,
      occurredAt: 1_800_000_000_000,
      receivedAt: 1_800_000_000_500,
      entityId: 'es_1',
      queryVariables: '{"id":"es_1"}',
      fields: ['id', 'savings.amount'],
      data: '{"__typename":"EnergySwitch","id":"es_1","savings":{"amount":210.10}}',
    });
  });

  it('a deletion answered by OperationFailure carries no fields', () => {
    const failure = json('{"__typename":"OperationFailure","description":"User not found"}');
    const event = buildEntityEvent(delivery('UserDeleted', json('{"id":"usr_1"}')), 'usr_1', failure, false);
    expect(event).toMatchObject({
      deleted: true,
      fields: [],
      data: '{"__typename":"OperationFailure","description":"User not found"}',
    });
  });

  it('a body without variables has queryVariables null', () => {
    expect(
      buildEntityEvent(delivery('UserAdded', null), 'u', json('{"id":"u"}'), true).queryVariables,
    ).toBeNull();
  });
});

describe('the EnergySwitch typed fields', () => {
  const text =
    '{"__typename":"EnergySwitch","id":"es_1","user":{"id":"u","tenantId":null},"savings":{"currency":"GBP","amount":199.90},' +
    '"fuelsSwitched":2,"commission":{"fuelsWithCommissionReceived":2,"statusDate":"2026-11-21T07:59:00Z","status":"commissionReceived"}}';
  const raw = json(text);
  const record = energySwitchSchema.parse(raw);
  const base = buildEntityEvent(delivery('EnergySwitchUpdated'), 'es_1', raw, true);

  it('are filled from the record, money as its exact text, absent ones null', () => {
    expect(buildEnergySwitchEvent(base, record)).toMatchObject({
      user: { id: 'u', tenantId: null },
      savings: { currency: 'GBP', amount: '199.90' },
      projectedSpend: null,
      fuelsSwitched: 2,
      tariffName: null,
      commission: {
        fuelsWaitingForUpdate: null,
        fuelsWithCommissionReceived: 2,
        statusDate: '2026-11-21T07:59:00Z',
        status: 'commissionReceived',
      },
    });
  });

  it('are all null for a deletion', () => {
    const event = buildEnergySwitchEvent(base, null);
    expect([event.date, event.user, event.savings, event.commission, event.fuelsSwitched]).toEqual([
      null,
      null,
      null,
      null,
      null,
    ]);
  });

  it('give a commission event with the switch id, the user and the parsed status date', () => {
    expect(buildCommissionEvent(base, record, raw)).toEqual({
      webhookId: 'wh_1',
      source: 'energy',
      ingestId: 'ingest-1',
      trigger: 'EnergySwitchUpdated',
      action: 'Updated',
      occurredAt: 1_800_000_000_000,
      receivedAt: 1_800_000_000_500,
      energySwitchId: 'es_1',
      userId: 'u',
      fuelsWaitingForUpdate: null,
      fuelsWithSwitchTerminated: null,
      fuelsWithCommissionExpected: null,
      fuelsWithCommissionReceived: 2,
      statusDate: '2026-11-21T07:59:00Z',
      statusAt: Date.parse('2026-11-21T07:59:00Z'),
      status: 'commissionReceived',
      fields: ['commission.fuelsWithCommissionReceived', 'commission.statusDate', 'commission.status'],
      data: '{"fuelsWithCommissionReceived":2,"statusDate":"2026-11-21T07:59:00Z","status":"commissionReceived"}',
    });
  });

  it('give no commission event when the record has none', () => {
    const minimal = json('{"__typename":"EnergySwitch","id":"es_1","date":"2026-11-20T10:59:00Z"}');
    expect(buildCommissionEvent(base, energySwitchSchema.parse(minimal), minimal)).toBeUndefined();
  });
});

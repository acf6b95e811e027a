import { describe, expect, it } from 'vitest';
import {
  energySwitchSchema,
  operationFailureSchema,
  querySchema,
  recordSchema,
  webhookBodySchema,
} from '../../../../processors/dedupe-router/contract.js';
import { type JsonObject, parseBody } from '../../../../processors/dedupe-router/parse-body.js';
import { storedDeliveries } from '../fixtures.js';

function json(text: string): JsonObject {
  const result = parseBody(Buffer.from(text));
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

function root(body: JsonObject): JsonObject {
  return Object.values(body.data as JsonObject)[0] as JsonObject;
}

describe('the contract schemas', () => {
  const bodies = storedDeliveries()
    .map(({ delivery, envelope }) => ({ name: delivery.name, parsed: parseBody(envelope.body) }))
    .filter((b) => b.parsed.ok)
    .map((b) => ({ name: b.name, body: (b.parsed as { value: JsonObject }).value }));

  it('every fixture body with an id, a trigger and a date fits the body schema', () => {
    const fits = bodies.filter((b) => webhookBodySchema.safeParse(b.body).success).map((b) => b.name);
    expect(bodies.map((b) => b.name).filter((n) => !fits.includes(n))).toEqual(['signed-without-webhook-id']);
  });

  it('the Full, Minimal and Latest-commission EnergySwitch records all fit', () => {
    const switches = bodies.filter((b) => b.body.data && root(b.body).__typename === 'EnergySwitch');
    expect(switches.length).toBeGreaterThanOrEqual(4);
    for (const { name, body } of switches) {
      expect(energySwitchSchema.safeParse(root(body)).success, name).toBe(true);
    }
  });

  it('keeps fields beyond the contract', () => {
    const parsed = energySwitchSchema.parse(
      json('{"__typename":"EnergySwitch","id":"e","newField":{"x":1}}'),
    );
    expect(parsed.newField).toBeDefined();
  });

  it('allows null for any field GraphQL may null', () => {
    const r = json('{"__typename":"EnergySwitch","id":"e","savings":null,"user":{"id":"u","tenantId":null}}');
    expect(energySwitchSchema.safeParse(r).success).toBe(true);
  });

  it.each([
    ['2', 2],
    ['2.0', 2],
    ['2e0', 2],
    ['20e-1', 2],
    ['0.2E1', 2],
    ['"2"', 2],
    ['"-3"', -3],
    ['9007199254740990', 9_007_199_254_740_990],
    ['"-9007199254740990"', -9_007_199_254_740_990],
  ])('reads fuelsSwitched %s as the integer %d, however it is represented', (sent, read) => {
    const parsed = energySwitchSchema.parse(json(`{"__typename":"EnergySwitch","fuelsSwitched":${sent}}`));
    expect(parsed.fuelsSwitched).toBe(read);
  });

  it('reads the commission counters as integers too', () => {
    const parsed = energySwitchSchema.parse(
      json(
        '{"__typename":"EnergySwitch","commission":{"fuelsWaitingForUpdate":0.0,"fuelsWithSwitchTerminated":"0",' +
          '"fuelsWithCommissionExpected":1e0,"fuelsWithCommissionReceived":"1"}}',
      ),
    );
    expect(parsed.commission).toMatchObject({
      fuelsWaitingForUpdate: 0,
      fuelsWithSwitchTerminated: 0,
      fuelsWithCommissionExpected: 1,
      fuelsWithCommissionReceived: 1,
    });
  });

  it.each([
    ['210.10', '210.10'],
    ['"210.10"', '210.10'],
    ['"-0.50"', '-0.50'],
    ['"2.1e2"', '2.1e2'],
    ['1E+2', '1E+2'],
  ])('reads a money amount %s as its exact decimal text %s', (sent, read) => {
    const parsed = energySwitchSchema.parse(
      json(`{"__typename":"EnergySwitch","savings":{"currency":"GBP","amount":${sent}}}`),
    );
    expect(parsed.savings).toEqual({ currency: 'GBP', amount: read });
  });

  it('takes a null query.api or query.query as absent (only variables is used)', () => {
    for (const text of ['{"api":null,"query":null,"variables":{"id":"e"}}', '{"api":null}', '{"query":null}'])
      expect(querySchema.safeParse(json(text)).success, text).toBe(true);
    expect(querySchema.safeParse(json('{"api":1}')).success).toBe(false);
    expect(querySchema.safeParse(json('{"query":["q"]}')).success).toBe(false);
  });

  it.each([
    ['fuelsSwitched as a decimal', '{"__typename":"EnergySwitch","fuelsSwitched":2.5}'],
    // 2 plus 1e-16: a double rounds it to 2, the decimal text does not.
    ['fuelsSwitched a hair above 2', '{"__typename":"EnergySwitch","fuelsSwitched":2.0000000000000001}'],
    ['fuelsSwitched as a word', '{"__typename":"EnergySwitch","fuelsSwitched":"two"}'],
    ['fuelsSwitched as a decimal string', '{"__typename":"EnergySwitch","fuelsSwitched":"2.5"}'],
    ['fuelsSwitched as a string with a fraction', '{"__typename":"EnergySwitch","fuelsSwitched":"2.0"}'],
    ['fuelsSwitched as a string with a space', '{"__typename":"EnergySwitch","fuelsSwitched":"2 "}'],
    ['fuelsSwitched as a string with a plus sign', '{"__typename":"EnergySwitch","fuelsSwitched":"+2"}'],
    ['fuelsSwitched as an empty string', '{"__typename":"EnergySwitch","fuelsSwitched":""}'],
    ['fuelsSwitched as a boolean', '{"__typename":"EnergySwitch","fuelsSwitched":true}'],
    ['fuelsSwitched beyond 2^53', '{"__typename":"EnergySwitch","fuelsSwitched":9007199254740993}'],
    [
      'fuelsSwitched beyond 2^53 as a string',
      '{"__typename":"EnergySwitch","fuelsSwitched":"9007199254740993"}',
    ],
    ['fuelsSwitched beyond 2^53 with an exponent', '{"__typename":"EnergySwitch","fuelsSwitched":1e16}'],
    // 2^53 − 1 is a safe integer, but not a long avsc writes: refused here, not by the encoder.
    ['fuelsSwitched of 2^53 − 1', '{"__typename":"EnergySwitch","fuelsSwitched":9007199254740991}'],
    [
      'a commission counter of −(2^53 − 1)',
      '{"__typename":"EnergySwitch","commission":{"fuelsWaitingForUpdate":-9007199254740991}}',
    ],
    [
      'a money amount with a thousands separator',
      '{"__typename":"EnergySwitch","savings":{"currency":"GBP","amount":"1,000.00"}}',
    ],
    [
      'a money amount with a currency sign',
      '{"__typename":"EnergySwitch","savings":{"currency":"GBP","amount":"£1.00"}}',
    ],
    ['a money amount with a space', '{"__typename":"EnergySwitch","savings":{"amount":" 1.00"}}'],
    [
      'a money amount that is not JSON number text',
      '{"__typename":"EnergySwitch","savings":{"amount":".50"}}',
    ],
    ['a money amount as an empty string', '{"__typename":"EnergySwitch","savings":{"amount":""}}'],
    ['a money amount as a boolean', '{"__typename":"EnergySwitch","savings":{"amount":false}}'],
    [
      'a commission counter as a word',
      '{"__typename":"EnergySwitch","commission":{"fuelsWithCommissionReceived":"one"}}',
    ],
    [
      'a commission counter as a decimal',
      '{"__typename":"EnergySwitch","commission":{"fuelsWaitingForUpdate":1.5}}',
    ],
    [
      'a statusDate that is not a date-time',
      '{"__typename":"EnergySwitch","commission":{"statusDate":"2026-11-21"}}',
    ],
    ['another __typename', '{"__typename":"User"}'],
    ['a postcode as a number', '{"__typename":"EnergySwitch","postcode":12345}'],
  ])('an EnergySwitch with %s violates the contract', (_, text) => {
    expect(energySwitchSchema.safeParse(json(text)).success).toBe(false);
  });

  it('an OperationFailure has a string description, when selected', () => {
    expect(
      operationFailureSchema.safeParse(json('{"__typename":"OperationFailure","description":"x"}')).success,
    ).toBe(true);
    expect(operationFailureSchema.safeParse(json('{"__typename":"OperationFailure"}')).success).toBe(true);
    expect(
      operationFailureSchema.safeParse(json('{"__typename":"OperationFailure","description":1}')).success,
    ).toBe(false);
  });

  it('any other record needs only its __typename', () => {
    expect(recordSchema.safeParse(json('{"__typename":"Payment","id":"p","amount":1.5}')).success).toBe(true);
    expect(recordSchema.safeParse(json('{"id":"p"}')).success).toBe(false);
    expect(recordSchema.safeParse(json('{"__typename":"Payment","id":{"nested":true}}')).success).toBe(false);
  });
});

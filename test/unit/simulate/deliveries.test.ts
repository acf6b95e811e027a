import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isLosslessNumber, parse } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { extract } from '../../../ingest/webhooks/extract.js';
import { verifySignature } from '../../../ingest/webhooks/signature.js';
import { energySwitchSchema, webhookBodySchema } from '../../../processors/dedupe-router/contract.js';
import { route } from '../../../processors/dedupe-router/route.js';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';
import { DEFAULT_API, recommendedQuery, reserialize, writeBody } from '../../../tools/simulate/body.js';
import {
  CONTRACT_TRIGGERS,
  createDeliveryGenerator,
  DEFAULT_OTHER_TRIGGERS,
  type Delivery,
  entityOf,
  type Intent,
} from '../../../tools/simulate/deliveries.js';
import {
  ENERGY_SWITCH_SELECTIONS,
  type EnergySwitchState,
  energySwitchRecord,
} from '../../../tools/simulate/energy-switch.js';
import { INVALID_REASONS, type InvalidReason } from '../../../tools/simulate/invalid.js';
import { createRandom } from '../../../tools/simulate/prng.js';
import { deliveryHeaders, PLATFORM_USER_AGENT } from '../../../tools/simulate/sender.js';
import { FIXTURES_DIR } from '../processors/fixtures.js';

const START = Date.parse('2026-11-20T10:00:00Z');
const fixture = (file: string) => readFileSync(path.join(FIXTURES_DIR, file), 'utf8');

function generate(count: number, seed = 'unit', options = {}): Delivery[] {
  const generator = createDeliveryGenerator({ seed, start: START, ...options });
  return Array.from({ length: count }, () => generator.next());
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON is walked by path in these tests
type Parsed = any;
const parsed = (body: string): Parsed => parse(body);

describe('the delivery generator', () => {
  const deliveries = generate(600);

  it('fires every trigger of the contract, and now and then an operator-enabled one', () => {
    const triggers = new Set(deliveries.map((d) => d.trigger));
    for (const trigger of CONTRACT_TRIGGERS) expect(triggers).toContain(trigger);
    expect(DEFAULT_OTHER_TRIGGERS.some((t) => triggers.has(t))).toBe(true);
    const others = deliveries.filter((d) => !(CONTRACT_TRIGGERS as readonly string[]).includes(d.trigger));
    expect(others.length).toBeLessThan(deliveries.length * 0.06);
  });

  it('writes bodies the contract schema accepts, in the platform order webhook, query, data', () => {
    for (const d of deliveries) {
      const body = parsed(d.body);
      expect(Object.keys(body)).toEqual(['webhook', 'query', 'data']);
      expect(Object.keys(body.webhook)).toEqual(['id', 'trigger', 'date']);
      expect(webhookBodySchema.safeParse(body).success).toBe(true);
      expect(body.webhook).toEqual({ id: d.id, trigger: d.trigger, date: d.date });
      expect(body.query.api).toBe(DEFAULT_API);
      expect(body.query.api).toMatch(/^https:\/\/.+\/v1\/graphql$/);
      expect(body.query.variables).toEqual({ id: d.entityId });
      expect(Object.keys(body.data)).toEqual([`get${d.entity}`]);
      const record = body.data[`get${d.entity}`];
      if (d.result === 'operation-failure') {
        expect(record).toEqual({
          __typename: 'OperationFailure',
          description: expect.stringMatching(/not found$/),
        });
      } else {
        expect(record.__typename).toBe(d.entity);
        expect(record.id).toBe(d.entityId);
      }
      if (d.entity === 'EnergySwitch' && d.result === 'record') {
        expect(energySwitchSchema.safeParse(record).success).toBe(true);
      }
    }
  });

  it('gives unique webhook ids and dates that move forward', () => {
    expect(new Set(deliveries.map((d) => d.id)).size).toBe(deliveries.length);
    for (let i = 1; i < deliveries.length; i++) {
      expect(deliveries[i]!.occurredAt).toBeGreaterThan(deliveries[i - 1]!.occurredAt);
    }
    expect(deliveries[0]!.date).toMatch(/^2026-11-20T10:00:\d\d\.\d{3}Z$/);
  });

  it('uses the recommended query texts, character for character as the platform sends them', () => {
    const queryOf = (file: string) => parsed(fixture(file)).query.query;
    const byVariant = (variant: string) =>
      deliveries.find((d) => d.variant === variant && d.result === 'record')!;
    expect(parsed(byVariant('full').body).query.query).toBe(queryOf('00-energy-switch-added-full.body'));
    expect(parsed(byVariant('minimal').body).query.query).toBe(
      queryOf('01-energy-switch-updated-minimal.body'),
    );
    expect(parsed(byVariant('commission').body).query.query).toBe(
      queryOf('02-energy-switch-updated-commission.body'),
    );
    const user = deliveries.find((d) => d.trigger === 'UserAdded')!;
    expect(parsed(user.body).query.query).toBe(queryOf('04-user-added.body'));
    const todo = deliveries.find((d) => d.trigger === 'ToDoDone')!;
    expect(parsed(todo.body).query.query).toBe(queryOf('08-todo-done.body'));
  });

  it('sends the Full, Minimal and Latest-commission variants, each with exactly its fields', () => {
    const fields = (variant: string) =>
      deliveries
        .filter((d) => d.variant === variant && d.result === 'record')
        .map((d) => Object.keys(parsed(d.body).data.getEnergySwitch));
    expect(new Set(fields('minimal').map(String))).toEqual(new Set(['__typename,id,date']));
    expect(new Set(fields('commission').map(String))).toEqual(new Set(['__typename,id,commission']));
    expect(fields('full')[0]).toEqual([
      '__typename',
      'id',
      'date',
      'user',
      'userSwitchReferenceId',
      'postcode',
      'provider',
      'tariffName',
      'projectedSpend',
      'savings',
      'fuelType',
      'fuelsSwitched',
      'commission',
    ]);
  });

  it('writes money with two decimals as JSON numbers, trailing zeros kept (199.90, not 199.9)', () => {
    const full = deliveries.filter((d) => d.variant === 'full' && d.result === 'record');
    const amounts = full.flatMap((d) => [...d.body.matchAll(/"amount":([^,}]*)/g)].map((m) => m[1]!));
    expect(amounts.length).toBe(full.length * 2);
    for (const amount of amounts) expect(amount).toMatch(/^\d+\.\d\d$/);
    expect(amounts.some((a) => a.endsWith('0'))).toBe(true);
    for (const d of full) {
      const record = parsed(d.body).data.getEnergySwitch;
      expect(isLosslessNumber(record.savings.amount)).toBe(true);
      expect(record.savings.currency).toBe('GBP');
    }
  });

  it('answers UserDeleted with OperationFailure for a user it added before, as the platform does', () => {
    const deletions = deliveries.filter((d) => d.trigger === 'UserDeleted');
    expect(deletions.length).toBeGreaterThan(0);
    for (const deletion of deletions) {
      expect(deletion.result).toBe('operation-failure');
      expect(parsed(deletion.body).data.getUser).toEqual({
        __typename: 'OperationFailure',
        description: 'User not found',
      });
      const added = deliveries.find((d) => d.trigger === 'UserAdded' && d.entityId === deletion.entityId);
      expect(added?.seq).toBeLessThan(deletion.seq);
    }
  });

  it('completes only to-dos it added, and updates only switches it added', () => {
    for (const [trigger, addedBy] of [
      ['ToDoDone', 'ToDoAdded'],
      ['EnergySwitchUpdated', 'EnergySwitchAdded'],
    ] as const) {
      for (const d of deliveries.filter((x) => x.trigger === trigger && x.result === 'record')) {
        const added = deliveries.find((x) => x.trigger === addedBy && x.entityId === d.entityId);
        expect(added?.seq).toBeLessThan(d.seq);
      }
    }
  });

  it('answers OperationFailure for an id not found when asked for a failure, never on a deletion', () => {
    const generator = createDeliveryGenerator({ seed: 'failures', start: START });
    const failures = Array.from({ length: 300 }, () => generator.next('failure'));
    for (const d of failures) {
      expect(d.result).toBe('operation-failure');
      expect(d.route).toBe('failures');
      expect(d.trigger).not.toMatch(/Deleted$/);
      expect(parsed(d.body).data[`get${d.entity}`]).toEqual({
        __typename: 'OperationFailure',
        description: expect.stringMatching(/not found$/),
      });
    }
    const switchFailure = failures.find((d) => d.entity === 'EnergySwitch')!;
    expect(parsed(switchFailure.body).data.getEnergySwitch.description).toBe('Energy switch not found');
    // Unasked, only a deletion is answered with an OperationFailure: the expected answer, not a failure.
    expect(deliveries.every((d) => d.result === 'record' || d.trigger === 'UserDeleted')).toBe(true);
    expect(deliveries.every((d) => d.route === 'entity' && d.reason === undefined)).toBe(true);
  });

  it('moves an energy switch through its commission lifecycle with consistent counters', () => {
    const statuses = new Set<string>();
    for (const d of deliveries.filter((x) => x.entity === 'EnergySwitch' && x.result === 'record')) {
      const record = parsed(d.body).data.getEnergySwitch;
      if (!record.commission) continue;
      const c = record.commission;
      statuses.add(c.status);
      const total = [
        c.fuelsWaitingForUpdate,
        c.fuelsWithSwitchTerminated,
        c.fuelsWithCommissionExpected,
        c.fuelsWithCommissionReceived,
      ]
        .map(Number)
        .reduce((a, b) => a + b, 0);
      expect([1, 2]).toContain(total);
    }
    expect(statuses).toContain('commissionExpected');
    expect(statuses).toContain('commissionReceived');
  });

  it('gives the same deliveries, byte for byte, for the same seed and start, and others for another seed', () => {
    expect(generate(200, 'repeat').map((d) => d.body)).toEqual(generate(200, 'repeat').map((d) => d.body));
    const other = generate(200, 'another').map((d) => d.body);
    expect(other).not.toEqual(generate(200, 'repeat').map((d) => d.body));
  });

  it('signs each body so the receiver verifies it (HMAC-SHA1 over the exact bytes)', () => {
    const keys = new Map([['k1', Buffer.from('simulate-key')]]);
    for (const d of deliveries.slice(0, 50)) {
      const headers = deliveryHeaders(d.body, 'simulate-key');
      expect(headers).toMatchObject({
        'Content-Type': 'application/json',
        Accept: '*/*',
        'User-Agent': PLATFORM_USER_AGENT,
      });
      expect(headers['X-Signature']).toMatch(/^sha1=[0-9a-f]{40}$/);
      expect(verifySignature(Buffer.from(d.body), headers['X-Signature'], keys)).toEqual({
        ok: true,
        keyId: 'k1',
      });
    }
    expect(PLATFORM_USER_AGENT).toMatch(/\/\d+\.\d+\.\d+$/);
    expect(deliveryHeaders('{}', undefined)).not.toHaveProperty('X-Signature');
  });

  it('names the entity of a trigger as the router does', () => {
    expect(entityOf('EnergySwitchUpdated')).toBe('EnergySwitch');
    expect(entityOf('ToDoDone')).toBe('ToDo');
    expect(entityOf('MeterReadingAdded')).toBe('MeterReading');
  });
});

describe('where the router sends each generated delivery', () => {
  /** The raw envelope ingest would store for a body: keyed by the id ingest reads from it. */
  function envelopeOf(body: string): RawEnvelope {
    const bytes = Buffer.from(body);
    const { webhookId, trigger, webhookDate } = extract(bytes);
    return {
      webhookId,
      source: 'sim',
      trigger,
      webhookDate,
      receivedAt: START,
      body: bytes,
      headers: {},
      query: null,
      verifiedKeyId: 'k1',
      ingestId: 'unit',
    };
  }

  const intents: Intent[] = ['routed', 'failure', ...INVALID_REASONS];
  const generator = createDeliveryGenerator({ seed: 'routes', start: START });
  const mixed = Array.from({ length: intents.length * 60 }, (_, i) =>
    generator.next(intents[i % intents.length]),
  );
  const random = createRandom('routes-reserialized');

  it('routes the asked ones to their entity stream, failures to webhooks.failures, invalid ones to the DLQ with their reason', () => {
    for (const d of mixed) {
      // A re-serialized duplicate goes the same way, under the same id.
      for (const body of [d.body, reserialize(d.body, random)]) {
        const envelope = envelopeOf(body);
        expect(envelope.webhookId).toBe(d.id);
        const decision = route(envelope);
        const topics = decision.outputs.map((o) => o.topic);
        expect(topics[0]).toBe('webhooks.unique');
        if (d.route === 'entity') {
          expect(decision.kind).toBe('routed');
          expect(topics[1]).toMatch(/^entity\./);
        } else if (d.route === 'failures') {
          expect(decision.kind).toBe('failure');
          expect(topics.slice(1)).toEqual(['webhooks.failures']);
        } else {
          expect(decision).toMatchObject({ kind: 'dead-lettered', reason: d.reason });
          expect(topics.slice(1)).toEqual(['webhooks.dlq']);
        }
      }
    }
    expect(new Set(mixed.map((d) => d.reason))).toEqual(new Set([undefined, ...INVALID_REASONS]));
  });

  it('keeps invalid deliveries authentic: signed, with their own webhook id, only the contract broken', () => {
    const keys = new Map([['k1', Buffer.from('simulate-key')]]);
    const of = (reason: InvalidReason) => mixed.filter((d) => d.reason === reason).map((d) => parsed(d.body));
    for (const d of mixed.filter((x) => x.route === 'dlq')) {
      expect(parsed(d.body).webhook.id).toBe(d.id);
      const headers = deliveryHeaders(d.body, 'simulate-key');
      expect(verifySignature(Buffer.from(d.body), headers['X-Signature'], keys)).toMatchObject({ ok: true });
    }
    for (const body of of('record-invalid')) {
      expect(body.data.getEnergySwitch.projectedSpend.amount).toMatch(/^£\d+\.\d\d$/);
      expect(body.data.getEnergySwitch.savings.amount).toMatch(/^£\d+\.\d\d$/);
    }
    for (const body of of('trigger-unrecognized')) expect(body.webhook.trigger).toBe('Ping');
    for (const body of of('webhook-date-invalid'))
      expect(body.webhook.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
    for (const body of of('typename-missing')) {
      expect(body.query.query).not.toContain('__typename');
      expect(Object.values(body.data)[0]).not.toHaveProperty('__typename');
    }
    for (const body of of('graphql-errors')) {
      expect(Object.values(body.data)).toEqual([null]);
      expect(body.errors[0]).toMatchObject({
        message: 'Internal server error',
        path: Object.keys(body.data),
      });
    }
  });
});

describe('the body writer', () => {
  const state: EnergySwitchState = {
    id: 'es_501',
    date: Date.parse('2026-11-20T10:15:00Z'),
    userId: 'usr_1001',
    tenantId: null,
    reference: 'REF-55120',
    postcode: 'SW1A 1AA',
    provider: { code: 'ACME', name: 'Acme Energy Ltd' },
    tariffName: 'Acme Flex 12M',
    projectedSpend: 123_456,
    savings: 19_990,
    fuelType: 'dualFuel',
    fuelsSwitched: 2,
    commission: {
      waiting: 0,
      terminated: 0,
      expected: 2,
      received: 0,
      statusDate: Date.parse('2026-11-19T09:00:00Z'),
      status: 'commissionExpected',
    },
  };
  const query = (variant: keyof typeof ENERGY_SWITCH_SELECTIONS) => ({
    api: DEFAULT_API,
    query: recommendedQuery('EnergySwitch', ENERGY_SWITCH_SELECTIONS[variant]),
    variables: { id: 'es_501' },
  });

  it('writes a Full delivery exactly as the platform wrote the fixture, 199.90 included', () => {
    const body = writeBody(
      { id: 'wh_0001', trigger: 'EnergySwitchAdded', date: '2026-11-20T10:15:30.123Z' },
      query('full'),
      { getEnergySwitch: energySwitchRecord(state, 'full') },
    );
    expect(body).toBe(fixture('00-energy-switch-added-full.body'));
  });

  it('writes Minimal and Latest-commission deliveries exactly as the fixtures', () => {
    const minimal = writeBody(
      { id: 'wh_0002', trigger: 'EnergySwitchUpdated', date: '2026-11-20T11:00:00Z' },
      query('minimal'),
      {
        getEnergySwitch: energySwitchRecord(
          { ...state, date: Date.parse('2026-11-20T10:59:00Z') },
          'minimal',
        ),
      },
    );
    expect(minimal).toBe(fixture('01-energy-switch-updated-minimal.body'));
    const commission = writeBody(
      { id: 'wh_0003', trigger: 'EnergySwitchUpdated', date: '2026-11-21T08:00:00Z' },
      query('commission'),
      {
        getEnergySwitch: energySwitchRecord(
          {
            ...state,
            commission: {
              waiting: 0,
              terminated: 0,
              expected: 0,
              received: 2,
              statusDate: Date.parse('2026-11-21T07:59:00Z'),
              status: 'commissionReceived',
            },
          },
          'commission',
        ),
      },
    );
    expect(commission).toBe(fixture('02-energy-switch-updated-commission.body'));
  });

  it('re-serializes with another key order or whitespace, every value and digit unchanged', () => {
    const original = fixture('00-energy-switch-added-full.body');
    const random = createRandom('reserialize');
    for (let i = 0; i < 20; i++) {
      const text = reserialize(original, random);
      expect(text).not.toBe(original);
      expect(parse(text)).toEqual(parse(original));
      expect(text).toMatch(/"amount": ?199\.90/);
    }
  });
});

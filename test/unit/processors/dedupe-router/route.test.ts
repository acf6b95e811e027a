import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../../../processors/dedupe-router/dead-letter.js';
import type { EntityEvent } from '../../../../processors/dedupe-router/entity-event.js';
import { type RouteDecision, route } from '../../../../processors/dedupe-router/route.js';
import { envelopeFor, storedDeliveries } from '../fixtures.js';

const ENTITY_TOPIC = /^entity\.(?!energy-switch-commission$)/;

function body(overrides: Record<string, unknown> = {}, root: unknown = { __typename: 'User', id: 'usr_1' }) {
  return {
    webhook: { id: 'wh_1', trigger: 'UserAdded', date: '2026-11-20T12:00:00Z' },
    query: { api: 'https://api.platform.example/v1/graphql', query: 'query …', variables: { id: 'usr_1' } },
    data: { getUser: root },
    ...overrides,
  };
}

function deadLetter(decision: RouteDecision): DeadLetter {
  expect(decision.kind).toBe('dead-lettered');
  const dlq = decision.outputs.find((o) => o.topic === 'webhooks.dlq');
  expect(dlq).toBeDefined();
  return dlq!.value as DeadLetter;
}

function entityEvent(decision: RouteDecision): EntityEvent {
  const out = decision.outputs.find((o) => ENTITY_TOPIC.test(o.topic));
  expect(out).toBeDefined();
  return out!.value as EntityEvent;
}

describe('route() on the fixture deliveries', () => {
  const firsts = storedDeliveries().filter(({ delivery }) => delivery.expect.duplicateOf === undefined);

  it.each(firsts.map((f) => [f.delivery.name, f] as const))(
    '%s goes to the topics the manifest names',
    (_, f) => {
      const decision = route(f.envelope);
      expect(decision.outputs.map((o) => o.topic).sort()).toEqual([...f.delivery.expect.topics].sort());
      for (const output of decision.outputs) {
        if (output.topic === 'webhooks.unique' || output.topic === 'webhooks.dlq') {
          expect(output.key).toBe(f.envelope.webhookId);
        } else if (output.topic === 'webhooks.failures') {
          expect(output.key).toBe(f.delivery.expect.failureKey);
        } else {
          expect(output.key).toBe(f.delivery.expect.entityKey);
        }
      }
      const unique = decision.outputs.find((o) => o.topic === 'webhooks.unique');
      expect(unique?.value).toBe(f.envelope);
    },
  );

  it('records the decision kind the changelog needs for each fixture', () => {
    const kinds = Object.fromEntries(firsts.map((f) => [f.delivery.name, route(f.envelope).kind]));
    expect(kinds['energy-switch-operation-failure']).toBe('failure');
    expect(kinds['user-deleted']).toBe('routed');
    expect(kinds['signed-without-webhook-id']).toBe('dead-lettered');
    expect(kinds['signed-unparseable-json']).toBe('dead-lettered');
    expect(kinds['graphql-errors']).toBe('dead-lettered');
    expect(kinds['energy-switch-added-full']).toBe('routed');
  });

  it('dead-letters the fixture failures with their reasons and stages', () => {
    const byName = new Map(firsts.map((f) => [f.delivery.name, route(f.envelope)]));
    expect(byName.get('signed-without-webhook-id')?.reason).toBe('webhook-id-missing');
    expect(byName.get('signed-unparseable-json')?.reason).toBe('body-not-json');
    expect(deadLetter(byName.get('signed-unparseable-json')!).stage).toBe('dedupe-router.parse');
    expect(byName.get('graphql-errors')?.reason).toBe('graphql-errors');
    expect(deadLetter(byName.get('graphql-errors')!).message).toContain('Internal error');
  });

  it('a dead letter carries the envelope unchanged, so redrive can store it again', () => {
    const f = firsts.find((x) => x.delivery.name === 'signed-unparseable-json')!;
    const dlq = deadLetter(route(f.envelope));
    expect(dlq).toMatchObject({
      webhookId: f.envelope.webhookId,
      source: f.envelope.source,
      receivedAt: f.envelope.receivedAt,
      headers: f.envelope.headers,
      verifiedKeyId: f.envelope.verifiedKeyId,
      ingestId: f.envelope.ingestId,
    });
    expect(dlq.body.equals(f.envelope.body)).toBe(true);
  });

  it('a user deletion answered by OperationFailure is a deletion event keyed by the query variable', () => {
    const f = firsts.find((x) => x.delivery.name === 'user-deleted')!;
    const event = entityEvent(route(f.envelope));
    expect(event).toMatchObject({ entityId: 'usr_1002', action: 'Deleted', deleted: true, fields: [] });
  });

  it('an unknown trigger goes to entity.other under its entity name', () => {
    const f = firsts.find((x) => x.delivery.name === 'unknown-trigger-payment-added')!;
    expect(entityEvent(route(f.envelope))).toMatchObject({
      entity: 'Payment',
      action: 'Added',
      entityId: 'pay_1',
    });
  });

  it('a retry serialized differently routes to the same events as the first delivery', () => {
    const all = storedDeliveries();
    const first = all.find((x) => x.delivery.name === 'energy-switch-updated-commission')!;
    const retry = all.find((x) => x.delivery.name === 'energy-switch-updated-commission-retry-reserialized')!;
    const strip = (d: RouteDecision) =>
      d.outputs
        .filter((o) => o.topic !== 'webhooks.unique')
        .map((o) => ({ ...o, value: { ...o.value, ingestId: undefined, receivedAt: undefined } }));
    expect(strip(route(retry.envelope))).toEqual(strip(route(first.envelope)));
  });
});

describe('route() dead-letters what it cannot understand', () => {
  const cases: [string, Buffer | string | object, string][] = [
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'body-not-json'],
    ['a JSON array', '[1,2]', 'body-not-object'],
    ['a JSON string', '"hello"', 'body-not-object'],
    ['a key sent twice with different values', '{"webhook":{"id":"a","id":"b"}}', 'body-not-json'],
    ['no webhook object', { data: {} }, 'webhook-id-missing'],
    [
      'an empty webhook id',
      body({ webhook: { id: '', trigger: 'UserAdded', date: '2026-11-20T12:00:00Z' } }),
      'webhook-id-missing',
    ],
    [
      'a numeric webhook id',
      body({ webhook: { id: 7, trigger: 'UserAdded', date: '2026-11-20T12:00:00Z' } }),
      'webhook-id-missing',
    ],
    ['no trigger', body({ webhook: { id: 'wh_1', date: '2026-11-20T12:00:00Z' } }), 'trigger-missing'],
    [
      'a trigger with no action',
      body({ webhook: { id: 'wh_1', trigger: 'Ping', date: '2026-11-20T12:00:00Z' } }),
      'trigger-unrecognized',
    ],
    [
      'a lower-case trigger',
      body({ webhook: { id: 'wh_1', trigger: 'user_added', date: '2026-11-20T12:00:00Z' } }),
      'trigger-unrecognized',
    ],
    [
      'a trigger that is not a string',
      body({ webhook: { id: 'wh_1', trigger: 3, date: '2026-11-20T12:00:00Z' } }),
      'trigger-unrecognized',
    ],
    ['no webhook date', body({ webhook: { id: 'wh_1', trigger: 'UserAdded' } }), 'webhook-date-missing'],
    [
      'a webhook date without a zone',
      body({ webhook: { id: 'wh_1', trigger: 'UserAdded', date: '2026-11-20T12:00:00' } }),
      'webhook-date-invalid',
    ],
    [
      'a webhook date that is not a date',
      body({ webhook: { id: 'wh_1', trigger: 'UserAdded', date: 'yesterday' } }),
      'webhook-date-invalid',
    ],
    [
      'a 30 February',
      body({ webhook: { id: 'wh_1', trigger: 'UserAdded', date: '2026-02-30T12:00:00Z' } }),
      'webhook-date-invalid',
    ],
    ['query variables that are not an object', body({ query: { variables: ['usr_1'] } }), 'query-invalid'],
    ['GraphQL errors beside data', body({ errors: [{ message: 'partial' }] }), 'graphql-errors'],
    ['no data', body({ data: undefined }), 'data-missing'],
    ['data null', body({ data: null }), 'data-missing'],
    ['data that is a string', body({ data: 'x' }), 'data-not-object'],
    ['data with no root field', body({ data: {} }), 'root-field-missing'],
    [
      'data with two root fields',
      body({
        data: { getUser: { __typename: 'User', id: 'a' }, getAccount: { __typename: 'Account', id: 'b' } },
      }),
      'root-field-ambiguous',
    ],
    ['a null root field for an add', body({}, null), 'root-field-null'],
    ['a root field that is a list', body({}, [{ __typename: 'User', id: 'a' }]), 'root-field-not-object'],
    ['a record without __typename', body({}, { id: 'usr_1' }), 'typename-missing'],
    [
      'an OperationFailure whose description is a number',
      body({}, { __typename: 'OperationFailure', description: 4 }),
      'record-invalid',
    ],
    [
      'an OperationFailure with no variables to key it by',
      body({ query: { variables: {} } }, { __typename: 'OperationFailure', description: 'x' }),
      'entity-id-missing',
    ],
    [
      'a record with no id and no variables',
      body({ query: undefined }, { __typename: 'User' }),
      'entity-id-missing',
    ],
  ];

  it.each(cases)('%s', (_, payload, reason) => {
    const envelope = Buffer.isBuffer(payload)
      ? { ...envelopeFor('{}'), body: payload }
      : envelopeFor(payload);
    const decision = route(envelope);
    expect(decision.reason).toBe(reason);
    expect(decision.outputs.map((o) => o.topic)).toEqual(['webhooks.unique', 'webhooks.dlq']);
    expect(deadLetter(decision).reason).toBe(reason);
    expect(deadLetter(decision).message.length).toBeGreaterThan(0);
  });

  it('says "an empty string" where an empty one came, not "a string"', () => {
    const emptyTrigger = body({ webhook: { id: 'wh_1', trigger: '', date: '2026-11-20T12:00:00Z' } });
    expect(deadLetter(route(envelopeFor(emptyTrigger))).message).toBe('webhook.trigger is an empty string');
    const emptyType = deadLetter(route(envelopeFor(body({}, { __typename: '', id: 'usr_1' }))));
    expect(emptyType.message).toBe('data.getUser.__typename is an empty string');
  });

  it('a body whose webhook id is not the raw record id is dead-lettered, not routed under another key', () => {
    const decision = route(envelopeFor(body(), { webhookId: 'wh_other' }));
    expect(decision.reason).toBe('webhook-id-mismatch');
  });

  it('an EnergySwitch whose fuelsSwitched is not an integer violates the contract', () => {
    const es = { __typename: 'EnergySwitch', id: 'es_1', fuelsSwitched: 2.5 };
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'EnergySwitchUpdated', date: '2026-11-20T12:00:00Z' },
      data: { getEnergySwitch: es },
    });
    const decision = route(envelopeFor(payload));
    expect(decision.reason).toBe('record-invalid');
    expect(deadLetter(decision).message).toContain('fuelsSwitched');
  });

  it('an EnergySwitch trigger answered by another type violates the contract', () => {
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'EnergySwitchAdded', date: '2026-11-20T12:00:00Z' },
    });
    expect(route(envelopeFor(payload)).reason).toBe('record-invalid');
  });

  it('a commission statusDate that does not parse violates the contract (the table orders by it)', () => {
    const es = { __typename: 'EnergySwitch', id: 'es_1', commission: { statusDate: 'soon', status: 'x' } };
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'EnergySwitchUpdated', date: '2026-11-20T12:00:00Z' },
      data: { getEnergySwitch: es },
    });
    expect(route(envelopeFor(payload)).reason).toBe('record-invalid');
  });
});

describe('route() routes what the contract allows', () => {
  it('a trigger of another entity whose name starts with a known one goes to entity.other, by its __typename', () => {
    const profile = body(
      { webhook: { id: 'wh_1', trigger: 'UserProfileUpdated', date: '2026-11-20T12:00:00Z' } },
      { __typename: 'UserProfile', id: 'prf_1', bio: 'hi' },
    );
    const decision = route(envelopeFor(profile));
    expect(decision.kind).toBe('routed');
    expect(decision.outputs.map((o) => [o.topic, o.key])).toEqual([
      ['webhooks.unique', 'wh_1'],
      ['entity.other', 'test/UserProfile/prf_1'],
    ]);
    expect(entityEvent(decision)).toMatchObject({
      entity: 'UserProfile',
      action: 'Updated',
      entityId: 'prf_1',
    });
    // Before, an EnergySwitchQuote was read as an EnergySwitch and dead-lettered (record-invalid).
    const quote = body(
      { webhook: { id: 'wh_1', trigger: 'EnergySwitchQuoteAdded', date: '2026-11-20T12:00:00Z' } },
      { __typename: 'EnergySwitchQuote', id: 'q_1' },
    );
    expect(route(envelopeFor(quote)).outputs.map((o) => o.topic)).toEqual([
      'webhooks.unique',
      'entity.other',
    ]);
    // A User record for the same trigger name stays a User event.
    const user = body(
      { webhook: { id: 'wh_1', trigger: 'UserProfileUpdated', date: '2026-11-20T12:00:00Z' } },
      { __typename: 'User', id: 'usr_1' },
    );
    expect(entityEvent(route(envelopeFor(user)))).toMatchObject({ entity: 'User', action: 'ProfileUpdated' });
  });

  it("an EnergySwitch's user.tenantId as a string or a number (the contract gives no type), kept as its text", () => {
    for (const [sent, kept] of [
      ['"t_7"', 't_7'],
      ['7', '7'],
      ['12345678901234567890', '12345678901234567890'],
      ['null', null],
    ] as const) {
      const text =
        '{"webhook":{"id":"wh_1","trigger":"EnergySwitchUpdated","date":"2026-11-20T12:00:00Z"},' +
        `"data":{"getEnergySwitch":{"__typename":"EnergySwitch","id":"es_1","user":{"id":"u_1","tenantId":${sent}}}}}`;
      const decision = route(envelopeFor(text));
      const out = decision.outputs.find((o) => o.topic === 'entity.energy-switch');
      expect(out?.value).toMatchObject({ user: { id: 'u_1', tenantId: kept } });
    }
  });

  it('an empty errors array is no error', () => {
    expect(route(envelopeFor(body({ errors: [] }))).kind).toBe('routed');
  });

  it('a *Deleted trigger of an entity without a stream is that entity deleted, however it is answered', () => {
    // `UserProfileDeleted` starts with `User`, but what was deleted is a UserProfile: never a User's tombstone.
    const webhook = { id: 'wh_1', trigger: 'UserProfileDeleted', date: '2026-11-20T12:00:00Z' };
    const answers = [
      { __typename: 'OperationFailure', description: 'not found' },
      null,
      { __typename: 'UserProfile', id: 'usr_1' },
    ];
    for (const answer of answers) {
      const decision = route(envelopeFor(body({ webhook }, answer)));
      expect(decision.kind).toBe('routed');
      const out = decision.outputs.find((o) => ENTITY_TOPIC.test(o.topic));
      expect(out).toMatchObject({
        topic: 'entity.other',
        key: `${envelopeFor('{}').source}/UserProfile/usr_1`,
      });
      expect(out!.value).toMatchObject({
        entity: 'UserProfile',
        action: 'Deleted',
        deleted: true,
        entityId: 'usr_1',
      });
    }
  });

  it('a null root field for a deletion is a deletion', () => {
    const payload = body(
      { webhook: { id: 'wh_1', trigger: 'UserDeleted', date: '2026-11-20T12:00:00Z' } },
      null,
    );
    const event = entityEvent(route(envelopeFor(payload)));
    expect(event).toMatchObject({ deleted: true, entityId: 'usr_1', data: 'null', fields: [] });
  });

  it("an id falls back to query.variables.id, then to the variables' single value", () => {
    const noId = { __typename: 'User', name: 'Ann' };
    expect(entityEvent(route(envelopeFor(body({}, noId)))).entityId).toBe('usr_1');
    const single = body({ query: { variables: { userId: 'usr_9' } } }, noId);
    expect(entityEvent(route(envelopeFor(single))).entityId).toBe('usr_9');
  });

  it('data keeps fields beyond the contract and numbers exactly as sent', () => {
    const text =
      '{"webhook":{"id":"wh_1","trigger":"EnergySwitchUpdated","date":"2026-11-20T12:00:00+01:00"},' +
      '"query":{"variables":{"id":"es_1"}},"data":{"getEnergySwitch":{"__typename":"EnergySwitch","id":"es_1",' +
      '"savings":{"currency":"GBP","amount":100.10},"extra":{"big":12345678901234567890}}}}';
    const decision = route(envelopeFor(text));
    const out = decision.outputs.find((o) => o.topic === 'entity.energy-switch');
    expect(out?.value).toMatchObject({
      occurredAt: Date.parse('2026-11-20T11:00:00Z'),
      savings: { currency: 'GBP', amount: '100.10' },
      fields: ['id', 'savings.currency', 'savings.amount', 'extra.big'],
    });
    const data = (out!.value as EntityEvent).data;
    expect(data).toContain('"amount":100.10');
    expect(data).toContain('"big":12345678901234567890');
  });

  it('a known entity needs a word boundary: UsernameChanged goes to entity.other', () => {
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'UsernameChanged', date: '2026-11-20T12:00:00Z' },
    });
    const decision = route(envelopeFor(payload));
    expect(decision.outputs[1]).toMatchObject({ topic: 'entity.other', key: 'test/Username/usr_1' });
  });

  it('an EnergySwitch delivery with commission null gives no commission event', () => {
    const es = { __typename: 'EnergySwitch', id: 'es_1', commission: null };
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'EnergySwitchUpdated', date: '2026-11-20T12:00:00Z' },
      data: { getEnergySwitch: es },
    });
    expect(route(envelopeFor(payload)).outputs.map((o) => o.topic)).toEqual([
      'webhooks.unique',
      'entity.energy-switch',
    ]);
  });

  it('an EnergySwitch deletion has null typed fields and no commission event', () => {
    const payload = body({
      webhook: { id: 'wh_1', trigger: 'EnergySwitchDeleted', date: '2026-11-20T12:00:00Z' },
      query: { variables: { id: 'es_1' } },
      data: { getEnergySwitch: { __typename: 'OperationFailure', description: 'gone' } },
    });
    const decision = route(envelopeFor(payload));
    expect(decision.outputs.map((o) => o.topic)).toEqual(['webhooks.unique', 'entity.energy-switch']);
    expect(decision.outputs[1]?.value).toMatchObject({
      deleted: true,
      entityId: 'es_1',
      commission: null,
      savings: null,
    });
  });
});

/** A delivery about energy switch es_1 whose record has `members`, as JSON text: numbers as written. */
function energySwitchText(members: string, query = '{"variables":{"id":"es_1"}}'): string {
  return (
    '{"webhook":{"id":"wh_1","trigger":"EnergySwitchUpdated","date":"2026-11-20T12:00:00Z"},' +
    `"query":${query},"data":{"getEnergySwitch":{"__typename":"EnergySwitch","id":"es_1",${members}}}}`
  );
}

function outputOf(decision: RouteDecision, topic: string): unknown {
  const out = decision.outputs.find((o) => o.topic === topic);
  expect(out, topic).toBeDefined();
  return out!.value;
}

describe('route() reads a typed field by its value, however the value is represented', () => {
  it('a money amount sent as a decimal string routes, kept as that exact text', () => {
    const decision = route(envelopeFor(energySwitchText('"savings":{"currency":"GBP","amount":"210.10"}')));
    expect(decision.outputs.map((o) => o.topic)).toEqual(['webhooks.unique', 'entity.energy-switch']);
    const event = outputOf(decision, 'entity.energy-switch') as EntityEvent;
    expect(event).toMatchObject({ savings: { currency: 'GBP', amount: '210.10' } });
    // data is the record as sent: the string stays a string there.
    expect(event.data).toContain('"amount":"210.10"');
  });

  it('a money amount as a string is the same typed value as the number', () => {
    const typed = (amount: string) =>
      outputOf(
        route(envelopeFor(energySwitchText(`"savings":{"currency":"GBP","amount":${amount}}`))),
        'entity.energy-switch',
      );
    expect(typed('"210.10"')).toMatchObject({ savings: (typed('210.10') as { savings: unknown }).savings });
  });

  it.each(['2.0', '2e0', '20e-1', '"2"'])('fuelsSwitched %s routes as the integer 2', (sent) => {
    const decision = route(envelopeFor(energySwitchText(`"fuelsSwitched":${sent}`)));
    expect(decision.kind).toBe('routed');
    expect(outputOf(decision, 'entity.energy-switch')).toMatchObject({ fuelsSwitched: 2 });
  });

  it('a commission counter sent as a string routes, in the entity event and the commission event', () => {
    const decision = route(
      envelopeFor(
        energySwitchText(
          '"commission":{"fuelsWithCommissionReceived":"1","fuelsWaitingForUpdate":1.0e0,' +
            '"status":"commissionReceived","statusDate":"2026-11-20T11:00:00Z"}',
        ),
      ),
    );
    expect(decision.outputs.map((o) => o.topic)).toEqual([
      'webhooks.unique',
      'entity.energy-switch',
      'entity.energy-switch-commission',
    ]);
    const counters = { fuelsWithCommissionReceived: 1, fuelsWaitingForUpdate: 1 };
    expect(outputOf(decision, 'entity.energy-switch')).toMatchObject({ commission: counters });
    expect(outputOf(decision, 'entity.energy-switch-commission')).toMatchObject({
      ...counters,
      status: 'commissionReceived',
      statusAt: Date.parse('2026-11-20T11:00:00Z'),
    });
  });

  it.each([
    '{"api":null,"query":"query Q { q }","variables":{"id":"es_1"}}',
    '{"api":"https://api.platform.example/v1/graphql","query":null,"variables":{"id":"es_1"}}',
  ])('a null query.api or query.query is as good as absent: %s routes', (query) => {
    const decision = route(envelopeFor(energySwitchText('"postcode":"SW1A 1AA"', query)));
    expect(decision.kind).toBe('routed');
    const withoutNulls = query.replace(/"(api|query)":null,/, '');
    const absent = route(envelopeFor(energySwitchText('"postcode":"SW1A 1AA"', withoutNulls)));
    expect(outputOf(decision, 'entity.energy-switch')).toEqual(outputOf(absent, 'entity.energy-switch'));
  });

  it.each([
    ['"fuelsSwitched":"two"', 'fuelsSwitched: expected a number'],
    ['"fuelsSwitched":"2.5"', 'fuelsSwitched: expected a number'],
    ['"fuelsSwitched":"2 "', 'fuelsSwitched: expected a number'],
    ['"fuelsSwitched":"9007199254740993"', 'fuelsSwitched: expected a number'],
    ['"fuelsSwitched":2.5', 'fuelsSwitched: expected an integer'],
    ['"fuelsSwitched":2.0000000000000001', 'fuelsSwitched: expected an integer'],
    ['"fuelsSwitched":9007199254740993', 'fuelsSwitched: expected an integer'],
    ['"savings":{"currency":"GBP","amount":"1,000.00"}', 'savings.amount: expected a number'],
    ['"savings":{"currency":"GBP","amount":"£210.10"}', 'savings.amount: expected a number'],
    [
      '"commission":{"fuelsWithCommissionReceived":"one"}',
      'commission.fuelsWithCommissionReceived: expected a number',
    ],
  ])('still dead-letters %s as record-invalid, with the message it had', (members, message) => {
    const letter = deadLetter(route(envelopeFor(energySwitchText(members))));
    expect(letter.reason).toBe('record-invalid');
    expect(letter.message).toBe(`data.getEnergySwitch: ${message}`);
  });
});

describe('route() with WEBHOOK_DATE_ZONE set', () => {
  const zoneless = (date: string) => body({ webhook: { id: 'wh_1', trigger: 'UserAdded', date } });

  it('reads a webhook date without a zone in the configured zone', () => {
    const decision = route(envelopeFor(zoneless('2026-11-20T13:00:00')), { webhookDateOffsetMinutes: 60 });
    expect(decision.kind).toBe('routed');
    expect(entityEvent(decision).occurredAt).toBe(Date.parse('2026-11-20T12:00:00Z'));
  });

  it('routes the zone-less date exactly as the same instant written in UTC', () => {
    const settings = { webhookDateOffsetMinutes: 0 };
    const local = route(envelopeFor(zoneless('2026-11-20T12:00:00')), settings);
    const utc = route(envelopeFor(zoneless('2026-11-20T12:00:00Z')), settings);
    expect(local.outputs.map((o) => [o.topic, o.key])).toEqual(utc.outputs.map((o) => [o.topic, o.key]));
    expect(entityEvent(local).occurredAt).toBe(entityEvent(utc).occurredAt);
  });

  it('leaves a date with its own zone as it says', () => {
    const decision = route(envelopeFor(zoneless('2026-11-20T12:00:00-05:00')), {
      webhookDateOffsetMinutes: 60,
    });
    expect(entityEvent(decision).occurredAt).toBe(Date.parse('2026-11-20T17:00:00Z'));
  });

  it('still dead-letters a date that is not a date-time', () => {
    const letter = deadLetter(route(envelopeFor(zoneless('yesterday')), { webhookDateOffsetMinutes: 0 }));
    expect(letter.reason).toBe('webhook-date-invalid');
    expect(letter.message).toBe('webhook.date "yesterday": expected an ISO 8601 date-time');
  });

  it('unset, a zone-less date is dead-lettered with a message naming the setting', () => {
    const letter = deadLetter(route(envelopeFor(zoneless('2026-11-20T12:00:00'))));
    expect(letter.reason).toBe('webhook-date-invalid');
    expect(letter.message).toContain('WEBHOOK_DATE_ZONE');
  });

  it("applies to webhook.date only: an energy switch's commission.statusDate still needs its zone", () => {
    const payload = energySwitchBody({
      trigger: 'EnergySwitchAdded',
      date: '2026-11-20T12:00:00',
      commission: { status: 'EXPECTED', statusDate: '2026-11-20T12:00:00' },
    });
    const letter = deadLetter(route(envelopeFor(payload), { webhookDateOffsetMinutes: 0 }));
    expect(letter.reason).toBe('record-invalid');
    expect(letter.message).toContain('commission.statusDate');
  });
});

/** A delivery of energy switch es_1 with the given commission. */
function energySwitchBody({
  trigger,
  date,
  commission,
}: {
  trigger: string;
  date: string;
  commission: Record<string, unknown>;
}) {
  return body({
    webhook: { id: 'wh_1', trigger, date },
    data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_1', commission } },
  });
}

describe('route() on the ISO 8601 date-times the contract allows', () => {
  it('routes a webhook.date whose offset is in whole hours (±hh) at the instant it names', () => {
    const payload = body({ webhook: { id: 'wh_1', trigger: 'UserAdded', date: '2026-11-20T13:00:00+01' } });
    const decision = route(envelopeFor(payload));
    expect(decision.kind).toBe('routed');
    expect(entityEvent(decision).occurredAt).toBe(Date.parse('2026-11-20T12:00:00Z'));
  });

  it('takes a commission.statusDate with a whole-hour offset, and orders by its instant', () => {
    const payload = energySwitchBody({
      trigger: 'EnergySwitchUpdated',
      date: '2026-11-20T12:00:00Z',
      commission: { status: 'commissionExpected', statusDate: '2026-11-20T09:00:00-03' },
    });
    const decision = route(envelopeFor(payload));
    expect(decision.kind).toBe('routed');
    const commission = decision.outputs.find((o) => o.topic === 'entity.energy-switch-commission');
    expect(commission?.value).toMatchObject({
      statusDate: '2026-11-20T09:00:00-03',
      statusAt: Date.parse('2026-11-20T12:00:00Z'),
    });
  });
});

describe('route() against replays: the age of webhook.date when ingest received it', () => {
  const HOUR = 3_600_000;
  const settings = { maxAgeMs: 73 * HOUR, maxAheadMs: 5 * 60_000 };
  const dated = Date.parse('2026-11-20T12:00:00Z');
  const at = (receivedAt: number) => envelopeFor(body(), { receivedAt });

  it('routes a delivery within the platform’s 72 h of retries plus the slack', () => {
    expect(route(at(dated + 72 * HOUR + 59 * 60_000), settings).kind).toBe('routed');
    expect(route(at(dated - 4 * 60_000), settings).kind).toBe('routed');
  });

  it('dead-letters a delivery received after the limit as too-old, never to its entity stream', () => {
    const decision = route(at(dated + 73 * HOUR + 1), settings);
    const letter = deadLetter(decision);
    expect(letter.reason).toBe('too-old');
    expect(letter.stage).toBe('dedupe-router.route');
    expect(letter.message).toMatch(/WEBHOOK_MAX_AGE \(73\.0 h\)/);
    expect(decision.outputs.map((o) => o.topic)).toEqual(['webhooks.unique', 'webhooks.dlq']);
  });

  it('dead-letters a date more than the allowed minutes ahead as from-the-future', () => {
    expect(deadLetter(route(at(dated - 5 * 60_000 - 1), settings)).reason).toBe('from-the-future');
  });

  it('lets an operator’s redrive through whatever its age; every other check still holds', () => {
    const old = at(dated + 400 * HOUR);
    expect(route(old, settings, { operatorApproved: true }).kind).toBe('routed');
    const bad = envelopeFor(body({ data: null }), { receivedAt: dated + 400 * HOUR });
    expect(deadLetter(route(bad, settings, { operatorApproved: true })).reason).toBe('data-missing');
  });

  it('checks nothing when no limit is set (the settings the unit fixtures use)', () => {
    expect(route(at(dated + 4_000 * HOUR)).kind).toBe('routed');
  });
});

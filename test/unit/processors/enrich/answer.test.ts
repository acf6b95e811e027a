import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../../../processors/dedupe-router/dead-letter.js';
import type { EnergySwitchEvent } from '../../../../processors/dedupe-router/entity-event.js';
import type { WebhookFailure } from '../../../../processors/dedupe-router/failure.js';
import { route } from '../../../../processors/dedupe-router/route.js';
import { type FetchRequest, mapAnswer } from '../../../../processors/enrich/answer.js';
import { FULL_ENERGY_SWITCH_QUERY } from '../../../../runtime/config.js';
import { storedDeliveries } from '../fixtures.js';

const API = 'https://api.platform.example/v1/graphql';
const fetchedAt = Date.parse('2026-11-20T12:00:00.000Z');
const request: FetchRequest = {
  key: 'platform/es_501',
  event: {
    webhookId: 'wh_0002',
    source: 'platform',
    ingestId: 'ing-2',
    trigger: 'EnergySwitchUpdated',
    entityId: 'es_501',
  },
  api: API,
  query: FULL_ENERGY_SWITCH_QUERY,
  fetchedAt,
};
const answer = (status: number, body: unknown) => ({
  status,
  body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
});

/** The Full fixture's `data`, byte for byte (199.90 included). */
function fullData(): string {
  const full = storedDeliveries().find(({ delivery }) => delivery.file.includes('full'))!;
  const text = full.envelope.body.toString('utf8');
  return text.slice(text.indexOf('"data":') + 7, -1);
}

describe('mapAnswer', () => {
  it('turns an EnergySwitch answer into the event a Full delivery would give, marked fetched, at the fetch time', () => {
    const output = mapAnswer(request, answer(200, `{"data":${fullData()}}`));
    expect(output.topic).toBe('entity.energy-switch');
    const event = output.value as EnergySwitchEvent;
    expect(output.key).toBe('platform/es_501');
    expect(event).toMatchObject({
      webhookId: 'wh_0002#fetched',
      origin: 'fetched',
      occurredAt: fetchedAt,
      receivedAt: fetchedAt,
      queryApi: API,
      postcode: 'SW1A 1AA',
      savings: { currency: 'GBP', amount: '199.90' },
    });
    expect(event.fields).toHaveLength(21);
    // The same typed fields as the router gives the Full fixture itself.
    const full = storedDeliveries().find(({ delivery }) => delivery.file.includes('full'))!;
    const routed = route(full.envelope).outputs.find((o) => o.topic === 'entity.energy-switch')!
      .value as EnergySwitchEvent;
    const typed = ({
      webhookId,
      ingestId,
      trigger,
      action,
      occurredAt,
      receivedAt,
      queryVariables,
      origin,
      queryApi,
      source,
      ...rest
    }: EnergySwitchEvent) => rest;
    expect(typed(event)).toEqual(typed(routed));
  });

  it('an OperationFailure answer goes to webhooks.failures, keyed as a delivery would be', () => {
    const output = mapAnswer(
      request,
      answer(200, {
        data: { getEnergySwitch: { __typename: 'OperationFailure', description: 'Not found' } },
      }),
    );
    expect(output.topic).toBe('webhooks.failures');
    expect(output.key).toBe('platform/es_501');
    expect(output.value as WebhookFailure).toMatchObject({
      description: 'Not found',
      webhookId: 'wh_0002#fetched',
    });
  });

  it('GraphQL errors, invalid records, refusals and answers about another record are dead-lettered with a reason', () => {
    const reasonOf = (status: number, body: unknown) => {
      const output = mapAnswer(request, answer(status, body));
      expect(output.topic).toBe('webhooks.dlq');
      const dead = output.value as DeadLetter;
      expect(dead.stage).toBe('enrich.fetch');
      return dead.reason;
    };
    expect(reasonOf(200, { errors: [{ message: 'boom' }], data: null })).toBe('graphql-errors');
    expect(reasonOf(400, { errors: [{ message: 'bad query' }] })).toBe('graphql-errors');
    expect(reasonOf(404, 'not here')).toBe('fetch-refused');
    // A refusal carrying a record but no errors (empty or null) is still a refusal, not a fetched event.
    const record = { data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_501' } } };
    expect(reasonOf(404, { ...record, errors: [] })).toBe('fetch-refused');
    expect(reasonOf(400, { ...record, errors: null })).toBe('fetch-refused');
    expect(reasonOf(200, 'not json')).toBe('body-not-json');
    expect(
      reasonOf(200, {
        data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_501', fuelsSwitched: 'two' } },
      }),
    ).toBe('record-invalid');
    expect(reasonOf(200, { data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_999' } } })).toBe(
      'answer-mismatch',
    );
  });

  it('an answer larger than the stage reads is dead-lettered output-too-large, saying the limit', () => {
    const output = mapAnswer(request, { status: 200, body: Buffer.alloc(0), overLimitBytes: 1_048_576 });
    expect(output.topic).toBe('webhooks.dlq');
    const dead = output.value as DeadLetter;
    expect(dead).toMatchObject({ reason: 'output-too-large', stage: 'enrich.fetch' });
    expect(dead.message).toMatch(/more than 1048576 bytes/);
  });

  it("a record whose field paths outgrow the entity topics' size is dead-lettered output-too-large, as the router would", () => {
    const body = `{"data":${fullData()}}`;
    expect(mapAnswer(request, answer(200, body), 100_000).topic).toBe('entity.energy-switch');
    const output = mapAnswer(request, answer(200, body), 100);
    expect(output.value as DeadLetter).toMatchObject({ reason: 'output-too-large', stage: 'enrich.fetch' });
    expect((output.value as DeadLetter).message).toMatch(
      /dotted paths of its fields total more than 100 bytes/,
    );
  });

  it('a dead letter keeps the answer wrapped as a delivery, which the router reads back alike', () => {
    const output = mapAnswer(request, answer(200, { errors: [{ message: 'boom' }], data: null }));
    const dead = output.value as DeadLetter;
    const body = JSON.parse(dead.body.toString('utf8'));
    expect(body.webhook).toEqual({
      id: 'wh_0002#fetched',
      trigger: 'EnergySwitchUpdated',
      date: '2026-11-20T12:00:00.000Z',
    });
    expect(body.query.variables).toEqual({ id: 'es_501' });
    expect(route({ ...dead, body: dead.body }).reason).toBe('graphql-errors');
  });
});

import { describe, expect, it } from 'vitest';
import type { EnergySwitchEvent } from '../../../../processors/dedupe-router/entity-event.js';
import { route } from '../../../../processors/dedupe-router/route.js';
import { readQueryShape } from '../../../../processors/enrich/selection.js';
import { enrichTopology } from '../../../../processors/enrich/topology.js';
import { applyEvent, type EntityState, tableFields } from '../../../../processors/tables/merge.js';
import { FULL_ENERGY_SWITCH_QUERY } from '../../../../runtime/config.js';
import type { SourceMessage } from '../../../../runtime/streams/topology.js';
import type { Serde } from '../../../../schemas/serde.js';
import { TopologyTestDriver } from '../../../helpers/topology-test-driver.js';
import { envelopeFor, storedDeliveries } from '../fixtures.js';

const API = 'https://api.platform.example/v1/graphql';
const FETCHED_AT = Date.parse('2026-11-20T12:00:00Z');

/** The fixtures' Minimal delivery and the Full one, as the router makes their events. */
function fixtureEvent(file: string): { key: string; value: EnergySwitchEvent } {
  const { envelope } = storedDeliveries().find(({ delivery }) => delivery.file.includes(file))!;
  const out = route(envelope).outputs.find((o) => o.topic === 'entity.energy-switch')!;
  return { key: out.key, value: out.value as EnergySwitchEvent };
}

function setUp(sentAt?: number) {
  const asked: string[] = [];
  const signals: (AbortSignal | undefined)[] = [];
  const full = storedDeliveries().find(({ delivery }) => delivery.file.includes('full'))!;
  const fullText = full.envelope.body.toString('utf8');
  const data = fullText.slice(fullText.indexOf('"data":') + 7, -1);
  const topology = enrichTopology({
    source: 'entity.energy-switch',
    failures: 'webhooks.failures',
    dlq: 'webhooks.dlq',
    schemaIds: new Map([
      ['entity.energy-switch', 1],
      ['webhooks.failures', 2],
      ['webhooks.dlq', 3],
    ]),
    // Values travel as JSON here: the registry's Avro is the integration tests' business.
    serde: { decode: async (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) } as unknown as Serde,
    policy: {
      triggers: new Set(),
      fullPaths: readQueryShape(FULL_ENERGY_SWITCH_QUERY).paths,
      allowedOrigins: new Set(['https://api.platform.example']),
    },
    query: FULL_ENERGY_SWITCH_QUERY,
    fetcher: {
      fetch: async (api, _query, id, signal) => {
        asked.push(`${api} ${id}`);
        signals.push(signal);
        return {
          status: 200,
          body: Buffer.from(`{"data":${data}}`),
          ...(sentAt === undefined ? {} : { sentAt }),
        };
      },
    },
    now: () => FETCHED_AT,
  });
  const message = (offset: number, event: { key: string; value: EnergySwitchEvent }): SourceMessage => ({
    topic: 'entity.energy-switch',
    partition: 0,
    offset: String(offset),
    key: Buffer.from(event.key),
    value: Buffer.from(JSON.stringify(event.value)),
    timestamp: event.value.receivedAt,
  });
  return { topology, asked, signals, message, driver: new TopologyTestDriver(topology) };
}

describe('the enrich topology', () => {
  it('fetches for the Minimal fixture only, once, and forwards a fetched event stamped with the fetch time', async () => {
    const { topology, asked, message, driver } = setUp();
    const minimal = fixtureEvent('minimal');
    const complete = fixtureEvent('full');
    const messages = [message(0, minimal), message(1, complete)];
    const source = topology.sources[0]!;
    source.readAhead!(messages);
    for (const m of messages)
      driver.pipe(m.topic, 0, {
        key: m.key!.toString(),
        value: await source.deserialize(m),
        timestamp: m.timestamp,
      });
    expect(asked).toEqual([`${API} es_501`]);
    expect(driver.outputs).toHaveLength(1);
    const [output] = driver.outputs;
    expect(output).toMatchObject({
      topic: 'entity.energy-switch',
      key: minimal.key,
      partition: 0,
      timestamp: FETCHED_AT,
    });
    expect(output!.value).toMatchObject({
      origin: 'fetched',
      occurredAt: FETCHED_AT,
      webhookId: 'wh_0002#fetched',
    });
    expect(
      driver.events.filter((e) => e.event === 'processor.enrich.event').map((e) => e.labels.outcome),
    ).toEqual(['fetched', 'skipped-complete']);
  });

  it('gives the tables a full row that an older delivery cannot roll back, and a newer one overrides', async () => {
    const { topology, message } = setUp();
    const minimal = fixtureEvent('minimal');
    const read = await topology.sources[0]!.deserialize(message(0, minimal));
    const fetched = ('output' in read ? read.output.value : undefined) as EnergySwitchEvent;
    let state: EntityState | undefined;
    for (const event of [minimal.value, fetched]) state = applyEvent(state, event).state;
    expect(tableFields(state)).toMatchObject({ postcode: 'SW1A 1AA', 'savings.amount': '199.90' });
    // A Full delivery dated before the fetch, arriving after it: its postcode loses.
    const delivery = (date: string, postcode: string) => {
      const body = {
        webhook: { id: `wh_${date}`, trigger: 'EnergySwitchUpdated', date },
        query: { api: API, query: FULL_ENERGY_SWITCH_QUERY, variables: { id: 'es_501' } },
        data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_501', postcode } },
      };
      const out = route(envelopeFor(body, { source: minimal.value.source })).outputs.find(
        (o) => o.topic === 'entity.energy-switch',
      )!;
      return out.value as EnergySwitchEvent;
    };
    state = applyEvent(state, delivery('2026-11-20T11:30:00Z', 'OLD 1AA')).state;
    expect(tableFields(state)?.postcode).toBe('SW1A 1AA');
    state = applyEvent(state, delivery('2026-11-20T12:30:00Z', 'NEW 2BB')).state;
    expect(tableFields(state)?.postcode).toBe('NEW 2BB');
  });

  it("reading the next batch ahead aborts the reads of the last one not taken (an aborted batch's leftovers)", async () => {
    const { topology, signals, message } = setUp();
    const source = topology.sources[0]!;
    source.readAhead!([message(0, fixtureEvent('minimal'))]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    source.readAhead!([message(0, fixtureEvent('minimal'))]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(signals.map((s) => s?.aborted)).toEqual([true, false]);
  });

  it('stamps a fetched event with the time its request was sent, so a delivery dated after the query wins', async () => {
    // The answer finished arriving at FETCHED_AT (the clock); its request went 1.5 s before.
    const sentAt = FETCHED_AT - 1_500;
    const { topology, message } = setUp(sentAt);
    const minimal = fixtureEvent('minimal');
    const read = await topology.sources[0]!.deserialize(message(0, minimal));
    const fetched = ('output' in read ? read.output.value : undefined) as EnergySwitchEvent;
    expect(fetched).toMatchObject({ origin: 'fetched', occurredAt: sentAt });
    // A delivery dated between the query and the answer's arrival (the state changed meanwhile) wins.
    let state: EntityState | undefined;
    for (const event of [minimal.value, fetched]) state = applyEvent(state, event).state;
    const between = new Date(FETCHED_AT - 500).toISOString();
    const update = route(
      envelopeFor({
        webhook: { id: 'wh_between', trigger: 'EnergySwitchUpdated', date: between },
        data: { getEnergySwitch: { __typename: 'EnergySwitch', id: 'es_501', postcode: 'NEW 1AA' } },
      }),
    ).outputs.find((o) => o.topic === 'entity.energy-switch')!.value as EnergySwitchEvent;
    state = applyEvent(state, update).state;
    expect(tableFields(state)).toMatchObject({ postcode: 'NEW 1AA' });
  });
});

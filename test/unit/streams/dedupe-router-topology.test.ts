// The dedupe-router's topology through the in-memory driver: decisions, changelog and expiry.
import { describe, expect, it } from 'vitest';
import {
  decodeDedupeDecision,
  encodeDedupeDecision,
} from '../../../processors/dedupe-router/dedupe-decision.js';
import { REDRIVE_HEADER, REDRIVE_STAGE_HEADER } from '../../../processors/dedupe-router/dedupe-processor.js';
import { DedupeStore } from '../../../processors/dedupe-router/dedupe-store.js';
import type { RawInput } from '../../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../../processors/dedupe-router/topology.js';
import type { ProcessorContext } from '../../../runtime/streams/processor.js';
import type { Serde } from '../../../schemas/serde.js';
import { TopologyTestDriver } from '../../helpers/topology-test-driver.js';
import { envelopeFor, storedDeliveries } from '../processors/fixtures.js';

const HOUR = 3_600_000;
const WINDOW = 72 * HOUR;
const RAW = 'webhooks.raw';
const CHANGELOG = 'webhooks.dedupe-changelog';

function topology(routeSettings = {}) {
  return dedupeTopology({
    routeSettings,
    rawTopic: RAW,
    changelogTopic: CHANGELOG,
    topicOf: (logical) => logical,
    schemaIds: new Map(ROUTER_OUTPUTS.map((t, i) => [t, i + 1])),
    serde: {} as Serde,
    windowMs: WINDOW,
  });
}

const ok = (envelope: ReturnType<typeof envelopeFor>): RawInput => ({ ok: true, envelope });
const T0 = Date.parse('2026-11-20T00:00:00Z');

describe('the dedupe-router topology', () => {
  it('routes each fixture once and drops the two retries', () => {
    const driver = new TopologyTestDriver(topology());
    storedDeliveries().forEach(({ envelope }, i) => {
      driver.pipe(RAW, 0, { key: envelope.webhookId, value: ok(envelope), timestamp: T0 + i * 1000 });
    });
    const unique = driver.sink('webhooks.unique');
    expect(unique).toHaveLength(storedDeliveries().length - 2);
    expect(new Set(unique.map((u) => u.key)).size).toBe(unique.length);
    expect(driver.events.filter((e) => e.event === 'processor.dedupe.duplicate')).toHaveLength(2);
    // unique and the DLQ stay on the raw record's partition; entity streams go by key.
    expect(unique.every((u) => u.partition === 0)).toBe(true);
    expect(driver.sink('entity.user').every((u) => u.partition === undefined)).toBe(true);
  });

  it('logs every decision to the input partition, dead-lettered ones included', () => {
    const driver = new TopologyTestDriver(topology());
    const bad = envelopeFor('{"webhook":{"id":"wh_bad"}}');
    driver.pipe(RAW, 2, { key: 'wh_bad', value: ok(bad), timestamp: T0 });
    const log = driver.changelogs.get(`${CHANGELOG}/2`)!;
    expect(log).toHaveLength(1);
    expect(log[0]!.key).toBe(`${bad.source}/wh_bad`);
    expect(decodeDedupeDecision(log[0]!.value!)).toEqual({ kind: 'dead-lettered', seenAt: T0 });
    expect(driver.sink('webhooks.dlq')).toHaveLength(1);
  });

  it('processes a dead-lettered id once per redrive run, and a plain retry of it not at all', () => {
    const driver = new TopologyTestDriver(topology());
    const bad = envelopeFor('{"webhook":{"id":"wh_r"}}');
    const redrive = (at: number, run: string) =>
      driver.pipe(RAW, 0, {
        key: 'wh_r',
        value: ok(bad),
        timestamp: T0 + at,
        headers: { [REDRIVE_HEADER]: run },
      });
    driver.pipe(RAW, 0, { key: 'wh_r', value: ok(bad), timestamp: T0 });
    driver.pipe(RAW, 0, { key: 'wh_r', value: ok(bad), timestamp: T0 + 1 });
    redrive(2, 'fix');
    redrive(3, 'fix');
    // Dead-lettered again by the redrive (the body is still bad), once for run "fix".
    expect(driver.sink('webhooks.dlq')).toHaveLength(2);
    // A later run tries again.
    redrive(4, 'fix-2');
    expect(driver.sink('webhooks.dlq')).toHaveLength(3);
    expect(driver.sink('webhooks.unique')).toHaveLength(1);
  });

  it('writes a redriven first delivery to webhooks.unique only when nothing of it was written before', () => {
    const [fixture] = storedDeliveries().filter((d) => d.delivery.expect.topics.includes('entity.user'));
    const envelope = fixture!.envelope;
    // The stream kit dead-lettered its first delivery (processor-error): only the decision was written.
    const kitDeadLettered = new Map([
      [
        `${CHANGELOG}/0`,
        [
          {
            key: `${envelope.source}/${envelope.webhookId}`,
            value: encodeDedupeDecision({ kind: 'dead-lettered', seenAt: T0 }),
            timestamp: T0,
          },
        ],
      ],
    ]);
    const redriven = (driver: TopologyTestDriver<RawInput>, stage: string) =>
      driver.pipe(RAW, 0, {
        key: envelope.webhookId,
        value: ok(envelope),
        timestamp: T0 + 1,
        headers: { [REDRIVE_HEADER]: 'after-the-fix', [REDRIVE_STAGE_HEADER]: stage },
      });
    const afterKit = new TopologyTestDriver(topology(), kitDeadLettered);
    redriven(afterKit, 'dedupe-router.process');
    expect(afterKit.sink('entity.user')).toHaveLength(1);
    expect(afterKit.sink('webhooks.unique').map((u) => u.key)).toEqual([envelope.webhookId]);
    // A letter of the route checks, its id forgotten since (--include-expired): unique has it already.
    const forgotten = new TopologyTestDriver(topology());
    redriven(forgotten, 'dedupe-router.route');
    expect(forgotten.sink('entity.user')).toHaveLength(1);
    expect(forgotten.sink('webhooks.unique')).toEqual([]);
  });

  it("writes a kit's letter to webhooks.unique once however often it is redriven", () => {
    const bad = envelopeFor('{"webhook":{"id":"wh_kit"}}');
    // The stream kit dead-lettered its first delivery (processor-error): the decision only, nothing in unique.
    const kitDeadLettered = new Map([
      [
        `${CHANGELOG}/0`,
        [
          {
            key: `${bad.source}/wh_kit`,
            value: encodeDedupeDecision({ kind: 'dead-lettered', seenAt: T0 }),
            timestamp: T0,
          },
        ],
      ],
    ]);
    const driver = new TopologyTestDriver(topology(), kitDeadLettered);
    // Every redrive sends the id's first letter, the kit's; the body is still bad, so route() dead-letters it.
    for (const [at, run] of [
      [1, 'fix-1'],
      [2, 'fix-2'],
      [3, 'fix-3'],
    ] as const)
      driver.pipe(RAW, 0, {
        key: 'wh_kit',
        value: ok(bad),
        timestamp: T0 + at,
        headers: { [REDRIVE_HEADER]: run, [REDRIVE_STAGE_HEADER]: 'dedupe-router.process' },
      });
    expect(driver.sink('webhooks.dlq')).toHaveLength(3);
    expect(driver.sink('webhooks.unique').map((u) => u.key)).toEqual(['wh_kit']);
  });

  it('dead-letters a record the router threw on, and keeps an earlier routed decision of its id', () => {
    const { deadLetter } = topology();
    const store = new DedupeStore(WINDOW);
    const context = { getStore: () => store, instrument: () => {} } as unknown as ProcessorContext;
    const failure = { reason: 'processor-error', message: 'boom' };
    const record = (envelope: ReturnType<typeof envelopeFor>, timestamp: number) =>
      ({ key: envelope.webhookId, value: ok(envelope), timestamp, headers: {} }) as never;
    const routed = envelopeFor('{"webhook":{"id":"wh_routed"}}');
    store.put(`${routed.source}/wh_routed`, { kind: 'routed', seenAt: T0 }, T0);
    // A retry of a routed id the router threw on (a store read failing, say): its dead letter is written,
    // and the id stays routed, so a redrive of that letter is dropped as a duplicate, not routed again.
    expect(deadLetter!.build(record(routed, T0 + 1), failure, context).value).toMatchObject({
      reason: 'processor-error',
      webhookId: 'wh_routed',
    });
    expect(store.get(`${routed.source}/wh_routed`)).toEqual({ kind: 'routed', seenAt: T0 });
    // A first delivery is remembered as dead-lettered, so a retry of it is a duplicate.
    const fresh = envelopeFor('{"webhook":{"id":"wh_new"}}');
    deadLetter!.build(record(fresh, T0 + 2), failure, context);
    expect(store.get(`${fresh.source}/wh_new`)).toEqual({ kind: 'dead-lettered', seenAt: T0 + 2 });
  });

  it('sends an undecodable record to the DLQ and goes on', () => {
    const driver = new TopologyTestDriver(topology());
    const poison: RawInput = {
      ok: false,
      message: 'not Avro',
      key: 'k',
      value: Buffer.from('garbage'),
      timestamp: T0,
      position: 'webhooks.raw/0/5',
    };
    driver.pipe(RAW, 0, { key: 'k', value: poison, timestamp: T0 });
    const [dead] = driver.sink('webhooks.dlq');
    expect(dead!.value).toMatchObject({ reason: 'envelope-undecodable', body: Buffer.from('garbage') });
    expect(driver.changelogs.get(`${CHANGELOG}/0`) ?? []).toEqual([]);
  });

  it('forgets ids after the window by stream time, and a new owner restores only what is still inside', () => {
    const driver = new TopologyTestDriver(topology());
    const [a, b, c] = storedDeliveries().map((d) => d.envelope);
    driver.pipe(RAW, 0, { key: a!.webhookId, value: ok(a!), timestamp: T0 });
    driver.pipe(RAW, 0, { key: b!.webhookId, value: ok(b!), timestamp: T0 + 70 * HOUR });
    driver.pipe(RAW, 0, { key: c!.webhookId, value: ok(c!), timestamp: T0 + 80 * HOUR });
    const next = new TopologyTestDriver(topology(), driver.changelogs);
    next.pipe(RAW, 0, { key: a!.webhookId, value: ok(a!), timestamp: T0 + 81 * HOUR });
    next.pipe(RAW, 0, { key: b!.webhookId, value: ok(b!), timestamp: T0 + 81 * HOUR });
    expect(next.sink('webhooks.unique').map((u) => u.key)).toEqual([a!.webhookId]);
    // Live, without a restart, the same holds.
    driver.pipe(RAW, 0, { key: a!.webhookId, value: ok(a!), timestamp: T0 + 81 * HOUR });
    driver.pipe(RAW, 0, { key: b!.webhookId, value: ok(b!), timestamp: T0 + 81 * HOUR });
    expect(driver.sink('webhooks.unique').map((u) => u.key)).toEqual([a, b, c, a].map((e) => e!.webhookId));
  });

  it('dead-letters a replay of an old delivery as too-old, and routes it once an operator redrives it', () => {
    const driver = new TopologyTestDriver(topology({ maxAgeMs: 73 * HOUR, maxAheadMs: 5 * 60_000 }));
    const [fixture] = storedDeliveries().filter((d) => d.delivery.expect.topics.includes('entity.user'));
    const replayed = { ...fixture!.envelope, receivedAt: T0 + 30 * 24 * HOUR };
    driver.pipe(RAW, 0, { key: replayed.webhookId, value: ok(replayed), timestamp: replayed.receivedAt });
    expect(driver.sink('webhooks.dlq').map((d) => (d.value as { reason: string }).reason)).toEqual([
      'too-old',
    ]);
    expect(driver.sink('entity.user')).toHaveLength(0);
    driver.pipe(RAW, 0, {
      key: replayed.webhookId,
      value: ok(replayed),
      timestamp: replayed.receivedAt + 1,
      headers: { [REDRIVE_HEADER]: 'operator-checked' },
    });
    expect(driver.sink('entity.user')).toHaveLength(1);
    expect(driver.sink('webhooks.dlq')).toHaveLength(1);
    // Received a month ago: the redrive's event says nothing of how far behind the router runs.
    expect(driver.events.filter((e) => e.event === 'processor.dedupe.freshness')).toEqual([]);
  });

  it('observes freshness for a delivery it routes', () => {
    const driver = new TopologyTestDriver(topology());
    const [fixture] = storedDeliveries().filter((d) => d.delivery.expect.topics.includes('entity.user'));
    driver.pipe(RAW, 0, { key: fixture!.envelope.webhookId, value: ok(fixture!.envelope), timestamp: T0 });
    expect(driver.events.filter((e) => e.event === 'processor.dedupe.freshness')).toHaveLength(1);
  });
});

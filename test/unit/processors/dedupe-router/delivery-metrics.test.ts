// How much the platform retries and how late it delivers, as the router measures it per delivery:
// the events its processor emits (through the in-memory driver) and the series they become.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { REDRIVE_HEADER } from '../../../../processors/dedupe-router/dedupe-processor.js';
import { dedupeMetricEvents } from '../../../../processors/dedupe-router/metrics.js';
import type { RawInput } from '../../../../processors/dedupe-router/poison.js';
import { RetryCounts } from '../../../../processors/dedupe-router/retry-counts.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../../../processors/dedupe-router/topology.js';
import { CONTRACT_TRIGGERS, triggerLabel } from '../../../../processors/dedupe-router/trigger-label.js';
import { createStreamMetrics } from '../../../../runtime/streams/metrics.js';
import type { RawEnvelope } from '../../../../schemas/raw-envelope.js';
import type { Serde } from '../../../../schemas/serde.js';
import { TopologyTestDriver } from '../../../helpers/topology-test-driver.js';
import { envelopeFor } from '../fixtures.js';

const RAW = 'webhooks.raw';
const T0 = Date.parse('2026-11-23T10:00:00Z');

function driver() {
  return new TopologyTestDriver(
    dedupeTopology({
      rawTopic: RAW,
      changelogTopic: 'webhooks.dedupe-changelog',
      topicOf: (logical) => logical,
      schemaIds: new Map(ROUTER_OUTPUTS.map((t, i) => [t, i + 1])),
      serde: {} as Serde,
      windowMs: 72 * 3_600_000,
    }),
  );
}

function delivery(id: string, trigger: string, date: string | null, receivedAt: number): RawEnvelope {
  const body = { webhook: { id, trigger, date }, data: { user: { __typename: 'User', id: 'u1' } } };
  return envelopeFor(body, { trigger, webhookDate: date, receivedAt });
}

const ok = (envelope: RawEnvelope): RawInput => ({ ok: true, envelope });
const valuesOf = (d: ReturnType<typeof driver>, event: string) =>
  d.events.filter((e) => e.event === event).map((e) => e.value);

describe('the router’s delivery measures', () => {
  it('counts the duplicates of an id so far with each delivery: 0 for the first, then 1, 2', () => {
    const d = driver();
    const first = delivery('wh_1', 'UserAdded', '2026-11-23T09:59:00Z', T0);
    for (let n = 0; n < 3; n++) d.pipe(RAW, 0, { key: 'wh_1', value: ok(first), timestamp: T0 + n * 1000 });
    d.pipe(RAW, 0, { key: 'wh_2', value: ok(delivery('wh_2', 'UserAdded', null, T0)), timestamp: T0 + 5000 });
    expect(valuesOf(d, 'processor.dedupe.delivery')).toEqual([0, 1, 2, 0]);
    const labels = d.events.find((e) => e.event === 'processor.dedupe.delivery')!.labels;
    expect(labels).toEqual({ source: 'test', trigger: 'UserAdded' });
  });

  it('measures receivedAt − webhook.date per delivery, skipping a missing date and reading a date ahead as 0', () => {
    const d = driver();
    const late = delivery('wh_late', 'UserAdded', '2026-11-23T08:00:00+00:00', T0);
    d.pipe(RAW, 0, { key: 'wh_late', value: ok(late), timestamp: T0 });
    // Its retry an hour later is an hour later still.
    d.pipe(RAW, 0, {
      key: 'wh_late',
      value: ok({ ...late, receivedAt: T0 + 3_600_000 }),
      timestamp: T0 + 3_600_000,
    });
    d.pipe(RAW, 0, { key: 'wh_none', value: ok(delivery('wh_none', 'UserAdded', null, T0)), timestamp: T0 });
    const ahead = delivery('wh_ahead', 'UserAdded', '2026-11-23T10:00:05Z', T0);
    d.pipe(RAW, 0, { key: 'wh_ahead', value: ok(ahead), timestamp: T0 });
    expect(valuesOf(d, 'processor.dedupe.delay')).toEqual([7200, 10800, 0]);
  });

  it('leaves redriven records out: they are the operator’s, not the platform’s retries', () => {
    const d = driver();
    const bad = envelopeFor('{"webhook":{"id":"wh_r"}}');
    d.pipe(RAW, 0, { key: 'wh_r', value: ok(bad), timestamp: T0 });
    d.pipe(RAW, 0, { key: 'wh_r', value: ok(bad), timestamp: T0 + 1, headers: { [REDRIVE_HEADER]: 'fix' } });
    expect(valuesOf(d, 'processor.dedupe.delivery')).toEqual([0]);
  });

  it('exposes both as histograms by source and trigger, unknown triggers as "other"', async () => {
    const registry = new Registry();
    const metrics = createStreamMetrics({
      app: 'dedupe-router',
      registry,
      events: dedupeMetricEvents(registry),
    });
    metrics.instrument('processor.dedupe.delivery', { source: 'energy', trigger: 'EnergySwitchUpdated' }, 0);
    metrics.instrument('processor.dedupe.delivery', { source: 'energy', trigger: 'EnergySwitchUpdated' }, 1);
    metrics.instrument('processor.dedupe.delivery', { source: 'energy', trigger: 'Made-Up-By-A-Sender' }, 0);
    metrics.instrument('processor.dedupe.delay', { source: 'energy', trigger: '' }, 90);
    const text = await registry.metrics();
    expect(text).toContain(
      'hookledger_dedupe_duplicates_per_id_bucket{le="0",source="energy",trigger="EnergySwitchUpdated"} 1',
    );
    expect(text).toContain(
      'hookledger_dedupe_duplicates_per_id_count{source="energy",trigger="EnergySwitchUpdated"} 2',
    );
    expect(text).toContain('hookledger_dedupe_duplicates_per_id_count{source="energy",trigger="other"} 1');
    expect(text).toContain(
      'hookledger_dedupe_delivery_delay_seconds_bucket{le="300",source="energy",trigger="other"} 1',
    );
    expect(text).not.toContain('Made-Up');
  });
});

describe('triggerLabel', () => {
  it('keeps the contract’s eight triggers and folds anything else into "other"', () => {
    for (const trigger of CONTRACT_TRIGGERS) expect(triggerLabel(trigger)).toBe(trigger);
    expect(CONTRACT_TRIGGERS).toHaveLength(8);
    expect(['PaymentAdded', 'useradded', '', null].map(triggerLabel)).toEqual([
      'other',
      'other',
      'other',
      'other',
    ]);
  });
});

describe('RetryCounts', () => {
  it('counts duplicates per id and forgets the least recently retried past its bound', () => {
    const counts = new RetryCounts(2);
    expect([counts.duplicate('a'), counts.duplicate('a'), counts.duplicate('b')]).toEqual([1, 2, 1]);
    counts.duplicate('a');
    counts.duplicate('c'); // b goes
    expect(counts.size).toBe(2);
    expect(counts.duplicate('b')).toBe(1);
    expect(counts.duplicate('a')).toBe(1); // a went when b came back
    expect(() => new RetryCounts(0)).toThrow(/maxIds/);
  });

  it('counts a long id (kept by its digest) as the id itself', () => {
    const counts = new RetryCounts(10_000);
    for (let n = 0; n < 2_000; n++) counts.duplicate(`${n}/${'x'.repeat(8_000)}`);
    expect(counts.duplicate(`7/${'x'.repeat(8_000)}`)).toBe(2);
    expect(counts.duplicate(`7/${'x'.repeat(7_999)}y`)).toBe(1);
    expect(counts.size).toBe(2_001);
  });
});

import { describe, expect, it } from 'vitest';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import type { RawRecord } from '../../../ingest/producer/port.js';
import type { Source } from '../../../ingest/sources.js';
import {
  createQuarantine,
  quarantineRecord,
  type RefusedRequest,
} from '../../../ingest/webhooks/quarantine.js';
import { QuarantineBound } from '../../../ingest/webhooks/quarantine-bound.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import type { QuarantinedRequest } from '../../../schemas/quarantined-request.js';
import { capturingLogger } from './fakes.js';

const source: Source = {
  name: 'energy',
  signature: 'required',
  keys: new Map([
    ['k2026a', Buffer.from('old-key')],
    ['k2026b', Buffer.from('other-key')],
  ]),
};
const body = Buffer.from(
  '{"webhook":{"id":"wh-1","trigger":"UserAdded","date":"2026-11-23T10:00:00Z"},"data":{}}',
);

function refused(overrides: Partial<RefusedRequest> = {}): RefusedRequest {
  return {
    source,
    body,
    headers: {
      'content-type': 'application/json',
      'x-signature': signBody(body, 'a-key-not-configured-yet'),
      authorization: 'Bearer secret',
      host: 'ingest',
    },
    query: 'tenant=7',
    receivedAt: 1_700_000_000_000,
    ingestId: 'req-1',
    reason: 'mismatch',
    ...overrides,
  };
}

describe('the quarantined record', () => {
  it('holds what the raw envelope would, the reason, and the key ids tried (never a key)', () => {
    const record = quarantineRecord(refused());
    expect(record).toEqual({
      webhookId: 'wh-1',
      source: 'energy',
      trigger: 'UserAdded',
      webhookDate: '2026-11-23T10:00:00Z',
      receivedAt: 1_700_000_000_000,
      body,
      headers: {
        'content-type': 'application/json',
        'x-signature': refused().headers['x-signature'] as string,
      },
      query: 'tenant=7',
      reason: 'mismatch',
      triedKeyIds: ['k2026a', 'k2026b'],
      ingestId: 'req-1',
    } satisfies QuarantinedRequest);
    expect(JSON.stringify(record)).not.toContain('old-key');
  });

  it('is keyed by the digest of a body without an id, as webhooks.raw is', () => {
    const record = quarantineRecord(refused({ body: Buffer.from('not json') }));
    expect(record.webhookId).toMatch(/^sha1:[0-9a-f]{40}$/);
    expect(record.trigger).toBeNull();
  });

  it('names no key tried when the signature was missing or unusable', () => {
    for (const reason of ['missing', 'malformed', 'algorithm'] as const) {
      expect(quarantineRecord(refused({ reason })).triedKeyIds).toEqual([]);
    }
  });
});

function harness({ perSecond = 1_000, storeFails = false, bytesPerSecond = 1_000_000 } = {}) {
  const metrics = createIngestMetrics({ defaultMetrics: false });
  const stored: RawRecord[] = [];
  const deferred: Array<() => void> = [];
  const { logger, text } = capturingLogger();
  const quarantine = createQuarantine({
    bound: new QuarantineBound({ requestsPerSecond: perSecond, bytesPerSecond, burstSeconds: 1 }),
    encode: async (record) => Buffer.from(JSON.stringify({ ...record, body: record.body.toString() })),
    store: async (record) => {
      if (storeFails) throw new Error('broker down');
      stored.push(record);
    },
    metrics,
    logger,
    now: () => 1_700_000_000_000,
    defer: (task) => deferred.push(task),
  });
  const runDeferred = async () => {
    for (const task of deferred.splice(0)) task();
    await new Promise((resolve) => setImmediate(resolve));
  };
  const count = async (name: string) =>
    (await metrics.registry.getMetricsAsJSON())
      .find((m) => m.name === name)!
      .values.map((v) => ({ labels: v.labels, value: v.value }));
  return { quarantine, stored, runDeferred, count, logText: text };
}

describe('holding a refused request', () => {
  it('returns before anything is encoded or stored: the 401 is not delayed', async () => {
    const h = harness();
    h.quarantine.hold(refused());
    expect(h.stored).toHaveLength(0);
    await h.runDeferred();
    expect(h.stored.map((r) => [r.key, r.timestamp])).toEqual([['wh-1', 1_700_000_000_000]]);
    expect(await h.count('hookledger_ingest_quarantined_total')).toEqual([
      { labels: { source: 'energy' }, value: 1 },
    ]);
  });

  it('drops what is over the source bound and counts it, keeping nothing of it', async () => {
    const h = harness({ perSecond: 3 });
    for (let i = 0; i < 10; i++) h.quarantine.hold(refused({ ingestId: `req-${i}` }));
    await h.runDeferred();
    expect(h.stored).toHaveLength(3);
    expect(await h.count('hookledger_ingest_quarantine_dropped_total')).toEqual([
      { labels: { source: 'energy', reason: 'over-rate' }, value: 7 },
    ]);
  });

  it('a failed write is logged in one line and counted; hold never throws', async () => {
    const h = harness({ storeFails: true });
    expect(() => h.quarantine.hold(refused())).not.toThrow();
    await h.runDeferred();
    expect(await h.count('hookledger_ingest_quarantine_dropped_total')).toEqual([
      { labels: { source: 'energy', reason: 'not-stored' }, value: 1 },
    ]);
    expect(h.logText()).toContain('refused request not quarantined');
    expect(h.logText()).not.toContain('UserAdded');
  });

  it('keeps only a signature that does not match: a missing, malformed or other-algorithm one never verifies', async () => {
    const h = harness();
    for (const reason of ['missing', 'malformed', 'algorithm'] as const)
      h.quarantine.hold(refused({ reason }));
    await h.runDeferred();
    expect(h.stored).toHaveLength(0);
    expect(await h.count('hookledger_ingest_quarantine_dropped_total')).toEqual([
      { labels: { source: 'energy', reason: 'unverifiable' }, value: 3 },
    ]);
  });

  it('counts the whole record against the byte bound: a long id weighs twice, not once', async () => {
    // 40 kB of budget: an 8 kB body whose id is most of it makes a record of 24 kB and more: the body, the
    // id in the value and the id as the key (two would fit if the key were not counted). Ids are at most
    // MAX_WEBHOOK_ID_BYTES (8 KiB) as keys.
    const h = harness({ bytesPerSecond: 40_000 });
    const heavy = (n: number) =>
      Buffer.from(`{"webhook":{"id":"${String(n).padEnd(8_000, 'x')}","trigger":"UserAdded"}}`);
    for (let n = 0; n < 5; n++) {
      h.quarantine.hold(refused({ body: heavy(n), ingestId: `req-${n}` }));
      await h.runDeferred();
    }
    const kept = h.stored.reduce((sum, r) => sum + r.value.length + Buffer.byteLength(r.key), 0);
    expect(h.stored).toHaveLength(1);
    expect(kept).toBeLessThanOrEqual(40_000);
    const dropped = await h.count('hookledger_ingest_quarantine_dropped_total');
    expect(dropped.reduce((sum, d) => sum + d.value, 0)).toBe(4);
  });

  it('keeps only the allow-listed headers and the signature, each value cut to its bound', () => {
    const record = quarantineRecord(
      refused({
        headers: {
          'content-type': 'application/json',
          'x-signature': 'sha1=00',
          'user-agent': 'u'.repeat(100_000),
          'x-forged-1': 'h'.repeat(8_000),
          'x-access-key': 'secret',
        },
      }),
    );
    expect(Object.keys(record.headers).sort()).toEqual(['content-type', 'user-agent', 'x-signature']);
    expect(record.headers['user-agent']!.length).toBeLessThanOrEqual(512);
  });
});

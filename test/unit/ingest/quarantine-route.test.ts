// The webhook route's side of the quarantine: which refused requests it hands over, and that the
// answer stays what it was.
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../ingest/app.js';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import { RawProducer } from '../../../ingest/producer/raw-producer.js';
import { parseSources } from '../../../ingest/sources.js';
import type { RefusedRequest } from '../../../ingest/webhooks/quarantine.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import { capturingLogger, FakeKafka, MemoryEncoder, until } from './fakes.js';

const SOURCES = JSON.stringify({
  energy: { keys: { k1: 'configured-key-0123456789abcdef0123456789' } },
  sandbox: { signature: 'none' },
});
const BODY = '{"webhook":{"id":"wh_7","trigger":"UserAdded","date":"2026-11-20T10:00:00Z"},"data":{}}';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function appWithQuarantine() {
  const { logger } = capturingLogger();
  const kafka = new FakeKafka();
  const producer = new RawProducer({
    connect: kafka.connect,
    logger,
    lingerMs: 1,
    maxBatchRecords: 100,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: 10_000_000,
    deadlineMs: 2_000,
  });
  producer.start();
  await until(() => producer.ready);
  const held: RefusedRequest[] = [];
  const app = await buildApp({
    sources: parseSources(SOURCES),
    store: producer,
    encoder: new MemoryEncoder(),
    logger,
    metrics: createIngestMetrics({ defaultMetrics: false }),
    quarantine: { hold: (request) => held.push(request) },
  });
  closers.push(async () => {
    await app.close();
    await producer.close();
  });
  const post = (url: string, signature?: string) =>
    app.inject({
      method: 'POST',
      url,
      payload: BODY,
      headers: {
        'content-type': 'application/json',
        ...(signature === undefined ? {} : { 'x-signature': signature }),
      },
    });
  return { held, post, kafka };
}

describe('the webhook route and the quarantine', () => {
  it('hands over a request whose signature does not verify, and still answers 401', async () => {
    const h = await appWithQuarantine();
    const response = await h.post('/webhooks/energy?tenant=7', signBody(BODY, 'a-key-not-configured'));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({
      code: 'INGEST_ERR_SIGNATURE',
      message: 'Signature check failed',
    });
    expect(h.held).toHaveLength(1);
    expect(h.held[0]).toMatchObject({ reason: 'mismatch', query: 'tenant=***' });
    expect(h.held[0]!.source.name).toBe('energy');
    expect(h.held[0]!.body.toString()).toBe(BODY);
    expect(h.kafka.acked).toHaveLength(0);
  });

  it('hands over a request without a signature, with its reason', async () => {
    const h = await appWithQuarantine();
    expect((await h.post('/webhooks/energy')).statusCode).toBe(401);
    expect(h.held.map((r) => r.reason)).toEqual(['missing']);
  });

  it('never hands over an unknown source, an insecure source or an authentic delivery', async () => {
    const h = await appWithQuarantine();
    expect((await h.post('/webhooks/nobody', signBody(BODY, 'x'))).statusCode).toBe(404);
    expect((await h.post('/webhooks/sandbox', signBody(BODY, 'x'))).statusCode).toBe(200);
    expect(
      (await h.post('/webhooks/energy', signBody(BODY, 'configured-key-0123456789abcdef0123456789')))
        .statusCode,
    ).toBe(200);
    expect(h.held).toHaveLength(0);
  });
});

// The drain before ingest stops (INGEST_DRAIN_DELAY_MS): readiness fails first, webhooks are still
// stored until the delay ends, and only then does the listener close.
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../ingest/app.js';
import { createDrain } from '../../../ingest/drain.js';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import { buildOpsApp } from '../../../ingest/ops-app.js';
import { RawProducer } from '../../../ingest/producer/raw-producer.js';
import { parseSources } from '../../../ingest/sources.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import { loadConfig } from '../../../runtime/config.js';
import { capturingLogger, FakeKafka, MemoryEncoder, until } from './fakes.js';

const KEY = 'drain-test-key-0123456789abcdef0123';
const opened: Array<{ apps: FastifyInstance[]; producer: RawProducer }> = [];

afterEach(async () => {
  for (const { apps, producer } of opened.splice(0)) {
    for (const app of apps) await app.close();
    await producer.close();
  }
});

async function listening(delayMs: number) {
  const { logger } = capturingLogger();
  const kafka = new FakeKafka();
  const producer = new RawProducer({
    connect: kafka.connect,
    logger,
    lingerMs: 1,
    maxBatchRecords: 10,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: 1_000_000,
    deadlineMs: 2_000,
  });
  producer.start();
  await until(() => producer.ready);
  const drain = createDrain({ delayMs, logger });
  const metrics = createIngestMetrics({ defaultMetrics: false });
  const encoder = new MemoryEncoder();
  const app = await buildApp({
    sources: parseSources(JSON.stringify({ energy: { keys: { k1: KEY } } })),
    store: producer,
    encoder,
    logger,
    metrics,
  });
  // /readyz lives on the ops server (INGEST_OPS_PORT), the webhooks on the public one.
  const ops = await buildOpsApp({
    store: producer,
    encoder,
    metrics,
    logger,
    draining: () => drain.draining,
  });
  opened.push({ apps: [app, ops], producer });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const opsUrl = await ops.listen({ host: '127.0.0.1', port: 0 });
  return { app, ops, kafka, drain, url, opsUrl };
}

function post(url: string, id: string) {
  const body = JSON.stringify({ webhook: { id } });
  return fetch(`${url}/webhooks/energy`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) },
    body,
  });
}

describe('the drain before ingest stops', () => {
  it('fails /readyz at once while webhooks are still stored, and the listener closes only after the delay', async () => {
    const { app, ops, kafka, drain, url, opsUrl } = await listening(600);
    expect((await fetch(`${opsUrl}/readyz`)).status).toBe(200);

    const started = Date.now();
    // What runIngest does on SIGTERM: drain, then close.
    const stopped = drain.begin().then(async () => {
      await app.close();
      await ops.close();
    });

    const ready = await fetch(`${opsUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, boolean> }).checks.accepting).toBe(false);
    // A webhook routed here before the Service dropped the pod is still taken, and stored.
    expect((await post(url, 'wh_during_drain')).status).toBe(200);
    expect(kafka.acked.map((r) => r.key)).toContain('wh_during_drain');
    expect((await fetch(`${opsUrl}/healthz`)).status).toBe(200);

    await stopped;
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    await expect(post(url, 'wh_after_close')).rejects.toThrow();
  });

  it('waits the delay once, however often it is asked', async () => {
    const waits: number[] = [];
    const drain = createDrain({ delayMs: 5_000, sleep: async (ms) => void waits.push(ms) });
    expect(drain.draining).toBe(false);
    const first = drain.begin();
    expect(drain.draining).toBe(true);
    await Promise.all([first, drain.begin()]);
    expect(waits).toEqual([5_000]);
  });

  it('closes at once with a delay of 0', async () => {
    const waits: number[] = [];
    const drain = createDrain({ delayMs: 0, sleep: async (ms) => void waits.push(ms) });
    await drain.begin();
    expect(drain.draining).toBe(true);
    expect(waits).toEqual([]);
  });

  it('defaults to 5 s, and refuses a negative or non-integer delay naming the variable', () => {
    const minimal = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };
    expect(loadConfig(minimal).INGEST_DRAIN_DELAY_MS).toBe(5_000);
    expect(loadConfig({ ...minimal, INGEST_DRAIN_DELAY_MS: '0' }).INGEST_DRAIN_DELAY_MS).toBe(0);
    expect(() => loadConfig({ ...minimal, INGEST_DRAIN_DELAY_MS: '-1' })).toThrow(/^INGEST_DRAIN_DELAY_MS: /);
    expect(() => loadConfig({ ...minimal, INGEST_DRAIN_DELAY_MS: '2.5' })).toThrow(
      /^INGEST_DRAIN_DELAY_MS: /,
    );
  });
});

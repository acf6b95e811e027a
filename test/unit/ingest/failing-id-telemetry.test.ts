// The failing-id list through the ingest app: which answers put an id on it and take it off, what
// /metrics shows, and the log lines an operator gets (fastify.inject, a fake Kafka, a moved clock).
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../ingest/app.js';
import { INGEST_ERR_UNAVAILABLE } from '../../../ingest/errors.js';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import { RawProducer } from '../../../ingest/producer/raw-producer.js';
import { parseSources } from '../../../ingest/sources.js';
import { digestKey } from '../../../ingest/webhooks/extract.js';
import type { FailingIdEvent, FailingIdPeers } from '../../../ingest/webhooks/failing-id-telemetry.js';
import { FailingIds, keptId } from '../../../ingest/webhooks/failing-ids.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';
import { capturingLogger, FakeKafka, MemoryEncoder, until } from './fakes.js';

const KEY = 'unit-key-failing-ids-0123456789abcdef0123456789';
const SOURCES = JSON.stringify({ energy: { keys: { k1: KEY } }, sandbox: { signature: 'none' } });
const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-23T08:00:00Z');
const body = (id: string) =>
  `{"webhook":{"id":"${id}","trigger":"UserAdded","date":"2026-11-23T07:59:00Z"},"data":{}}`;

/** The registry away: a verified delivery gets 503 and the platform retries it. */
class SwitchableEncoder extends MemoryEncoder {
  unavailable = false;
  override async encode(envelope: RawEnvelope): Promise<Buffer> {
    if (this.unavailable) throw new INGEST_ERR_UNAVAILABLE();
    return super.encode(envelope);
  }
}

interface Harness {
  app: FastifyInstance;
  registry: Registry;
  encoder: SwitchableEncoder;
  kafka: FakeKafka;
  producer: RawProducer;
  failingIds: FailingIds;
  advance(ms: number): void;
  logs(): string;
}

const open: Harness[] = [];

async function harness(failingIdPeers?: FailingIdPeers): Promise<Harness> {
  const { logger, text } = capturingLogger();
  const kafka = new FakeKafka();
  let now = T0;
  const failingIds = new FailingIds({ now: () => now, maxIds: 3 });
  const producer = new RawProducer({
    connect: kafka.connect,
    logger,
    lingerMs: 1,
    maxBatchRecords: 100,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: 10_000_000,
    deadlineMs: 2_000,
    reconnectInitialMs: 5,
    reconnectMaxMs: 20,
  });
  producer.start();
  await until(() => producer.ready);
  const encoder = new SwitchableEncoder();
  const metrics = createIngestMetrics({ defaultMetrics: false });
  const app = await buildApp({
    sources: parseSources(SOURCES),
    store: producer,
    encoder,
    logger,
    metrics,
    failingIds,
    ...(failingIdPeers ? { failingIdPeers } : {}),
  });
  const h = {
    app,
    registry: metrics.registry,
    encoder,
    kafka,
    producer,
    failingIds,
    advance: (ms: number) => (now += ms),
    logs: text,
  };
  open.push(h);
  return h;
}

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.app.close();
    await h.producer.close();
  }
});

/** A verified delivery answered 503 (the registry away): what the platform retries. */
async function fail(h: Harness, payload: string) {
  h.encoder.unavailable = true;
  try {
    return await post(h, payload);
  } finally {
    h.encoder.unavailable = false;
  }
}

function post(h: Harness, payload: string, signature: string = signBody(payload, KEY), source = 'energy') {
  return h.app.inject({
    method: 'POST',
    url: `/webhooks/${source}`,
    payload,
    headers: { 'content-type': 'application/json', 'x-signature': signature },
  });
}

/** One sample's value from /metrics, or undefined when the series is absent. */
async function sample(h: Harness, series: string): Promise<number | undefined> {
  const text = await h.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const FAILING = 'hookledger_ingest_failing_webhooks{source="energy"}';
const OLDEST = 'hookledger_ingest_failing_webhook_oldest_seconds{source="energy"}';
const attemptsCount = (outcome: string) =>
  `hookledger_ingest_failing_webhook_attempts_count{source="energy",outcome="${outcome}"}`;

describe('failing webhook ids in ingest', () => {
  it('shows every configured source at 0 while nothing fails', async () => {
    const h = await harness();
    expect(await sample(h, FAILING)).toBe(0);
    expect(await sample(h, 'hookledger_ingest_failing_webhooks{source="sandbox"}')).toBe(0);
    expect(await sample(h, OLDEST)).toBe(0);
  });

  it('keeps a failing id (by its webhook.id) until a retry of it is stored, then forgets it', async () => {
    const h = await harness();
    expect((await fail(h, body('wh_1'))).statusCode).toBe(503);
    h.advance(30 * 60_000);
    h.kafka.behaviour = 'fail';
    expect((await post(h, body('wh_1'))).statusCode).toBe(503);
    expect(h.failingIds.get('energy', 'wh_1')).toMatchObject({
      attempts: 2,
      lastStatus: 503,
      firstFailedAt: T0,
    });
    expect(await sample(h, FAILING)).toBe(1);
    expect(await sample(h, OLDEST)).toBe(1800);

    // The new producer counts as able to write once a write succeeds.
    await until(() => h.kafka.connects === 2);
    h.kafka.behaviour = 'ack';
    expect((await post(h, body('wh_1'))).statusCode).toBe(200);
    expect(h.producer.ready).toBe(true);
    expect(h.failingIds.get('energy', 'wh_1')).toBeUndefined();
    expect(await sample(h, FAILING)).toBe(0);
    expect(await sample(h, attemptsCount('stored'))).toBe(1);
    expect(
      await sample(h, `hookledger_ingest_failing_webhook_attempts_sum{source="energy",outcome="stored"}`),
    ).toBe(2);
    expect(h.logs()).toContain('stored after failing');
  });

  it('takes an id off the list of the worker it failed on when another worker stores its retry (ingest --workers)', async () => {
    // Two workers wired as the command wires them: what one tells its peers reaches the other.
    const told: FailingIdEvent[] = [];
    const listeners: ((event: FailingIdEvent) => void)[][] = [[], []];
    const peers = (self: number): FailingIdPeers => ({
      tell: (event) => {
        told.push(event);
        for (const listener of listeners[1 - self]!) listener(event);
      },
      listen: (listener) => listeners[self]!.push(listener),
    });
    const a = await harness(peers(0));
    const b = await harness(peers(1));
    expect((await fail(a, body('wh_1'))).statusCode).toBe(503);
    expect((await fail(a, body('wh_1'))).statusCode).toBe(503);
    // Told once, when the id starts failing with it.
    expect(told).toEqual([{ kind: 'failed', source: 'energy', webhookId: 'wh_1' }]);
    expect(await sample(a, FAILING)).toBe(1);
    expect(await sample(b, FAILING)).toBe(0);

    // The platform's retry reaches the other worker, which stores it: the first forgets the id.
    expect((await post(b, body('wh_1'))).statusCode).toBe(200);
    expect(told.at(-1)).toEqual({ kind: 'stored', source: 'energy', webhookId: 'wh_1' });
    expect(a.failingIds.get('energy', 'wh_1')).toBeUndefined();
    expect(await sample(a, FAILING)).toBe(0);
    expect(await sample(a, attemptsCount('stored'))).toBe(1);
    expect(a.logs()).toContain('stored after failing');
    // So it is never reported given up, 72 hours on.
    a.advance(73 * HOUR);
    expect(await sample(a, attemptsCount('given-up'))).toBe(0);

    // An id that failed with nobody else is stored without a word to the peers.
    const before = told.length;
    expect((await post(b, body('wh_2'))).statusCode).toBe(200);
    expect(told.length).toBe(before);
  });

  it('keys a body without a readable webhook.id by its sha1, as ingest stores it', async () => {
    const h = await harness();
    const unreadable = '{"webhook": not json';
    expect((await fail(h, unreadable)).statusCode).toBe(503);
    expect(h.failingIds.get('energy', digestKey(Buffer.from(unreadable)))).toMatchObject({ attempts: 1 });
  });

  it('does not track a request that names no source or whose body was never read', async () => {
    const h = await harness();
    expect((await post(h, body('wh_nowhere'), undefined, 'nope')).statusCode).toBe(404);
    expect(h.failingIds.size).toBe(0);
  });

  it('remembers nothing of a request whose signature fails: its body is never read for an id', async () => {
    const h = await harness();
    const forged = body('x'.repeat(100_000));
    for (let i = 0; i < 5; i++) expect((await post(h, forged, 'sha1=0000')).statusCode).toBe(401);
    expect((await post(h, '{"webhook":{"id":12345678901234567890}}', 'sha1=0000')).statusCode).toBe(401);
    expect(h.failingIds.size).toBe(0);
    expect(await sample(h, FAILING)).toBe(0);
    expect(h.logs()).not.toContain('xxxxxxxxxx');
  });

  it('holds a long id of a verified delivery by its digest, not its text', async () => {
    const h = await harness();
    // Longer than the ids it keeps as text, not than the ids ingest keys records by (MAX_WEBHOOK_ID_BYTES).
    const long = 'y'.repeat(8_000);
    expect((await fail(h, body(long))).statusCode).toBe(503);
    expect(h.failingIds.get('energy', long)).toMatchObject({ webhookId: keptId(long), attempts: 1 });
    expect(keptId(long)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('logs an id failing for over an hour once, then not on every retry', async () => {
    const h = await harness();
    for (let minute = 0; minute <= 120; minute += 20) {
      await fail(h, body('wh_slow'));
      h.advance(20 * 60_000);
    }
    const lines = h
      .logs()
      .split('\n')
      .filter((l) => l.includes('webhook still failing'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      source: 'energy',
      webhookId: 'wh_slow',
      lastStatus: 503,
      attempts: 4,
    });
  });

  it('forgets an id the platform gave up on after 72 hours, counts and logs it', async () => {
    const h = await harness();
    await fail(h, body('wh_lost'));
    h.advance(71 * HOUR);
    expect(await sample(h, OLDEST)).toBe(71 * 3600);
    h.advance(HOUR);
    expect(await sample(h, FAILING)).toBe(0);
    expect(await sample(h, attemptsCount('given-up'))).toBe(1);
    expect(h.logs()).toContain('the platform has given up on this webhook');
  });

  it('holds a bounded number of ids and counts the evicted', async () => {
    const h = await harness();
    for (const id of ['a', 'b', 'c', 'd', 'e']) await fail(h, body(id));
    expect(h.failingIds.size).toBe(3);
    expect(await sample(h, FAILING)).toBe(3);
    expect(await sample(h, attemptsCount('evicted'))).toBe(2);
  });
});

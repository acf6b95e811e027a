import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../ingest/app.js';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import { buildOpsApp } from '../../../ingest/ops-app.js';
import { RawProducer } from '../../../ingest/producer/raw-producer.js';
import { parseSources } from '../../../ingest/sources.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import { capturingLogger, FakeKafka, MemoryEncoder, until } from './fakes.js';

const KEY1 = 'unit-key-one-secret-0123456789abcdef0123456789';
const KEY2 = 'unit-key-two-secret-0123456789abcdef0123456789';
const SOURCES = JSON.stringify({ energy: { keys: { k1: KEY1, k2: KEY2 } }, sandbox: { signature: 'none' } });
const BODY =
  '{"webhook":{"id":"wh_42","trigger":"UserAdded","date":"2026-11-20T10:00:00Z"},"data":{"secretField":"x"}}';

interface Harness {
  app: FastifyInstance;
  /** /healthz, /readyz and /metrics: their own server. */
  ops: FastifyInstance;
  kafka: FakeKafka;
  encoder: MemoryEncoder;
  producer: RawProducer;
  logs: () => string;
}

const open: Harness[] = [];

async function harness(
  options: {
    deadlineMs?: number;
    maxPendingBytes?: number;
    bodyLimit?: number;
    lingerMs?: number;
    /** The readiness probe (production reads the raw topic's metadata), every 20 ms. */
    probe?: () => Promise<void>;
  } = {},
): Promise<Harness> {
  const { logger, text } = capturingLogger();
  const kafka = new FakeKafka();
  const encoder = new MemoryEncoder();
  const metrics = createIngestMetrics({ defaultMetrics: false });
  const producer = new RawProducer({
    connect: kafka.connect,
    logger,
    lingerMs: options.lingerMs ?? 1,
    maxBatchRecords: 100,
    maxBatchBytes: 1_000_000,
    maxPendingBytes: options.maxPendingBytes ?? 10_000_000,
    deadlineMs: options.deadlineMs ?? 2_000,
    reconnectInitialMs: 5,
    reconnectMaxMs: 20,
    ...(options.probe ? { probe: options.probe, probeIntervalMs: 20 } : {}),
    onBatch: (stats) => metrics.observeBatch(stats),
  });
  producer.start();
  await until(() => producer.ready);
  const app = await buildApp({
    sources: parseSources(SOURCES),
    store: producer,
    encoder,
    logger,
    metrics,
    bodyLimit: options.bodyLimit ?? 1_048_576,
  });
  const ops = await buildOpsApp({ store: producer, encoder, metrics, logger });
  const h = { app, ops, kafka, encoder, producer, logs: text };
  open.push(h);
  return h;
}

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.app.close();
    await h.ops.close();
    await h.producer.close();
  }
});

function post(
  h: Harness,
  body: string | Buffer = BODY,
  headers: Record<string, string> = {},
  url = '/webhooks/energy',
) {
  return h.app.inject({
    method: 'POST',
    url,
    payload: body,
    headers: { 'content-type': 'application/json', 'x-signature': signBody(body, KEY1), ...headers },
  });
}

describe('ingest app', () => {
  it('stores a signed delivery and answers 200 with its envelope keyed by webhook id', async () => {
    const h = await harness();
    const before = Date.now();
    const response = await post(
      h,
      BODY,
      { 'user-agent': 'Platform-Webhooks/1.4.2', accept: '*/*', cookie: 'c=1' },
      '/webhooks/energy?tenant=7&pass=hunter2',
    );
    expect(response.statusCode).toBe(200);
    expect(h.kafka.acked).toHaveLength(1);
    const record = h.kafka.acked[0]!;
    const envelope = h.encoder.decode(record.value);
    expect(record.key).toBe('wh_42');
    expect(record.timestamp).toBe(envelope.receivedAt);
    expect(envelope.receivedAt).toBeGreaterThanOrEqual(before);
    expect(envelope).toMatchObject({
      webhookId: 'wh_42',
      source: 'energy',
      trigger: 'UserAdded',
      webhookDate: '2026-11-20T10:00:00Z',
      query: 'tenant=***&pass=***',
      verifiedKeyId: 'k1',
      ingestId: response.json().ingestId,
    });
    expect(envelope.body.equals(Buffer.from(BODY))).toBe(true);
    expect(envelope.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'Platform-Webhooks/1.4.2',
      accept: '*/*',
    });
    // A reader of webhooks.raw gets no signature to replay the delivery with, and no cookie.
    expect(envelope.headers['x-signature']).toBeUndefined();
    expect(envelope.headers.cookie).toBeUndefined();
  });

  it('answers only after Kafka acknowledged the record', async () => {
    const h = await harness();
    h.kafka.behaviour = 'manual';
    let answered = false;
    const pending = post(h).then((r) => {
      answered = true;
      return r;
    });
    await until(() => h.kafka.sends.length === 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(answered).toBe(false);
    h.kafka.release();
    expect((await pending).statusCode).toBe(200);
  });

  it('gathers concurrent deliveries into one produce call, each answered with its own record', async () => {
    const h = await harness({ lingerMs: 20 });
    const bodies = Array.from({ length: 30 }, (_, n) => BODY.replace('wh_42', `wh_${n}`));
    const responses = await Promise.all(bodies.map((b) => post(h, b)));
    expect(responses.every((r) => r.statusCode === 200)).toBe(true);
    expect(h.kafka.sends.length).toBeLessThan(5);
    expect(h.kafka.acked.map((r) => r.key).sort()).toEqual(bodies.map((_, n) => `wh_${n}`).sort());
  });

  it('verifies with the rotated key and records which key matched', async () => {
    const h = await harness();
    const response = await post(h, BODY, { 'x-signature': signBody(BODY, KEY2) });
    expect(response.statusCode).toBe(200);
    expect(h.encoder.decode(h.kafka.acked[0]!.value).verifiedKeyId).toBe('k2');
  });

  it.each([
    ['no signature', { 'x-signature': '' }, 'missing'],
    ['another algorithm', { 'x-signature': `sha256=${signBody(BODY, KEY1).slice(5)}` }, 'algorithm'],
    ['a short digest', { 'x-signature': signBody(BODY, KEY1).slice(0, -2) }, 'malformed'],
    ['non-hex characters', { 'x-signature': `sha1=${'g'.repeat(40)}` }, 'malformed'],
    ['a signature of other bytes', { 'x-signature': signBody(`${BODY} `, KEY1) }, 'mismatch'],
  ])('refuses %s with 401 and stores nothing', async (_name, headers, reason) => {
    const h = await harness();
    const response = await post(h, BODY, headers);
    expect(response.statusCode).toBe(401);
    expect(response.json().code).toBe('INGEST_ERR_SIGNATURE');
    expect(h.kafka.sends).toHaveLength(0);
    const metrics = await h.ops.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(
      `hookledger_ingest_signature_failures_total{source="energy",reason="${reason}"} 1`,
    );
  });

  it('answers an unknown source 404 with its own error, stores nothing, and counts it under one metric label', async () => {
    const h = await harness();
    const unknown = await post(h, BODY, {}, '/webhooks/nope');
    const other = await post(h, BODY, { 'x-signature': '' }, '/webhooks/also-not-a-source');
    for (const response of [unknown, other]) {
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ code: 'INGEST_ERR_UNKNOWN_SOURCE', message: 'Unknown source' });
    }
    // A known source's bad or missing signature is still 401.
    const forged = await post(h, BODY, { 'x-signature': signBody(BODY, 'not-the-key') });
    const unsigned = await post(h, BODY, { 'x-signature': '' });
    for (const response of [forged, unsigned]) {
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ code: 'INGEST_ERR_SIGNATURE', message: 'Signature check failed' });
    }
    expect(h.kafka.sends).toHaveLength(0);
    const metrics = (await h.ops.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain('hookledger_ingest_requests_total{source="(unknown)",status="404"} 2');
    expect(metrics).not.toMatch(/hookledger_ingest_requests_total\{source="(nope|also-not-a-source)"/);
    // Not a signature failure: the signature-failure series count the known source's two only.
    expect(metrics).not.toContain('source="(unknown)",reason=');
    expect(metrics).toContain(
      'hookledger_ingest_signature_failures_total{source="energy",reason="mismatch"} 1',
    );
    expect(metrics).toContain(
      'hookledger_ingest_signature_failures_total{source="energy",reason="missing"} 1',
    );
  });

  it('serves no operations endpoint on the webhook port', async () => {
    const h = await harness();
    for (const url of ['/metrics', '/readyz', '/healthz']) {
      expect((await h.app.inject({ method: 'GET', url })).statusCode).toBe(404);
      expect((await h.app.inject({ method: 'GET', url: `${url}/` })).statusCode).toBe(404);
      expect((await h.ops.inject({ method: 'GET', url })).statusCode).toBe(200);
    }
  });

  it('takes the webhook URL with a trailing slash as the same webhook: same checks, same envelope', async () => {
    const h = await harness();
    const plain = await post(h, BODY, {}, '/webhooks/energy?tenant=7');
    const slash = await post(h, BODY.replace('wh_42', 'wh_43'), {}, '/webhooks/energy/?tenant=7');
    expect(plain.statusCode).toBe(200);
    expect(slash.statusCode).toBe(200);
    const [first, second] = h.kafka.acked.map((r) => h.encoder.decode(r.value));
    const { webhookId: _a, receivedAt: _b, ingestId: _c, body: _d, ...same } = first!;
    expect(second).toMatchObject({ ...same, webhookId: 'wh_43', query: 'tenant=***', verifiedKeyId: 'k1' });
    // Refused alike: a forged signature, an unknown source.
    expect(
      (await post(h, BODY, { 'x-signature': signBody(BODY, 'nope') }, '/webhooks/energy/')).statusCode,
    ).toBe(401);
    expect((await post(h, BODY, {}, '/webhooks/nope/')).statusCode).toBe(404);
    expect((await post(h, BODY, {}, '/webhooks/')).statusCode).toBe(404);
    expect(h.kafka.acked).toHaveLength(2);
  });

  it('stores an unsigned delivery to a source declared insecure, with no key id', async () => {
    const h = await harness();
    const response = await post(h, BODY, { 'x-signature': '' }, '/webhooks/sandbox');
    expect(response.statusCode).toBe(200);
    expect(h.encoder.decode(h.kafka.acked[0]!.value)).toMatchObject({
      source: 'sandbox',
      verifiedKeyId: null,
    });
  });

  it.each([
    'text/plain',
    'application/octet-stream',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-8',
    'multipart/form-data; boundary=x',
  ])('takes content type %s as raw bytes (never 415)', async (type) => {
    const h = await harness();
    const response = await post(h, BODY, { 'content-type': type });
    expect(response.statusCode).toBe(200);
    expect(h.encoder.decode(h.kafka.acked[0]!.value).body.toString()).toBe(BODY);
  });

  it.each([
    ['no content type', undefined],
    ['an empty content type', ''],
    ['a content type that is not a media type', 'json'],
    ['a content type with invalid characters', 'application/js(on'],
  ])('takes a delivery with %s, keeping the header as sent', async (_name, type) => {
    const h = await harness();
    const headers: Record<string, string> = { 'x-signature': signBody(BODY, KEY1) };
    if (type !== undefined) headers['content-type'] = type;
    const response = await h.app.inject({
      method: 'POST',
      url: '/webhooks/energy',
      payload: Buffer.from(BODY),
      headers,
    });
    expect(response.statusCode).toBe(200);
    const envelope = h.encoder.decode(h.kafka.acked[0]!.value);
    expect(envelope.body.toString()).toBe(BODY);
    expect(envelope.headers['content-type']).toBe(type);
  });

  it('stores a signed empty body keyed by its digest', async () => {
    const h = await harness();
    const response = await post(h, '', { 'x-signature': signBody('', KEY1) });
    expect(response.statusCode).toBe(200);
    expect(h.kafka.acked[0]!.key).toBe('sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709');
  });

  it('stores a body at the limit and refuses one byte more with 413', async () => {
    const h = await harness({ bodyLimit: 4_096 });
    const frame = '{"webhook":{"id":"wh_big"},"pad":""}';
    const at = frame.replace('""', `"${'x'.repeat(4_096 - frame.length)}"`);
    expect(Buffer.byteLength(at)).toBe(4_096);
    expect((await post(h, at)).statusCode).toBe(200);
    const over = `${at} `;
    const response = await post(h, over);
    expect(response.statusCode).toBe(413);
    expect(response.json().code).toBe('INGEST_ERR_BODY_TOO_LARGE');
    expect(h.kafka.acked).toHaveLength(1);
  });

  it('answers 503 with Retry-After when Kafka fails, replaces the producer, then stores again', async () => {
    const h = await harness();
    h.kafka.behaviour = 'fail';
    const failed = await post(h);
    expect(failed.statusCode).toBe(503);
    expect(failed.headers['retry-after']).toBe('5');
    await until(() => h.kafka.connects === 2);
    expect(h.kafka.closes).toBe(1);
    h.kafka.behaviour = 'ack';
    expect((await post(h)).statusCode).toBe(200);
    expect(h.producer.ready).toBe(true);
  });

  it("answers each request from its own record's delivery report: 200 if stored, 503 if its record was refused", async () => {
    const h = await harness({ lingerMs: 30 });
    h.kafka.refuse = (r) =>
      r.key === 'wh_on_p7' ? new Error('Broker: Not enough in-sync replicas') : undefined;
    const bodyOf = (id: string) => BODY.replace('wh_42', id);
    const [stored, refused, alsoStored] = await Promise.all(
      ['wh_1', 'wh_on_p7', 'wh_2'].map((id) => post(h, bodyOf(id))),
    );
    expect(h.kafka.sends).toHaveLength(1);
    expect(stored!.statusCode).toBe(200);
    expect(alsoStored!.statusCode).toBe(200);
    expect(refused!.statusCode).toBe(503);
    expect(refused!.headers['retry-after']).toBe('5');
    expect(h.kafka.acked.map((r) => r.key)).toEqual(['wh_1', 'wh_2']);
    // The producer is kept: a record refused is not the producer failing.
    expect(h.kafka.connects).toBe(1);
    expect(h.producer.ready).toBe(true);
    const text = (await h.ops.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toContain('hookledger_ingest_requests_total{source="energy",status="200"} 2');
    expect(text).toContain('hookledger_ingest_requests_total{source="energy",status="503"} 1');
    expect(text).toContain('hookledger_ingest_produce_duration_seconds_count{outcome="error"} 1');
  });

  it('answers 503 at the deadline when Kafka does not answer, never hanging', async () => {
    const h = await harness({ deadlineMs: 150 });
    h.kafka.behaviour = 'hang';
    const started = Date.now();
    const response = await post(h);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('answers 503 at once when the pending bytes pass their cap', async () => {
    const h = await harness({ maxPendingBytes: 100 });
    h.kafka.behaviour = 'manual';
    const first = post(h);
    await until(() => h.kafka.sends.length === 1);
    const started = Date.now();
    const second = await post(h);
    expect(second.statusCode).toBe(503);
    expect(second.json().code).toBe('INGEST_ERR_OVERLOADED');
    expect(Date.now() - started).toBeLessThan(500);
    h.kafka.release();
    expect((await first).statusCode).toBe(200);
  });

  it('is unready while no producer can write, and recovers by itself', async () => {
    let kafka: FakeKafka | undefined;
    // As the metadata probe: it answers while the cluster takes connections.
    const h = await harness({
      probe: async () => {
        if (kafka?.connectFails) throw new Error('no metadata');
      },
    });
    kafka = h.kafka;
    expect((await h.ops.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    h.kafka.behaviour = 'fail';
    h.kafka.connectFails = true;
    expect((await post(h)).statusCode).toBe(503);
    const unready = await h.ops.inject({ method: 'GET', url: '/readyz' });
    expect(unready.statusCode).toBe(503);
    expect(unready.json().checks.producer).toBe(false);
    h.kafka.connectFails = false;
    h.kafka.behaviour = 'ack';
    await until(() => h.producer.ready);
    expect((await h.ops.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect((await post(h)).statusCode).toBe(200);
  });

  it('is unready and answers 503 until the schema is registered', async () => {
    const h = await harness();
    h.encoder.ready = false;
    const encode = h.encoder.encode.bind(h.encoder);
    h.encoder.encode = async () => {
      const { INGEST_ERR_UNAVAILABLE } = await import('../../../ingest/errors.js');
      throw new INGEST_ERR_UNAVAILABLE();
    };
    expect((await h.ops.inject({ method: 'GET', url: '/readyz' })).json().checks.schema).toBe(false);
    expect((await post(h)).statusCode).toBe(503);
    h.encoder.encode = encode;
  });

  it('answers /healthz and exposes the metrics the issue lists', async () => {
    const h = await harness();
    await post(h);
    expect((await h.ops.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const text = (await h.ops.inject({ method: 'GET', url: '/metrics' })).body;
    for (const series of [
      'hookledger_ingest_requests_total{source="energy",status="200"} 1',
      'hookledger_ingest_request_duration_seconds_bucket',
      'hookledger_ingest_requests_in_flight',
      'hookledger_ingest_produce_batch_records_bucket',
      'hookledger_ingest_produce_duration_seconds_bucket',
      'hookledger_ingest_signature_failures_total',
    ]) {
      expect(text).toContain(series);
    }
  });

  it('never writes a body or a key to the logs', async () => {
    const h = await harness();
    await post(h);
    await post(h, BODY, { 'x-signature': signBody(BODY, 'wrong') });
    h.kafka.behaviour = 'fail';
    await post(h);
    const logs = h.logs();
    expect(logs).toContain('wh_42');
    for (const secret of [KEY1, KEY2, 'secretField']) expect(logs).not.toContain(secret);
  });

  it('logs each answer at debug, with its request id and source', async () => {
    const h = await harness();
    const response = await post(h);
    const line = h
      .logs()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'stored');
    expect(line).toMatchObject({ level: 20, reqId: response.json().ingestId, source: 'energy', status: 200 });
  });
});

// The listening server itself (ephemeral port, fake producer): limits on slow clients and headers, HTTPS,
// and a graceful close that answers in-flight requests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { buildApp, DEFAULT_LIMITS, type IngestDeps } from '../../../ingest/app.js';
import { createIngestMetrics } from '../../../ingest/metrics.js';
import { RawProducer } from '../../../ingest/producer/raw-producer.js';
import { parseSources } from '../../../ingest/sources.js';
import { signBody } from '../../../ingest/webhooks/signature.js';
import { capturingLogger, FakeKafka, MemoryEncoder, until } from './fakes.js';

const KEY = 'server-test-key-0123456789abcdef0123456789';
const BODY = '{"webhook":{"id":"wh_1"}}';
const opened: Array<{ app: FastifyInstance; producer: RawProducer }> = [];

async function listening(extra: Partial<IngestDeps> = {}) {
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
  const app = await buildApp({
    sources: parseSources(JSON.stringify({ energy: { keys: { k1: KEY } } })),
    store: producer,
    encoder: new MemoryEncoder(),
    logger,
    metrics: createIngestMetrics({ defaultMetrics: false }),
    ...extra,
  });
  opened.push({ app, producer });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, kafka, producer, url, port: (app.server.address() as { port: number }).port };
}

afterEach(async () => {
  for (const { app, producer } of opened.splice(0)) {
    await app.close();
    await producer.close();
  }
});

describe('ingest server', () => {
  it('answers 431 to oversized headers', async () => {
    const { url } = await listening();
    const response = await fetch(`${url}/webhooks/energy`, {
      method: 'POST',
      body: BODY,
      headers: { 'x-signature': signBody(BODY, KEY), 'x-padding': 'p'.repeat(20_000) },
    });
    expect(response.status).toBe(431);
  });

  it('drops a client that never finishes its headers', async () => {
    const { port } = await listening({ limits: { headersTimeoutMs: 300, requestTimeoutMs: 500 } });
    const socket = connect(port, '127.0.0.1');
    socket.write('POST /webhooks/energy HTTP/1.1\r\nHost: x\r\n');
    const started = Date.now();
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('close', () => resolve(text));
    });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(answer).toMatch(/^HTTP\/1.1 408/);
  });

  it('drops a client that sends its body too slowly', async () => {
    const { port } = await listening({ limits: { headersTimeoutMs: 300, requestTimeoutMs: 500 } });
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(
      `POST /webhooks/energy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Signature: ${signBody(BODY, KEY)}\r\n\r\n{`,
    );
    const trickle = setInterval(() => socket.write(' '), 100);
    const started = Date.now();
    await new Promise((resolve) => socket.on('close', resolve));
    clearInterval(trickle);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('closes connections over the maximum as they arrive, and keeps serving the others', async () => {
    const { port, url } = await listening({ limits: { maxConnections: 2 } });
    const held = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
    await Promise.all(held.map((s) => new Promise((resolve) => s.once('connect', resolve))));
    await new Promise((r) => setTimeout(r, 100));
    const third = connect(port, '127.0.0.1');
    third.on('error', () => undefined);
    third.write('GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      third.on('data', (chunk) => {
        text += chunk;
      });
      third.on('close', () => resolve(text));
    });
    expect(answer).toBe('');
    for (const socket of held) socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect((await fetch(`${url}/webhooks/energy`, { method: 'POST', body: BODY })).status).toBe(401);
  });

  it('closes an idle kept-alive connection after its keep-alive timeout, well under 72 s', async () => {
    expect(DEFAULT_LIMITS.keepAliveTimeoutMs).toBeLessThan(72_000);
    const { port } = await listening({ limits: { keepAliveTimeoutMs: 300 } });
    const socket = connect(port, '127.0.0.1');
    socket.resume();
    socket.write('GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n');
    const started = Date.now();
    await new Promise((resolve) => socket.on('close', resolve));
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('serves HTTPS from a certificate and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ingest-tls-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
    } catch {
      console.warn('openssl not available: HTTPS not tested');
      return;
    }
    const cert = readFileSync(join(dir, 'cert.pem'));
    const { port, kafka } = await listening({ https: { cert, key: readFileSync(join(dir, 'key.pem')) } });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/webhooks/energy',
          ca: cert,
          checkServerIdentity: () => undefined,
          headers: { 'content-type': 'application/json', 'x-signature': signBody(BODY, KEY) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(BODY);
    });
    expect(status).toBe(200);
    expect(kafka.acked).toHaveLength(1);
  });

  it('closes gracefully: in-flight requests are answered once their records are acknowledged', async () => {
    const { app, url, kafka, producer } = await listening();
    kafka.behaviour = 'manual';
    const inFlight = fetch(`${url}/webhooks/energy`, {
      method: 'POST',
      body: BODY,
      headers: { 'x-signature': signBody(BODY, KEY) },
    });
    await until(() => kafka.sends.length === 1);
    const closing = app.close().then(() => producer.close());
    await new Promise((r) => setTimeout(r, 50));
    kafka.release();
    expect((await inFlight).status).toBe(200);
    await closing;
    expect(kafka.closes).toBe(1);
  });

  it('stores a delivery whose headers finish arriving while it closes, and answers it 200 (not an uncounted 503)', async () => {
    const { app, port, kafka, producer } = await listening();
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    const ended = new Promise((resolve) => socket.on('close', resolve));
    // The request line is in before the close begins: the connection is busy, so close() waits for it.
    socket.write('POST /webhooks/energy HTTP/1.1\r\nHost: x\r\n');
    await new Promise((r) => setTimeout(r, 50));
    const closing = app.close().then(() => producer.close());
    await new Promise((r) => setTimeout(r, 50));
    socket.write(
      `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\nX-Signature: ${signBody(BODY, KEY)}\r\n\r\n${BODY}`,
    );
    await ended;
    await closing;
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(kafka.acked).toHaveLength(1);
  });

  it('bounds the body bytes received at once: past the budget, 503 with Retry-After before the body is read, and the bytes come back', async () => {
    const { port, kafka } = await listening({
      bodyLimit: 1_000,
      limits: { maxReceivingBytes: 2_500 },
    });
    const signature = signBody(BODY, KEY);
    const head = (length: number) =>
      `POST /webhooks/energy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nX-Signature: ${signature}\r\n\r\n`;
    const open = () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      return { socket, answer: () => text };
    };
    // Two bodies of 1,000 bytes announced and not yet sent hold 2,000 of the 2,500 bytes.
    const slow = [open(), open()];
    for (const { socket } of slow) socket.write(head(1_000));
    await new Promise((r) => setTimeout(r, 100));
    const refused = await fetch(`http://127.0.0.1:${port}/webhooks/energy`, {
      method: 'POST',
      body: 'x'.repeat(900),
      headers: { 'x-signature': signature, 'content-type': 'application/json' },
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.headers.get('connection')).toBe('close');
    expect(await refused.json()).toMatchObject({ code: 'INGEST_ERR_RECEIVING' });
    // A small one still fits (2,000 + 25 bytes), and is stored.
    const small = await fetch(`http://127.0.0.1:${port}/webhooks/energy`, {
      method: 'POST',
      body: BODY,
      headers: { 'x-signature': signature },
    });
    expect(small.status).toBe(200);
    // The slow senders go away: their bytes come back, and a 900-byte body is taken again.
    for (const { socket } of slow) socket.destroy();
    let status = 0;
    for (let tries = 0; tries < 50 && status !== 401; tries++) {
      await new Promise((r) => setTimeout(r, 20));
      const again = await fetch(`http://127.0.0.1:${port}/webhooks/energy`, {
        method: 'POST',
        body: 'x'.repeat(900),
        headers: { 'x-signature': signature, 'content-type': 'application/json' },
      });
      status = again.status;
    }
    // Its signature is wrong (it is not BODY's): read and checked, 401, not refused unread.
    expect(status).toBe(401);
    expect(kafka.acked).toHaveLength(1);
  });

  it('holds only a chunked body’s own bytes once it is read, not the body limit, while Kafka has not acknowledged it', async () => {
    const { port, kafka } = await listening({
      bodyLimit: 1_000,
      limits: { maxReceivingBytes: 2_500 },
    });
    kafka.behaviour = 'manual';
    const chunked = (id: string) => {
      const body = BODY.replace('wh_1', id);
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      // No Content-Length: 1,000 bytes (the body limit) are taken until the body is in.
      socket.write(
        `POST /webhooks/energy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Signature: ${signBody(body, KEY)}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      );
      onTestFinished(() => {
        socket.destroy();
      });
      return () => text;
    };
    // Three chunked deliveries wait for Kafka at once: with 1,000 bytes each held, the third would be refused.
    const answers = [chunked('wh_a'), chunked('wh_b'), chunked('wh_c')];
    // The first waits for its acknowledgement; the others are read meanwhile (or refused at once, before the fix).
    await until(() => kafka.sends.length > 0 || answers.some((a) => a() !== ''));
    await new Promise((r) => setTimeout(r, 200));
    expect(answers.map((a) => a())).toEqual(['', '', '']);
    kafka.behaviour = 'ack';
    kafka.release();
    await until(() => answers.every((a) => a() !== ''));
    for (const answer of answers) expect(answer()).toMatch(/^HTTP\/1.1 200/);
    expect(kafka.acked).toHaveLength(3);
  });
});

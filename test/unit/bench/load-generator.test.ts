import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runStep, signedDelivery } from '../../../tools/bench/ingest-load.js';
import { answerEnd, type Outcome, RawHttpPool, requestBytes } from '../../../tools/bench/raw-http-pool.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A loopback server; `handle` answers each request after its body was read. */
async function server(handle: (path: string, body: Buffer, res: import('node:http').ServerResponse) => void) {
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req.url ?? '', Buffer.concat(chunks), res));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { host: '127.0.0.1', port: (s.address() as AddressInfo).port };
}

const send = (pool: RawHttpPool, bytes: Buffer) =>
  new Promise<Outcome>((resolve) => pool.send(bytes, resolve));

describe('answerEnd', () => {
  const head = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n';
  it('waits for a content-length body, then ends past it', () => {
    expect(answerEnd(Buffer.from(`${head}Content-Length: 5\r\n\r\nabc`))).toBeUndefined();
    const bytes = Buffer.from(`${head}Content-Length: 5\r\n\r\nabcde`);
    expect(answerEnd(bytes)).toEqual({ end: bytes.length, status: 200, close: false });
  });
  it('ends a chunked body at its last chunk', () => {
    expect(answerEnd(Buffer.from(`${head}transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n`))).toBeUndefined();
    const bytes = Buffer.from(`${head}transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`);
    expect(answerEnd(bytes)?.end).toBe(bytes.length);
  });
  it('reads the status and a connection: close', () => {
    expect(
      answerEnd(
        Buffer.from('HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\ncontent-length: 0\r\n\r\n'),
      ),
    ).toMatchObject({
      status: 413,
      close: true,
    });
  });
  it('refuses bytes that are no HTTP answer', () => {
    expect(() => answerEnd(Buffer.from('SSH-2.0-OpenSSH\r\n\r\n'))).toThrow(/not an HTTP answer/);
  });
});

describe('RawHttpPool', () => {
  it('sends the request bytes as node:http would read them, over reused connections', async () => {
    const seen: Array<{ path: string; body: string; signature: string | undefined }> = [];
    const sockets = new Set<unknown>();
    const target = await server((path, body, res) => {
      sockets.add(res.socket);
      seen.push({ path, body: body.toString(), signature: res.req.headers['x-signature'] as string });
      res.writeHead(path.endsWith('/teapot') ? 418 : 200, { 'content-type': 'application/json' });
      res.end('{"status":"stored"}');
    });
    const pool = new RawHttpPool(target, 2);
    const body = Buffer.from('{"webhook":{"id":"ü"}}');
    const ok = requestBytes(target.host, '/webhooks/a', { 'x-signature': 'sha1=ab' }, body);
    const teapot = requestBytes(target.host, '/webhooks/teapot', {}, Buffer.alloc(0));
    const outcomes = await Promise.all([send(pool, ok), send(pool, teapot), send(pool, ok), send(pool, ok)]);
    pool.close();
    expect(outcomes).toEqual([200, 418, 200, 200]);
    expect(seen[0]).toEqual({ path: '/webhooks/a', body: body.toString(), signature: 'sha1=ab' });
    expect(sockets.size).toBeLessThanOrEqual(2);
  });

  it('reads chunked answers and answers that arrive in pieces', async () => {
    const target = await server((_path, _body, res) => {
      res.write('part one, ');
      setTimeout(() => res.end('part two'), 20);
    });
    const pool = new RawHttpPool(target, 1);
    const request = requestBytes(target.host, '/', {}, Buffer.from('x'));
    expect(await Promise.all([send(pool, request), send(pool, request)])).toEqual([200, 200]);
    pool.close();
  });

  it('ends a request as an error when its connection closes, and keeps sending on a new one', async () => {
    let n = 0;
    const target = await server((_path, _body, res) => {
      if (n++ === 0) res.socket?.destroy();
      else res.end('ok');
    });
    const pool = new RawHttpPool(target, 1);
    const request = requestBytes(target.host, '/', {}, Buffer.from('x'));
    expect(await Promise.all([send(pool, request), send(pool, request)])).toEqual(['error', 200]);
    pool.close();
  });

  it('ends every request as an error when nothing listens', async () => {
    const target = await server(() => {});
    await new Promise((r) => servers.pop()!.close(r));
    const pool = new RawHttpPool(target, 1);
    const request = requestBytes(target.host, '/', {}, Buffer.from('x'));
    expect(await Promise.all([send(pool, request), send(pool, request)])).toEqual(['error', 'error']);
    pool.close();
  });

  it('ends the requests still waiting or in flight as errors when closed', async () => {
    const target = await server(() => {}); // never answers
    const pool = new RawHttpPool(target, 1);
    const request = requestBytes(target.host, '/', {}, Buffer.from('x'));
    const both = Promise.all([send(pool, request), send(pool, request)]);
    await new Promise((r) => setTimeout(r, 50));
    pool.close();
    expect(await both).toEqual(['error', 'error']);
  });
});

describe('runStep (the open-loop load over the pool)', () => {
  it('sends request n no earlier than startedAt + n / rate, and counts each answer', async () => {
    const arrivals = new Map<number, number>();
    const target = await server((path, _body, res) => {
      arrivals.set(Number(path.split('/').pop()), Date.now());
      res.writeHead(path.endsWith('/7') ? 500 : 200).end();
    });
    const deliveries = Array.from({ length: 40 }, (_, n) =>
      signedDelivery(`/webhooks/${n}`, Buffer.from('{}'), 'k'),
    );
    const result = await runStep(target, deliveries, { offeredRate: 200, durationS: 0.2 });
    expect(result).toMatchObject({ sent: 40, ok: 39, failures: { '500': 1 }, skipped: 0 });
    expect(arrivals.size).toBe(40);
    // bench:freshness counts each delivery's latency from startedAt + n / rate: none may leave before it.
    for (const [n, at] of arrivals)
      expect(at).toBeGreaterThanOrEqual(result.startedAt + (n * 1000) / 200 - 5);
    expect(result.p99Ms).toBeGreaterThan(0);
  });
});

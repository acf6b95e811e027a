import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  EndpointUnavailableError,
  Fetcher,
  type FetchSettings,
} from '../../../../processors/enrich/fetcher.js';

const API = 'https://api.platform.example/v1/graphql';
const settings: FetchSettings = {
  timeoutMs: 1_000,
  retries: 3,
  budgetMs: 4_000,
  backOff: { initialMs: 100, maxMs: 1_000 },
  ratePerSecond: 100,
  concurrency: 4,
  breaker: { failures: 2, cooldownMs: 5_000 },
  header: { name: 'Authorization', value: 'Bearer s3cret' },
  maxAnswerBytes: 1_048_576,
};

/** A fake endpoint answering from a script, on a fake clock that sleeps instantly. */
function harness(script: (call: number) => Response | Error, overrides: Partial<FetchSettings> = {}) {
  const clock = { now: 0 };
  const calls: { at: number; init: RequestInit }[] = [];
  const fetcher = new Fetcher(
    { ...settings, ...overrides },
    {
      now: () => clock.now,
      sleep: async (ms) => {
        clock.now += ms;
      },
      random: () => 1,
      fetch: async (_url, init) => {
        calls.push({ at: clock.now, init: init! });
        const outcome = script(calls.length);
        if (outcome instanceof Error) throw outcome;
        return outcome;
      },
    },
  );
  return { fetcher, clock, calls };
}

const ok = () => new Response('{"data":{}}', { status: 200 });

describe('Fetcher', () => {
  it('POSTs the query with variables {id} and the credentials header', async () => {
    const { fetcher, calls } = harness(ok);
    const answer = await fetcher.fetch(API, 'query Q($id: ID!) { x }', 'es_1');
    expect(answer.status).toBe(200);
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({
      query: 'query Q($id: ID!) { x }',
      variables: { id: 'es_1' },
    });
    expect((calls[0]!.init.headers as Record<string, string>).Authorization).toBe('Bearer s3cret');
  });

  it('retries 5xx with growing back-off, then answers, saying when the answered request was sent', async () => {
    const { fetcher, calls } = harness((n) => (n < 3 ? new Response('', { status: 502 }) : ok()));
    const answer = await fetcher.fetch(API, 'q', '1');
    expect(calls.map((c) => c.at)).toEqual([0, 100, 300]);
    // The third request's, not the first's: the fetched event's time (topology.ts).
    expect(answer.sentAt).toBe(300);
  });

  it("honours a 429's Retry-After for every request to that endpoint, and a 429 never opens the breaker", async () => {
    const { fetcher, calls } = harness((n) =>
      n === 1 ? new Response('', { status: 429, headers: { 'retry-after': '2' } }) : ok(),
    );
    await fetcher.fetch(API, 'q', '1');
    expect(calls.map((c) => c.at)).toEqual([0, 2_000]);
    expect(fetcher.breakerStates()[new URL(API).origin]).toBe('closed');
  });

  it("honours a 503's Retry-After for every request to that endpoint, not only the fetch that met it", async () => {
    const { fetcher, calls } = harness((n) =>
      n === 1 ? new Response('', { status: 503, headers: { 'retry-after': '30' } }) : ok(),
    );
    await fetcher.fetch(API, 'q', '1').catch(() => undefined);
    // The endpoint asked for 30 s: another record's fetch within the budget sends nothing meanwhile.
    await expect(fetcher.fetch(API, 'q', '2')).rejects.toThrow(/Retry-After/);
    expect(calls).toHaveLength(1);
  });

  it('reads an answer up to maxAnswerBytes and no further: a larger one comes back marked, its body empty', async () => {
    const big = new Response(`{"data":{"x":"${'a'.repeat(10_000)}"}}`, { status: 200 });
    const { fetcher } = harness(() => big, { maxAnswerBytes: 1_000 });
    const answer = await fetcher.fetch(API, 'q', '1');
    expect(answer).toMatchObject({ status: 200, overLimitBytes: 1_000 });
    expect(answer.body.length).toBe(0);
    expect(fetcher.breakerStates()[new URL(API).origin]).toBe('closed');
  });

  it('stops reading a long answer without a length at maxAnswerBytes', async () => {
    // 4 MiB in 1 KiB chunks, no content-length: an endless stream would be cut off alike.
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1_024;
        controller.enqueue(new Uint8Array(1_024).fill(32));
        if (sent >= 4 * 1_048_576) controller.close();
      },
    });
    const { fetcher } = harness(() => new Response(endless, { status: 200 }), { maxAnswerBytes: 64 * 1_024 });
    const answer = await fetcher.fetch(API, 'q', '1');
    expect(answer.overLimitBytes).toBe(64 * 1_024);
    expect(sent).toBeLessThan(80 * 1_024);
  });

  it('gives up within its budget as a transient error (status 503), and opens the breaker after enough of them', async () => {
    const { fetcher, calls } = harness(() =>
      Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
    );
    const first = await fetcher.fetch(API, 'q', '1').catch((e: unknown) => e);
    expect(first).toBeInstanceOf(EndpointUnavailableError);
    expect((first as EndpointUnavailableError).status).toBe(503);
    expect((first as Error).message).toMatch(/no answer \(ECONNREFUSED\) after 4 attempts/);
    await fetcher.fetch(API, 'q', '2').catch(() => undefined);
    expect(fetcher.breakerStates()[new URL(API).origin]).toBe('open');
    // Open: refused at once, no request sent.
    const sent = calls.length;
    await expect(fetcher.fetch(API, 'q', '3')).rejects.toThrow(
      /unavailable \(no answer \(ECONNREFUSED\)\); next probe in 5 s/,
    );
    expect(calls.length).toBe(sent);
  });

  it('after the cool-down one probe decides: an answer closes the breaker', async () => {
    let down = true;
    const { fetcher, clock, calls } = harness(() => (down ? new Response('', { status: 503 }) : ok()), {
      retries: 0,
    });
    await fetcher.fetch(API, 'q', '1').catch(() => undefined);
    await fetcher.fetch(API, 'q', '2').catch(() => undefined);
    clock.now += 5_000;
    down = false;
    const before = calls.length;
    await fetcher.fetch(API, 'q', '3');
    expect(calls.length).toBe(before + 1);
    expect(fetcher.breakerStates()[new URL(API).origin]).toBe('closed');
  });

  it('treats refused credentials as the endpoint being unavailable, not as an answer to dead-letter', async () => {
    const { fetcher } = harness(() => new Response('', { status: 401, statusText: 'Unauthorized' }), {
      retries: 0,
    });
    await expect(fetcher.fetch(API, 'q', '1')).rejects.toThrow(/401 Unauthorized/);
  });

  it('hands a 4xx that is no weather back as an answer', async () => {
    const { fetcher } = harness(() => new Response('{"errors":[{"message":"bad"}]}', { status: 400 }));
    expect((await fetcher.fetch(API, 'q', '1')).status).toBe(400);
  });

  it('a rate-limit wait past the budget fails the fetch as throttled (429), sending nothing', async () => {
    const { fetcher, calls } = harness(ok, { ratePerSecond: 0.1, budgetMs: 1_000 });
    await fetcher.fetch(API, 'q', '1');
    const second = await fetcher.fetch(API, 'q', '2').catch((e: unknown) => e);
    expect((second as EndpointUnavailableError).status).toBe(429);
    expect(calls).toHaveLength(1);
  });

  it('times out an answer that trickles in byte by byte: the timeout covers the body, not only the headers', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/graphql`;
      const fetcher = new Fetcher({ ...settings, timeoutMs: 200, retries: 0, budgetMs: 1_000 });
      const startedAt = Date.now();
      await expect(fetcher.fetch(url, 'q', '1')).rejects.toThrow(/no answer within 200 ms after 1 attempt/);
      expect(Date.now() - startedAt).toBeLessThan(900);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('sends nothing more for a fetch whose signal aborted while it waited for a slot', async () => {
    const requested: string[] = [];
    let answer: () => void = () => undefined;
    const fetcher = new Fetcher(
      { ...settings, concurrency: 1 },
      {
        fetch: async (_url, init) => {
          requested.push(JSON.parse(String(init!.body)).variables.id);
          await new Promise<void>((resolve) => {
            answer = resolve;
          });
          return ok();
        },
      },
    );
    const first = fetcher.fetch(API, 'q', 'kept');
    const discarded = new AbortController();
    const second = fetcher.fetch(API, 'q', 'discarded', discarded.signal);
    await new Promise((resolve) => setTimeout(resolve, 5));
    discarded.abort();
    answer();
    await first;
    await expect(second).rejects.toThrow(/abort/i);
    expect(requested).toEqual(['kept']);
    // Its slot is free again: the next fetch goes.
    const third = fetcher.fetch(API, 'q', 'next');
    await new Promise((resolve) => setTimeout(resolve, 5));
    answer();
    await third;
    expect(requested).toEqual(['kept', 'next']);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const fetcher = new Fetcher(
      { ...settings, concurrency: 3, ratePerSecond: 1_000 },
      {
        fetch: async () => {
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 5));
          inFlight--;
          return ok();
        },
      },
    );
    await Promise.all(Array.from({ length: 10 }, (_, i) => fetcher.fetch(API, 'q', String(i))));
    expect(most).toBe(3);
  });
});

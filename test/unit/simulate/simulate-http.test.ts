// simulate against plain local HTTP servers: no broker needed.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'lossless-json';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../../../ingest/webhooks/signature.js';
import { route } from '../../../processors/dedupe-router/route.js';
import type { RawEnvelope } from '../../../schemas/raw-envelope.js';
import { CommandFailed, UsageError } from '../../../tools/cli/command.js';
import { runSimulate } from '../../../tools/cli/commands/simulate.js';
import { INVALID_REASONS } from '../../../tools/simulate/invalid.js';

interface Received {
  body: string;
  headers: IncomingMessage['headers'];
  id: string;
  at: number;
}

interface TestServer {
  url: string;
  received: Received[];
  /** Requests open at the same time, at most. */
  maxOpen: number;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A receiver on an ephemeral port; `answer` decides each request's status (undefined: never answer). */
async function receiver(
  answer: (request: Received, index: number) => number | undefined | Promise<number | undefined>,
): Promise<TestServer> {
  const state: TestServer = { url: '', received: [], maxOpen: 0 };
  let open = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    open++;
    state.maxOpen = Math.max(state.maxOpen, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const request = {
        body,
        headers: req.headers,
        id: (parse(body) as { webhook: { id: string } }).webhook.id,
        at: Date.now(),
      };
      state.received.push(request);
      const status = await answer(request, state.received.length - 1);
      if (status === undefined) return;
      res.statusCode = status;
      res.end(status === 200 ? 'ok' : 'unavailable');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/sim?tenant=7`;
  return state;
}

function captured() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      env: {},
      signal: new AbortController().signal,
      progressEveryMs: 200,
    },
  };
}

/** Runs a child process without blocking this one (the test's server must keep answering). */
function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { encoding: 'utf8', timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

/** The raw envelope ingest would store for a request, for the router's pure route(). */
function envelope(id: string, body: string): RawEnvelope {
  return {
    webhookId: id,
    source: 'sim',
    trigger: null,
    webhookDate: null,
    receivedAt: Date.now(),
    body: Buffer.from(body),
    headers: {},
    query: null,
    verifiedKeyId: 'k',
    ingestId: 'unit',
  };
}

const KEY = 'simulate-test-key-0123456789abcdef0123456789';
const fast = [
  '--key',
  KEY,
  '--rate',
  'unlimited',
  '--backoff',
  '50ms',
  '--max-backoff',
  '400ms',
  '--seed',
  'http',
];

describe('hookledger simulate against a local endpoint', () => {
  it('sends signed deliveries with the platform’s headers to the URL, query string included', async () => {
    const server = await receiver(() => 200);
    const { io, out } = captured();
    expect(await runSimulate(['--url', server.url, '--count', '5', ...fast], io)).toBe(0);
    expect(server.received).toHaveLength(5);
    const keys = new Map([['k', Buffer.from(KEY)]]);
    for (const request of server.received) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers.accept).toBe('*/*');
      expect(request.headers['user-agent']).toMatch(/^Platform-Webhooks\/\d+\.\d+\.\d+$/);
      expect(verifySignature(Buffer.from(request.body), request.headers['x-signature'], keys)).toMatchObject({
        ok: true,
      });
    }
    expect(out.join('')).toMatch(
      /^sent 5 webhooks in 5 deliveries: acknowledged 5, retried 0 \(duplicates sent on purpose 0, after a failure 0\), gave up 0, invalid 0, OperationFailure 0\n/,
    );
  });

  it('retries an endpoint that answers 503 for a while and finally delivers everything, same id and bytes', async () => {
    // Unavailable for each webhook's first four attempts (about 750 ms of back-off, so progress lines
    // show the retries): a clock-based outage lets webhooks sent late on a busy machine through at once.
    const attempts = new Map<string, number>();
    const server = await receiver(({ id }) => {
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      return attempt <= 4 ? 503 : 200;
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'simulate-'));
    const idsFile = path.join(dir, 'ids.txt');
    try {
      const { io, out, err } = captured();
      const code = await runSimulate(
        ['--url', server.url, '--count', '12', '--retry-window', '20s', '--ids-file', idsFile, ...fast],
        io,
      );
      expect(code).toBe(0);
      const summary = out.join('');
      const [, deliveries, retried, afterFailure] =
        /^sent 12 webhooks in (\d+) deliveries: acknowledged 12, retried (\d+) \(duplicates sent on purpose 0, after a failure (\d+)\), gave up 0/
          .exec(summary)!
          .map(Number);
      expect(afterFailure).toBe(4 * 12);
      expect(retried).toBe(afterFailure);
      expect(afterFailure).toBe(server.received.length - 12);
      expect(deliveries).toBe(server.received.length);
      // Every webhook reached the endpoint with a 200 at last; its retries carried the same bytes.
      const ids = (await readFile(idsFile, 'utf8')).trim().split('\n');
      expect(new Set(ids).size).toBe(12);
      for (const id of ids) {
        const attempts = server.received.filter((r) => r.id === id);
        expect(attempts.length).toBeGreaterThan(1);
        expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
        expect(new Set(attempts.map((a) => a.headers['x-signature'])).size).toBe(1);
      }
      expect(err.join('')).toMatch(/retrying \d+/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives up on an endpoint that never recovers when the retry window ends, and says so', async () => {
    const server = await receiver(() => 503);
    const { io, out } = captured();
    const started = Date.now();
    const run = runSimulate(['--url', server.url, '--count', '3', '--retry-window', '3s', ...fast], io);
    await expect(run).rejects.toThrow(CommandFailed);
    await expect(run).rejects.toThrow(
      /^gave up on 3 of 3 webhooks at the end of the 3s retry window \(last failure: HTTP 503\)$/,
    );
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(3_000);
    expect(elapsed).toBeLessThan(5_000);
    expect(out.join('')).toMatch(
      /^sent 3 webhooks in \d+ deliveries: acknowledged 0, retried \d+ .*, gave up 3,/,
    );
    // Retries went on until the window's end.
    const last = Math.max(...server.received.map((r) => r.at));
    expect(last - started).toBeGreaterThanOrEqual(2_900);
  });

  it('shows why deliveries are retried, and says once that a 401 is no outage', async () => {
    const server = await receiver(() => 401);
    const { io, err } = captured();
    await expect(
      runSimulate(['--url', server.url, '--count', '2', '--retry-window', '1s', ...fast], io),
    ).rejects.toThrow(/last failure: HTTP 401/);
    const stderr = err.join('');
    expect(stderr).toMatch(/retrying [12] \(last: HTTP 401\)/);
    expect(stderr.split("the endpoint answered 401: is --key the source's signing key?\n")).toHaveLength(2);
  });

  it('counts an answer that does not come within the timeout as a failure and retries it', async () => {
    const seen = new Set<string>();
    // The first attempt of each webhook hangs; the retry is answered.
    const server = await receiver((request) => {
      if (seen.has(request.id)) return 200;
      seen.add(request.id);
      return undefined;
    });
    const { io, out } = captured();
    // Long enough that an answered retry is never itself late on a loaded machine (7 deliveries, not 6).
    const code = await runSimulate(['--url', server.url, '--count', '3', '--timeout', '1s', ...fast], io);
    expect(code).toBe(0);
    expect(out.join('')).toMatch(
      /^sent 3 webhooks in 6 deliveries: acknowledged 3, retried 3 \(duplicates sent on purpose 0, after a failure 3\), gave up 0/,
    );
    expect(server.received).toHaveLength(6);
  });

  it('says which failure it gave up on when nothing answers in time', async () => {
    const server = await receiver(() => undefined);
    const { io } = captured();
    await expect(
      runSimulate(
        ['--url', server.url, '--count', '1', '--timeout', '200ms', '--retry-window', '1s', ...fast],
        io,
      ),
    ).rejects.toThrow(/gave up on 1 of 1 webhooks .*\(last failure: no answer within 200 ms\)/);
  });

  it('sends duplicates with the same webhook id, byte for byte or re-serialized and signed anew', async () => {
    const server = await receiver(() => 200);
    const { io, out } = captured();
    expect(
      await runSimulate(['--url', server.url, '--count', '30', '--duplicate-rate', '1', ...fast], io),
    ).toBe(0);
    expect(out.join('')).toMatch(
      /^sent 30 webhooks in 60 deliveries: acknowledged 30, retried 30 \(duplicates sent on purpose 30, after a failure 0\), gave up 0/,
    );
    const keys = new Map([['k', Buffer.from(KEY)]]);
    let sameBytes = 0;
    let reserialized = 0;
    for (const id of new Set(server.received.map((r) => r.id))) {
      const [first, second] = server.received.filter((r) => r.id === id);
      expect(second).toBeDefined();
      expect(parse(second!.body)).toEqual(parse(first!.body));
      expect(verifySignature(Buffer.from(second!.body), second!.headers['x-signature'], keys)).toMatchObject({
        ok: true,
      });
      if (second!.body === first!.body) sameBytes++;
      else reserialized++;
    }
    expect(sameBytes).toBeGreaterThan(0);
    expect(reserialized).toBeGreaterThan(0);
  });

  it('sends the tour: exact shares of duplicates, reordered, invalid and OperationFailure webhooks, each where the router sends it', async () => {
    const server = await receiver(() => 200);
    const { io, out, err } = captured();
    io.progressEveryMs = 20;
    const args = [
      '--url',
      server.url,
      '--count',
      '300',
      '--duplicate-rate',
      '0.2',
      '--reorder-rate',
      '0.1',
      '--invalid-rate',
      '0.05',
      '--failure-rate',
      '0.05',
      ...fast,
    ];
    expect(await runSimulate(args, io)).toBe(0);
    expect(out.join('')).toMatch(
      /^sent 300 webhooks in 360 deliveries: acknowledged 300, retried 60 \(duplicates sent on purpose 60, after a failure 0\), gave up 0, invalid 15, OperationFailure 15\n {2}invalid: record-invalid 3, trigger-unrecognized 3, webhook-date-invalid 3, typename-missing 3, graphql-errors 3; \d+ of the duplicates re-serialized; 30 sent after a newer one; /,
    );
    expect(server.received).toHaveLength(360);
    // The router's own decision on each first delivery, as ingest would store it.
    const firsts = new Map<string, string>();
    for (const request of server.received) if (!firsts.has(request.id)) firsts.set(request.id, request.body);
    expect(firsts.size).toBe(300);
    const decisions = [...firsts].map(([id, body]) => route(envelope(id, body)));
    const reasons = decisions.filter((d) => d.kind === 'dead-lettered').map((d) => d.reason);
    expect(reasons).toHaveLength(15);
    for (const reason of INVALID_REASONS) expect(reasons.filter((r) => r === reason)).toHaveLength(3);
    expect(decisions.filter((d) => d.kind === 'failure')).toHaveLength(15);
    // Progress counts webhooks against --count: it never passes its total.
    const progress = err.join('').match(/webhooks \d+\/300/g) ?? [];
    expect(progress.length).toBeGreaterThan(0);
    for (const line of progress) expect(Number(/(\d+)\//.exec(line)![1])).toBeLessThanOrEqual(300);
  }, 60_000);

  it('counts duplicates sent on purpose apart from retries after a failure', async () => {
    const seen = new Set<string>();
    // Each webhook's first attempt fails; everything after is answered.
    const server = await receiver(({ id }) => {
      if (seen.has(id)) return 200;
      seen.add(id);
      return 503;
    });
    const { io, out } = captured();
    const args = ['--url', server.url, '--count', '10', '--duplicate-rate', '0.5', ...fast];
    expect(await runSimulate(args, io)).toBe(0);
    expect(out.join('')).toMatch(
      /^sent 10 webhooks in 25 deliveries: acknowledged 10, retried 15 \(duplicates sent on purpose 5, after a failure 10\), gave up 0,/,
    );
    expect(server.received).toHaveLength(25);
  });

  it('sends some webhooks after newer ones when asked to reorder', async () => {
    const server = await receiver(() => 200);
    const { io, out } = captured();
    const args = [
      '--url',
      server.url,
      '--count',
      '40',
      '--reorder-rate',
      '0.3',
      '--concurrency',
      '1',
      ...fast,
    ];
    expect(await runSimulate(args, io)).toBe(0);
    // Exactly 30 % of the 40 webhooks, each sent after a newer one.
    expect(out.join('')).toMatch(
      /^sent 40 webhooks in 40 deliveries: acknowledged 40,.*; 12 sent after a newer one;/s,
    );
    const dates = server.received.map((r) =>
      Date.parse((parse(r.body) as { webhook: { date: string } }).webhook.date),
    );
    const older = dates.filter((date, i) => i > 0 && date < dates[i - 1]!);
    expect(older.length).toBeGreaterThan(0);
  }, 30_000);

  it('keeps to the rate and the concurrency bound', async () => {
    const server = await receiver(async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return 200;
    });
    const { io } = captured();
    const started = Date.now();
    const args = ['--url', server.url, '--count', '10', '--key', KEY, '--rate', '20/s', '--concurrency', '2'];
    expect(await runSimulate(args, io)).toBe(0);
    // Ten first attempts 50 ms apart.
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    const bounded = await receiver(async () => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return 200;
    });
    expect(
      await runSimulate(['--url', bounded.url, '--count', '20', '--concurrency', '2', ...fast], io),
    ).toBe(0);
    expect(bounded.maxOpen).toBe(2);
  });

  it('never dates a webhook after it is sent, however fast it sends (§2.1: when it was triggered)', async () => {
    // As fast as possible and until stopped: the dates' mean gap (1.5 s) is far longer than the time
    // between two sends, so without a bound they ran minutes ahead (the router's from-the-future).
    let ahead = Number.NEGATIVE_INFINITY;
    const stop = new AbortController();
    const server = await receiver((request, index) => {
      const date = Date.parse((parse(request.body) as { webhook: { date: string } }).webhook.date);
      ahead = Math.max(ahead, date - request.at);
      if (index === 300) stop.abort();
      return 200;
    });
    const { io } = captured();
    await runSimulate(['--url', server.url, ...fast], { ...io, signal: stop.signal });
    expect(server.received.length).toBeGreaterThan(300);
    expect(ahead).toBeLessThanOrEqual(0);
  });

  it('prints the summary as JSON with --json', async () => {
    const server = await receiver(() => 200);
    const { io, out } = captured();
    expect(await runSimulate(['--url', server.url, '--count', '2', '--json', ...fast], io)).toBe(0);
    expect(JSON.parse(out.join(''))).toMatchObject({
      webhooks: 2,
      deliveries: 2,
      acknowledged: 2,
      retried: 0,
      duplicates: 0,
      retriedAfterFailure: 0,
      gaveUp: 0,
      invalid: 0,
      invalidByReason: {},
      seed: 'http',
    });
  });

  it('refuses to run without a key, or with a malformed option, in one line', async () => {
    const { io } = captured();
    await expect(runSimulate(['--source', 'energy'], io)).rejects.toThrow(UsageError);
    await expect(runSimulate(['--source', 'energy'], io)).rejects.toThrow(/no signing key/);
    await expect(runSimulate(['--source', 'energy', '--key', 'k', '--rate', 'fast'], io)).rejects.toThrow(
      /--rate/,
    );
    await expect(runSimulate(['--key', 'k'], io)).rejects.toThrow(/--source/);
    await expect(runSimulate(['--source', 'e', '--key', 'k', '--retry-window', '3'], io)).rejects.toThrow(
      /--retry-window/,
    );
    await expect(
      runSimulate(['--source', 'e', '--key', 'k', '--other-triggers', 'payment'], io),
    ).rejects.toThrow(/--other-triggers/);
  });

  it('refuses an --ids-file it cannot write before sending anything, in one line', async () => {
    const server = await receiver(() => 200);
    const { io } = captured();
    const unwritable = path.join(tmpdir(), `no-such-dir-${process.pid}`, 'ids.txt');
    const run = runSimulate(['--url', server.url, '--count', '3', '--ids-file', unwritable, ...fast], io);
    await expect(run).rejects.toBeInstanceOf(CommandFailed);
    await expect(run).rejects.toThrow(`--ids-file: cannot write ${unwritable} (ENOENT)`);
    expect(server.received).toHaveLength(0);
  });

  it('stops on SIGTERM as on Ctrl-C: the summary printed and --ids-file written', async () => {
    const server = await receiver(() => 200);
    const dir = await mkdtemp(path.join(tmpdir(), 'simulate-'));
    const idsFile = path.join(dir, 'ids.txt');
    // Only the listeners the run adds are called, with the signal's name as Node calls them: this worker
    // runs other files too (isolate: false), and no signal is sent to it.
    const before = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') };
    const send = (signal: 'SIGTERM' | 'SIGINT') => {
      for (const listener of process.listeners(signal))
        if (!before[signal].includes(listener)) (listener as (name: string) => void)(signal);
    };
    try {
      const { io, out } = captured();
      // No signal given: the command listens to the process's own signals.
      const { signal: _signal, ...processIo } = io;
      const run = runSimulate(
        ['--url', server.url, '--key', KEY, '--rate', '50/s', '--seed', 'http', '--ids-file', idsFile],
        processIo,
      );
      while (server.received.length < 5) await new Promise((resolve) => setTimeout(resolve, 20));
      send('SIGTERM');
      const code = await Promise.race([
        run,
        new Promise((resolve) => setTimeout(resolve, 5_000)).then(() => 'still running'),
      ]);
      // Without a SIGTERM handler, Ctrl-C's ends the run, so that it does not outlive the test.
      if (code === 'still running') {
        send('SIGINT');
        await run;
      }
      expect(code).toBe(130);
      // Those answered before the stop: a request in flight then is interrupted, not acknowledged.
      const acknowledged = Number(
        /^sent \d+ webhooks? in \d+ deliver(?:y|ies): acknowledged (\d+)/.exec(out.join(''))![1],
      );
      expect(acknowledged).toBeGreaterThan(0);
      expect((await readFile(idsFile, 'utf8')).trim().split('\n')).toHaveLength(acknowledged);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 15_000);

  it('as the CLI: exits non-zero with one line when it gave up, and answers --help', async () => {
    const server = await receiver(() => 503);
    const cli = path.resolve(import.meta.dirname, '../../../tools/cli/hookledger.js');
    const failed = await runCli([
      cli,
      'simulate',
      '--url',
      server.url,
      '--count',
      '1',
      '--retry-window',
      '500ms',
      ...fast,
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(
      /^sent 1 webhook in \d+ deliver(y|ies): acknowledged 0, retried \d+ .*, gave up 1,/,
    );
    expect(failed.stderr.trim().split('\n').at(-1)).toMatch(/^hookledger: gave up on 1 of 1 webhooks/);
    const help = await runCli([cli, 'simulate', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: hookledger simulate/);
  }, 30_000);
});

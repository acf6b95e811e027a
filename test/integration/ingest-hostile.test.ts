// Ingest as the internet sees it: the real service (`hookledger ingest` as a child process, on ports of
// its own) against the real broker and registry, under forged traffic. Its resident memory stays flat
// and the failing-id series quiet, operations are not on the webhook port, an unknown source answers
// 404 and a bad signature 401, and the quarantine keeps its byte bound under header-heavy forged traffic.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { sendForged, seriesSum } from '../../tools/bench/forged-load.js';
import { rssMiB } from '../../tools/bench/proc-stats.js';
import { freePort } from '../../tools/stack/ports.js';
import { testStack } from '../helpers/stack.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const KEY = 'hostile-traffic-key-7c1e9a35f08b2d46';
/** Resident memory may grow this much under 600 forged 1 MB ids (it grew by 1.2 GiB before issue 19). */
const RSS_GROWTH_BOUND_MIB = 150;
/** The quarantine's byte budget per source: 2 KiB/s, a burst of 60 s. */
const QUARANTINE_BYTES_PER_SECOND = 2_048;

describe('ingest under forged traffic (the real service)', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('hostile'), 1);
  let child: ChildProcess | undefined;
  let dir: string;
  let webhooks: string;
  let ops: string;

  beforeAll(async () => {
    await harness.setUp();
    dir = await mkdtemp(path.join(tmpdir(), 'hookledger-hostile-'));
    const [port, opsPort] = [await freePort(), await freePort()];
    webhooks = `http://127.0.0.1:${port}`;
    ops = `http://127.0.0.1:${opsPort}`;
    const log = await import('node:fs').then((fs) => fs.openSync(path.join(dir, 'ingest.log'), 'w'));
    child = spawn(process.execPath, [path.join(repoRoot, 'tools/cli/hookledger.js'), 'ingest'], {
      cwd: repoRoot,
      env: {
        ...process.env,
        ...harness.environment({
          INGEST_HOST: '127.0.0.1',
          INGEST_PORT: String(port),
          INGEST_OPS_PORT: String(opsPort),
          HOOKLEDGER_SOURCES: JSON.stringify({ energy: { keys: { k1: KEY } } }),
          INGEST_QUARANTINE_PER_SECOND: '100',
          INGEST_QUARANTINE_BYTES_PER_SECOND: String(QUARANTINE_BYTES_PER_SECOND),
          LOG_LEVEL: 'info',
        }),
      },
      stdio: ['ignore', log, log],
    });
    const end = Date.now() + 60_000;
    for (;;) {
      const status = await fetch(`${ops}/readyz`)
        .then((r) => r.status)
        .catch(() => 0);
      if (status === 200) break;
      if (Date.now() > end || child.exitCode !== null)
        throw new Error(`ingest not ready: ${await readFile(path.join(dir, 'ingest.log'), 'utf8')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    await rm(dir, { recursive: true, force: true });
  }, 30_000);

  it('serves /metrics, /readyz and /healthz on the ops port, none on the webhook port', async () => {
    for (const endpoint of ['/metrics', '/readyz', '/healthz']) {
      expect((await fetch(`${webhooks}${endpoint}`)).status, endpoint).toBe(404);
      expect((await fetch(`${webhooks}${endpoint}/`)).status, `${endpoint}/`).toBe(404);
      expect((await fetch(`${ops}${endpoint}`)).status, endpoint).toBe(200);
    }
    expect(await (await fetch(`${ops}/metrics`)).text()).toContain('hookledger_ingest_requests_total');
  });

  it('answers an unknown source 404 with its own body, and every bad signature alike with 401', async () => {
    const body = '{"webhook":{"id":"wh_probe","trigger":"UserAdded","date":"2026-11-20T10:00:00Z"}}';
    const post = (source: string, signature: string) =>
      fetch(`${webhooks}/webhooks/${source}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-signature': signature },
      });
    const answers = await Promise.all([
      post('no-such-source', signBody(body, KEY)),
      post('energy', signBody(body, 'not-the-key-but-long-enough-for-hmac')),
      post('energy', ''),
      post('energy', 'sha256=00'),
    ]);
    const seen = await Promise.all(
      answers.map(async (a) => ({
        status: a.status,
        type: a.headers.get('content-type'),
        body: await a.text(),
      })),
    );
    const [unknown, ...refused] = seen;
    expect(unknown).toEqual({
      status: 404,
      type: 'application/json; charset=utf-8',
      body: JSON.stringify({ code: 'INGEST_ERR_UNKNOWN_SOURCE', message: 'Unknown source' }),
    });
    for (const answer of refused) expect(answer).toEqual(refused[0]);
    expect(refused[0]!.status).toBe(401);
  });

  it(`keeps resident memory within ${RSS_GROWTH_BOUND_MIB} MiB under 600 forged 1 MB ids, 8 at a time, the failing-id series at 0`, async () => {
    const before = rssMiB(child!.pid)!;
    const statuses = await sendForged({
      url: `${webhooks}/webhooks/energy`,
      requests: 600,
      concurrency: 8,
      idChars: 1_000_000,
    });
    expect(Object.fromEntries(statuses)).toEqual({ 401: 600 });
    await new Promise((r) => setTimeout(r, 2_000));
    const after = rssMiB(child!.pid)!;
    console.log(`ingest RSS under forged load: ${before.toFixed(1)} → ${after.toFixed(1)} MiB`);
    expect(after - before).toBeLessThan(RSS_GROWTH_BOUND_MIB);

    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(seriesSum(metrics, 'hookledger_ingest_failing_webhooks')).toBe(0);
    expect(seriesSum(metrics, 'hookledger_ingest_failing_webhook_attempts_count')).toBe(0);
    expect(
      seriesSum(metrics, 'hookledger_ingest_signature_failures_total', 'reason="mismatch"'),
    ).toBeGreaterThanOrEqual(600);
    // No forged id reaches the log: no line of megabytes.
    const log = await readFile(path.join(dir, 'ingest.log'), 'utf8');
    expect(log).not.toContain('x'.repeat(1_000));
    expect(log.length).toBeLessThan(100_000);
  }, 120_000);

  it('holds the quarantine to its byte bound under header-heavy forged traffic', async () => {
    const started = Date.now();
    const statuses = await sendForged({
      url: `${webhooks}/webhooks/energy`,
      requests: 200,
      concurrency: 8,
      idChars: 1_000,
      headers: 40,
      headerChars: 300,
    });
    expect(Object.fromEntries(statuses)).toEqual({ 401: 200 });
    const seconds = (Date.now() - started) / 1000 + 3;
    await new Promise((r) => setTimeout(r, 3_000));
    const kept = await harness.read<Buffer>(harness.names.quarantine, { decode: false });
    const bytes = kept.reduce((sum, r) => sum + (r.value?.length ?? 0) + Buffer.byteLength(r.key), 0);
    // What the bucket held (a minute's worth) plus what it refilled meanwhile.
    const bound = QUARANTINE_BYTES_PER_SECOND * (60 + seconds);
    console.log(
      `quarantine under header-heavy forgery: ${kept.length} records, ${bytes} bytes (bound ${bound})`,
    );
    expect(kept.length).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(bound);
    // The forged headers are not kept: only the allow-list and the signature.
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(
      seriesSum(metrics, 'hookledger_ingest_quarantine_dropped_total', 'reason="over-bytes"'),
    ).toBeGreaterThan(0);
  });
});

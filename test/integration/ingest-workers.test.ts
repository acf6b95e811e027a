// `hookledger ingest --workers 2`, the real CLI as a child process on a real broker and registry: two
// HTTP workers on one port, each with its own producer, both answering; every webhook stored before its
// 200; one /readyz and one /metrics for both; SIGTERM drains and closes both; a worker killed ends the
// command, with no process left behind.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { pidAlive } from '../../tools/stack/jvm-process.js';
import { freePort } from '../../tools/stack/ports.js';
import { metricSum } from '../helpers/metric-sum.js';
import { testStack } from '../helpers/stack.js';
import { createRawTopic, ingestCommandEnv, randomPrefix, readRaw, waitReady } from './ingest-harness.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const KEY = 'workers-key-0123456789abcdef0123456789';
const DRAIN_MS = 3_000;

/** A signed webhook on a connection of its own: node:cluster hands connections to the workers in turn. */
function post(url: string, id: string): Promise<number> {
  const body = JSON.stringify({ webhook: { id, trigger: 'UserAdded', date: new Date().toISOString() } });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/webhooks/energy`,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The pids of a process's workers (its children running ingest/worker). */
function workersOf(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid), '-f', 'ingest/worker'])
      .toString()
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
}

describe('hookledger ingest --workers 2', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  async function start(prefix: string, env: Record<string, string> = {}) {
    const { brokers, registryUrl } = testStack();
    const rawTopic = await createRawTopic(brokers, prefix);
    const port = await freePort();
    const opsPort = await freePort();
    let output = '';
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'tools/cli/hookledger.js'), 'ingest', '--workers', '2'],
      {
        cwd: repoRoot,
        env: {
          ...ingestCommandEnv({ brokers, registryUrl, prefix, port, opsPort, key: KEY }),
          INGEST_DRAIN_DELAY_MS: String(DRAIN_MS),
          // One line per request, each naming the worker that answered it.
          LOG_LEVEL: 'debug',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const opsUrl = `http://127.0.0.1:${opsPort}`;
    await waitReady(opsUrl);
    return {
      child,
      exited,
      url: `http://127.0.0.1:${port}`,
      opsUrl,
      rawTopic,
      brokers,
      registryUrl,
      output: () => output,
    };
  }

  it('stores every webhook through both workers, with one /readyz and /metrics, and closes both on SIGTERM', async () => {
    const ingest = await start(randomPrefix('ingest-workers'));
    const workers = workersOf(ingest.child.pid!);
    expect(workers).toHaveLength(2);

    const ids = Array.from({ length: 120 }, (_, n) => `wh-workers-${n}`);
    const statuses = await Promise.all(ids.map((id) => post(ingest.url, id)));
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const stored = await readRaw(ingest.brokers, ingest.registryUrl, ingest.rawTopic);
    expect(stored.map((record) => record.key).sort()).toEqual([...ids].sort());

    // Both workers answered: each request's line names its worker.
    const answeredBy = new Set(
      ingest
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"stored"'))
        .map((line) => (JSON.parse(line) as { worker?: number }).worker),
    );
    expect([...answeredBy].sort()).toEqual([0, 1]);

    const readyz = await fetch(`${ingest.opsUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toEqual({
      ready: true,
      checks: { accepting: true, webhooks: true, producer: true, schema: true },
    });
    // Both workers' counts, summed; the producer gauge is 1 only when every worker's producer is ready.
    const page = await (await fetch(`${ingest.opsUrl}/metrics`)).text();
    expect(metricSum(page, 'hookledger_ingest_requests_total', 'status="200"')).toBe(ids.length);
    expect(metricSum(page, 'hookledger_ingest_producer_ready')).toBe(1);
    expect(metricSum(page, 'hookledger_build_info')).toBe(1);

    const signalledAt = Date.now();
    ingest.child.kill('SIGTERM');
    // Not ready as soon as the signal is handled (well within the drain), while the workers still answer.
    let readiness = 200;
    while (readiness === 200 && Date.now() - signalledAt < DRAIN_MS / 2) {
      readiness = (await fetch(`${ingest.opsUrl}/readyz`)).status;
      if (readiness === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(readiness).toBe(503);
    expect(await post(ingest.url, 'wh-workers-during-drain')).toBe(200);
    expect(await ingest.exited).toBe(0);
    expect(workers.filter(pidAlive)).toEqual([]);
    const after = await readRaw(ingest.brokers, ingest.registryUrl, ingest.rawTopic);
    expect(after.map((record) => record.key)).toContain('wh-workers-during-drain');
  }, 120_000);

  it('takes a failing id off the list of the worker it failed on when the other worker stores its retry', async () => {
    // One record pending at most: of a burst, each worker takes one and answers the rest 503 (overloaded).
    const ingest = await start(randomPrefix('ingest-workers-failing'), { INGEST_MAX_PENDING_BYTES: '1' });
    const ids = Array.from({ length: 40 }, (_, n) => `wh-workers-burst-${n}`);
    const statuses = await Promise.all(ids.map((id) => post(ingest.url, id)));
    const failed = ids.filter((_, n) => statuses[n] === 503);
    expect(failed.length).toBeGreaterThan(4);
    const failing = async () =>
      metricSum(await (await fetch(`${ingest.opsUrl}/metrics`)).text(), 'hookledger_ingest_failing_webhooks');
    expect(await failing()).toBe(failed.length);

    // The platform's retries, one at a time, each on a connection of its own: the workers take turns, so
    // about half the retries reach the worker that did not fail them.
    for (const id of failed) expect(await post(ingest.url, id)).toBe(200);
    const stored = new Set(
      (await readRaw(ingest.brokers, ingest.registryUrl, ingest.rawTopic)).map((r) => r.key),
    );
    expect(failed.every((id) => stored.has(id))).toBe(true);
    // Every worker's list is empty again, each id left it once, as stored.
    const page = await (await fetch(`${ingest.opsUrl}/metrics`)).text();
    expect(metricSum(page, 'hookledger_ingest_failing_webhooks')).toBe(0);
    expect(metricSum(page, 'hookledger_ingest_failing_webhook_attempts_count', 'outcome="stored"')).toBe(
      failed.length,
    );
    // Both workers stored some of the retries (else the other worker's word was never needed).
    const retriedBy = new Set(
      ingest
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"stored"') && failed.some((id) => line.includes(`"${id}"`)))
        .map((line) => (JSON.parse(line) as { worker?: number }).worker),
    );
    expect([...retriedBy].sort()).toEqual([0, 1]);
  }, 120_000);

  it('ends the command when a worker dies, leaving no worker behind', async () => {
    const ingest = await start(randomPrefix('ingest-worker-dies'));
    const workers = workersOf(ingest.child.pid!);
    expect(workers).toHaveLength(2);
    process.kill(workers[1]!, 'SIGKILL');
    expect(await ingest.exited).toBe(1);
    expect(ingest.output()).toContain('an ingest worker ended; stopping');
    expect(workers.filter(pidAlive)).toEqual([]);
  }, 120_000);
});

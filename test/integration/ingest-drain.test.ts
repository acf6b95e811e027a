// `hookledger ingest` on SIGTERM, as a rolling update stops a pod: /readyz fails at once, webhooks sent
// before the load balancer notices are still stored and answered 200, the listener closes only after
// INGEST_DRAIN_DELAY_MS, and the process exits 0. Real broker and registry, the real process.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { signBody } from '../../ingest/webhooks/signature.js';
import { freePort } from '../../tools/stack/ports.js';
import { testStack } from '../helpers/stack.js';
import { createRawTopic, ingestCommandEnv, randomPrefix, readRaw, waitReady } from './ingest-harness.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const KEY = 'drain-key-0123456789abcdef0123456789';
const DRAIN_MS = 2_000;

describe('hookledger ingest stopped by SIGTERM', () => {
  it('fails readiness first, stores every webhook sent meanwhile, and closes after the drain delay', async () => {
    const { brokers, registryUrl } = testStack();
    const prefix = randomPrefix('ingest-drain');
    const rawTopic = await createRawTopic(brokers, prefix);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // /readyz is on the ops port, as a Kubernetes readiness probe reads it.
    const opsPort = await freePort();
    const opsUrl = `http://127.0.0.1:${opsPort}`;
    const child = spawn(process.execPath, [path.join(repoRoot, 'tools/cli/hookledger.js'), 'ingest'], {
      cwd: repoRoot,
      env: {
        ...ingestCommandEnv({ brokers, registryUrl, prefix, port, opsPort, key: KEY }),
        INGEST_DRAIN_DELAY_MS: String(DRAIN_MS),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await waitReady(opsUrl);

    // The platform sends a webhook every 20 ms; a load balancer checks /readyz every 250 ms and stops
    // routing here once it fails (as a Service drops a terminating pod from its endpoints).
    let routed = true;
    let sent = 0;
    const answers: Promise<{ id: string; status: number | string; after: boolean }>[] = [];
    let signalledAt = Number.POSITIVE_INFINITY;
    const sender = (async () => {
      while (routed) {
        const id = `wh-drain-${sent++}`;
        const body = JSON.stringify({ webhook: { id, trigger: 'UserAdded' } });
        const after = Date.now() >= signalledAt;
        answers.push(
          fetch(`${url}/webhooks/energy`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-signature': signBody(body, KEY) },
            body,
          }).then(
            (r) => ({ id, status: r.status, after }),
            (error: Error) => ({
              id,
              status: `${error.message} ${(error.cause as Error)?.message ?? ''}`,
              after,
            }),
          ),
        );
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const balancer = (async () => {
      while (routed) {
        await new Promise((r) => setTimeout(r, 250));
        // Its checks are periodic: it notices a failing /readyz one period after the signal at the soonest
        // (a check landing right after the signal would leave no webhook sent during the drain to look at).
        if (Date.now() - signalledAt < 250) continue;
        const ready = await fetch(`${opsUrl}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (ready !== 200) routed = false;
      }
    })();

    await new Promise((r) => setTimeout(r, 500));
    signalledAt = Date.now();
    child.kill('SIGTERM');
    // Not ready as soon as the signal is handled (well within the drain), while it still answers.
    let readiness = 200;
    while (readiness === 200 && Date.now() - signalledAt < DRAIN_MS / 2) {
      readiness = (await fetch(`${opsUrl}/readyz`)).status;
      if (readiness === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(readiness).toBe(503);
    await Promise.all([sender, balancer]);
    const stoppedRouting = Date.now() - signalledAt;
    const results = await Promise.all(answers);

    expect(await exited).toBe(0);
    const exitedAfter = Date.now() - signalledAt;
    expect(stoppedRouting).toBeLessThan(DRAIN_MS);
    expect(exitedAfter).toBeGreaterThanOrEqual(DRAIN_MS);
    // No webhook refused: every one answered 200, those sent after SIGTERM included.
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.filter((r) => r.after).length).toBeGreaterThan(0);
    const stored = new Set((await readRaw(brokers, registryUrl, rawTopic)).map((r) => r.key));
    expect(results.every((r) => stored.has(r.id))).toBe(true);
    // And then the listener is gone.
    await expect(fetch(`${opsUrl}/readyz`)).rejects.toThrow();
  }, 120_000);
});

// simulate → ingest → webhooks.raw → tail: what the simulated platform sends arrives, signed and intact;
// and through the router, its invalid webhooks reach webhooks.dlq with their reason and its
// OperationFailures webhooks.failures, each once.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookBodySchema } from '../../processors/dedupe-router/contract.js';
import type { DeadLetter } from '../../processors/dedupe-router/dead-letter.js';
import type { WebhookFailure } from '../../processors/dedupe-router/failure.js';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { parseBody } from '../../processors/dedupe-router/parse-body.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { runRedriveCommand } from '../../tools/cli/commands/redrive.js';
import { runSimulate } from '../../tools/cli/commands/simulate.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import { INVALID_REASONS } from '../../tools/simulate/invalid.js';
import { testStack } from '../helpers/stack.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const KEY = 'simulate-e2e-key-0123456789abcdef0123456789';

describe('hookledger simulate against a running ingest and router', () => {
  const stack = testStack();
  const harness = new ProcessorsHarness(stack, randomPrefix('simulate'));
  let ingest: IngestUnderTest | undefined;
  let router: RunningStage | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'simulate-e2e-'));
    await harness.setUp();
    ingest = await runIngest({ ...stack, prefix: harness.prefix, sources: { sim: { keys: { k1: KEY } } } });
    router = await harness.startRouter();
  }, 120_000);

  afterAll(async () => {
    await ingest?.close();
    await router?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs simulate against the ingest; its summary and the ids it got acknowledged. */
  async function simulate(name: string, args: string[]): Promise<{ summary: string; ids: string[] }> {
    const idsFile = path.join(dir, `${name}.txt`);
    const out: string[] = [];
    const code = await runSimulate(
      [
        ...['--url', `${ingest!.url}/webhooks/sim`, '--key', KEY, '--rate', '200/s'],
        ...['--retry-window', '30s', '--backoff', '100ms', '--ids-file', idsFile, '--seed', name],
        ...args,
      ],
      {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: () => true },
        env: {},
        signal: new AbortController().signal,
      },
    );
    const summary = out.join('');
    expect(code, summary).toBe(0);
    return { summary, ids: (await readFile(idsFile, 'utf8')).trim().split('\n') };
  }

  it('stores every webhook it sends, duplicates under the same id, each verified by its key', async () => {
    const { summary, ids } = await simulate('stored', [
      ...['--count', '40', '--duplicate-rate', '0.2', '--reorder-rate', '0.2', '--failure-rate', '0'],
    ]);
    // 20 % of 40 are sent twice, each once its webhook is acknowledged (a busy ingest may ask for a retry).
    expect(summary).toMatch(
      /^sent 40 webhooks in \d+ deliveries: acknowledged 40, retried \d+ \(duplicates sent on purpose 8, after a failure \d+\), gave up 0, invalid 0, OperationFailure 0\n/,
    );
    expect(ids).toHaveLength(40);

    const lines: string[] = [];
    await runTail(['webhooks.raw', '--from-beginning'], {
      stdout: { write: (text: string) => lines.push(text) },
      env: harness.environment(),
      signal: new AbortController().signal,
    });
    const records = lines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map(
        (line) =>
          JSON.parse(line) as {
            key: string;
            value: { body: string; headers: Record<string, string>; verifiedKeyId: string | null };
          },
      );
    // Every delivery the endpoint acknowledged is stored: originals and duplicates (a 503 at ingest's
    // deadline may have stored one more).
    expect(records.length).toBeGreaterThanOrEqual(48);
    expect(records.length).toBeLessThanOrEqual(Number(/in (\d+) deliveries/.exec(summary)![1]));
    expect(new Set(records.map((r) => r.key))).toEqual(new Set(ids));
    for (const { key, value } of records) {
      const body = Buffer.from(value.body, 'utf8');
      // Verified by ingest with k1; the signature itself stays out of raw (it would let a reader replay).
      expect(value.verifiedKeyId).toBe('k1');
      expect(value.headers['x-signature']).toBeUndefined();
      expect(value.headers['user-agent']).toMatch(/^Platform-Webhooks\//);
      const parsed = parseBody(body);
      expect(parsed.ok).toBe(true);
      expect(webhookBodySchema.safeParse(parsed.ok && parsed.value).success).toBe(true);
      expect(parsed.ok && (parsed.value.webhook as { id: string }).id).toBe(key);
    }
  }, 120_000);

  it('sends invalid webhooks to webhooks.dlq with their reason and OperationFailures to webhooks.failures, each once', async () => {
    const { summary, ids } = await simulate('paths', [
      ...['--count', '50', '--duplicate-rate', '0.2', '--invalid-rate', '0.2', '--failure-rate', '0.1'],
    ]);
    expect(summary).toMatch(
      /^sent 50 webhooks in \d+ deliveries: acknowledged 50, retried \d+ \(duplicates sent on purpose 10, after a failure \d+\), gave up 0, invalid 10, OperationFailure 5\n {2}invalid: record-invalid 2, trigger-unrecognized 2, webhook-date-invalid 2, typename-missing 2, graphql-errors 2;/,
    );
    // Signed and authentic: ingest stored all of them.
    expect(ids).toHaveLength(50);
    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
    const ofThisRun = new Set(ids);

    const dlq = (await harness.read<DeadLetter>(harness.names.dlq)).filter((r) =>
      ofThisRun.has(r.value!.webhookId),
    );
    // One dead letter per invalid webhook: its duplicates are dropped as duplicates.
    expect(dlq).toHaveLength(10);
    expect(new Set(dlq.map((r) => r.key)).size).toBe(10);
    for (const reason of INVALID_REASONS) {
      const letters = dlq.filter((r) => r.value!.reason === reason);
      expect(letters, reason).toHaveLength(2);
      for (const { key, value } of letters) {
        expect(value!.stage).toBe('dedupe-router.route');
        expect(value!.message).not.toBe('');
        expect(value!.webhookId).toBe(key);
        expect(value!.source).toBe('sim');
      }
    }

    const failures = (await harness.read<WebhookFailure>(harness.names.failures)).filter((r) =>
      ofThisRun.has(r.value!.webhookId),
    );
    expect(failures).toHaveLength(5);
    for (const { key, value } of failures) {
      expect(key).toBe(`sim/${value!.entityId}`);
      expect(value!.description).toMatch(/not found$/);
      expect(value!.trigger).not.toMatch(/Deleted$/);
    }

    // Every id of the run once in webhooks.unique, whatever its route.
    const unique = (await harness.read(harness.names.unique)).filter((r) => ofThisRun.has(r.key));
    expect(unique.map((r) => r.key).sort()).toEqual([...ids].sort());

    // What the README tour's redrive line counts: the record-invalid ones, nothing sent on a dry run.
    const printed: string[] = [];
    const code = await runRedriveCommand(['--reason', 'record-invalid', '--dry-run'], {
      stdout: { write: (text: string) => printed.push(text) },
      stderr: { write: () => true },
      env: harness.environment(),
    });
    expect(code).toBe(0);
    expect(printed.join('')).toMatch(/selected\s+2 \(record-invalid 2\)/);
    expect(printed.join('')).toMatch(/would send\s+2 /);
  }, 180_000);
});

// simulate → ingest → webhooks.raw → tail: what the simulated platform sends arrives, signed and intact.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../ingest/webhooks/signature.js';
import { webhookBodySchema } from '../../processors/dedupe-router/contract.js';
import { parseBody } from '../../processors/dedupe-router/parse-body.js';
import { runSimulate } from '../../tools/cli/commands/simulate.js';
import { runTail } from '../../tools/cli/commands/tail.js';
import { testStack } from '../helpers/stack.js';
import { createRawTopic, type IngestUnderTest, randomPrefix, runIngest } from './ingest-harness.js';

const KEY = 'simulate-e2e-key';

describe('hookledger simulate against a running ingest', () => {
  const stack = testStack();
  const prefix = randomPrefix('simulate');
  let ingest: IngestUnderTest;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'simulate-e2e-'));
    await createRawTopic(stack.brokers, prefix);
    ingest = await runIngest({ ...stack, prefix, sources: { sim: { keys: { k1: KEY } } } });
  });

  afterAll(async () => {
    await ingest?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('stores every webhook it sends, duplicates under the same id, each signature verifiable', async () => {
    const idsFile = path.join(dir, 'ids.txt');
    const out: string[] = [];
    const quiet = { write: () => true };
    const code = await runSimulate(
      [
        '--url',
        `${ingest.url}/webhooks/sim`,
        '--key',
        KEY,
        '--count',
        '40',
        '--rate',
        '200/s',
        '--duplicate-rate',
        '0.2',
        '--reorder-rate',
        '0.2',
        '--retry-window',
        '30s',
        '--backoff',
        '100ms',
        '--ids-file',
        idsFile,
        '--seed',
        'e2e',
      ],
      {
        stdout: { write: (text: string) => out.push(text) },
        stderr: quiet,
        env: {},
        signal: new AbortController().signal,
      },
    );
    expect(code).toBe(0);
    const summary = out.join('');
    expect(summary).toMatch(/^sent \d+, acknowledged \d+, retried \d+, gave up 0 \(40 webhooks/);
    const [, sent, acknowledged] = /^sent (\d+), acknowledged (\d+)/.exec(summary)!.map(Number);
    expect(acknowledged).toBe(sent);
    const ids = (await readFile(idsFile, 'utf8')).trim().split('\n');
    expect(ids).toHaveLength(40);

    const lines: string[] = [];
    await runTail(['webhooks.raw', '--from-beginning'], {
      stdout: { write: (text: string) => lines.push(text) },
      env: {
        KAFKA_BROKERS: stack.brokers.join(','),
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        TOPIC_PREFIX: prefix,
      },
      signal: new AbortController().signal,
    });
    const records = lines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map(
        (line) =>
          JSON.parse(line) as { key: string; value: { body: string; headers: Record<string, string> } },
      );
    // Every delivery the endpoint acknowledged is stored: originals and duplicates.
    expect(records).toHaveLength(sent!);
    expect(new Set(records.map((r) => r.key))).toEqual(new Set(ids));
    const keys = new Map([['k1', Buffer.from(KEY)]]);
    for (const { key, value } of records) {
      const body = Buffer.from(value.body, 'utf8');
      expect(verifySignature(body, value.headers['x-signature'], keys)).toEqual({ ok: true, keyId: 'k1' });
      expect(value.headers['user-agent']).toMatch(/^Platform-Webhooks\//);
      const parsed = parseBody(body);
      expect(parsed.ok).toBe(true);
      expect(webhookBodySchema.safeParse(parsed.ok && parsed.value).success).toBe(true);
      expect(parsed.ok && (parsed.value.webhook as { id: string }).id).toBe(key);
    }
  });
});

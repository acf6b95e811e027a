// The whole path as a user runs it: simulate (the platform, with retries, duplicates and reordering) →
// ingest → webhooks.raw → dedupe-router → tables; then a replay of the whole raw topic side by side.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { ENTITY_STREAMS, TABLE_STREAMS } from '../../schemas/topics.js';
import { runReplayCommand } from '../../tools/cli/commands/replay.js';
import { runSimulate } from '../../tools/cli/commands/simulate.js';
import { replayTopic } from '../../tools/replay/topics.js';
import { lastRows, multisets } from '../helpers/compare-streams.js';
import { testStack } from '../helpers/stack.js';
import { type IngestUnderTest, runIngest } from './ingest-harness.js';
import { ProcessorsHarness, quietLogger, type ReadRecord, randomPrefix } from './processors-harness.js';

const KEY = 'end-to-end-key-0123456789abcdef0123456789';
const WEBHOOKS = 2_000;
const REPLAY_ID = 'e2e';

const webhookIdOf = (r: ReadRecord) => (r.value as { webhookId: string }).webhookId;

describe('simulate → ingest → processors, then a replay of everything', () => {
  const stack = testStack();
  const harness = new ProcessorsHarness(stack, randomPrefix('e2e'));
  const stages: RunningStage[] = [];
  let ingest: IngestUnderTest | undefined;
  let dir: string;
  let acknowledged: string[] = [];
  let summary = '';

  const routerOutputs = () => [
    harness.names.unique,
    harness.names.failures,
    harness.names.dlq,
    ...ENTITY_STREAMS.map((s) => harness.names.entity(s)),
  ];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookledger-e2e-'));
    await harness.setUp();
    ingest = await runIngest({ ...stack, prefix: harness.prefix, sources: { sim: { keys: { k1: KEY } } } });
    const config = harness.config();
    const registry = new Registry();
    stages.push(await startDedupeRouter({ config, logger: quietLogger(), registry }));
    stages.push(await startTables({ config, logger: quietLogger(), registry }));

    const idsFile = path.join(dir, 'acknowledged.txt');
    const out: string[] = [];
    const code = await runSimulate(
      [
        ...['--url', `${ingest.url}/webhooks/sim`, '--key', KEY, '--seed', 'end-to-end'],
        ...['--count', String(WEBHOOKS), '--rate', 'unlimited', '--concurrency', '16'],
        ...[
          '--duplicate-rate',
          '0.2',
          '--reorder-rate',
          '0.1',
          '--retry-window',
          '60s',
          '--backoff',
          '200ms',
        ],
        ...['--ids-file', idsFile],
      ],
      {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: () => true },
        env: {},
        signal: new AbortController().signal,
      },
    );
    summary = out.join('');
    expect(code, summary).toBe(0);
    acknowledged = (await readFile(idsFile, 'utf8')).trim().split('\n');

    await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw], 180_000);
    await harness.waitCaughtUp(
      tablesAppId(harness.prefix),
      TABLE_STREAMS.map((s) => harness.names.entity(s)),
      180_000,
    );
  }, 600_000);

  afterAll(async () => {
    await ingest?.close();
    for (const stage of stages.reverse()) await stage.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('has every webhook acknowledged, with retries and duplicates on top', () => {
    expect(summary).toMatch(
      new RegExp(`^sent ${WEBHOOKS} webhooks in \\d+ deliveries: acknowledged ${WEBHOOKS}, .*, gave up 0,`),
    );
    expect(new Set(acknowledged).size).toBe(WEBHOOKS);
  });

  it('stores every delivery in webhooks.raw, duplicates included', async () => {
    const raw = await harness.read(harness.names.raw);
    // Each webhook and each duplicate sent on purpose was acknowledged, so stored.
    const duplicates = Number(/duplicates sent on purpose (\d+)/.exec(summary)![1]);
    expect(raw.length).toBeGreaterThanOrEqual(WEBHOOKS + duplicates);
    expect(new Set(raw.map(webhookIdOf))).toEqual(new Set(acknowledged));
  });

  it('has every acknowledged webhook id exactly once in webhooks.unique', async () => {
    const ids = (await harness.read(harness.names.unique)).map(webhookIdOf);
    expect(ids).toHaveLength(WEBHOOKS);
    expect(new Set(ids)).toEqual(new Set(acknowledged));
  });

  it('routes each webhook once: one entity event, failure or dead letter per id, none twice in a stream', async () => {
    const routes = new Map<string, number>();
    const outputs = [
      ...ENTITY_STREAMS.filter((s) => s !== 'energy-switch-commission').map((s) => harness.names.entity(s)),
      harness.names.failures,
      harness.names.dlq,
    ];
    for (const topic of [...outputs, harness.names.entity('energy-switch-commission')]) {
      const ids = (await harness.read(topic)).map(webhookIdOf);
      expect(ids.length, `${topic} has an id twice`).toBe(new Set(ids).size);
      if (!outputs.includes(topic)) continue;
      for (const id of ids) routes.set(id, (routes.get(id) ?? 0) + 1);
    }
    expect(routes.size).toBe(WEBHOOKS);
    expect([...routes].filter(([, n]) => n !== 1)).toEqual([]);
  });

  describe('a replay of the whole raw topic, side by side', () => {
    let replayed = '';

    beforeAll(async () => {
      const out: string[] = [];
      const code = await runReplayCommand(['--id', REPLAY_ID], {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: () => true },
        env: harness.environment(),
      });
      replayed = out.join('');
      expect(code, replayed).toBe(0);
    }, 600_000);

    it('says how consumers cut over', () => {
      expect(replayed).toContain(`replay ${REPLAY_ID} complete`);
      expect(replayed).toContain('To cut a consumer over');
    });

    it('writes, per key, the same multiset of records as the live router, in every output', async () => {
      for (const live of routerOutputs()) {
        const expected = multisets(await harness.read(live));
        expect(multisets(await harness.read(replayTopic(live, REPLAY_ID))), live).toEqual(expected);
      }
    });

    it('builds tables equal to the live tables', async () => {
      for (const stream of TABLE_STREAMS) {
        const live = harness.names.latest(stream);
        const expected = lastRows(await harness.read(live));
        expect(expected.size, live).toBeGreaterThan(0);
        expect(lastRows(await harness.read(replayTopic(live, REPLAY_ID))), live).toEqual(expected);
      }
    });
  });
});

// Scaling past the partition count without breaking de-duplication, on the real broker and registry:
// `hookledger topics` refuses a partition count other than the topics have, in one line naming the
// safe path; the processors refuse an input and a changelog whose counts differ (exit 1, one line);
// and the safe path itself: `repartition` copies webhooks.raw into a new topic set with more
// partitions, a replay under the new prefix rebuilds every derived topic there, and `replay diff
// --live-prefix` finds it equal to the old set's live topics.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { ensureTopics } from '../../runtime/kafka/ensure-topics.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import { TABLE_STREAMS, topicCatalog } from '../../schemas/topics.js';
import { runReplayCommand } from '../../tools/cli/commands/replay.js';
import { runReplayDiffCommand } from '../../tools/cli/commands/replay-diff.js';
import { setUpFailure, setUpTopics } from '../../tools/cli/commands/topics.js';
import { runRepartition } from '../../tools/repartition/repartition.js';
import { testStack } from '../helpers/stack.js';
import { storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, quietLogger, randomPrefix } from './processors-harness.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** `hookledger process <args>` as a user runs it, until it exits: its code and stderr. */
function runProcess(
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'tools/cli/hookledger.js'), 'process', ...args],
      {
        cwd: repoRoot,
        env: { ...process.env, ...env, HOOKLEDGER_INSTANCE_ID: `it-${process.pid}` },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

async function waitLive(harness: ProcessorsHarness): Promise<void> {
  await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
  await harness.waitCaughtUp(
    tablesAppId(harness.prefix),
    TABLE_STREAMS.map((s) => harness.names.entity(s)),
  );
}

describe('scaling out', () => {
  const old = new ProcessorsHarness(testStack(), randomPrefix('scale-old'), 2);
  const next = new ProcessorsHarness(testStack(), randomPrefix('scale-new'), 4);
  const stages: RunningStage[] = [];
  const history = storedDeliveries().map((d) => d.envelope);

  beforeAll(async () => {
    await old.setUp();
    // Each delivery twice (a platform retry): the new set must drop the same duplicates.
    await old.produceRaw([...history, ...history]);
    const config = old.config();
    stages.push(await startDedupeRouter({ config, logger: quietLogger(), registry: new Registry() }));
    stages.push(await startTables({ config, logger: quietLogger(), registry: new Registry() }));
    await waitLive(old);
  }, 180_000);

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it('hookledger topics refuses another partition count in one line naming the safe path, and changes nothing', async () => {
    const attempt = setUpTopics({
      config: old.config({ TOPIC_PARTITIONS: '4' }),
      logger: quietLogger(),
      local: true,
      warn: () => undefined,
    });
    const failure = setUpFailure(await attempt.catch((error: unknown) => error));
    expect(failure?.message).not.toContain('\n');
    expect(failure?.message).toMatch(
      new RegExp(`topic "${old.names.raw.replace(/\./g, '\\.')}" setting "partitions": found 2, expected 4`),
    );
    expect(failure?.message).toMatch(
      /new topic set with more partitions .*hookledger repartition, docs\/scaling\.md/,
    );
    expect(await old.watermarks(old.names.raw)).toHaveLength(2);
  });

  it('the processors refuse to start when partitions were added to an input but not to its changelog (exit 1, one line)', async () => {
    const grown = new ProcessorsHarness(testStack(), randomPrefix('scale-grown'), 2);
    // As if someone had added a partition to webhooks.raw and to entity.user by hand.
    const specs = topicCatalog({
      prefix: grown.prefix,
      bodyLimit: 1_048_576,
      dedupeWindowMs: 7 * 86_400_000,
      partitions: 2,
      replicationFactor: 1,
    }).map((spec) =>
      spec.name === grown.names.raw || spec.name === grown.names.entity('user')
        ? { ...spec, partitions: 3 }
        : spec,
    );
    await withAdmin(grown.settings, (admin) => ensureTopics(admin, specs));
    await grown.serde.registerAll(grown.prefix);

    const router = await runProcess(grown.environment(), ['--only', 'dedupe-router']);
    expect(router.code).toBe(1);
    expect(router.stderr.trim().split('\n')).toEqual([
      `hookledger: the dedupe-router refuses to start: ${grown.names.raw} has 3 partitions and its changelog ${grown.names.dedupeChangelog} has 2; partitions were added to one of them, and a retried webhook id would reach a store that never saw it. Scale out with a new topic set instead (hookledger repartition, docs/scaling.md)`,
    ]);
    const tables = await runProcess(grown.environment(), ['--only', 'tables']);
    expect(tables.code).toBe(1);
    expect(tables.stderr.trim().split('\n')).toHaveLength(1);
    expect(tables.stderr).toContain(
      `the tables refuses to start: ${grown.names.entity('user')} has 3 partitions and its changelog ${grown.names.mergeChangelog('user')} has 2`,
    );
  }, 120_000);

  it('the safe path: copy webhooks.raw into a new set with more partitions, replay there, and the diff against the old set is clean', async () => {
    await next.setUp();
    const copied = await runRepartition({
      config: old.config(),
      logger: quietLogger(),
      toPrefix: next.prefix,
    });
    expect(copied).toMatchObject({
      from: { topic: old.names.raw, partitions: 2 },
      to: { topic: next.names.raw, partitions: 4 },
      caughtUp: true,
    });
    // Every record once, byte for byte with its key and timestamp, each webhook id in one partition
    // of the four: where ingest would put it in the new set.
    const before = await old.read(old.names.raw, { decode: false });
    const after = await next.read(next.names.raw, { decode: false });
    expect(after).toHaveLength(before.length);
    const shape = (r: (typeof before)[number]) =>
      `${r.key} ${r.timestamp} ${(r.value as Buffer).toString('hex')}`;
    expect(after.map(shape).sort()).toEqual(before.map(shape).sort());
    const partitionsOf = new Map<string, Set<number>>();
    for (const r of after) partitionsOf.set(r.key, (partitionsOf.get(r.key) ?? new Set()).add(r.partition));
    expect([...partitionsOf.values()].every((p) => p.size === 1)).toBe(true);
    expect(new Set(after.map((r) => r.partition)).size).toBeGreaterThan(2);
    // Run again: nothing more to copy, nothing copied twice.
    await runRepartition({ config: old.config(), logger: quietLogger(), toPrefix: next.prefix });
    expect(await next.read(next.names.raw, { decode: false })).toHaveLength(before.length);

    const replayed = await runReplayCommand(['--id', 'scale'], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: next.environment(),
    });
    expect(replayed).toBe(0);
    expect(await next.watermarks(`${next.names.unique}.replay-scale`)).toHaveLength(4);

    const printed: string[] = [];
    const diffed = await runReplayDiffCommand(['--id', 'scale', '--json', '--live-prefix', old.prefix], {
      stdout: { write: (text: string) => printed.push(text) },
      stderr: { write: () => true },
      env: next.environment(),
    });
    const report = JSON.parse(printed.join('')) as {
      equal: boolean;
      topics: { live: string; replay: string }[];
    };
    expect(report.equal).toBe(true);
    expect(diffed).toBe(0);
    // The old set's live topics against the new set's replay.
    expect(report.topics.map((t) => [t.live, t.replay])).toContainEqual([
      old.names.unique,
      `${next.names.unique}.replay-scale`,
    ]);
    // The same replay against the new set's own live topics, empty while its processors have not run:
    // the diff sees the difference, so the clean result above compared something.
    const against = await runReplayDiffCommand(['--id', 'scale', '--json'], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: next.environment(),
    });
    expect(against).toBe(1);
    // A real comparison: as many unique deliveries in the new set's rebuild as the old set routed.
    const unique = await next.read(`${next.names.unique}.replay-scale`, { decode: false });
    expect(unique.length).toBeGreaterThan(0);
    expect(unique).toHaveLength((await old.read(old.names.unique, { decode: false })).length);
  }, 240_000);
});

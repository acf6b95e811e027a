// hookledger replay diff against the real broker and registry: a replay of unchanged history diffs clean,
// also once live traffic went on past its bounds; after a routing change it shows exactly the changed
// keys. Replay's progress counts what its tables stage reads (issue 13).
//
// The routing change is emulated as in redrive.test.ts: the live router runs with one extra, test-only
// rule (it dead-letters two deliveries; injected through dedupeTopology's `route` option), and the
// replay runs the real router.
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dedupeRouterAppId, startDedupeRouter } from '../../processors/dedupe-router/main.js';
import { startTables, tablesAppId } from '../../processors/tables/main.js';
import type { RunningStage } from '../../runtime/streams/stage.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { TABLE_STREAMS } from '../../schemas/topics.js';
import { runReplayCommand } from '../../tools/cli/commands/replay.js';
import { runReplayDiffCommand } from '../../tools/cli/commands/replay-diff.js';
import type { TopicDiff } from '../../tools/replay/diff-compare.js';
import { testStack } from '../helpers/stack.js';
import { envelopeFor, storedDeliveries } from '../unit/processors/fixtures.js';
import { ProcessorsHarness, quietLogger, randomPrefix } from './processors-harness.js';
import { startRouterBeforeFix } from './router-with-route.js';

/** A user delivery of source `test` (keys `test/<user>`), with its own webhook and ingest ids. */
function userDelivery(
  n: number,
  user: string,
  trigger: 'UserAdded' | 'UserUpdated',
  name: string,
): RawEnvelope {
  const date = new Date(Date.parse('2026-11-22T10:00:00Z') + n * 60_000).toISOString();
  return envelopeFor(
    {
      webhook: { id: `wh-diff-${n}`, trigger, date },
      query: { variables: { id: user } },
      data: { getUser: { __typename: 'User', id: user, name } },
    },
    { trigger, webhookDate: date, receivedAt: Date.parse(date) + 500, ingestId: `ingest-diff-${n}` },
  );
}

interface DiffJson {
  equal: boolean;
  topics: TopicDiff[];
}

async function diff(harness: ProcessorsHarness, id: string, json = true) {
  const printed: string[] = [];
  const code = await runReplayDiffCommand(['--id', id, ...(json ? ['--json'] : [])], {
    stdout: { write: (text: string) => printed.push(text) },
    stderr: { write: () => true },
    env: harness.environment(),
  });
  const text = printed.join('');
  return { code, text, report: json ? (JSON.parse(text) as DiffJson) : undefined };
}

async function waitLive(harness: ProcessorsHarness): Promise<void> {
  await harness.waitCaughtUp(dedupeRouterAppId(harness.prefix), [harness.names.raw]);
  await harness.waitCaughtUp(
    tablesAppId(harness.prefix),
    TABLE_STREAMS.map((s) => harness.names.entity(s)),
  );
}

/** Each topic with a difference, and its differing keys by kind. */
function differences(report: DiffJson) {
  return Object.fromEntries(
    report.topics
      .filter((t) => t.onlyLive.length + t.onlyReplay.length + t.differ.length > 0)
      .map((t) => [t.live, { onlyLive: t.onlyLive, onlyReplay: t.onlyReplay, differ: t.differ }]),
  );
}

describe('hookledger replay diff of a replay of unchanged history', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('replay-diff'));
  const id = 'same';
  const stages: RunningStage[] = [];
  const bars: string[] = [];
  const summary: string[] = [];
  let replayCode: number | undefined;

  beforeAll(async () => {
    await harness.setUp();
    const history = [
      ...storedDeliveries().map((d) => d.envelope),
      userDelivery(1, 'u-1', 'UserAdded', 'Ada'),
      userDelivery(2, 'u-2', 'UserAdded', 'Grace'),
    ];
    // Each delivery twice (a platform retry): live and replay must drop the same duplicates.
    await harness.produceRaw([...history, ...history]);
    const config = harness.config();
    stages.push(await startDedupeRouter({ config, logger: quietLogger(), registry: new Registry() }));
    stages.push(await startTables({ config, logger: quietLogger(), registry: new Registry() }));
    await waitLive(harness);
    replayCode = await runReplayCommand(['--id', id], {
      stdout: { write: (text: string) => summary.push(text) },
      // A terminal: every progress update is drawn.
      stderr: { write: (text: string) => bars.push(text), isTTY: true },
      env: harness.environment(),
    });
    // Live traffic goes on past the replay's bounds: an update of a replayed user, a new user, and a
    // retry (a new request, so a new ingest id) of a replayed delivery, which live drops as a duplicate.
    await harness.produceRaw([
      userDelivery(3, 'u-1', 'UserUpdated', 'Ada Lovelace'),
      userDelivery(4, 'u-4', 'UserAdded', 'Edsger'),
      { ...userDelivery(2, 'u-2', 'UserAdded', 'Grace'), ingestId: 'ingest-diff-2-retry' },
    ]);
    await waitLive(harness);
  });

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it("shows the tables stage's progress over the records it reads", () => {
    expect(replayCode).toBe(0);
    const tables = bars
      .flatMap((b) => [...b.matchAll(/tables \[[#.]+\] [\d.]+% (\d+)\/(\d+) · (\d+) read/g)])
      .map((m) => ({ done: Number(m[1]), total: Number(m[2]), read: Number(m[3]) }));
    expect(tables.length).toBeGreaterThan(0);
    const last = tables.at(-1)!;
    expect(last.total).toBeGreaterThan(0);
    expect(last.done).toBe(last.total);
    // The bar ends on what the summary says the stage read.
    const read = /^tables: read (\d+) record\(s\)/m.exec(summary.join(''));
    expect(Number(read?.[1])).toBeGreaterThan(0);
    expect(last.read).toBe(Number(read?.[1]));
  });

  it('diffs clean although live moved on past the bounds, exit code 0', async () => {
    const { code, report } = await diff(harness, id);
    expect(differences(report!)).toEqual({});
    expect(report!.equal).toBe(true);
    expect(code).toBe(0);
    const byTopic = new Map(report!.topics.map((t) => [t.live, t]));
    expect(byTopic.get(harness.names.unique)!.same).toBeGreaterThan(0);
    // u-1's live row merged the update from after the bounds: not compared, and counted.
    expect(byTopic.get(harness.names.latest('user'))!.movedOn).toBe(1);
    expect(byTopic.get(harness.names.entity('user'))!.records.live).toBe(
      byTopic.get(harness.names.entity('user'))!.records.replay,
    );
  });

  it('says so in text', async () => {
    const { code, text } = await diff(harness, id, false);
    expect(code).toBe(0);
    expect(text).toContain(`replay ${id} equals live`);
    expect(text).toContain('changed outside the bounds: not compared');
  });

  it('compares a replay of some triggers with the live records of those triggers only', async () => {
    const code = await runReplayCommand(
      ['--id', 'added', '--stage', 'dedupe-router', '--trigger', 'UserAdded', '--trigger', 'AccountAdded'],
      { stdout: { write: () => true }, stderr: { write: () => true }, env: harness.environment() },
    );
    expect(code).toBe(0);
    const { code: diffCode, report } = await diff(harness, 'added');
    expect(differences(report!)).toEqual({});
    expect(diffCode).toBe(0);
    const users = report!.topics.find((t) => t.live === harness.names.entity('user'))!;
    // u-1, u-2 and u-4 were added (the live stream also holds u-1's update: another trigger, left out).
    expect(users.same).toBeGreaterThanOrEqual(3);
    expect(report!.topics.map((t) => t.live)).not.toContain(harness.names.latest('user'));
  });

  it('fails with one line for a replay that does not exist', async () => {
    await expect(diff(harness, 'nope')).rejects.toThrow(
      /^no replay nope: there is no <topic>\.replay-nope topic/,
    );
  });
});

describe('hookledger replay diff after a routing change', () => {
  const harness = new ProcessorsHarness(testStack(), randomPrefix('replay-diff-route'));
  const id = 'fix';
  const stages: RunningStage[] = [];
  // The live router's extra rule dead-letters a new user's only delivery and an update of another user.
  const added = userDelivery(11, 'u-11', 'UserAdded', 'Barbara');
  const kept = userDelivery(12, 'u-12', 'UserAdded', 'Frances');
  const update = userDelivery(13, 'u-12', 'UserUpdated', 'Frances Allen');
  const strictIds = new Set([added.webhookId, update.webhookId]);

  beforeAll(async () => {
    await harness.setUp();
    await harness.produceRaw([...storedDeliveries().map((d) => d.envelope), added, kept, update]);
    // The router before the change: the real routing plus the test-only rule.
    stages.push(
      await startRouterBeforeFix(harness, strictIds, {
        why: 'a test-only rule',
        clientId: 'it-strict-router',
      }),
    );
    stages.push(
      await startTables({ config: harness.config(), logger: quietLogger(), registry: new Registry() }),
    );
    await waitLive(harness);
    const code = await runReplayCommand(['--id', id], {
      stdout: { write: () => true },
      stderr: { write: () => true },
      env: harness.environment(),
    });
    expect(code).toBe(0);
  });

  afterAll(async () => {
    for (const stage of stages) await stage.close();
  });

  it('shows exactly the changed keys, and exits 1', async () => {
    const { code, report } = await diff(harness, id);
    expect(code).toBe(1);
    expect(report!.equal).toBe(false);
    expect(differences(report!)).toEqual({
      [harness.names.dlq]: {
        onlyLive: [added.webhookId, update.webhookId].sort(),
        onlyReplay: [],
        differ: [],
      },
      [harness.names.entity('user')]: { onlyLive: [], onlyReplay: ['test/u-11'], differ: ['test/u-12'] },
      [harness.names.latest('user')]: { onlyLive: [], onlyReplay: ['test/u-11'], differ: ['test/u-12'] },
    });
  });

  it('shows how a differing key differs, field by field', async () => {
    const { report } = await diff(harness, id);
    const byTopic = new Map(report!.topics.map((t) => [t.live, t]));
    expect(byTopic.get(harness.names.latest('user'))!.samples).toEqual([
      {
        key: 'test/u-12',
        records: [
          {
            webhookId: update.webhookId,
            side: 'both',
            fields: expect.arrayContaining([
              { path: 'fields.name', live: 'Frances', replay: 'Frances Allen' },
              { path: 'webhookId', live: kept.webhookId, replay: update.webhookId },
            ]),
          },
        ],
      },
    ]);
    expect(byTopic.get(harness.names.entity('user'))!.samples).toEqual([
      { key: 'test/u-12', records: [{ webhookId: update.webhookId, side: 'replay', fields: [] }] },
    ]);
    const { text } = await diff(harness, id, false);
    expect(text).toContain(`replay ${id} differs from live: 6 key(s) in 3 topic(s)`);
    expect(text).toContain('fields.name: "Frances" (live) → "Frances Allen" (replay)');
  });
});

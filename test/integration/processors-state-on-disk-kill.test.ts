// The dedupe-router with its state on disk (PROCESSOR_STATE_STORE=lmdb), as a real child process:
// killed mid-transaction and restarted as the same instance, it restores only the changelog's tail and
// stays exactly-once, retries of ids seen before the kill recognised after it (the faults lane: ~30 s).
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { testStack } from '../helpers/stack.js';
import { expectExactlyOnce, feed, ProcessorsHarness, randomPrefix, within } from './processors-harness.js';
import { generateLoad } from './processors-load.js';

const STEP_TIMEOUT_MS = 60_000;

/** What the process's `changelogs restored` lines say: records read from the changelogs, in total. */
function restoredRecords(logs: readonly string[]): number {
  let records = 0;
  for (const line of logs) {
    if (!line.includes('"changelogs restored"')) continue;
    records += (JSON.parse(line) as { records: number }).records;
  }
  return records;
}

async function committedRecords(harness: ProcessorsHarness, groupId: string): Promise<bigint> {
  const committed = await harness.committedOffsets(groupId, harness.names.raw);
  return [...committed.values()].reduce((sum, offset) => sum + (offset < 0n ? 0n : offset), 0n);
}

/** Committed records in the dedupe changelog (its offsets also count transaction markers). */
async function changelogRecords(harness: ProcessorsHarness): Promise<number> {
  return (await harness.read(harness.names.dedupeChangelog, { decode: false })).length;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the dedupe-router with its state on disk', () => {
  const children: ChildProcess[] = [];
  const roots: string[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const stateEnv = (instance: string) => {
    const root = mkdtempSync(join(tmpdir(), 'hookledger-it-state-'));
    roots.push(root);
    return {
      root,
      env: {
        PROCESSOR_STATE_STORE: 'lmdb',
        PROCESSOR_STATE_DIR: root,
        HOOKLEDGER_INSTANCE_ID: instance,
        PROCESSOR_SESSION_TIMEOUT_MS: '30000',
      },
    };
  };

  it('killed with SIGKILL mid-transaction, restarted as the same instance, restores only the tail and stays exactly-once', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('disk-kill'), 2);
    await harness.setUp();
    const load = generateLoad({ ids: 3_000, retries: 1_500 });
    const groupId = dedupeRouterAppId(harness.prefix);
    const { env } = stateEnv('it-disk');

    const feeder = feed(harness, load.envelopes);
    const first = await harness.spawnProcess(['--only', 'dedupe-router'], env);
    children.push(first.child);
    // Well past the first commits, and a few checkpoints (one a second): the kill lands mid-transaction.
    await until(async () => (await committedRecords(harness, groupId)) > 1_000n, STEP_TIMEOUT_MS, 'commits');
    await new Promise((r) => setTimeout(r, 2_500));
    first.child.kill('SIGKILL');
    await first.exited;
    const fed = await feeder.stop();
    const logged = await changelogRecords(harness);
    // The rest, and retries of ids routed before the kill, arrive while it is down.
    await harness.produceRaw([...load.envelopes.slice(fed), ...load.envelopes.slice(0, 500)]);

    const beforeRestart = await committedRecords(harness, groupId);
    const restartedAt = Date.now();
    const second = await harness.spawnProcess(['--only', 'dedupe-router'], env);
    children.push(second.child);
    // Resumed: the restarted instance commits routed records again (issue 25's figure, in docs/benchmarks.md;
    // a static member rejoining takes its partitions back at once, without waiting for its session to end).
    await until(
      async () => (await committedRecords(harness, groupId)) > beforeRestart,
      STEP_TIMEOUT_MS,
      'the first commit after the restart',
    );
    console.info(
      `state on disk, SIGKILL then restart as the same instance: start → routing again ${((Date.now() - restartedAt) / 1000).toFixed(2)} s, ` +
        `${restoredRecords(second.logs)} of ${logged} changelog records restored`,
    );
    await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
    second.child.kill('SIGTERM');
    await within(second.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM');
    await expectExactlyOnce(harness, load.ids);
    expect(logged).toBeGreaterThan(0);
    expect(restoredRecords(second.logs)).toBeLessThan(logged);
    expect(second.logs.filter((l) => l.includes('state store wiped'))).toEqual([]);
  });
});

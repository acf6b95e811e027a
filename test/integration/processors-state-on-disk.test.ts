// The dedupe-router with its state on disk (PROCESSOR_STATE_STORE=lmdb), as a real child process: a
// deleted state directory, or a checkpoint past the changelog's end, is restored in full, and retries of
// ids seen before the restart are still recognised after it. (Killed mid-transaction and restarted:
// processors-state-on-disk-kill.test.ts, in the faults lane.)
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { encodeCheckpoint } from '../../runtime/streams/checkpoint.js';
import { taskStateDirPath } from '../../runtime/streams/state-dir.js';
import { testStack } from '../helpers/stack.js';
import { expectExactlyOnce, ProcessorsHarness, randomPrefix, within } from './processors-harness.js';
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

/** Committed records in the dedupe changelog (its offsets also count transaction markers). */
async function changelogRecords(harness: ProcessorsHarness): Promise<number> {
  return (await harness.read(harness.names.dedupeChangelog, { decode: false })).length;
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

  it('restores in full a deleted state directory and one whose checkpoint is past the changelog’s end; retries stay duplicates', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('disk-full'), 2);
    await harness.setUp();
    const load = generateLoad({ ids: 2_000, retries: 0 });
    const groupId = dedupeRouterAppId(harness.prefix);
    const { root, env } = stateEnv('it-disk-full');
    await harness.produceRaw(load.envelopes);
    const first = await harness.spawnProcess(['--only', 'dedupe-router'], env);
    children.push(first.child);
    await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
    first.child.kill('SIGTERM');
    await within(first.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM');

    const dirOf = (partition: number) =>
      taskStateDirPath({
        root,
        appId: groupId,
        instanceId: 'it-disk-full',
        topic: harness.names.raw,
        partition,
      });
    rmSync(dirOf(0), { recursive: true });
    const env1 = open<Buffer, string>({ path: join(dirOf(1), 'data.mdb'), encoding: 'binary' });
    env1.putSync(
      'checkpoint',
      encodeCheckpoint({ offsets: { [harness.names.dedupeChangelog]: '1000000000' }, streamTime: 0 }),
    );
    await env1.close();
    const logged = await changelogRecords(harness);

    // Every id again, after the restart: each must be recognised as a retry.
    const second = await harness.spawnProcess(['--only', 'dedupe-router'], env);
    children.push(second.child);
    await harness.produceRaw(load.envelopes);
    await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
    const readyz = (await (await fetch(`${second.url}/readyz`)).json()) as {
      stateDiskBytes?: Record<string, number>;
    };
    expect(readyz.stateDiskBytes?.['dedupe-router']).toBeGreaterThan(0);
    const metrics = await (await fetch(`${second.url}/metrics`)).text();
    expect(metrics).toMatch(/hookledger_stream_state_disk_bytes\{app="dedupe-router"\} [1-9]/);
    second.child.kill('SIGTERM');
    await within(second.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM');
    await expectExactlyOnce(harness, load.ids);
    expect(restoredRecords(second.logs)).toBe(logged);
    const wiped = second.logs.filter((l) => l.includes('state store wiped'));
    expect(wiped).toHaveLength(1);
    expect(wiped[0]).toMatch(/past the changelog's end/);
    expect(second.logs.some((l) => l.includes('no state on disk yet'))).toBe(true);
  });
});

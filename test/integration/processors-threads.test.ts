// `hookledger process --threads 2`, the real CLI as a child process: two stream threads share the
// partitions as two members of the group, each with its own instance id and transactional producer;
// everything routes exactly once, /readyz and /metrics speak for both, and SIGTERM closes both.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { metricSum } from '../helpers/metric-sum.js';
import { testStack } from '../helpers/stack.js';
import {
  expectExactlyOnce,
  ProcessorsHarness,
  randomPrefix,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

describe('hookledger process --threads 2', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('routes every delivery exactly once over two stream threads, one readiness and one /metrics for both', async () => {
    const harness = new ProcessorsHarness(testStack(), randomPrefix('threads'), 4);
    await harness.setUp();
    const load = generateLoad({ ids: 1_000, retries: 500 });
    await harness.produceRaw(load.envelopes);

    const instance = `it-threads-${Date.now()}`;
    const app = await harness.spawnProcess(['--only', 'dedupe-router', '--threads', '2'], {
      HOOKLEDGER_INSTANCE_ID: instance,
    });
    children.push(app.child);
    const groupId = dedupeRouterAppId(harness.prefix);
    await harness.waitCaughtUp(groupId, [harness.names.raw]);
    await waitReady(`${app.url}/readyz`, 30_000);
    await expectExactlyOnce(harness, load.ids);

    // Two members, one per thread, named after the instance: the partitions are shared between them.
    const members = await harness.groupMembers(groupId);
    expect(members.map((m) => m.instanceId).sort()).toEqual([
      `${groupId}-${instance}-0`,
      `${groupId}-${instance}-1`,
    ]);
    expect(members.every((m) => m.partitions > 0)).toBe(true);

    // One /metrics: both threads' counts summed, readiness the lower of the two.
    const page = await (await fetch(`${app.url}/metrics`)).text();
    expect(metricSum(page, 'hookledger_dedupe_records_total')).toBe(load.ids.length);
    expect(metricSum(page, 'hookledger_dedupe_duplicates_total')).toBe(
      load.envelopes.length - load.ids.length,
    );
    expect(metricSum(page, 'hookledger_stream_ready', 'app="dedupe-router"')).toBe(1);
    // The command's CPU: the parent's and both threads' processes, summed.
    expect(metricSum(page, 'hookledger_process_process_cpu_user_seconds_total')).toBeGreaterThan(0);

    app.child.kill('SIGTERM');
    expect(await within(app.exited, 30_000, 'exit after SIGTERM')).toBe(0);
  });
});

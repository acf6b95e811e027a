// The dedupe-router SIGKILLed in the middle of a batch while deliveries keep arriving, then started again
// once its session has run out: nothing lost, nothing duplicated. In the faults lane: npm test has the
// same-instance restart after a SIGKILL mid-transaction (processors-faults.test.ts).
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { testStack } from '../helpers/stack.js';
import {
  committedRecords,
  expectExactlyOnce,
  feed,
  ProcessorsHarness,
  randomPrefix,
  until,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/** The broker forgets a SIGKILLed member after this; the restart then gets its partitions. */
const SESSION_TIMEOUT_MS = '6000';
/** The test waits out a session timeout and a restore; a loaded machine needs room. */
const FAULT_TEST_TIMEOUT_MS = 240_000;
/** Each wait fails on its own, naming what it waited for, well within the test's budget. */
const STEP_TIMEOUT_MS = 60_000;

describe('the dedupe-router SIGKILLed mid-batch', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it(
    'killed with SIGKILL in the middle of a batch, then restarted, loses nothing and duplicates nothing',
    async () => {
      const harness = new ProcessorsHarness(testStack(), randomPrefix('sigkill'), 3);
      await harness.setUp();
      const load = generateLoad({ ids: 6_000, retries: 3_000 });
      const groupId = dedupeRouterAppId(harness.prefix);
      const env = { PROCESSOR_SESSION_TIMEOUT_MS: SESSION_TIMEOUT_MS };

      // A backlog, then deliveries arriving while it is routed: the kill lands mid-batch. (A backlog
      // alone could be routed whole before the first commit is seen, on a busy machine.)
      const backlog = Math.floor(load.envelopes.length / 3);
      await harness.produceRaw(load.envelopes.slice(0, backlog));
      const feeder = feed(harness, load.envelopes.slice(backlog));
      const first = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(first.child);
      // The first transaction committed: later batches are in flight when the kill lands.
      await until(async () => (await committedRecords(harness, groupId)) > 0n, 60_000, 'a first commit');
      first.child.kill('SIGKILL');
      await first.exited;
      const fed = backlog + (await feeder.stop());
      const atKill = await committedRecords(harness, groupId);
      // What was not fed by the kill arrives while no instance runs.
      await harness.produceRaw(load.envelopes.slice(fed));

      const second = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(second.child);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      second.child.kill('SIGTERM');
      await second.exited;
      await expectExactlyOnce(harness, load.ids);
      // The kill did land before the end (otherwise this test proves little).
      expect(atKill).toBeLessThan(BigInt(load.envelopes.length));
    },
    FAULT_TEST_TIMEOUT_MS,
  );
});

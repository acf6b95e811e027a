// The dedupe-router recovering from faults, run as real child processes: an instance frozen past its
// session while another takes over, then woken, then left alone; the only broker down longer than the
// session (a plain restart while it commits is npm test's processors-broker-restart.test.ts). Afterwards every partition moves again, and nothing is lost
// or duplicated.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type DedicatedBroker, testStack } from '../helpers/stack.js';
import {
  brokerBounce,
  expectEveryPartitionGrew,
  highWatermarks,
  SESSION_TIMEOUT_MS,
  STEP_TIMEOUT_MS,
  TEST_TIMEOUT_MS,
} from './broker-bounce.js';
import {
  expectExactlyOnce,
  ProcessorsHarness,
  randomPrefix,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/**
 * How long the only broker stays down in the last scenario: past the session (the partitions are lost),
 * past the 30 s the app waits for an assignment before it starts again with new clients, and past the
 * few seconds a new app's start retries on its own, so the new clients start while the broker is still
 * away, whichever way the old app failed (CI once saw that stop the stage for good; rejoining-app.ts now
 * waits for the cluster).
 */
const BROKER_DOWN_MS = 60_000;

describe('the dedupe-router recovering from faults', () => {
  const children: ChildProcess[] = [];
  let broker: DedicatedBroker | undefined;
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
    }
    await broker?.dispose();
    broker = undefined;
  });

  it(
    'an instance frozen past its session writes nothing stale once woken, and takes every partition back when the other instance dies',
    async () => {
      const harness = new ProcessorsHarness(testStack(), randomPrefix('frozen'), 4);
      await harness.setUp();
      const load = generateLoad({ ids: 1_500, retries: 1_500 });
      const third = Math.floor(load.envelopes.length / 3);
      const groupId = dedupeRouterAppId(harness.prefix);
      const env = { PROCESSOR_SESSION_TIMEOUT_MS: SESSION_TIMEOUT_MS };
      const idsIn = (envelopes: typeof load.envelopes) => [...new Set(envelopes.map((e) => e.webhookId))];

      await harness.produceRaw(load.envelopes.slice(0, third));
      const first = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(first.child);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);

      // Frozen (a GC pause, a stalled VM) past its session: the second instance takes every partition.
      first.child.kill('SIGSTOP');
      const second = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(second.child);
      await harness.produceRaw(load.envelopes.slice(third, 2 * third));
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);

      // Woken, it believes for a moment it still owns its partitions: whatever it writes then is fenced.
      first.child.kill('SIGCONT');
      await Promise.all([
        waitReady(`${first.url}/readyz`, STEP_TIMEOUT_MS),
        waitReady(`${second.url}/readyz`, STEP_TIMEOUT_MS),
      ]);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await expectExactlyOnce(harness, idsIn(load.envelopes.slice(0, 2 * third)));

      // The second instance dies: after its session the first owns every partition and routes new records.
      second.child.kill('SIGKILL');
      await within(second.exited, 10_000, 'exit after SIGKILL');
      const before = await highWatermarks(harness);
      await harness.produceRaw(load.envelopes.slice(2 * third));
      await expectEveryPartitionGrew(harness, before);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      expect(first.child.exitCode).toBeNull();
      first.child.kill('SIGTERM');
      expect(await within(first.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM')).toBe(0);
      await expectExactlyOnce(harness, load.ids);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'the only broker down longer than the session: the partitions are lost, come back, and nothing is lost or duplicated',
    () =>
      brokerBounce(BROKER_DOWN_MS, {
        children,
        brokerStarted: (started) => {
          broker = started;
        },
      }),
    TEST_TIMEOUT_MS + BROKER_DOWN_MS,
  );
});

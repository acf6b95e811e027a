// The dedupe-router when a commit's outcome is unknown: its transaction coordinator commits, and the
// answer reaches the router only after the router's commit has timed out (every attempt of it). The
// router must not go on as if that transaction had been rolled back: no id twice downstream, none lost.
// A broker of its own, behind a proxy that stalls the answer to one commit (and to its resends).
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type AnswerDelay, startAnswerDelay } from '../helpers/kafka-answer-delay.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';
import {
  expectExactlyOnce,
  feed,
  ProcessorsHarness,
  randomPrefix,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/**
 * How long one commit's answer stalls: longer than the router waits for a commit today (three attempts
 * of 30 s, its floor for a transaction operation), so that the commit fails with its outcome unknown.
 */
const HOLD_MS = 100_000;
const STEP_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 330_000;

describe('the dedupe-router when its transaction coordinator answers a commit too late', () => {
  const children: ChildProcess[] = [];
  let broker: DedicatedBroker | undefined;
  let proxy: AnswerDelay | undefined;
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    await proxy?.close();
    proxy = undefined;
    await broker?.dispose();
    broker = undefined;
  });

  it(
    'the commit went through but its answer came after every commit attempt timed out: nothing duplicated, nothing lost',
    async () => {
      const delay = await startAnswerDelay();
      proxy = delay;
      broker = await startDedicatedBroker(1, {
        extraProperties: (base) => {
          // PLAINTEXT://127.0.0.1:<port>,CONTROLLER://…: the broker's own port, behind the proxy's.
          delay.forwardTo(Number(/PLAINTEXT:\/\/[^,]*:(\d+)/.exec(String(base.listeners))![1]));
          return { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${delay.port}` };
        },
      });
      const harness = new ProcessorsHarness(
        { brokers: [`127.0.0.1:${delay.port}`], registryUrl: testStack().registryUrl },
        randomPrefix('commit-stall'),
        3,
      );
      await harness.setUp();
      const groupId = dedupeRouterAppId(harness.prefix);
      const load = generateLoad({ ids: 1_500, retries: 500 });
      const quarter = Math.floor(load.envelopes.length / 4);

      await harness.produceRaw(load.envelopes.slice(0, quarter));
      const router = await harness.spawnProcess(['--only', 'dedupe-router']);
      children.push(router.child);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await waitReady(`${router.url}/readyz`, STEP_TIMEOUT_MS);

      // Deliveries keep coming: the router commits all the time, and the next commit's answer stalls.
      const feeder = feed(harness, load.envelopes.slice(quarter), { batch: 50, pauseMs: 100 });
      const held = await delay.stallNextCommit(HOLD_MS);
      const fed = quarter + (await feeder.stop());
      await harness.produceRaw(load.envelopes.slice(fed));
      expect(held, 'no commit answer was held: the fault did not happen').toBeGreaterThan(0);

      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await waitReady(`${router.url}/readyz`, STEP_TIMEOUT_MS);
      expect(router.child.exitCode, 'the router stopped').toBeNull();
      router.child.kill('SIGTERM');
      expect(await within(router.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM')).toBe(0);
      await expectExactlyOnce(harness, load.ids);
    },
    TEST_TIMEOUT_MS,
  );
});

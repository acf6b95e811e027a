// The dedupe-router under faults, run as a real child process: two instances sharing the partitions, one
// killed; a frozen zombie; SIGKILL mid-transaction and a restart as the same instance. Nothing lost,
// nothing duplicated. (A SIGKILL mid-batch restarted after the session ran out: the faults lane's
// processors-sigkill-backlog.test.ts.)
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { testStack } from '../helpers/stack.js';
import {
  committedRecords,
  expectExactlyOnce,
  feed,
  ProcessorsHarness,
  randomPrefix,
  until,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/** The broker forgets a SIGKILLed member after this; the survivor or the restart then gets its partitions. */
const SESSION_TIMEOUT_MS = '6000';

/** Each test waits out at least one session timeout and a restore; a loaded machine needs room. */
const FAULT_TEST_TIMEOUT_MS = 240_000;
/** Each wait inside a fault test fails on its own, naming what it waited for, well within the test's budget. */
const STEP_TIMEOUT_MS = 60_000;

describe('the dedupe-router under faults', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it(
    'shares the partitions between two instances; when one is killed the other restores its state and lets no duplicate through',
    async () => {
      const harness = new ProcessorsHarness(testStack(), randomPrefix('takeover'), 6);
      await harness.setUp();
      const load = generateLoad({ ids: 4_000, retries: 4_000 });
      const half = load.envelopes.length / 2;
      await harness.produceRaw(load.envelopes.slice(0, half));
      const groupId = dedupeRouterAppId(harness.prefix);
      const env = { PROCESSOR_SESSION_TIMEOUT_MS: SESSION_TIMEOUT_MS };

      const a = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      const b = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(a.child, b.child);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await Promise.all([waitReady(`${a.url}/readyz`), waitReady(`${b.url}/readyz`)]);

      // The second half holds retries of ids the first half brought to both instances.
      const produced = harness.produceRaw(load.envelopes.slice(half));
      await new Promise((r) => setTimeout(r, 300));
      a.child.kill('SIGKILL');
      await produced;
      await a.exited;
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await waitReady(`${b.url}/readyz`);
      b.child.kill('SIGTERM');
      await b.exited;
      await expectExactlyOnce(harness, load.ids);
    },
    FAULT_TEST_TIMEOUT_MS,
  );

  it(
    'fences a paused instance that wakes up after its partitions moved: the zombie writes nothing',
    async () => {
      const harness = new ProcessorsHarness(testStack(), randomPrefix('zombie'), 4);
      await harness.setUp();
      const load = generateLoad({ ids: 3_000, retries: 3_000 });
      const third = Math.floor(load.envelopes.length / 3);
      await harness.produceRaw(load.envelopes.slice(0, third));
      const groupId = dedupeRouterAppId(harness.prefix);
      const env = { PROCESSOR_SESSION_TIMEOUT_MS: SESSION_TIMEOUT_MS };

      const zombie = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(zombie.child);
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      // Frozen (a long GC pause, a stalled VM): its session expires, the survivor takes every partition.
      zombie.child.kill('SIGSTOP');
      const survivor = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(survivor.child);
      await harness.produceRaw(load.envelopes.slice(third, 2 * third));
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      // It wakes up believing it still owns its partitions; meanwhile more records arrive.
      zombie.child.kill('SIGCONT');
      await harness.produceRaw(load.envelopes.slice(2 * third));
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      await waitReady(`${survivor.url}/readyz`);
      survivor.child.kill('SIGTERM');
      zombie.child.kill('SIGTERM');
      await within(Promise.all([survivor.exited, zombie.exited]), STEP_TIMEOUT_MS, 'exit after SIGTERM');
      await expectExactlyOnce(harness, load.ids);
    },
    FAULT_TEST_TIMEOUT_MS,
  );

  it(
    'killed with SIGKILL mid-transaction and restarted as the same instance, routes again within 10 s, nothing lost or duplicated',
    async () => {
      const harness = new ProcessorsHarness(testStack(), randomPrefix('same-id'), 3);
      await harness.setUp();
      const load = generateLoad({ ids: 4_000, retries: 2_000 });
      const groupId = dedupeRouterAppId(harness.prefix);
      // The same instance id: the static member and transactional id come back (no session wait).
      const env = { PROCESSOR_SESSION_TIMEOUT_MS: '30000', HOOKLEDGER_INSTANCE_ID: 'it-same' };

      // Deliveries keep arriving while the first instance routes them, so the kill lands mid-transaction;
      // what is not fed by then arrives while it is down, so the restart always has work to show.
      const feeder = feed(harness, load.envelopes);
      const first = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(first.child);
      await until(
        async () => (await committedRecords(harness, groupId)) > 0n,
        STEP_TIMEOUT_MS,
        'a first commit',
      );
      first.child.kill('SIGKILL');
      await first.exited;
      const fed = await feeder.stop();
      const atKill = await committedRecords(harness, groupId);
      await harness.produceRaw(load.envelopes.slice(fed));
      if (fed === load.envelopes.length) await harness.produceRaw(load.envelopes.slice(0, 100)); // retries

      const restarted = Date.now();
      const second = await harness.spawnProcess(['--only', 'dedupe-router'], env);
      children.push(second.child);
      // Well within the 30 s session: only a static member's rejoin explains progress this soon.
      await until(
        async () => (await committedRecords(harness, groupId)) > atKill,
        10_000 - (Date.now() - restarted),
        'routing after the restart',
      );
      await harness.waitCaughtUp(groupId, [harness.names.raw], STEP_TIMEOUT_MS);
      second.child.kill('SIGTERM');
      await within(second.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM');
      await expectExactlyOnce(harness, load.ids);
    },
    FAULT_TEST_TIMEOUT_MS,
  );
});

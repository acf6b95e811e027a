// The dedupe-router recovering from faults, run as real child processes: an instance frozen past its
// session while another takes over, then woken, then left alone; the only broker restarted during
// commits, or down longer than the session. Afterwards every partition moves again, and nothing is lost
// or duplicated.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { dedupeRouterAppId } from '../../processors/dedupe-router/main.js';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';
import {
  expectExactlyOnce,
  ProcessorsHarness,
  randomPrefix,
  waitReady,
  within,
} from './processors-harness.js';
import { generateLoad } from './processors-load.js';

/** The broker forgets a silent member after this; another instance then gets its partitions. */
const SESSION_TIMEOUT_MS = '6000';
/** Well under 2 minutes each, every wait inside bounded far below it. */
const TEST_TIMEOUT_MS = 110_000;
const STEP_TIMEOUT_MS = 40_000;

async function highWatermarks(harness: ProcessorsHarness): Promise<Map<number, number>> {
  const found = await harness.watermarks(harness.names.raw);
  return new Map(found.map(({ partition, high }) => [partition, high]));
}

/** Every raw partition received records since `before`: new records reach each one. */
async function expectEveryPartitionGrew(harness: ProcessorsHarness, before: Map<number, number>) {
  const after = await highWatermarks(harness);
  for (const [partition, high] of before)
    expect(after.get(partition), `raw[${partition}]`).toBeGreaterThan(high);
}

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

  /**
   * The only broker goes away while the router commits, for `downMs` (0: a plain restart), and comes
   * back: afterwards every partition moves again, and nothing is lost or duplicated.
   */
  async function brokerBounce(downMs: number): Promise<void> {
    const bounce = async (b: DedicatedBroker) => {
      if (downMs === 0) return b.restartKafka();
      await b.stopKafka();
      await new Promise((r) => setTimeout(r, downMs));
      await b.startKafka();
    };
    const t0 = Date.now();
    const step = (what: string) =>
      process.env.DEBUG_STEPS && console.log(`STEP ${what} +${Date.now() - t0} ms`);
    broker = await startDedicatedBroker();
    step('broker started');
    const harness = new ProcessorsHarness(
      { brokers: broker.brokers, registryUrl: testStack().registryUrl },
      randomPrefix('broker-restart'),
      3,
    );
    await harness.setUp();
    const load = generateLoad({ ids: 1_500, retries: 750 });
    const half = Math.floor(load.envelopes.length / 2);
    const groupId = dedupeRouterAppId(harness.prefix);
    await harness.produceRaw(load.envelopes.slice(0, half));

    const app = await harness.spawnProcess(['--only', 'dedupe-router'], {
      PROCESSOR_SESSION_TIMEOUT_MS: SESSION_TIMEOUT_MS,
    });
    children.push(app.child);
    // Committing: the first transactions are in; the rest of the backlog is in flight at the restart.
    const end = Date.now() + STEP_TIMEOUT_MS;
    while (
      (await harness.committedOffsets(groupId, harness.names.raw)).size === 0 ||
      [...(await harness.committedOffsets(groupId, harness.names.raw)).values()].every((o) => o < 0n)
    ) {
      if (Date.now() > end) throw new Error(`no first commit within ${STEP_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    step('first commit');
    await within(bounce(broker), STEP_TIMEOUT_MS + downMs, 'broker restart');
    step('broker restarted');

    const before = await highWatermarks(harness);
    await harness.produceRaw(load.envelopes.slice(half));
    await expectEveryPartitionGrew(harness, before);
    step('produced');
    await harness.waitCaughtUp(groupId, [harness.names.raw], 60_000);
    step('caught up');
    expect(app.child.exitCode).toBeNull();
    await waitReady(`${app.url}/readyz`, 10_000);
    app.child.kill('SIGTERM');
    expect(await within(app.exited, STEP_TIMEOUT_MS, 'exit after SIGTERM')).toBe(0);
    step('stopped');
    await expectExactlyOnce(harness, load.ids);
    step('checked');
  }

  it(
    'the only broker restarted while it commits: afterwards every partition moves again, nothing lost or duplicated',
    () => brokerBounce(0),
    TEST_TIMEOUT_MS,
  );

  it(
    'the only broker down longer than the session: the partitions are lost, come back, and nothing is lost or duplicated',
    () => brokerBounce(Number(SESSION_TIMEOUT_MS) * 2),
    TEST_TIMEOUT_MS + 30_000,
  );
});

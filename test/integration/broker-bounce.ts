// The only broker of a running dedupe-router goes away while it commits and comes back: a plain restart
// (npm test: processors-broker-restart.test.ts) or down longer than the session (the faults lane:
// processors-faults-recovery.test.ts). Afterwards every partition moves again, nothing lost or duplicated.
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
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

/** The broker forgets a silent member after this. */
export const SESSION_TIMEOUT_MS = '6000';
/** Well under 2 minutes each, every wait inside bounded far below it. */
export const TEST_TIMEOUT_MS = 110_000;
export const STEP_TIMEOUT_MS = 40_000;

export async function highWatermarks(harness: ProcessorsHarness): Promise<Map<number, number>> {
  const found = await harness.watermarks(harness.names.raw);
  return new Map(found.map(({ partition, high }) => [partition, high]));
}

/** Every raw partition received records since `before`: new records reach each one. */
export async function expectEveryPartitionGrew(harness: ProcessorsHarness, before: Map<number, number>) {
  const after = await highWatermarks(harness);
  for (const [partition, high] of before)
    expect(after.get(partition), `raw[${partition}]`).toBeGreaterThan(high);
}

/**
 * The only broker goes away while the router commits, for `downMs` (0: a plain restart), and comes
 * back: afterwards every partition moves again, and nothing is lost or duplicated.
 */
export async function brokerBounce(
  downMs: number,
  track: { children: ChildProcess[]; brokerStarted: (broker: DedicatedBroker) => void },
): Promise<void> {
  // CI prints a failed test's message, not the output around it: a failure names the step it was in,
  // the steps' times, and the router's last log lines, so that a timeout can be told from a slow machine.
  const trail = new StepTrail();
  try {
    await within(
      bounceSteps(downMs, track, trail),
      TEST_TIMEOUT_MS - 5_000 + downMs,
      'end of the broker bounce',
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${trail.describe()}\n${trail.lastLogLines()}`, {
      cause: error,
    });
  }
}

/** What the bounce has done so far, and when, for a failure's message. */
class StepTrail {
  readonly #t0 = Date.now();
  readonly #steps: string[] = [];
  logs: readonly string[] = [];

  step(what: string): void {
    const line = `${what} +${Date.now() - this.#t0} ms`;
    this.#steps.push(line);
    if (process.env.DEBUG_STEPS) console.log(`STEP ${line}`);
  }

  describe(): string {
    return `steps: ${this.#steps.join(', ') || 'none'}; now +${Date.now() - this.#t0} ms`;
  }

  lastLogLines(count = 12): string {
    return `router's last log lines:\n${this.logs.slice(-count).join('\n')}`;
  }
}

async function bounceSteps(
  downMs: number,
  track: { children: ChildProcess[]; brokerStarted: (broker: DedicatedBroker) => void },
  trail: StepTrail,
): Promise<void> {
  const bounce = async (b: DedicatedBroker) => {
    if (downMs === 0) return b.restartKafka();
    await b.stopKafka();
    await new Promise((r) => setTimeout(r, downMs));
    await b.startKafka();
  };
  const step = (what: string) => trail.step(what);
  const broker = await startDedicatedBroker();
  track.brokerStarted(broker);
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
  track.children.push(app.child);
  trail.logs = app.logs;
  step('router running');
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

// A session timeout the brokers refuse: PROCESSOR_SESSION_TIMEOUT_MS may go down to 1 s, but a broker
// with Kafka's default group.min.session.timeout.ms (6 s) answers the group's JoinGroup with
// INVALID_SESSION_TIMEOUT, and librdkafka would send it again and again for ever. The stage stops at
// once with one line naming the variable and the broker setting (faults lane: a broker of its own, with
// production's floor, since the shared one allows 1 s).
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type DedicatedBroker, startDedicatedBroker, testStack } from '../helpers/stack.js';
import { ProcessorsHarness, randomPrefix } from './processors-harness.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
/** tsx alone takes seconds on a loaded two-core machine; a retry loop would never end. */
const EXIT_WITHIN_MS = 60_000;

describe('a processor whose session timeout the brokers refuse', () => {
  const children: ChildProcess[] = [];
  let broker: DedicatedBroker | undefined;
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    await broker?.dispose();
    broker = undefined;
  });

  it('stops with one line naming PROCESSOR_SESSION_TIMEOUT_MS and group.min.session.timeout.ms, no retry loop', async () => {
    // Kafka's default floor, which the stacks the tests start lower to 1 s.
    broker = await startDedicatedBroker(1, {
      extraProperties: () => ({ 'group.min.session.timeout.ms': 6_000 }),
    });
    const harness = new ProcessorsHarness(
      { brokers: broker.brokers, registryUrl: testStack().registryUrl },
      randomPrefix('session-refused'),
      1,
    );
    await harness.setUp();

    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'tools/cli/hookledger.js'), 'process', '--only', 'dedupe-router'],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          ...harness.environment({ LOG_LEVEL: 'info', PROCESSOR_SESSION_TIMEOUT_MS: '3000' }),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const began = Date.now();
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_WITHIN_MS);
      child.once('exit', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });

    expect(code, `stderr: ${stderr}\nstdout tail: ${stdout.slice(-2_000)}`).toBe(1);
    expect(Date.now() - began).toBeLessThan(EXIT_WITHIN_MS);
    const lines = stderr.split('\n').filter(Boolean);
    expect(lines, stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^hookledger: the dedupe-router stage stopped: the brokers refused the consumer group's session timeout of 3000 ms \(PROCESSOR_SESSION_TIMEOUT_MS\): .*group\.min\.session\.timeout\.ms/,
    );
    // Stopped at the first refusal, not after a round of aborts and retries.
    expect(stdout).not.toContain('processing failed; aborting');
  });
});

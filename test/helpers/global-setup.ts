// Vitest global setup for the integration lanes: one Kafka and schema registry for the whole run.
//
// Vitest runs every selected project's global setup before any test, so a setup that waited for the
// stack would keep the unit tests waiting too. This one only starts the stack and returns; the JVMs boot
// while the unit tests run, and each integration file waits for them in its setup file
// (shared-stack-ready.ts), which reads the outcome from a file this setup writes.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../tools/stack/index.js';
import type { SharedStackOutcome } from './stack.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // A fresh state dir per run: no topic, group or schema from an earlier run can make a test pass.
  const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-test-stack-'));
  const outcomeFile = join(stateDir, 'shared-stack.json');
  project.provide('hookledgerStackFile', outcomeFile);
  const logger = pino(
    { level: process.env.LOG_LEVEL ?? 'warn', base: { name: 'test-stack' } },
    pino.destination(2),
  );
  const keep = Boolean(process.env.HOOKLEDGER_KEEP_TEST_STACK);
  const report = (outcome: SharedStackOutcome) => writeFile(outcomeFile, JSON.stringify(outcome));

  // Started, not awaited: its outcome (where the stack is, or why it did not start) goes to the file.
  const starting: Promise<Stack | undefined> = startStack({ stateDir, logger }).then(
    async (stack) => {
      await report({
        started: true,
        stack: {
          kind: stack.kind,
          brokers: stack.brokers,
          registryUrl: stack.registryUrl,
          ...(stack.kafkaVersion ? { kafkaVersion: stack.kafkaVersion } : {}),
        },
      });
      console.log(
        `integration stack: ${stack.describe()}; ready in ${(stack.startupMs / 1000).toFixed(1)} s`,
      );
      return stack;
    },
    async (error: unknown) => {
      // The error carries the tail of the log that explains it; every integration file fails with it.
      await report({ started: false, error: error instanceof Error ? error.message : String(error) });
      console.error('integration stack: did not start:', error);
      return undefined;
    },
  );

  return async () => {
    const stack = await starting;
    try {
      await stack?.stop();
    } finally {
      if (keep) console.log(`integration stack: state kept in ${stateDir}`);
      else await rm(stateDir, { recursive: true, force: true });
    }
  };
}

// Vitest global setup for the integration project: one Kafka and schema registry for the whole run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../tools/stack/index.js';
import type { TestStack } from './stack.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // A fresh state dir per run: no topic, group or schema from an earlier run can make a test pass.
  const stateDir = await mkdtemp(join(tmpdir(), 'hookledger-test-stack-'));
  const logger = pino(
    { level: process.env.LOG_LEVEL ?? 'warn', base: { name: 'test-stack' } },
    pino.destination(2),
  );
  const keep = Boolean(process.env.HOOKLEDGER_KEEP_TEST_STACK);
  let stack: Stack;
  try {
    stack = await startStack({ stateDir, logger });
  } catch (error) {
    // The error carries the tail of the log that explains it; the whole state dir only on request.
    if (keep) console.log(`integration stack: state kept in ${stateDir}`);
    else await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
  const shared: TestStack = {
    kind: stack.kind,
    brokers: stack.brokers,
    registryUrl: stack.registryUrl,
    ...(stack.kafkaVersion ? { kafkaVersion: stack.kafkaVersion } : {}),
  };
  project.provide('hookledgerStack', shared);
  // Also as variables, for code under test that reads its config from the environment (workers inherit it).
  process.env.KAFKA_BROKERS = stack.brokers.join(',');
  process.env.SCHEMA_REGISTRY_URL = stack.registryUrl;
  if (stack.kind !== 'configured') process.env.HOOKLEDGER_LOCAL_STACK = 'true';
  console.log(`integration stack: ${stack.describe()}; ready in ${(stack.startupMs / 1000).toFixed(1)} s`);

  return async () => {
    try {
      await stack.stop();
    } finally {
      if (keep) console.log(`integration stack: state kept in ${stateDir}`);
      else await rm(stateDir, { recursive: true, force: true });
    }
  };
}

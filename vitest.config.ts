import { defineConfig } from 'vitest/config';

/**
 * The long fault scenarios: a broker of a 3-broker cluster lost, a whole stack restarted over its data,
 * the only broker restarted or down past the session, the registry killed or frozen (and the stack
 * commands that do it), a commit answered after it timed out. `npm run test:faults` runs them;
 * `npm test` leaves them out (docs/testing.md says which lane proves which promise).
 */
const FAULTS = [
  'test/integration/cluster-broker-loss.test.ts',
  'test/integration/stack-restart.test.ts',
  'test/integration/processors-faults-recovery.test.ts',
  'test/integration/processors-registry-outage.test.ts',
  'test/integration/processors-commit-stall.test.ts',
  'test/integration/stack-registry.test.ts',
  // Three starts in a row over the same state (the README tour already runs start cold and again).
  'test/integration/start-again.test.ts',
  // A SIGKILL mid-transaction with the state on disk, and a restart as the same instance.
  'test/integration/processors-state-on-disk-kill.test.ts',
];

/** Integration tests share one real Kafka broker and schema registry, started once per run. */
const integration = {
  globalSetup: ['test/helpers/global-setup.ts'],
  testTimeout: 120_000,
  hookTimeout: 180_000,
  // Two cores: the broker, the registry and the code under test share them.
  maxWorkers: 2,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Unit tests run first: a broken pure function fails in seconds, before any integration test.
          sequence: { groupOrder: 0 },
          // Both cores (vitest's default is one less than the cores): nothing else runs meanwhile.
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: FAULTS,
          sequence: { groupOrder: 1 },
          ...integration,
        },
      },
      {
        test: {
          name: 'faults',
          include: FAULTS,
          sequence: { groupOrder: 2 },
          ...integration,
        },
      },
    ],
  },
});

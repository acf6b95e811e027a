import { defineConfig } from 'vitest/config';
import { longestFirst } from './test/helpers/longest-first.js';

/**
 * The long scenarios: a broker of a 3-broker cluster lost, a whole stack restarted over its data, the
 * only broker down past the session, the registry killed or frozen (and the stack commands that do it),
 * a commit answered after it timed out, and the variants of what npm test proves once.
 * `npm run test:faults` runs them; `npm test` leaves them out (docs/testing.md says which lane proves
 * which promise).
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
  // A dedicated broker restarted over its data, a stack's supervisor outliving a SIGKILLed owner.
  'test/integration/stack.test.ts',
  // A cluster with StandardAuthorizer and ACLs of its own; a partition count grown and replayed into.
  'test/integration/acls.test.ts',
  'test/integration/scaling.test.ts',
  // SIGKILL mid-batch, restarted after the session ran out (npm test keeps the same-instance restart).
  'test/integration/processors-sigkill-backlog.test.ts',
  // Replays compared with live, key by key (npm test keeps replay equals live: end-to-end, replay).
  'test/integration/replay-diff.test.ts',
  // A SIGKILLed enrich child, restarted as the same instance.
  'test/integration/enrich-faults.test.ts',
  // A SIGKILL mid-transaction with the state on disk, and a restart as the same instance.
  'test/integration/processors-state-on-disk-kill.test.ts',
  // Two instances with standby replicas, the owner SIGKILLed, the survivor taking over after the session.
  'test/integration/processors-standby-takeover.test.ts',
  // A broker with Kafka's default floor for session timeouts refusing a 3 s one.
  'test/integration/processors-session-timeout-refused.test.ts',
];

/**
 * The order files start in: the README tour first (the longest by far), then the unit tests beside it,
 * then the other integration files longest first (measured on this 2-core machine, 28 Nov: npm test's
 * files, then the faults lane's, each lane a group of its own), so that the workers end together
 * instead of one finishing a long file alone; vitest's own order (cached durations) within each.
 */
const ORDER = [
  'test/integration/readme-tour.test.ts', // 124 s
  'test/unit/',
  'test/integration/processors-faults.test.ts', // 65 s
  'test/integration/secured-cluster.test.ts', // 63 s
  'test/integration/processors-failure-policy.test.ts', // 37 s
  'test/integration/startup-failures.test.ts', // 37 s
  'test/integration/processors-broker-restart.test.ts', // 36 s
  'test/integration/processors-exactly-once.test.ts', // 22 s
  'test/integration/ingest-faults.test.ts', // 20 s
  'test/integration/ingest-workers.test.ts', // 19 s
  // The faults lane.
  'test/integration/processors-faults-recovery.test.ts', // 112 s
  'test/integration/stack-restart.test.ts', // 95 s
  'test/integration/cluster-broker-loss.test.ts', // 83 s
  'test/integration/processors-registry-outage.test.ts', // 83 s
  'test/integration/start-again.test.ts', // 59 s
  'test/integration/stack-registry.test.ts', // 53 s
  'test/integration/replay-diff.test.ts', // 33 s
  'test/integration/processors-commit-stall.test.ts', // 29 s
];

/**
 * Integration tests share one real Kafka broker and schema registry, started once per run: the global
 * setup starts it without waiting (it boots while the unit tests run), each file waits for it.
 */
const integration = {
  globalSetup: ['test/helpers/global-setup.ts'],
  setupFiles: ['test/helpers/shared-stack-ready.ts'],
  testTimeout: 120_000,
  hookTimeout: 180_000,
  // Three files at once on two cores: most of an integration test's time is waiting (for a broker, a
  // session timeout, a child process), and the README tour alone takes as long as a third of the rest.
  maxWorkers: 3,
};

export default defineConfig({
  test: {
    sequence: { sequencer: longestFirst(ORDER) },
    projects: [
      {
        test: {
          name: 'unit',
          // One module graph per worker, not per file: importing zod, fastify, prom-client and the Kafka
          // client again for each of 130 files was most of this lane's time (import 57 s of 159 s wall,
          // against 6 s of 40 s shared). Unit tests keep no state between files: what one changes in
          // process.env, console or timers it puts back (a shuffled order passes too).
          isolate: false,
          include: ['test/unit/**/*.test.ts'],
          // Beside the integration tests, not before them: unit tests keep the cores busy while integration
          // tests wait on brokers, sessions and child processes (a broken pure function still fails in seconds).
          sequence: { groupOrder: 0 },
          // The integration lane's workers: one group shares one pool (vitest requires the same count).
          maxWorkers: integration.maxWorkers,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: FAULTS,
          sequence: { groupOrder: 0 },
          ...integration,
        },
      },
      {
        test: {
          name: 'faults',
          include: FAULTS,
          sequence: { groupOrder: 1 },
          ...integration,
          // Two at once: each starts brokers (a cluster of three, a registry) of its own, and a third beside
          // them stalled a commit past the watchdog's limit in a CI run.
          maxWorkers: 2,
        },
      },
    ],
  },
});

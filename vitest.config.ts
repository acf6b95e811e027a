import { defineConfig } from 'vitest/config';

// Two projects: unit tests need nothing; integration tests share one real Kafka broker and
// schema registry that the global setup starts once per run (or finds through KAFKA_BROKERS).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Unit tests run first: a broken pure function fails in seconds, before the broker starts.
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Two cores: the broker, the registry and the code under test share them.
          maxWorkers: 2,
        },
      },
    ],
  },
});

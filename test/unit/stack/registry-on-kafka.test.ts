import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { requireKafkaRelease } from '../../../tools/stack/kafka-versions.js';
import { startRegistryOnKafka } from '../../../tools/stack/registry-on-kafka.js';

describe('the registry started on a running Kafka', () => {
  let stateDir: string;
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

  it('stops that Kafka again when the registry does not start, so no broker is left behind', async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'hookledger-registry-'));
    const stopped: string[] = [];
    const kafka = { brokers: ['127.0.0.1:9'], stop: async () => void stopped.push('kafka') };
    // Node stands in for java: it refuses the JVM flags and exits at once, as a registry that cannot start.
    const start = startRegistryOnKafka(kafka, {
      stateDir,
      artifacts: {
        kafka: requireKafkaRelease('3.9.1'),
        kafkaLib: '/nowhere',
        registryJar: join(stateDir, 'registry.jar'),
      },
      java: process.execPath,
      logger: pino({ level: 'silent' }),
    });
    await expect(start).rejects.toThrow(/the schema registry/);
    expect(stopped).toEqual(['kafka']);
  });
});

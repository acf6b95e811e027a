import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { StackError } from '../../../tools/stack/errors.js';
import { createKafkaNode, kafkaPaths, kafkaVersionIn } from '../../../tools/stack/kafka-process.js';
import { requireKafkaRelease } from '../../../tools/stack/kafka-versions.js';

describe('the Kafka version of a state directory', () => {
  let stateDir: string;
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

  /** A state dir whose storage was formatted, with the node.json of that time. */
  const formatted = (node: Record<string, unknown>) => {
    stateDir = mkdtempSync(join(tmpdir(), 'hookledger-kafka-'));
    const paths = kafkaPaths(stateDir);
    mkdirSync(paths.dataDir, { recursive: true });
    writeFileSync(join(paths.dataDir, 'meta.properties'), 'version=1\n');
    writeFileSync(paths.nodeFile, JSON.stringify({ port: 1, controllerPort: 2, clusterId: 'c', ...node }));
  };

  it('is the version node.json names once storage is formatted, and 3.9.1 for files from before', () => {
    formatted({ kafkaVersion: '4.1.2' });
    expect(kafkaVersionIn(stateDir)).toBe('4.1.2');
    rmSync(stateDir, { recursive: true });
    formatted({});
    expect(kafkaVersionIn(stateDir)).toBe('3.9.1');
  });

  it('is none while nothing is formatted', () => {
    stateDir = mkdtempSync(join(tmpdir(), 'hookledger-kafka-'));
    expect(kafkaVersionIn(stateDir)).toBeUndefined();
  });

  it('keeps another version from starting on that data, and says what to do instead', async () => {
    formatted({ kafkaVersion: '4.1.2' });
    const start = createKafkaNode({
      stateDir,
      artifacts: { kafka: requireKafkaRelease('3.9.1'), kafkaLib: '/nowhere', registryJar: '/nowhere' },
      java: '/no/java',
      logger: pino({ level: 'silent' }),
    });
    await expect(start).rejects.toThrow(StackError);
    await expect(start).rejects.toThrow(
      /written by Kafka 4\.1\.2, and this is 3\.9\.1: set HOOKLEDGER_KAFKA_VERSION=4\.1\.2/,
    );
  });
});

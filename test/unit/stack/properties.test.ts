import { describe, expect, it } from 'vitest';
import {
  kafkaServerProperties,
  MAX_MESSAGE_BYTES,
  newClusterId,
  registrySystemProperties,
  renderProperties,
  systemPropertyArgs,
} from '../../../tools/stack/properties.js';

describe('properties rendering', () => {
  it('writes one key=value line per property, in order, under an optional comment header', () => {
    expect(renderProperties({ a: 1, 'b.c': 'x', d: false }, 'made by a test')).toBe(
      '# made by a test\na=1\nb.c=x\nd=false\n',
    );
  });

  it('escapes backslashes, which .properties files treat as escapes', () => {
    expect(renderProperties({ 'log.dirs': 'C:\\kafka\\data' })).toBe('log.dirs=C:\\\\kafka\\\\data\n');
  });

  it('configures a single KRaft node on the given ports and data dir', () => {
    const props = kafkaServerProperties({ port: 1234, controllerPort: 5678, dataDir: '/state/kafka/data' });
    expect(props).toMatchObject({
      'process.roles': 'broker,controller',
      'controller.quorum.voters': '1@127.0.0.1:5678',
      listeners: 'PLAINTEXT://127.0.0.1:1234,CONTROLLER://127.0.0.1:5678',
      'advertised.listeners': 'PLAINTEXT://127.0.0.1:1234',
      'log.dirs': '/state/kafka/data',
      'offsets.topic.replication.factor': 1,
      'transaction.state.log.replication.factor': 1,
      'transaction.state.log.min.isr': 1,
      'group.initial.rebalance.delay.ms': 0,
      'auto.create.topics.enable': false,
    });
  });

  it('lets a 1 MiB webhook body and its envelope through', () => {
    const props = kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d' });
    expect(props['message.max.bytes']).toBe(MAX_MESSAGE_BYTES);
    expect(MAX_MESSAGE_BYTES).toBeGreaterThanOrEqual(2 * 1_048_576);
  });

  it('points the registry at the broker with KafkaSQL storage and its own ports', () => {
    const props = registrySystemProperties({ port: 8081, managementPort: 9001, brokers: ['127.0.0.1:9092'] });
    expect(props).toMatchObject({
      'quarkus.http.port': 8081,
      'quarkus.management.port': 9001,
      'apicurio.storage.kind': 'kafkasql',
      'apicurio.kafkasql.bootstrap.servers': '127.0.0.1:9092',
    });
    expect(systemPropertyArgs({ 'a.b': 1, c: 'x' })).toEqual(['-Da.b=1', '-Dc=x']);
  });
});

describe('cluster ids', () => {
  it('look like Kafka’s own: 22 URL-safe base64 characters', () => {
    for (let i = 0; i < 100; i++) expect(newClusterId()).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });

  it('never start with "-" and are never a reserved id', () => {
    const draws = [
      Buffer.alloc(16, 0xf8),
      Buffer.alloc(16, 0),
      Buffer.from([...Array(15).fill(0), 1]),
      Buffer.alloc(16, 7),
    ];
    expect(newClusterId(() => draws.shift()!)).toBe(Buffer.alloc(16, 7).toString('base64url'));
  });
});

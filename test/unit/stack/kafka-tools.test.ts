import { describe, expect, it } from 'vitest';
import { KAFKA_TOOLS, kafkaToolArgs, kafkaToolClass } from '../../../tools/stack/kafka-tools.js';

describe("Kafka's CLI tools", () => {
  it('include the ones the brief and the docs rely on', () => {
    expect(Object.keys(KAFKA_TOOLS)).toEqual(
      expect.arrayContaining([
        'topics',
        'console-consumer',
        'consumer-groups',
        'producer-perf-test',
        'consumer-perf-test',
      ]),
    );
  });

  it("get the stack's brokers when no --bootstrap-server was given", () => {
    expect(kafkaToolArgs('topics', ['--list'], ['127.0.0.1:9092'])).toEqual([
      '--bootstrap-server',
      '127.0.0.1:9092',
      '--list',
    ]);
  });

  it('keep an explicit --bootstrap-server, a --help, and tools that take no such flag as they are', () => {
    const brokers = ['127.0.0.1:9092'];
    expect(kafkaToolArgs('topics', ['--bootstrap-server', 'x:1', '--list'], brokers)).toEqual([
      '--bootstrap-server',
      'x:1',
      '--list',
    ]);
    expect(kafkaToolArgs('topics', ['--help'], brokers)).toEqual(['--help']);
    expect(kafkaToolArgs('producer-perf-test', ['--topic', 't'], brokers)).toEqual(['--topic', 't']);
    expect(kafkaToolArgs('topics', ['--list'], undefined)).toEqual(['--list']);
  });

  it('run the console producer and acls from their Kafka 4 packages on 4.x, and every other tool from the same class', () => {
    expect(kafkaToolClass('console-producer', { major: 3 })).toBe('kafka.tools.ConsoleProducer');
    expect(kafkaToolClass('console-producer', { major: 4 })).toBe('org.apache.kafka.tools.ConsoleProducer');
    expect(kafkaToolClass('acls', { major: 3 })).toBe('kafka.admin.AclCommand');
    expect(kafkaToolClass('acls', { major: 4 })).toBe('org.apache.kafka.tools.AclCommand');
    for (const tool of Object.keys(KAFKA_TOOLS).filter(
      (name) => !['console-producer', 'acls'].includes(name),
    )) {
      expect(kafkaToolClass(tool, { major: 4 })).toBe(kafkaToolClass(tool, { major: 3 }));
    }
    expect(kafkaToolClass('topics', { major: 4 })).toBe('org.apache.kafka.tools.TopicCommand');
  });

  it('know no tool by a name they do not list', () => {
    expect(kafkaToolClass('zookeeper-shell', { major: 3 })).toBeUndefined();
    expect(kafkaToolClass('toString', { major: 4 })).toBeUndefined();
  });
});

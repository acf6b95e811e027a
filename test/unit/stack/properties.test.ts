import { describe, expect, it } from 'vitest';
import {
  clusterNodeProperties,
  kafkaBrokerArgs,
  kafkaLogConfig,
  kafkaServerProperties,
  kafkaToolJvmArgs,
  LOCAL_INDEX_MAX_BYTES,
  LOCAL_MIN_SESSION_TIMEOUT_MS,
  logConfigFileName,
  logConfigFlag,
  MAX_MESSAGE_BYTES,
  newClusterId,
  registrySystemProperties,
  renderProperties,
  storageFormatArgs,
  systemPropertyArgs,
  toolsLogConfig,
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

  it('lets a consumer group ask a session timeout down to PROCESSOR_SESSION_TIMEOUT_MS’s own 1 s (Kafka’s default floor is 6 s)', () => {
    const props = kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d' });
    expect(props['group.min.session.timeout.ms']).toBe(LOCAL_MIN_SESSION_TIMEOUT_MS);
    expect(LOCAL_MIN_SESSION_TIMEOUT_MS).toBe(1_000);
  });

  it("keeps each segment's indexes at 1 MiB, so a new partition's first index entries zero-fill no more", () => {
    const props = kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d' });
    expect(props['log.index.size.max.bytes']).toBe(LOCAL_INDEX_MAX_BYTES);
    // 131,072 offset-index entries, one per 4 KiB of log: a segment holds 512 MiB before its index is full.
    expect(LOCAL_INDEX_MAX_BYTES / 8).toBeGreaterThanOrEqual(131_072);
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

describe('logging config per Kafka version', () => {
  it('gives 3.x a log4j 1 file through -Dlog4j.configuration', () => {
    expect(logConfigFileName('log4j', 'broker')).toBe('log4j.properties');
    expect(logConfigFileName('log4j', 'tools')).toBe('tools-log4j.properties');
    expect(logConfigFlag('log4j', '/s/log4j.properties')).toBe(
      '-Dlog4j.configuration=file:/s/log4j.properties',
    );
    expect(kafkaLogConfig('log4j')).toMatchObject({
      'log4j.rootLogger': 'INFO, console',
      'log4j.appender.console': 'org.apache.log4j.ConsoleAppender',
      'log4j.appender.console.Target': 'System.out',
      'log4j.logger.kafka.request.logger': 'WARN',
    });
    expect(toolsLogConfig('log4j')).toMatchObject({
      'log4j.rootLogger': 'WARN, console',
      'log4j.appender.console.Target': 'System.err',
    });
  });

  it('gives 4.x a log4j 2 properties file (no YAML parser needed) through -Dlog4j2.configurationFile', () => {
    expect(logConfigFileName('log4j2', 'broker')).toBe('log4j2.properties');
    expect(logConfigFileName('log4j2', 'tools')).toBe('tools-log4j2.properties');
    expect(logConfigFlag('log4j2', '/s/log4j2.properties')).toBe(
      '-Dlog4j2.configurationFile=file:/s/log4j2.properties',
    );
    const broker = kafkaLogConfig('log4j2');
    expect(broker).toMatchObject({
      'appender.console.type': 'Console',
      'appender.console.target': 'SYSTEM_OUT',
      'rootLogger.level': 'INFO',
      'rootLogger.appenderRef.console.ref': 'console',
    });
    expect(Object.keys(broker).some((key) => key.startsWith('log4j.'))).toBe(false);
    const quieted = Object.entries(broker)
      .filter(([key]) => /^logger\.\w+\.name$/.test(key))
      .map(([, name]) => name);
    expect(quieted).toEqual(expect.arrayContaining(['kafka.request.logger', 'state.change.logger']));
    for (const [key, value] of Object.entries(broker)) {
      if (/^logger\.\w+\.level$/.test(key)) expect(value).toBe('WARN');
    }
    expect(toolsLogConfig('log4j2')).toMatchObject({
      'appender.console.target': 'SYSTEM_ERR',
      'rootLogger.level': 'WARN',
    });
  });
});

describe('JVM command lines per Kafka version', () => {
  const v3 = { logging: 'log4j' as const, kafkaLib: '/cache/kafka-lib', logConfig: '/s/log4j.properties' };
  const v4 = { logging: 'log4j2' as const, kafkaLib: '/cache/kafka-lib', logConfig: '/s/log4j2.properties' };

  it('start the broker with its logging flag, the cached jars and server.properties', () => {
    expect(kafkaBrokerArgs(v4, '/s/server.properties', ['-Xmx512m'])).toEqual([
      '-Xmx512m',
      '-Djava.awt.headless=true',
      '-XX:-UsePerfData',
      '-Dlog4j2.configurationFile=file:/s/log4j2.properties',
      '-cp',
      '/cache/kafka-lib/*',
      'kafka.Kafka',
      '/s/server.properties',
    ]);
    expect(kafkaBrokerArgs(v3, '/s/server.properties', [])).toContain(
      '-Dlog4j.configuration=file:/s/log4j.properties',
    );
  });

  it('format storage with the static quorum in both versions (no --standalone, no --initial-controllers)', () => {
    for (const jvm of [v3, v4]) {
      const args = storageFormatArgs(jvm, 'cluster-id', '/s/server.properties');
      expect(args).toEqual([
        '-XX:-UsePerfData',
        logConfigFlag(jvm.logging, jvm.logConfig),
        '-cp',
        '/cache/kafka-lib/*',
        'kafka.tools.StorageTool',
        'format',
        '--ignore-formatted',
        '-t',
        'cluster-id',
        '-c',
        '/s/server.properties',
      ]);
    }
  });

  it('run a tool as its main class with the arguments after it', () => {
    expect(kafkaToolJvmArgs(v4, 'org.apache.kafka.tools.ConsoleProducer', ['--topic', 't'])).toEqual([
      '-XX:-UsePerfData',
      '-Dlog4j2.configurationFile=file:/s/log4j2.properties',
      '-cp',
      '/cache/kafka-lib/*',
      'org.apache.kafka.tools.ConsoleProducer',
      '--topic',
      't',
    ]);
  });

  it('write a server.properties that a 4.x broker accepts as it is: nothing from ZooKeeper', () => {
    const props = kafkaServerProperties({ port: 1, controllerPort: 2, dataDir: '/d' });
    expect(Object.keys(props).some((key) => key.startsWith('zookeeper.'))).toBe(false);
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

describe('a node of a local cluster', () => {
  const nodes = [
    { port: 9101, controllerPort: 9201 },
    { port: 9102, controllerPort: 9202 },
    { port: 9103, controllerPort: 9203 },
  ];

  it('names itself and every controller of the static quorum', () => {
    expect(clusterNodeProperties(2, nodes)).toMatchObject({
      'node.id': 2,
      'controller.quorum.voters': '1@127.0.0.1:9201,2@127.0.0.1:9202,3@127.0.0.1:9203',
    });
  });

  it('keeps three copies of internal and new topics, two in sync before a write counts', () => {
    expect(clusterNodeProperties(1, nodes)).toMatchObject({
      'offsets.topic.replication.factor': 3,
      'transaction.state.log.replication.factor': 3,
      'transaction.state.log.min.isr': 2,
      'default.replication.factor': 3,
      'min.insync.replicas': 2,
      'unclean.leader.election.enable': false,
    });
  });

  it('asks no more copies than a smaller cluster has', () => {
    expect(clusterNodeProperties(1, nodes.slice(0, 2))).toMatchObject({
      'offsets.topic.replication.factor': 2,
      'min.insync.replicas': 2,
    });
  });
});

// Pure renderers for the files the local JVMs read: Kafka's server.properties, log4j, the JVM arguments.
import { randomBytes } from 'node:crypto';

export type Properties = Record<string, string | number | boolean>;

/** Java .properties text, keys in the given order. Values here never need escaping beyond `\`. */
export function renderProperties(properties: Properties, header?: string): string {
  const lines = header ? header.split('\n').map((line) => `# ${line}`) : [];
  for (const [key, value] of Object.entries(properties)) {
    lines.push(`${key}=${String(value).replaceAll('\\', '\\\\')}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface KafkaNodeSettings {
  port: number;
  controllerPort: number;
  dataDir: string;
  host?: string;
}

/** Big enough for the 1 MiB default body limit plus the envelope around it, with room to raise it. */
export const MAX_MESSAGE_BYTES = 4 * 1_048_576;

/** A single-node KRaft broker+controller that behaves like production where it matters to hookledger. */
export function kafkaServerProperties({
  port,
  controllerPort,
  dataDir,
  host = '127.0.0.1',
}: KafkaNodeSettings): Properties {
  return {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@${host}:${controllerPort}`,
    listeners: `PLAINTEXT://${host}:${port},CONTROLLER://${host}:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${host}:${port}`,
    'controller.listener.names': 'CONTROLLER',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': dataDir,
    // One node: internal topics cannot have more replicas than that.
    'offsets.topic.replication.factor': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    // 50 each by default: on one small machine that is most of a restart's recovery time, for nothing.
    'offsets.topic.num.partitions': 10,
    'transaction.state.log.num.partitions': 10,
    // Tests join groups constantly; the default 3 s delay would slow every one of them.
    'group.initial.rebalance.delay.ms': 0,
    // hookledger creates its topics with their configs (`hookledger topics`); a typo must not invent one.
    'auto.create.topics.enable': false,
    'message.max.bytes': MAX_MESSAGE_BYTES,
    'replica.fetch.max.bytes': MAX_MESSAGE_BYTES,
    'num.partitions': 1,
  };
}

/** log4j 1.x (reload4j) config: everything to stdout, which the owner points at the log file. */
export function kafkaLog4jProperties(): Properties {
  return {
    'log4j.rootLogger': 'INFO, stdout',
    'log4j.appender.stdout': 'org.apache.log4j.ConsoleAppender',
    'log4j.appender.stdout.layout': 'org.apache.log4j.PatternLayout',
    'log4j.appender.stdout.layout.ConversionPattern': '[%d] %p %m (%c)%n',
    // The per-request and state-change chatter drowns the lines that explain a failure.
    'log4j.logger.kafka.request.logger': 'WARN',
    'log4j.logger.state.change.logger': 'WARN',
    'log4j.logger.kafka.log.LogCleaner': 'WARN',
    'log4j.logger.org.apache.kafka.storage.internals.log': 'WARN',
  };
}

/** log4j config for Kafka's CLI tools: only warnings, on stderr, so their output stays readable. */
export function toolsLog4jProperties(): Properties {
  return {
    'log4j.rootLogger': 'WARN, stderr',
    'log4j.appender.stderr': 'org.apache.log4j.ConsoleAppender',
    'log4j.appender.stderr.Target': 'System.err',
    'log4j.appender.stderr.layout': 'org.apache.log4j.PatternLayout',
    'log4j.appender.stderr.layout.ConversionPattern': '[%d] %p %m (%c)%n',
  };
}

/**
 * A KRaft cluster id as Kafka's own `Uuid.randomUuid()` makes them (16 random bytes, URL-safe base64,
 * never starting with "-"), so formatting needs no extra JVM start for `random-uuid`.
 */
export function newClusterId(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (!id.startsWith('-') && !/^A{21}[AQ]$/.test(id)) return id; // not ZERO nor ONE (reserved)
  }
}

export interface RegistrySettings {
  port: number;
  managementPort: number;
  brokers: string[];
  host?: string;
}

/** Where Apicurio keeps its journal: a name nobody mistakes for a hookledger topic. */
export const REGISTRY_TOPIC = '_apicurio-registry-journal';
export const REGISTRY_SNAPSHOTS_TOPIC = '_apicurio-registry-snapshots';

/** System properties for Apicurio Registry with KafkaSQL storage, so its ids live as long as Kafka's data. */
export function registrySystemProperties({
  port,
  managementPort,
  brokers,
  host = '127.0.0.1',
}: RegistrySettings): Properties {
  return {
    'quarkus.http.host': host,
    'quarkus.http.port': port,
    // Quarkus opens a management interface too; its default 9000 would clash between stacks.
    'quarkus.management.host': host,
    'quarkus.management.port': managementPort,
    'apicurio.storage.kind': 'kafkasql',
    'apicurio.kafkasql.bootstrap.servers': brokers.join(','),
    'apicurio.kafkasql.topic': REGISTRY_TOPIC,
    'apicurio.kafkasql.snapshots.topic': REGISTRY_SNAPSHOTS_TOPIC,
    'quarkus.log.console.color': false,
  };
}

/** `-Dkey=value` arguments for the JVM command line. */
export function systemPropertyArgs(properties: Properties): string[] {
  return Object.entries(properties).map(([key, value]) => `-D${key}=${String(value)}`);
}

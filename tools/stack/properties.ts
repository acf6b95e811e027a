// Pure renderers for the files the local JVMs read: Kafka's server.properties, its logging, the JVM arguments.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { KafkaLogging } from './kafka-versions.js';

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

/**
 * log.index.size.max.bytes of a local stack's brokers (Kafka's default is 10 MiB). Kafka preallocates each
 * segment's offset and time index at this size as a sparse file and maps it. The first entry written to it
 * faults a page in, and the kernel reads ahead around the fault, zero-filling the file's holes up to the
 * disk's read_ahead_kb. On a machine whose disk reads ahead 8 MiB, that is 16 MiB of memset for every new
 * partition. A transaction's markers, which can touch sixty partitions at once, then held the broker for
 * 0.3–1.7 s (docs/benchmarks.md, "The router's writes without its work"). At 1 MiB an index still holds
 * 131,072 entries, one per 4 KiB of log: a segment rolls at 512 MiB instead of 1 GiB.
 */
export const LOCAL_INDEX_MAX_BYTES = 1_048_576;

/** group.min.session.timeout.ms of a local stack's brokers: the lowest PROCESSOR_SESSION_TIMEOUT_MS takes. */
export const LOCAL_MIN_SESSION_TIMEOUT_MS = 1_000;

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
    // Kafka's default floor is 6 s: a local stack lets PROCESSOR_SESSION_TIMEOUT_MS go down to the
    // config's own 1 s, so a takeover after a SIGKILL can be tried at the speed production may choose.
    'group.min.session.timeout.ms': LOCAL_MIN_SESSION_TIMEOUT_MS,
    // A dead instance's open transaction is aborted within a second of its timeout rather than at the
    // next check of every 10 s: read_committed readers of a local stack wait seconds, not tens.
    'transaction.abort.timed.out.transaction.cleanup.interval.ms': 1_000,
    // hookledger creates its topics with their configs (`hookledger topics`); a typo must not invent one.
    'auto.create.topics.enable': false,
    'message.max.bytes': MAX_MESSAGE_BYTES,
    'replica.fetch.max.bytes': MAX_MESSAGE_BYTES,
    'num.partitions': 1,
    'log.index.size.max.bytes': LOCAL_INDEX_MAX_BYTES,
  };
}

/** Where each node of a local cluster listens: node ids are 1..n, in this order. */
export interface ClusterNodePorts {
  port: number;
  controllerPort: number;
}

/**
 * What turns the single node into one of `nodes.length` (broker and controller in each JVM): its id,
 * the static quorum of every controller, and production's durability for internal and new topics
 * (three copies, two in sync before a write counts), so a cluster that loses one node keeps
 * accepting writes and loses none.
 */
export function clusterNodeProperties(
  nodeId: number,
  nodes: readonly ClusterNodePorts[],
  host = '127.0.0.1',
): Properties {
  const replicas = Math.min(3, nodes.length);
  const inSync = Math.min(2, replicas);
  return {
    'node.id': nodeId,
    'controller.quorum.voters': nodes.map((n, i) => `${i + 1}@${host}:${n.controllerPort}`).join(','),
    'offsets.topic.replication.factor': replicas,
    'transaction.state.log.replication.factor': replicas,
    'transaction.state.log.min.isr': inSync,
    'default.replication.factor': replicas,
    'min.insync.replicas': inSync,
    'unclean.leader.election.enable': false,
  };
}

/** The per-request and state-change chatter drowns the lines that explain a failure. */
const QUIET_LOGGERS = [
  'kafka.request.logger',
  'state.change.logger',
  'kafka.log.LogCleaner',
  'org.apache.kafka.storage.internals.log',
];

const PATTERN = '[%d] %p %m (%c)%n';

/** Where a logging config goes: log4j 2 picks its parser by the extension, log4j 1 is told the file. */
export function logConfigFileName(logging: KafkaLogging, purpose: 'broker' | 'tools'): string {
  const base = logging === 'log4j2' ? 'log4j2' : 'log4j';
  return purpose === 'broker' ? `${base}.properties` : `tools-${base}.properties`;
}

/** The JVM flag that points Kafka (or one of its tools) at its logging config. */
export function logConfigFlag(logging: KafkaLogging, path: string): string {
  return logging === 'log4j2'
    ? `-Dlog4j2.configurationFile=file:${path}`
    : `-Dlog4j.configuration=file:${path}`;
}

export interface KafkaJvm {
  logging: KafkaLogging;
  /** Kafka's jars: the classpath is `<kafkaLib>/*`. */
  kafkaLib: string;
  /** The logging config file (broker or tools, see logConfigFileName). */
  logConfig: string;
}

/** No /tmp/hsperfdata_<user>/<pid> file (jstat's counters): a JVM we start leaves nothing in /tmp. */
export const NO_PERF_DATA = '-XX:-UsePerfData';

function jvmBase({ logging, kafkaLib, logConfig }: KafkaJvm): string[] {
  return [NO_PERF_DATA, logConfigFlag(logging, logConfig), '-cp', join(kafkaLib, '*')];
}

/** The broker's command line after `java`: the same main class and config in 3.9 and 4.1. */
export function kafkaBrokerArgs(jvm: KafkaJvm, serverProperties: string, heap: string[]): string[] {
  return [...heap, '-Djava.awt.headless=true', ...jvmBase(jvm), 'kafka.Kafka', serverProperties];
}

/**
 * `kafka-storage format` with the static quorum of server.properties (`controller.quorum.voters`): 3.9 and
 * 4.1 alike. A 4.x dynamic quorum (`--standalone`, `controller.quorum.bootstrap.servers`) would buy nothing
 * for one node that never changes its voters.
 */
export function storageFormatArgs(jvm: KafkaJvm, clusterId: string, serverProperties: string): string[] {
  return [
    ...jvmBase(jvm),
    'kafka.tools.StorageTool',
    'format',
    '--ignore-formatted',
    '-t',
    clusterId,
    '-c',
    serverProperties,
  ];
}

/** A CLI tool's command line after `java`. */
export function kafkaToolJvmArgs(jvm: KafkaJvm, mainClass: string, args: string[]): string[] {
  return [...jvmBase(jvm), mainClass, ...args];
}

/** The broker's logging config: everything at INFO to stdout, which the owner points at the log file. */
export function kafkaLogConfig(logging: KafkaLogging): Properties {
  return logging === 'log4j2'
    ? log4j2Console('INFO', 'SYSTEM_OUT', QUIET_LOGGERS)
    : log4jConsole('INFO', 'System.out', QUIET_LOGGERS);
}

/** The CLI tools' logging config: only warnings, on stderr, so their output stays readable. */
export function toolsLogConfig(logging: KafkaLogging): Properties {
  return logging === 'log4j2'
    ? log4j2Console('WARN', 'SYSTEM_ERR', [])
    : log4jConsole('WARN', 'System.err', []);
}

function log4jConsole(level: string, target: 'System.out' | 'System.err', quiet: string[]): Properties {
  return {
    'log4j.rootLogger': `${level}, console`,
    'log4j.appender.console': 'org.apache.log4j.ConsoleAppender',
    'log4j.appender.console.Target': target,
    'log4j.appender.console.layout': 'org.apache.log4j.PatternLayout',
    'log4j.appender.console.layout.ConversionPattern': PATTERN,
    ...Object.fromEntries(quiet.map((name) => [`log4j.logger.${name}`, 'WARN'])),
  };
}

/** log4j 2's properties format (no YAML parser needed on the classpath). */
function log4j2Console(level: string, target: 'SYSTEM_OUT' | 'SYSTEM_ERR', quiet: string[]): Properties {
  const properties: Properties = {
    // log4j 2's own status messages: only its problems (a config it cannot read).
    status: 'warn',
    'appender.console.type': 'Console',
    'appender.console.name': 'console',
    'appender.console.target': target,
    'appender.console.layout.type': 'PatternLayout',
    'appender.console.layout.pattern': PATTERN,
    'rootLogger.level': level,
    'rootLogger.appenderRef.console.ref': 'console',
  };
  quiet.forEach((name, i) => {
    properties[`logger.quiet${i}.name`] = name;
    properties[`logger.quiet${i}.level`] = 'WARN';
  });
  return properties;
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
    // Harmless where the build turns the management interface off (3.0.9: health is on the main port);
    // where it is on, its default 9000 would clash between stacks.
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

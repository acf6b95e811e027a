// One local Kafka node (KRaft, broker and controller in one JVM) that can stop and start on the same port and data.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../../runtime/log.js';
import type { Artifacts } from './artifacts.js';
import { StackError } from './errors.js';
import {
  launchJvm,
  notReadyError,
  pidIsOurs,
  type RunningJvm,
  readPidFile,
  stopPid,
  waitForPidExit,
} from './jvm-process.js';
import { DEFAULT_KAFKA_VERSION } from './kafka-versions.js';
import { freePort, portIsFree } from './ports.js';
import {
  type ClusterNodePorts,
  clusterNodeProperties,
  kafkaBrokerArgs,
  kafkaLogConfig,
  kafkaServerProperties,
  logConfigFileName,
  newClusterId,
  type Properties,
  renderProperties,
  storageFormatArgs,
  toolsLogConfig,
} from './properties.js';
import { waitForKafka } from './readiness.js';

const run = promisify(execFile);

export interface KafkaNodeOptions {
  /** The stack's state directory: the node keeps `kafka/` (config, data, pid) and `logs/kafka.log` in it. */
  stateDir: string;
  artifacts: Artifacts;
  java: string;
  logger: Logger;
  detached?: boolean;
  /** JVM heap flags. The shared broker gets 1 GiB; dedicated test brokers need less. */
  heap?: string[];
  readyTimeoutMs?: number;
  /** One node of a local multi-node cluster (`stack up --brokers 3`); absent: the single node. */
  member?: ClusterMember;
  /** Changes to server.properties from the ones rendered (the secured stack's SASL_SSL listener). */
  extraProperties?: (base: Properties) => Properties;
  /** More `kafka-storage format` arguments (the secured stack's SCRAM users). */
  formatArgs?: readonly string[];
  /** More JVM flags (the secured stack's allowed OAuth URLs). */
  jvmOptions?: readonly string[];
}

/** A node's place in a local cluster: its id and every node's ports, all chosen before any config is written. */
export interface ClusterMember {
  nodeId: number;
  nodes: readonly ClusterNodePorts[];
  clusterId: string;
}

export interface KafkaNode {
  readonly brokers: string[];
  readonly port: number;
  readonly logFile: string;
  /** The broker JVM's pid while it runs. */
  pid(): number | undefined;
  start(): Promise<void>;
  /** A clean shutdown (SIGTERM, then SIGKILL after the grace period); data and port are kept. */
  stop(): Promise<void>;
  /** SIGKILL, as a crashed machine: no clean shutdown, no leadership handed over. Data and port are kept. */
  kill(): Promise<void>;
  restart(): Promise<void>;
}

interface NodeFile {
  port: number;
  controllerPort: number;
  clusterId: string;
  /** The version that formatted the data; absent in files written before versions could differ (3.9.1). */
  kafkaVersion?: string;
}

/** The single node lives in `kafka/`; node n of a cluster in `kafka-<n>/`, logging to `logs/kafka-<n>.log`. */
export function kafkaPaths(stateDir: string, nodeId?: number) {
  const name = nodeId === undefined ? 'kafka' : `kafka-${nodeId}`;
  const dir = join(stateDir, name);
  return {
    dir,
    dataDir: join(dir, 'data'),
    serverProperties: join(dir, 'server.properties'),
    nodeFile: join(dir, 'node.json'),
    pidFile: join(dir, 'kafka.pid'),
    logFile: join(stateDir, 'logs', `${name}.log`),
  };
}

/** The pid of a Kafka JVM started for this state directory (node `nodeId` of a cluster), if it still runs. */
export function runningKafkaPid(stateDir: string, nodeId?: number): number | undefined {
  const paths = kafkaPaths(stateDir, nodeId);
  const pid = readPidFile(paths.pidFile);
  return pid !== undefined && pidIsOurs(pid, paths.serverProperties) ? pid : undefined;
}

/** The ids of the cluster nodes that have a folder in this state directory (none for a single node). */
export function clusterNodeIds(stateDir: string): number[] {
  let names: string[] = [];
  try {
    names = readdirSync(stateDir);
  } catch {}
  return names
    .map((name) => /^kafka-(\d+)$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** Every Kafka JVM of this state directory that still runs: the single node's, or each cluster node's. */
export function runningKafkaPids(stateDir: string): number[] {
  return [undefined, ...clusterNodeIds(stateDir)]
    .map((nodeId) => runningKafkaPid(stateDir, nodeId))
    .filter((pid): pid is number => pid !== undefined);
}

/** The Kafka version whose data is in this state directory (formatted storage), if any. */
export function kafkaVersionIn(stateDir: string, nodeId?: number): string | undefined {
  const paths = kafkaPaths(stateDir, nodeId);
  if (!existsSync(join(paths.dataDir, 'meta.properties'))) return undefined;
  try {
    return (
      (JSON.parse(readFileSync(paths.nodeFile, 'utf8')) as NodeFile).kafkaVersion ?? DEFAULT_KAFKA_VERSION
    );
  } catch {
    return DEFAULT_KAFKA_VERSION;
  }
}

/**
 * Prepares the node's directory (ports, config, formatted storage) without starting it. Ports and the
 * cluster id are kept in node.json, so a later start, in this process or another, reuses them.
 */
export async function createKafkaNode(options: KafkaNodeOptions): Promise<KafkaNode> {
  const { stateDir, artifacts, java, logger, member } = options;
  const paths = kafkaPaths(stateDir, member?.nodeId);
  const { version, logging } = artifacts.kafka;
  // An older broker cannot read newer data, and a newer one would upgrade it for good: ask instead.
  const formattedBy = kafkaVersionIn(stateDir, member?.nodeId);
  if (formattedBy !== undefined && formattedBy !== version) {
    throw new StackError(
      `the Kafka data in ${paths.dataDir} was written by Kafka ${formattedBy}, and this is ${version}: set HOOKLEDGER_KAFKA_VERSION=${formattedBy}, or start afresh (\`hookledger stack down --purge\`, or another state dir)`,
    );
  }
  await mkdir(paths.dataDir, { recursive: true });
  const ports = member
    ? { ...member.nodes[member.nodeId - 1]!, clusterId: member.clusterId }
    : await choosePorts(paths.nodeFile, runningKafkaPid(stateDir) !== undefined);
  const node: NodeFile = { ...ports, kafkaVersion: version };
  await writeFile(paths.nodeFile, `${JSON.stringify(node, null, 2)}\n`);
  const settings = { port: node.port, controllerPort: node.controllerPort, dataDir: paths.dataDir };
  await writeFile(
    paths.serverProperties,
    renderProperties(
      withExtra(options.extraProperties, {
        ...kafkaServerProperties(settings),
        ...(member ? clusterNodeProperties(member.nodeId, member.nodes) : {}),
      }),
      'written by hookledger stack',
    ),
  );
  const logConfig = join(paths.dir, logConfigFileName(logging, 'broker'));
  const toolsLogConfigFile = join(paths.dir, logConfigFileName(logging, 'tools'));
  await writeFile(logConfig, renderProperties(kafkaLogConfig(logging)));
  await writeFile(toolsLogConfigFile, renderProperties(toolsLogConfig(logging)));
  if (formattedBy === undefined) {
    const tools = { logging, kafkaLib: artifacts.kafkaLib, logConfig: toolsLogConfigFile };
    const args = storageFormatArgs(tools, node.clusterId, paths.serverProperties);
    await format(java, [...args, ...(options.formatArgs ?? [])], paths);
  }
  const broker = { logging, kafkaLib: artifacts.kafkaLib, logConfig };

  const brokers = [`127.0.0.1:${node.port}`];
  const log = logger.child({ component: 'stack.kafka' });
  let jvm: RunningJvm | undefined;

  const self: KafkaNode = {
    brokers,
    port: node.port,
    logFile: paths.logFile,
    pid: () => (jvm && !jvm.hasExited() ? jvm.pid : runningKafkaPid(stateDir, member?.nodeId)),
    async start() {
      if (self.pid() !== undefined) return;
      if (!(await portIsFree(node.port)) || !(await portIsFree(node.controllerPort))) {
        throw new StackError(
          `Kafka cannot start: port ${node.port} or ${node.controllerPort} is taken by another process (state: ${paths.dir})`,
        );
      }
      const started = Date.now();
      jvm = await launchJvm({
        name: 'Kafka',
        command: java,
        args: kafkaBrokerArgs(broker, paths.serverProperties, [
          ...(options.heap ?? ['-Xms256m', '-Xmx1g']),
          ...(options.jvmOptions ?? []),
        ]),
        cwd: paths.dir,
        logFile: paths.logFile,
        pidFile: paths.pidFile,
        detached: options.detached ?? false,
      });
      const outcome = await waitForKafka(brokers, {
        timeoutMs: options.readyTimeoutMs ?? 90_000,
        exited: jvm.exited,
      });
      if (outcome !== 'ready') {
        const running = jvm;
        jvm = undefined;
        throw await notReadyError(running, outcome, `Kafka on ${brokers[0]}`, paths.logFile);
      }
      log.info({ brokers, version, pid: jvm.pid, ms: Date.now() - started }, 'Kafka ready');
    },
    async stop() {
      const running = jvm;
      jvm = undefined;
      if (running && !running.hasExited()) await running.stop();
      // The one this process started is gone (killed, say) and another may run in its place: a node
      // `stack restart kafka <n>` started from another process. The pid file names it.
      const pid = runningKafkaPid(stateDir, member?.nodeId);
      if (pid !== undefined) await stopPid(pid);
      log.info({ brokers }, 'Kafka stopped');
    },
    async kill() {
      const pid = self.pid();
      jvm = undefined;
      if (pid === undefined) return;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
      await waitForPidExit(pid, 10_000);
      log.info({ brokers, pid }, 'Kafka killed');
    },
    async restart() {
      await self.stop();
      await self.start();
    },
  };
  return self;
}

async function choosePorts(
  nodeFile: string,
  running: boolean,
): Promise<Pick<NodeFile, 'port' | 'controllerPort' | 'clusterId'>> {
  let previous: NodeFile | undefined;
  try {
    previous = JSON.parse(await readFile(nodeFile, 'utf8')) as NodeFile;
  } catch {}
  if (
    previous &&
    (running || ((await portIsFree(previous.port)) && (await portIsFree(previous.controllerPort))))
  ) {
    return { port: previous.port, controllerPort: previous.controllerPort, clusterId: previous.clusterId };
  }
  const port = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  return { port, controllerPort, clusterId: previous?.clusterId ?? newClusterId() };
}

async function format(java: string, args: string[], paths: ReturnType<typeof kafkaPaths>) {
  try {
    await run(java, args, { timeout: 60_000 });
  } catch (error) {
    const output =
      error instanceof Error && 'stdout' in error
        ? `${error.stdout}${(error as { stderr?: string }).stderr ?? ''}`
        : '';
    throw new StackError(
      `could not format Kafka's storage in ${paths.dataDir}: ${output.trim() || (error as Error).message}`,
    );
  }
}

function withExtra(extra: ((base: Properties) => Properties) | undefined, base: Properties): Properties {
  return extra ? { ...base, ...extra(base) } : base;
}

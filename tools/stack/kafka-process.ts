// One local Kafka node (KRaft, broker and controller in one JVM) that can stop and start on the same port and data.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../../runtime/log.js';
import type { Artifacts } from './artifacts.js';
import { StackError } from './errors.js';
import { launchJvm, notReadyError, pidIsOurs, type RunningJvm, readPidFile, stopPid } from './jvm-process.js';
import { DEFAULT_KAFKA_VERSION } from './kafka-versions.js';
import { freePort, portIsFree } from './ports.js';
import {
  kafkaBrokerArgs,
  kafkaLogConfig,
  kafkaServerProperties,
  logConfigFileName,
  newClusterId,
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
  restart(): Promise<void>;
}

interface NodeFile {
  port: number;
  controllerPort: number;
  clusterId: string;
  /** The version that formatted the data; absent in files written before versions could differ (3.9.1). */
  kafkaVersion?: string;
}

export function kafkaPaths(stateDir: string) {
  const dir = join(stateDir, 'kafka');
  return {
    dir,
    dataDir: join(dir, 'data'),
    serverProperties: join(dir, 'server.properties'),
    nodeFile: join(dir, 'node.json'),
    pidFile: join(dir, 'kafka.pid'),
    logFile: join(stateDir, 'logs', 'kafka.log'),
  };
}

/** The pid of a Kafka JVM started for this state directory, if it still runs. */
export function runningKafkaPid(stateDir: string): number | undefined {
  const paths = kafkaPaths(stateDir);
  const pid = readPidFile(paths.pidFile);
  return pid !== undefined && pidIsOurs(pid, paths.serverProperties) ? pid : undefined;
}

/** The Kafka version whose data is in this state directory (formatted storage), if any. */
export function kafkaVersionIn(stateDir: string): string | undefined {
  const paths = kafkaPaths(stateDir);
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
  const { stateDir, artifacts, java, logger } = options;
  const paths = kafkaPaths(stateDir);
  const { version, logging } = artifacts.kafka;
  // An older broker cannot read newer data, and a newer one would upgrade it for good: ask instead.
  const formattedBy = kafkaVersionIn(stateDir);
  if (formattedBy !== undefined && formattedBy !== version) {
    throw new StackError(
      `the Kafka data in ${paths.dataDir} was written by Kafka ${formattedBy}, and this is ${version}: set HOOKLEDGER_KAFKA_VERSION=${formattedBy}, or start afresh (\`hookledger stack down --purge\`, or another state dir)`,
    );
  }
  await mkdir(paths.dataDir, { recursive: true });
  const ports = await choosePorts(paths.nodeFile, runningKafkaPid(stateDir) !== undefined);
  const node: NodeFile = { ...ports, kafkaVersion: version };
  await writeFile(paths.nodeFile, `${JSON.stringify(node, null, 2)}\n`);
  const settings = { port: node.port, controllerPort: node.controllerPort, dataDir: paths.dataDir };
  await writeFile(
    paths.serverProperties,
    renderProperties(kafkaServerProperties(settings), 'written by hookledger stack'),
  );
  const logConfig = join(paths.dir, logConfigFileName(logging, 'broker'));
  const toolsLogConfigFile = join(paths.dir, logConfigFileName(logging, 'tools'));
  await writeFile(logConfig, renderProperties(kafkaLogConfig(logging)));
  await writeFile(toolsLogConfigFile, renderProperties(toolsLogConfig(logging)));
  if (formattedBy === undefined) {
    const tools = { logging, kafkaLib: artifacts.kafkaLib, logConfig: toolsLogConfigFile };
    await format(java, storageFormatArgs(tools, node.clusterId, paths.serverProperties), paths);
  }
  const broker = { logging, kafkaLib: artifacts.kafkaLib, logConfig };

  const brokers = [`127.0.0.1:${node.port}`];
  const log = logger.child({ component: 'stack.kafka' });
  let jvm: RunningJvm | undefined;

  const self: KafkaNode = {
    brokers,
    port: node.port,
    logFile: paths.logFile,
    pid: () => (jvm && !jvm.hasExited() ? jvm.pid : runningKafkaPid(stateDir)),
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
        args: kafkaBrokerArgs(broker, paths.serverProperties, options.heap ?? ['-Xms256m', '-Xmx1g']),
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
      if (jvm) {
        const running = jvm;
        jvm = undefined;
        await running.stop();
      } else {
        const pid = runningKafkaPid(stateDir);
        if (pid !== undefined) await stopPid(pid);
      }
      log.info({ brokers }, 'Kafka stopped');
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

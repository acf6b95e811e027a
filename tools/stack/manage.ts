// Acting on a stack that another process started (`stack up` earlier): status, down, restart of Kafka.
import { rm } from 'node:fs/promises';
import type { Logger } from '../../runtime/log.js';
import { ensureArtifacts, requireJava } from './artifacts.js';
import { removeDockerStack, restartDockerKafka } from './docker.js';
import { StackError } from './errors.js';
import { pidAlive, stopPid } from './jvm-process.js';
import { createKafkaNode, kafkaVersionIn, runningKafkaPid } from './kafka-process.js';
import { DEFAULT_KAFKA_VERSION, requireKafkaRelease } from './kafka-versions.js';
import { kafkaAnswers, registryAnswers } from './readiness.js';
import { runningRegistryPid } from './registry-process.js';
import { readStackRecord, type StackRecord, stackFiles, writeStackRecord } from './state.js';

export interface ComponentStatus {
  name: 'kafka' | 'registry';
  address: string;
  pid?: number;
  answers: boolean;
  logFile?: string;
}

export interface StackStatus {
  record: StackRecord;
  components: ComponentStatus[];
  /** Every component answers. */
  healthy: boolean;
}

/** What the state dir's stack.json says, checked against reality: pids alive, ports answering. */
export async function stackStatus(stateDir: string): Promise<StackStatus | undefined> {
  const record = readStackRecord(stateDir);
  if (!record) return undefined;
  const [kafkaUp, registryUp] = await Promise.all([
    kafkaAnswers(record.brokers),
    registryAnswers(record.registryUrl),
  ]);
  const local = record.kind === 'local';
  const components: ComponentStatus[] = [
    {
      name: 'kafka',
      address: record.brokers.join(','),
      ...(local ? { pid: runningKafkaPid(stateDir) } : {}),
      answers: kafkaUp,
      logFile: record.logFiles.kafka,
    },
    {
      name: 'registry',
      address: record.registryUrl,
      ...(local ? { pid: runningRegistryPid(stateDir) } : {}),
      answers: registryUp,
      logFile: record.logFiles.registry,
    },
  ];
  return { record, components, healthy: kafkaUp && registryUp };
}

/** A supervised stack belongs to the process running it (`hookledger start`, a test run): leave it alone. */
function refuseIfOwned(record: StackRecord, what: string): void {
  if (!record.detached && record.ownerPid !== process.pid && pidAlive(record.ownerPid)) {
    throw new StackError(
      `this stack was started by process ${record.ownerPid}, which stops it when it ends; ${what} there (or stop that process)`,
    );
  }
}

/** `stack down`: registry first, then Kafka (TERM, wait, KILL). Data stays unless `purge`. */
export async function stopStackIn(stateDir: string, options: { purge?: boolean } = {}): Promise<boolean> {
  const record = readStackRecord(stateDir);
  let stopped = false;
  if (record) {
    refuseIfOwned(record, 'stop it');
    if (record.kind === 'docker' && record.docker) {
      await removeDockerStack({
        containers: [record.docker.registryContainer, record.docker.kafkaContainer],
        network: record.docker.network,
      });
      stopped = true;
    }
  }
  // By pid files, whatever stack.json says: `up` interrupted half-way leaves pids but no record.
  for (const pid of [runningRegistryPid(stateDir), runningKafkaPid(stateDir)]) {
    if (pid !== undefined) {
      await stopPid(pid);
      stopped = true;
    }
  }
  const files = stackFiles(stateDir);
  await rm(files.record, { force: true });
  await rm(files.env, { force: true });
  if (options.purge) await rm(stateDir, { recursive: true, force: true });
  return stopped;
}

/** `stack restart kafka`: same port, same data; the registry stays up and reconnects. */
export async function restartKafkaIn(
  stateDir: string,
  options: { env?: NodeJS.ProcessEnv; logger: Logger },
): Promise<string[]> {
  const record = readStackRecord(stateDir);
  if (!record) throw new StackError(`no stack runs from ${stateDir}: start one with \`hookledger stack up\``);
  refuseIfOwned(record, 'restart it');
  if (record.kind === 'docker') {
    if (!record.docker) throw new StackError(`${stackFiles(stateDir).record} names no Kafka container`);
    await restartDockerKafka(record.docker.kafkaContainer, record.brokers);
    return record.brokers;
  }
  const env = options.env ?? process.env;
  // The version that runs there, whatever HOOKLEDGER_KAFKA_VERSION says now: its data is that version's.
  const release = requireKafkaRelease(
    record.kafkaVersion ?? kafkaVersionIn(stateDir) ?? DEFAULT_KAFKA_VERSION,
  );
  const [artifacts, java] = await Promise.all([
    ensureArtifacts({ env, logger: options.logger, release }),
    requireJava(env),
  ]);
  const node = await createKafkaNode({
    stateDir,
    artifacts,
    java: java.path,
    logger: options.logger,
    detached: true,
  });
  await node.restart();
  if (node.brokers.join(',') !== record.brokers.join(',')) {
    // Its old port was taken while it was down: keep stack.json and stack.env truthful.
    await writeStackRecord(stateDir, { ...record, brokers: node.brokers });
  }
  return node.brokers;
}

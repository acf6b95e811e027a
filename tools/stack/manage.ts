// Acting on a stack that another process started (`stack up` earlier): status, down, restart of Kafka.
import { rm } from 'node:fs/promises';
import type { Logger } from '../../runtime/log.js';
import { type RegistryAccess, registryAccess } from '../../schemas/registry-access.js';
import { ensureArtifacts, requireJava } from './artifacts.js';
import { removeDockerStack, restartDockerKafka } from './docker.js';
import { StackError } from './errors.js';
import { pidAlive, pidFrozen, stopPid, waitForPidExit } from './jvm-process.js';
import { createLocalKafka, formattedNodes } from './kafka-cluster.js';
import {
  clusterNodeIds,
  kafkaPaths,
  kafkaVersionIn,
  runningKafkaPid,
  runningKafkaPids,
} from './kafka-process.js';
import { DEFAULT_KAFKA_VERSION, requireKafkaRelease } from './kafka-versions.js';
import { kafkaAnswers, registryAnswers } from './readiness.js';
import { createRegistryNode, runningRegistryPid } from './registry-process.js';
import { readStackRecord, type StackRecord, stackFiles, writeStackRecord } from './state.js';
import {
  runningTokenEndpointPid,
  tokenEndpointAnswers,
  tokenEndpointPaths,
} from './token-endpoint-process.js';

export interface ComponentStatus {
  /** `kafka`, `kafka-<n>` for node n of a local cluster, or `registry`. */
  name: string;
  address: string;
  pid?: number;
  /** Its process is stopped (SIGSTOP, `stack freeze registry`): alive, and answering nothing. */
  frozen?: boolean;
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
  const local = record.kind === 'local';
  // A cluster's nodes answer one by one: a killed node shows as such while the others serve.
  const nodes =
    local && (record.brokerCount ?? 1) > 1
      ? record.brokers.map((broker, i) => ({ name: `kafka-${i + 1}`, brokers: [broker], nodeId: i + 1 }))
      : [{ name: 'kafka', brokers: record.brokers, nodeId: undefined }];
  const [registryUp, ...nodesUp] = await Promise.all([
    registryAnswersFor(record),
    // A secured stack's broker is checked on its PLAINTEXT listener (the SASL_SSL one needs a login).
    ...nodes.map((node) =>
      kafkaAnswers(node.nodeId === undefined ? (record.probeBrokers ?? node.brokers) : node.brokers),
    ),
  ]);
  const pidOf = (pid: number | undefined) =>
    local ? { pid, ...(pid !== undefined && pidFrozen(pid) ? { frozen: true } : {}) } : {};
  const components: ComponentStatus[] = [
    ...nodes.map((node, i) => ({
      name: node.name,
      address: node.brokers.join(','),
      ...pidOf(runningKafkaPid(stateDir, node.nodeId)),
      answers: nodesUp[i] === true,
      logFile: node.nodeId === undefined ? record.logFiles.kafka : kafkaPaths(stateDir, node.nodeId).logFile,
    })),
    {
      name: 'registry',
      address: record.registryUrl,
      ...pidOf(runningRegistryPid(stateDir)),
      answers: registryUp === true,
      logFile: record.logFiles.registry,
    },
  ];
  const tokenUrl = record.oauthClientEnv?.KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL;
  if (tokenUrl !== undefined)
    components.push({
      name: 'token endpoint',
      address: tokenUrl,
      ...(local ? { pid: runningTokenEndpointPid(stateDir) } : {}),
      answers: await tokenEndpointAnswers(tokenUrl),
      logFile: tokenEndpointPaths(stateDir).logFile,
    });
  return { record, components, healthy: components.every((c) => c.answers) };
}

/** The registry answers with the login and CA its stack.env hands clients (the secured stack's: https). */
async function registryAnswersFor(record: StackRecord): Promise<boolean> {
  const env = record.clientEnv ?? {};
  let access: RegistryAccess;
  try {
    access = registryAccess({
      SCHEMA_REGISTRY_URL: record.registryUrl,
      SCHEMA_REGISTRY_USERNAME: env.SCHEMA_REGISTRY_USERNAME,
      SCHEMA_REGISTRY_PASSWORD: env.SCHEMA_REGISTRY_PASSWORD,
      SCHEMA_REGISTRY_CA_FILE: env.SCHEMA_REGISTRY_CA_FILE,
    });
  } catch {
    // Its CA file is gone (a state dir half removed): no client of this stack can reach it either.
    return false;
  }
  return registryAnswers(access);
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
  for (const pid of [
    runningRegistryPid(stateDir),
    ...runningKafkaPids(stateDir),
    runningTokenEndpointPid(stateDir),
  ]) {
    if (pid !== undefined) {
      await stopPid(pid);
      stopped = true;
    }
  }
  const files = stackFiles(stateDir);
  await rm(files.record, { force: true });
  await rm(files.env, { force: true });
  await rm(files.oauthEnv, { force: true });
  if (options.purge) await rm(stateDir, { recursive: true, force: true });
  return stopped;
}

/**
 * `stack restart kafka [<n>]` and `stack kill kafka <n>`: every node, or node n alone, on the same port
 * and data; the registry stays up and reconnects. `kill` is SIGKILL (a crash): nothing is shut down
 * cleanly, and the node stays down until `restart kafka <n>` (or `up`) starts it again.
 */
export async function actOnKafkaIn(
  stateDir: string,
  action: 'restart' | 'kill',
  options: { env?: NodeJS.ProcessEnv; logger: Logger; node?: number },
): Promise<string[]> {
  const record = readStackRecord(stateDir);
  if (!record) throw new StackError(`no stack runs from ${stateDir}: start one with \`hookledger stack up\``);
  refuseIfOwned(record, `${action} it`);
  if (record.probeBrokers !== undefined)
    throw new StackError(
      'the secured stack is restarted whole: `hookledger stack down`, then `hookledger stack up --secure` (same data, port and passwords)',
    );
  if (record.kind === 'docker') {
    if (action === 'kill' || (options.node ?? 1) !== 1) {
      throw new StackError('a Docker stack has one Kafka node, which `stack restart kafka` restarts');
    }
    if (!record.docker) throw new StackError(`${stackFiles(stateDir).record} names no Kafka container`);
    await restartDockerKafka(record.docker.kafkaContainer, record.brokers);
    return record.brokers;
  }
  const env = options.env ?? process.env;
  // The version that runs there, whatever HOOKLEDGER_KAFKA_VERSION says now: its data is that version's.
  const release = requireKafkaRelease(
    record.kafkaVersion ?? kafkaVersionIn(stateDir, clusterNodeIds(stateDir)[0]) ?? DEFAULT_KAFKA_VERSION,
  );
  const [artifacts, java] = await Promise.all([
    ensureArtifacts({ env, logger: options.logger, release }),
    requireJava(env),
  ]);
  const kafka = await createLocalKafka({
    stateDir,
    artifacts,
    java: java.path,
    logger: options.logger,
    detached: true,
    size: record.brokerCount ?? Math.max(1, formattedNodes(stateDir)),
    ...((record.brokerCount ?? 1) > 1 ? { heap: ['-Xms128m', '-Xmx512m'] } : {}),
  });
  if (action === 'kill') {
    if (options.node === undefined)
      throw new StackError('`stack kill kafka` needs the node: `stack kill kafka <n>`');
    await kafka.node(options.node).kill();
    return kafka.node(options.node).brokers;
  }
  if (options.node === undefined) await kafka.restart();
  else await kafka.node(options.node).restart();
  if (kafka.brokers.join(',') !== record.brokers.join(',')) {
    // A port was taken while its node was down: keep stack.json and stack.env truthful.
    await writeStackRecord(stateDir, { ...record, brokers: kafka.brokers });
  }
  return options.node === undefined ? kafka.brokers : kafka.node(options.node).brokers;
}

/** `stack restart kafka`: every node, same ports, same data. */
export function restartKafkaIn(
  stateDir: string,
  options: { env?: NodeJS.ProcessEnv; logger: Logger; node?: number },
): Promise<string[]> {
  return actOnKafkaIn(stateDir, 'restart', options);
}

/** What `stack kill|restart|freeze|thaw registry` does to the local registry. */
export type RegistryAction = 'kill' | 'restart' | 'freeze' | 'thaw';

/**
 * `stack kill registry` (SIGKILL: connections refused), `stack restart registry` (stopped if it runs,
 * started again on the same port; it reads its schemas back from Kafka before it answers), `stack
 * freeze registry` (SIGSTOP: connections accepted, nothing answered) and `stack thaw registry`
 * (SIGCONT). Kafka stays up throughout. Resolves with the registry's URL.
 */
export async function actOnRegistryIn(
  stateDir: string,
  action: RegistryAction,
  options: { env?: NodeJS.ProcessEnv; logger: Logger },
): Promise<string> {
  const record = readStackRecord(stateDir);
  if (!record) throw new StackError(`no stack runs from ${stateDir}: start one with \`hookledger stack up\``);
  refuseIfOwned(record, `${action} its registry`);
  if (record.kind === 'docker')
    throw new StackError(
      `a Docker stack's registry runs in container ${record.docker?.registryContainer.slice(0, 12) ?? '(unknown)'}: \`docker kill\`, \`docker pause\` and \`docker unpause\` act on it (its port changes if it is started again)`,
    );
  // Its registry starts with the stack's certificate and passwords: only `up --secure` starts it again.
  if ((action === 'restart' || action === 'kill') && record.probeBrokers !== undefined)
    throw new StackError(
      'the secured stack is restarted whole: `hookledger stack down`, then `hookledger stack up --secure` (same data, port and passwords)',
    );
  const pid = runningRegistryPid(stateDir);
  if (action !== 'restart') {
    if (pid === undefined)
      throw new StackError(
        `the schema registry of ${stateDir} is not running: \`hookledger stack restart registry\` starts it`,
      );
    process.kill(pid, { kill: 'SIGKILL', freeze: 'SIGSTOP', thaw: 'SIGCONT' }[action]);
    if (action === 'kill' && !(await waitForPidExit(pid, 10_000)))
      throw new StackError(`the schema registry (pid ${pid}) did not exit after SIGKILL`);
    return record.registryUrl;
  }
  const env = options.env ?? process.env;
  const release = requireKafkaRelease(record.kafkaVersion ?? DEFAULT_KAFKA_VERSION);
  const [artifacts, java] = await Promise.all([
    ensureArtifacts({ env, logger: options.logger, release }),
    requireJava(env),
  ]);
  const registry = await createRegistryNode({
    stateDir,
    artifacts,
    java: java.path,
    brokers: record.brokers,
    logger: options.logger,
    detached: true,
  });
  await registry.restart();
  if (registry.url !== record.registryUrl) {
    // Its port was taken while it was down: keep stack.json and stack.env truthful.
    await writeStackRecord(stateDir, { ...record, registryUrl: registry.url });
  }
  return registry.url;
}

// The local stack's API: a Kafka broker and a schema registry, from the environment, Docker or local JVMs.
import { rm } from 'node:fs/promises';
import { type Logger, pino } from 'pino';
import { cachedArtifacts, ensureArtifacts, findJava, MIN_JAVA, onPath, requireJava } from './artifacts.js';
import { chooseDedicatedKind, chooseStack, type StackKind, type StackProbes } from './choose.js';
import { dockerAnswers, startDockerKafka, startDockerStack } from './docker.js';
import { StackError } from './errors.js';
import { pidAlive } from './jvm-process.js';
import { createLocalKafka, type LocalKafka } from './kafka-cluster.js';
import type { KafkaNode } from './kafka-process.js';
import { runningKafkaPids } from './kafka-process.js';
import { kafkaRelease } from './kafka-versions.js';
import { startLocalStack } from './local.js';
import type { Properties } from './properties.js';
import { type RegistryNode, runningRegistryPid } from './registry-process.js';
import { startSecureLocalStack } from './secure-stack.js';
import { readStackRecord, type StackRecord, stackFiles, writeStackRecord } from './state.js';

export type { Artifacts } from './artifacts.js';
export { cacheRoot, ensureArtifacts, requireJava } from './artifacts.js';
export type { StackKind, StackPreference } from './choose.js';
export { NO_STACK_HELP } from './choose.js';
export { StackError } from './errors.js';
export { MAX_LOCAL_BROKERS } from './kafka-cluster.js';
export { KAFKA_TOOLS, runKafkaTool } from './kafka-tools.js';
export type { KafkaRelease } from './kafka-versions.js';
export {
  DEFAULT_KAFKA_VERSION,
  findKafkaRelease,
  KAFKA_RELEASES,
  kafkaRelease,
  requireKafkaRelease,
} from './kafka-versions.js';
export type { ComponentStatus, RegistryAction, StackStatus } from './manage.js';
export { actOnKafkaIn, actOnRegistryIn, restartKafkaIn, stackStatus, stopStackIn } from './manage.js';
export type { StackRecord } from './state.js';
export { defaultStateDir, readStackRecord, renderStackEnv, stackFiles } from './state.js';

export interface Stack {
  kind: StackKind;
  brokers: string[];
  /** The broker's version (HOOKLEDGER_KAFKA_VERSION); unknown for a configured stack. */
  kafkaVersion?: string;
  /** The Confluent-API base URL: what SCHEMA_REGISTRY_URL holds. */
  registryUrl: string;
  /** A secured stack (`secure`): the other variables a client needs (KAFKA_SASL_*, KAFKA_SSL_CA_FILE, SCHEMA_REGISTRY_*). */
  clientEnv?: Record<string, string>;
  /** A secured stack: the same, logging in to Kafka with OAUTHBEARER (the stack's token endpoint) instead of SCRAM. */
  oauthClientEnv?: Record<string, string>;
  /** Where the JVMs write (local kind); Docker users read `docker logs`. */
  logFiles: { kafka?: string; registry?: string };
  /** The JVMs' pids while they run (local kind). */
  pids(): { kafka?: number; registry?: number };
  /** Milliseconds from the call to ready. */
  startupMs: number;
  /** One line for people: what runs where. */
  describe(): string;
  /** Stops everything this call started (nothing, for a configured stack). Data stays in the state dir. */
  stop(): Promise<void>;
  /** Fault tests: stop the broker, start it again on the same port with the same data. */
  stopKafka(): Promise<void>;
  startKafka(): Promise<void>;
  restartKafka(): Promise<void>;
  /**
   * Fault tests (local JVMs only): SIGKILL the registry (connections refused), start it again on the
   * same port (it reads its schemas back from Kafka first), SIGSTOP it (connections accepted, nothing
   * answered) and SIGCONT it.
   */
  killRegistry(): Promise<void>;
  startRegistry(): Promise<void>;
  freezeRegistry(): void;
  thawRegistry(): void;
}

/** A Docker or configured stack's registry cannot be killed and started again on the same address. */
function registryFaultsRefused(why: string) {
  const refuse = () => {
    throw new StackError(why);
  };
  return {
    killRegistry: async () => refuse(),
    startRegistry: async () => refuse(),
    freezeRegistry: refuse,
    thawRegistry: refuse,
  };
}

/** The fault-test handles of a local registry. */
function registryFaults(registry: RegistryNode) {
  return {
    killRegistry: () => registry.kill(),
    startRegistry: () => registry.start(),
    freezeRegistry: () => registry.freeze(),
    thawRegistry: () => registry.thaw(),
  };
}

export interface StartStackOptions {
  /** Config, data, pid files and logs; a fresh temporary directory for tests. */
  stateDir: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** `stack up`: the processes outlive this one (pid files, no watchdog). Default false. */
  detached?: boolean;
  /** Overrides how the machine is probed (tests of the choice itself). */
  probes?: StackProbes;
  /** Kafka nodes (local JVMs only): 1 (default), or a cluster such as 3 (RF 3, min.insync.replicas 2). */
  brokers?: number;
  /**
   * Local JVMs only, one node: clients reach Kafka over SASL_SSL (SCRAM-SHA-512, a CA of the stack's own)
   * and the registry over HTTPS (the same CA) with basic auth; `clientEnv` holds the variables for that.
   */
  secure?: boolean;
}

/** The real probes: a Docker ping with a short timeout; Java 17+ and either a complete cache or Maven. */
export function machineProbes(env: NodeJS.ProcessEnv = process.env): StackProbes {
  return {
    dockerAnswers: () => dockerAnswers(env),
    async localProblem() {
      const java = await findJava(env);
      if (!java) return `no Java found (install Java ${MIN_JAVA}+ or set JAVA_HOME)`;
      if (java.major < MIN_JAVA)
        return `${java.path} is Java ${java.major}, and the local stack needs ${MIN_JAVA}+`;
      if (!cachedArtifacts(env) && !onPath('mvn', env))
        return 'Maven (mvn) is not on PATH to fetch Kafka and Apicurio';
      return undefined;
    },
  };
}

const silent = () => pino({ level: 'silent' });

/** A stack whose processes run in this state dir right now (started by `stack up`), if any. */
export function runningStack(stateDir: string): StackRecord | undefined {
  const record = readStackRecord(stateDir);
  if (!record) return undefined;
  // A supervised Docker stack dies with its owner (Ryuk removes its containers); a detached one stays.
  if (record.kind === 'docker') return record.detached || pidAlive(record.ownerPid) ? record : undefined;
  return runningKafkaPids(stateDir).length > 0 || runningRegistryPid(stateDir) !== undefined
    ? record
    : undefined;
}

export async function startStack(options: StartStackOptions): Promise<Stack> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? silent();
  const detached = options.detached ?? false;
  const began = Date.now();
  // Before anything is probed or fetched: a mistyped version fails at once, and only that.
  const release = kafkaRelease(env);
  // The secured stack is made of local JVMs (its certificates and SCRAM users are set up around them).
  const chooseEnv = options.secure ? { ...env, HOOKLEDGER_STACK: 'local' } : env;
  const choice = await chooseStack(chooseEnv, options.probes ?? machineProbes(chooseEnv));

  if (choice.kind === 'configured') {
    const refuse = async () => {
      throw new StackError(
        'KAFKA_BROKERS and SCHEMA_REGISTRY_URL point at a stack hookledger did not start: it cannot restart that broker',
      );
    };
    return {
      kind: 'configured',
      brokers: choice.brokers,
      registryUrl: choice.registryUrl,
      logFiles: {},
      pids: () => ({}),
      startupMs: Date.now() - began,
      describe: () => `configured stack: Kafka ${choice.brokers.join(',')}, registry ${choice.registryUrl}`,
      stop: async () => {},
      stopKafka: refuse,
      startKafka: refuse,
      restartKafka: refuse,
      ...registryFaultsRefused(
        'KAFKA_BROKERS and SCHEMA_REGISTRY_URL point at a stack hookledger did not start',
      ),
    };
  }

  const existing = runningStack(options.stateDir);
  if (existing) {
    throw new StackError(
      `a stack already runs from ${options.stateDir} (Kafka ${existing.brokers.join(',')}): use ${stackFiles(options.stateDir).env}, or \`hookledger stack down\` first`,
    );
  }

  if (options.secure && choice.kind === 'local') return startSecureStack(options, env, release, began);

  if (choice.kind === 'docker' && (options.brokers ?? 1) > 1) {
    throw new StackError(
      'a cluster of several brokers runs as local JVMs only: set HOOKLEDGER_STACK=local (Java 17+ and Maven)',
    );
  }

  if (choice.kind === 'docker') {
    const docker = await startDockerStack({ release, logger, detached });
    const record: StackRecord = {
      kind: 'docker',
      detached,
      brokers: docker.kafka.brokers,
      registryUrl: docker.registryUrl,
      kafkaVersion: release.version,
      startedAt: new Date().toISOString(),
      ownerPid: process.pid,
      logFiles: {},
      docker: {
        kafkaContainer: docker.kafka.containerId,
        registryContainer: docker.registryContainerId,
        network: docker.networkId,
      },
    };
    await writeStackRecord(options.stateDir, record);
    return {
      kind: 'docker',
      brokers: docker.kafka.brokers,
      kafkaVersion: release.version,
      registryUrl: docker.registryUrl,
      logFiles: {},
      pids: () => ({}),
      startupMs: Date.now() - began,
      describe: () =>
        `Docker: Kafka ${release.version} on ${docker.kafka.brokers.join(',')} (container ${docker.kafka.containerId.slice(0, 12)}), registry ${docker.registryUrl}`,
      async stop() {
        await docker.stop();
        await forget(options.stateDir);
      },
      stopKafka: () => docker.kafka.stopKafka(),
      startKafka: () => docker.kafka.startKafka(),
      async restartKafka() {
        await docker.kafka.stopKafka();
        await docker.kafka.startKafka();
      },
      ...registryFaultsRefused(
        "a Docker stack's registry gets a new port when started again: use local JVMs",
      ),
    };
  }

  const local = await startLocalStack({
    stateDir: options.stateDir,
    env,
    release,
    logger,
    detached,
    ...(options.brokers === undefined ? {} : { brokers: options.brokers }),
  });
  const { kafka, registry } = local;
  await writeStackRecord(options.stateDir, {
    kind: 'local',
    detached,
    brokers: kafka.brokers,
    registryUrl: registry.url,
    kafkaVersion: release.version,
    startedAt: new Date().toISOString(),
    ownerPid: process.pid,
    logFiles: { kafka: kafka.logFile, registry: registry.logFile },
    ...(kafka.nodes.length > 1 ? { brokerCount: kafka.nodes.length } : {}),
  });
  return {
    kind: 'local',
    brokers: kafka.brokers,
    kafkaVersion: release.version,
    registryUrl: registry.url,
    logFiles: { kafka: kafka.logFile, registry: registry.logFile },
    pids: () => ({ kafka: kafka.pid(), registry: registry.pid() }),
    startupMs: Date.now() - began,
    describe: () =>
      `local JVMs: Kafka ${release.version}${kafka.nodes.length > 1 ? ` (${kafka.nodes.length} brokers)` : ''} on ${kafka.brokers.join(',')}, registry ${registry.url} (logs: ${kafka.logFile}, ${registry.logFile})`,
    async stop() {
      await local.stop();
      await forget(options.stateDir);
    },
    stopKafka: () => kafka.stop(),
    startKafka: () => kafka.start(),
    restartKafka: () => kafka.restart(),
    ...registryFaults(registry),
  };
}

async function startSecureStack(
  options: StartStackOptions,
  env: NodeJS.ProcessEnv,
  release: ReturnType<typeof kafkaRelease>,
  began: number,
): Promise<Stack> {
  if ((options.brokers ?? 1) > 1) throw new StackError('the secured stack runs one broker: drop --brokers');
  const detached = options.detached ?? false;
  const secure = await startSecureLocalStack({
    stateDir: options.stateDir,
    env,
    release,
    logger: options.logger ?? silent(),
    detached,
  });
  const { kafka, registry, brokers, clientEnv, oauthClientEnv } = secure;
  const logFiles = { kafka: kafka.logFile, registry: registry.logFile };
  await writeStackRecord(options.stateDir, {
    kind: 'local',
    detached,
    brokers,
    registryUrl: registry.url,
    kafkaVersion: release.version,
    startedAt: new Date().toISOString(),
    ownerPid: process.pid,
    logFiles,
    clientEnv,
    oauthClientEnv,
    probeBrokers: kafka.brokers,
  });
  return {
    kind: 'local',
    brokers,
    kafkaVersion: release.version,
    registryUrl: registry.url,
    clientEnv,
    oauthClientEnv,
    logFiles,
    pids: () => ({ kafka: kafka.pid(), registry: registry.pid() }),
    startupMs: Date.now() - began,
    describe: () =>
      `local JVMs, secured: Kafka ${release.version} on ${brokers.join(',')} (SASL_SSL, SCRAM-SHA-512 or OAUTHBEARER from ${secure.tokenEndpoint.url}), registry ${registry.url} (HTTPS, basic auth) (logs: ${kafka.logFile}, ${registry.logFile})`,
    async stop() {
      await secure.stop();
      await forget(options.stateDir);
    },
    stopKafka: () => kafka.stop(),
    startKafka: () => kafka.start(),
    restartKafka: () => kafka.restart(),
    ...registryFaults(registry),
  };
}

async function forget(stateDir: string): Promise<void> {
  const files = stackFiles(stateDir);
  await rm(files.record, { force: true });
  await rm(files.env, { force: true });
  await rm(files.oauthEnv, { force: true });
}

/** An extra broker of its own (Kafka only) for fault tests that must not disturb the shared one. */
export interface DedicatedKafka {
  kind: 'docker' | 'local';
  brokers: string[];
  kafkaVersion: string;
  logFile?: string;
  /** The JVM's pid while it runs (local kind). */
  pid(): number | undefined;
  stopKafka(): Promise<void>;
  startKafka(): Promise<void>;
  restartKafka(): Promise<void>;
  /** Stops it for good (the container is removed; a local state dir is left to its owner). */
  stop(): Promise<void>;
  /** One node of a local cluster (`brokers` > 1), 1-based: stop, kill, start or restart it alone. */
  node(id: number): KafkaNode;
}

export async function startDedicatedKafka(options: {
  stateDir: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  probes?: StackProbes;
  /** Nodes (local JVMs only): 1 (default), or a cluster such as 3 for tests that lose a broker. */
  brokers?: number;
  /**
   * Local JVMs only: changes to server.properties, given the ones rendered (a test that puts a proxy
   * in front of the broker advertises the proxy's address).
   */
  extraProperties?: (base: Properties) => Properties;
}): Promise<DedicatedKafka> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? silent();
  const release = kafkaRelease(env);
  const kind = await chooseDedicatedKind(env, options.probes ?? machineProbes(env));
  const size = options.brokers ?? 1;
  if (kind === 'docker' && size > 1) {
    throw new StackError('a cluster of several brokers runs as local JVMs only (HOOKLEDGER_STACK=local)');
  }
  if (kind === 'docker' && options.extraProperties) {
    throw new StackError(
      'a broker with changed properties runs as a local JVM only (HOOKLEDGER_STACK=local)',
    );
  }
  if (kind === 'docker') {
    const docker = await startDockerKafka({ release, logger });
    return {
      kind,
      brokers: docker.brokers,
      kafkaVersion: release.version,
      pid: () => undefined,
      stopKafka: () => docker.stopKafka(),
      startKafka: () => docker.startKafka(),
      async restartKafka() {
        await docker.stopKafka();
        await docker.startKafka();
      },
      stop: () => docker.remove(),
      node: () => {
        throw new StackError('a Docker broker is a single node');
      },
    };
  }
  const [artifacts, java] = await Promise.all([ensureArtifacts({ env, logger, release }), requireJava(env)]);
  const kafka: LocalKafka = await createLocalKafka({
    stateDir: options.stateDir,
    artifacts,
    java: java.path,
    logger,
    // Several may run beside the shared broker on a small machine.
    heap: ['-Xms128m', '-Xmx512m'],
    size,
    ...(options.extraProperties ? { extraProperties: options.extraProperties } : {}),
  });
  await kafka.start();
  return {
    kind,
    brokers: kafka.brokers,
    kafkaVersion: release.version,
    logFile: kafka.logFile,
    pid: () => kafka.pid(),
    stopKafka: () => kafka.stop(),
    startKafka: () => kafka.start(),
    restartKafka: () => kafka.restart(),
    stop: () => kafka.stop(),
    node: (id) => kafka.node(id),
  };
}

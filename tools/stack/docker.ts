// Kafka and Apicurio as containers (testcontainers), for machines where a Docker engine answers.
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { StartedNetwork } from 'testcontainers';
import type { Logger } from '../../runtime/log.js';
import { StackError } from './errors.js';
import type { KafkaRelease } from './kafka-versions.js';
import { freePort } from './ports.js';
import {
  LOCAL_INDEX_MAX_BYTES,
  LOCAL_MIN_SESSION_TIMEOUT_MS,
  MAX_MESSAGE_BYTES,
  newClusterId,
  REGISTRY_SNAPSHOTS_TOPIC,
  REGISTRY_TOPIC,
} from './properties.js';
import { waitForKafka } from './readiness.js';

export const REGISTRY_IMAGE = 'apicurio/apicurio-registry:3.0.9';

/** Inside the network, the registry reaches Kafka by this alias on a listener of its own. */
const KAFKA_ALIAS = 'kafka';
const INTERNAL_PORT = 19092;
const EXTERNAL_PORT = 9092;
const CONTROLLER_PORT = 9093;

type Endpoint = { socketPath: string } | { host: string; port: number };

/** Where the engine listens: DOCKER_HOST (unix:// or tcp://), else the usual socket paths. */
export function dockerEndpoint(env: NodeJS.ProcessEnv = process.env): Endpoint | undefined {
  const dockerHost = env.DOCKER_HOST?.trim();
  if (dockerHost) {
    if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
    const tcp = /^tcp:\/\/([^:/]+):(\d+)/.exec(dockerHost);
    return tcp ? { host: tcp[1]!, port: Number(tcp[2]) } : undefined;
  }
  const candidates = [
    '/var/run/docker.sock',
    env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, 'docker.sock') : '',
    join(homedir(), '.docker', 'run', 'docker.sock'),
    join(homedir(), '.docker', 'desktop', 'docker.sock'),
  ];
  const socketPath = candidates.find((path) => path && existsSync(path));
  return socketPath ? { socketPath } : undefined;
}

/**
 * Whether a Docker engine answers `GET /_ping` within `timeoutMs`. Only a socket file is not enough:
 * a docker client without an engine, or a stopped Docker Desktop, leaves one behind. A TLS endpoint
 * (DOCKER_TLS_VERIFY) counts as answering when it accepts the connection; testcontainers does the rest.
 */
export function dockerAnswers(env: NodeJS.ProcessEnv = process.env, timeoutMs = 1_500): Promise<boolean> {
  const endpoint = dockerEndpoint(env);
  if (!endpoint) return Promise.resolve(false);
  const tls = 'host' in endpoint && Boolean(env.DOCKER_TLS_VERIFY);
  return new Promise((resolve) => {
    const req = request({ ...endpoint, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('socket', (socket) => {
      if (tls) socket.once('connect', () => resolve(true));
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
    req.end();
  });
}

export interface DockerKafka {
  readonly brokers: string[];
  readonly containerId: string;
  /** `host:port` other containers on the same network use. */
  readonly internalBootstrap: string;
  stopKafka(): Promise<void>;
  startKafka(): Promise<void>;
  /** Removes the container (and the network, if it created one). */
  remove(): Promise<void>;
}

export interface DockerStack {
  kafka: DockerKafka;
  registryUrl: string;
  registryContainerId: string;
  networkId: string;
  stop(): Promise<void>;
}

/** The testcontainers module, loaded only when Docker is the chosen kind (it is large). */
async function testcontainers(detached: boolean) {
  // Ryuk removes a session's containers when its process ends: right for tests, wrong for `stack up`,
  // whose containers must outlive the CLI (`stack down` removes them by id instead).
  if (detached) process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  return import('testcontainers');
}

/**
 * Kafka in a container on a fixed host port, so that a container restart keeps the address clients
 * know (a random mapping would change on restart). The port is found free on this machine: with a
 * remote DOCKER_HOST that is a guess, which fails loudly if taken.
 */
export async function startDockerKafka(options: {
  /** Its `image` (apache/kafka:<version>) is what runs. */
  release: KafkaRelease;
  logger: Logger;
  detached?: boolean;
  network?: StartedNetwork;
}): Promise<DockerKafka> {
  const tc = await testcontainers(options.detached ?? false);
  const client = await tc.getContainerRuntimeClient();
  const host = client.info.containerRuntime.host;
  const ownNetwork = options.network ? undefined : await new tc.Network().start();
  const network = options.network ?? ownNetwork!;
  const hostPort = await freePort();
  const brokers = [`${host}:${hostPort}`];
  const started = await new tc.GenericContainer(options.release.image)
    .withNetwork(network)
    .withNetworkAliases(KAFKA_ALIAS)
    .withExposedPorts({ container: EXTERNAL_PORT, host: hostPort })
    .withLabels({ 'dev.hookledger.stack': 'kafka' })
    .withEnvironment({
      CLUSTER_ID: newClusterId(),
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_CONTROLLER_QUORUM_VOTERS: `1@localhost:${CONTROLLER_PORT}`,
      KAFKA_LISTENERS: `EXTERNAL://0.0.0.0:${EXTERNAL_PORT},INTERNAL://0.0.0.0:${INTERNAL_PORT},CONTROLLER://0.0.0.0:${CONTROLLER_PORT}`,
      KAFKA_ADVERTISED_LISTENERS: `EXTERNAL://${brokers[0]},INTERNAL://${KAFKA_ALIAS}:${INTERNAL_PORT}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_INTER_BROKER_LISTENER_NAME: 'INTERNAL',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS: String(LOCAL_MIN_SESSION_TIMEOUT_MS),
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_MESSAGE_MAX_BYTES: String(MAX_MESSAGE_BYTES),
      KAFKA_REPLICA_FETCH_MAX_BYTES: String(MAX_MESSAGE_BYTES),
      KAFKA_NUM_PARTITIONS: '1',
      KAFKA_LOG_INDEX_SIZE_MAX_BYTES: String(LOCAL_INDEX_MAX_BYTES),
    })
    .withWaitStrategy(tc.Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(180_000)
    .start();
  const containerId = started.getId();
  const docker = client.container.getById(containerId);
  await ready(brokers, `the Kafka container ${containerId.slice(0, 12)}`);
  options.logger.info({ brokers, container: containerId.slice(0, 12) }, 'Kafka container ready');

  return {
    brokers,
    containerId,
    internalBootstrap: `${KAFKA_ALIAS}:${INTERNAL_PORT}`,
    async stopKafka() {
      await client.container.stop(docker, { timeout: 15 });
    },
    async startKafka() {
      // The container's filesystem, data included, survives a stop; its port binding is fixed.
      await client.container.start(docker);
      await ready(brokers, `the Kafka container ${containerId.slice(0, 12)}`);
    },
    async remove() {
      await started.stop({ remove: true, removeVolumes: true }).catch(() => {});
      await ownNetwork?.stop().catch(() => {});
    },
  };
}

async function ready(brokers: string[], what: string): Promise<void> {
  if ((await waitForKafka(brokers, { timeoutMs: 120_000 })) !== 'ready') {
    throw new StackError(
      `${what} did not answer on ${brokers.join(',')}: see \`docker logs\` of that container`,
    );
  }
}

/** Kafka and the registry (KafkaSQL on that Kafka, so schema ids live exactly as long as its data). */
export async function startDockerStack(options: {
  release: KafkaRelease;
  logger: Logger;
  detached?: boolean;
}): Promise<DockerStack> {
  const detached = options.detached ?? false;
  const tc = await testcontainers(detached);
  const network = await new tc.Network().start();
  let kafka: DockerKafka | undefined;
  try {
    kafka = await startDockerKafka({ release: options.release, logger: options.logger, detached, network });
    const registry = await new tc.GenericContainer(REGISTRY_IMAGE)
      .withNetwork(network)
      .withExposedPorts(8080)
      .withLabels({ 'dev.hookledger.stack': 'registry' })
      .withEnvironment({
        APICURIO_STORAGE_KIND: 'kafkasql',
        APICURIO_KAFKASQL_BOOTSTRAP_SERVERS: kafka.internalBootstrap,
        APICURIO_KAFKASQL_TOPIC: REGISTRY_TOPIC,
        APICURIO_KAFKASQL_SNAPSHOTS_TOPIC: REGISTRY_SNAPSHOTS_TOPIC,
      })
      // Ready once KafkaSQL has read its journal back (see registryStorageReady), not at the first 200.
      .withWaitStrategy(tc.Wait.forHttp('/health/ready', 8080).forStatusCode(200))
      .withStartupTimeout(180_000)
      .start();
    const registryUrl = `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`;
    const started = kafka;
    return {
      kafka: started,
      registryUrl,
      registryContainerId: registry.getId(),
      networkId: network.getId(),
      async stop() {
        await registry.stop({ remove: true }).catch(() => {});
        await started.remove();
        await network.stop().catch(() => {});
      },
    };
  } catch (error) {
    await kafka?.remove();
    await network.stop().catch(() => {});
    throw error;
  }
}

/** `stack down` for a detached Docker stack: its containers and network, by the ids in stack.json. */
export async function removeDockerStack(ids: { containers: string[]; network?: string }): Promise<void> {
  const tc = await import('testcontainers');
  const client = await tc.getContainerRuntimeClient();
  for (const id of ids.containers) {
    const container = client.container.getById(id);
    await client.container.stop(container, { timeout: 15 }).catch(() => {});
    await client.container.remove(container, { removeVolumes: true }).catch(() => {});
  }
  if (ids.network) await client.network.remove(client.network.getById(ids.network)).catch(() => {});
}

/** `stack restart kafka` for a detached Docker stack. */
export async function restartDockerKafka(containerId: string, brokers: string[]): Promise<void> {
  const tc = await import('testcontainers');
  const client = await tc.getContainerRuntimeClient();
  await client.container.restart(client.container.getById(containerId), { timeout: 15 });
  await ready(brokers, `the Kafka container ${containerId.slice(0, 12)}`);
}

// A local Kafka of one node, or a cluster of several (`stack up --brokers 3`): each node a broker and a
// controller in one JVM, on its own ports and data, so one node can be killed and started again while
// the others keep the cluster serving, as in production.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../runtime/log.js';
import type { Artifacts } from './artifacts.js';
import { StackError } from './errors.js';
import {
  clusterNodeIds,
  createKafkaNode,
  type KafkaNode,
  kafkaPaths,
  runningKafkaPids,
} from './kafka-process.js';
import { freePort, portIsFree } from './ports.js';
import { type ClusterNodePorts, newClusterId, type Properties } from './properties.js';

/** The brokers of a local stack, whether one node or several: what the stack starts, stops and reports. */
export interface LocalKafka {
  readonly brokers: string[];
  readonly nodes: readonly KafkaNode[];
  /** The first node's log; a cluster's nodes log to logs/kafka-<n>.log beside it. */
  readonly logFile: string;
  /** The first running node's pid. */
  pid(): number | undefined;
  /** Starts every node at once: a KRaft quorum forms only once a majority of controllers runs. */
  start(): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Node `id` (1-based), for per-node faults: stop, kill, start, restart. */
  node(id: number): KafkaNode;
}

interface ClusterFile {
  size: number;
  clusterId: string;
  nodes: ClusterNodePorts[];
}

export interface LocalKafkaOptions {
  stateDir: string;
  artifacts: Artifacts;
  java: string;
  logger: Logger;
  detached?: boolean;
  heap?: string[];
  /** How many nodes (default 1: the single node in `kafka/`). */
  size?: number;
  /** Changes to each node's server.properties (fault tests: an advertised address in front of it). */
  extraProperties?: (base: Properties) => Properties;
}

/** The largest cluster `stack up --brokers` makes: enough to lose a node with RF 3, small enough for a laptop. */
export const MAX_LOCAL_BROKERS = 5;

export function clusterFile(stateDir: string): string {
  return join(stateDir, 'kafka-cluster.json');
}

/** How many nodes hold data in this state directory: 0 (none yet), 1 (the single node) or the cluster's size. */
export function formattedNodes(stateDir: string): number {
  const ids = clusterNodeIds(stateDir).filter((id) =>
    existsSync(join(kafkaPaths(stateDir, id).dataDir, 'meta.properties')),
  );
  if (ids.length > 0) return ids.length;
  return existsSync(join(kafkaPaths(stateDir).dataDir, 'meta.properties')) ? 1 : 0;
}

export async function createLocalKafka(options: LocalKafkaOptions): Promise<LocalKafka> {
  const size = options.size ?? 1;
  if (!Number.isInteger(size) || size < 1 || size > MAX_LOCAL_BROKERS) {
    throw new StackError(`--brokers: expected 1 to ${MAX_LOCAL_BROKERS}, got ${size}`);
  }
  const holds = formattedNodes(options.stateDir);
  if (holds !== 0 && holds !== size) {
    throw new StackError(
      `the state in ${options.stateDir} is a ${holds}-broker stack's, not ${size}: start it with --brokers ${holds}, or start afresh (\`hookledger stack down --purge\`, or another --state-dir)`,
    );
  }
  if (size === 1) return singleNode(await createKafkaNode(options));

  const cluster = await clusterPorts(options.stateDir, size);
  const nodes: KafkaNode[] = [];
  for (let nodeId = 1; nodeId <= size; nodeId++) {
    nodes.push(
      await createKafkaNode({
        ...options,
        member: { nodeId, nodes: cluster.nodes, clusterId: cluster.clusterId },
        // A node back from a crash recovers its logs and catches up on the metadata before the
        // controller unfences it; on a busy machine that takes minutes, not seconds.
        readyTimeoutMs: 240_000,
      }),
    );
  }
  const all: LocalKafka = {
    brokers: nodes.flatMap((n) => n.brokers),
    nodes,
    logFile: nodes[0]!.logFile,
    pid: () => nodes.map((n) => n.pid()).find((pid) => pid !== undefined),
    async start() {
      const started = await Promise.allSettled(nodes.map((n) => n.start()));
      const failed = started.find((outcome) => outcome.status === 'rejected');
      if (failed) {
        // Half a quorum is no cluster: stop what did start, and report the first failure.
        await Promise.all(nodes.map((n) => n.stop()));
        throw failed.reason;
      }
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
    async restart() {
      await all.stop();
      await all.start();
    },
    node: (id) => nodeById(nodes, id),
  };
  return all;
}

function singleNode(node: KafkaNode): LocalKafka {
  return {
    brokers: node.brokers,
    nodes: [node],
    logFile: node.logFile,
    pid: () => node.pid(),
    start: () => node.start(),
    stop: () => node.stop(),
    restart: () => node.restart(),
    node: (id) => nodeById([node], id),
  };
}

function nodeById(nodes: readonly KafkaNode[], id: number): KafkaNode {
  const node = nodes[id - 1];
  if (!Number.isInteger(id) || node === undefined) {
    throw new StackError(
      `no Kafka node ${id}: this stack has ${nodes.length === 1 ? 'one node (1)' : `nodes 1 to ${nodes.length}`}`,
    );
  }
  return node;
}

/**
 * Every node's ports and the cluster id, kept in kafka-cluster.json: the same ones again when they are
 * free (or the cluster runs), fresh ones otherwise. Each node's config names every controller, so all
 * ports are chosen before any config is written.
 */
async function clusterPorts(stateDir: string, size: number): Promise<ClusterFile> {
  const file = clusterFile(stateDir);
  let previous: ClusterFile | undefined;
  try {
    previous = JSON.parse(await readFile(file, 'utf8')) as ClusterFile;
  } catch {}
  if (previous && previous.size === size) {
    const running = runningKafkaPids(stateDir).length > 0;
    const free = async (n: ClusterNodePorts) =>
      (await portIsFree(n.port)) && (await portIsFree(n.controllerPort));
    if (running || (await Promise.all(previous.nodes.map(free))).every(Boolean)) return previous;
  }
  const taken = new Set<number>();
  const fresh = async () => {
    let port = await freePort();
    while (taken.has(port)) port = await freePort();
    taken.add(port);
    return port;
  };
  const nodes: ClusterNodePorts[] = [];
  for (let i = 0; i < size; i++) nodes.push({ port: await fresh(), controllerPort: await fresh() });
  const chosen: ClusterFile = { size, clusterId: previous?.clusterId ?? newClusterId(), nodes };
  await mkdir(stateDir, { recursive: true });
  await writeFile(file, `${JSON.stringify(chosen, null, 2)}\n`);
  return chosen;
}

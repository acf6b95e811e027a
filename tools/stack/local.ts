// The local-JVM stack: artifacts, then Kafka, then the registry on it; stopped in the reverse order.
import type { Logger } from '../../runtime/log.js';
import { ensureArtifacts, requireJava } from './artifacts.js';
import { createLocalKafka, formattedNodes, type LocalKafka } from './kafka-cluster.js';
import type { KafkaRelease } from './kafka-versions.js';
import { startRegistryOnKafka } from './registry-on-kafka.js';
import type { RegistryNode } from './registry-process.js';

export interface LocalStack {
  kafka: LocalKafka;
  registry: RegistryNode;
  stop(): Promise<void>;
}

export async function startLocalStack(options: {
  stateDir: string;
  env: NodeJS.ProcessEnv;
  release: KafkaRelease;
  logger: Logger;
  detached: boolean;
  /** Kafka nodes: 1, or a cluster (`stack up --brokers 3`). */
  brokers?: number;
}): Promise<LocalStack> {
  const { stateDir, env, release, logger, detached } = options;
  const [artifacts, java] = await Promise.all([ensureArtifacts({ env, logger, release }), requireJava(env)]);
  // Unless told, as many nodes as the state holds data for: a cluster restarts as a cluster.
  const size = options.brokers ?? Math.max(1, formattedNodes(stateDir));
  const kafka = await createLocalKafka({
    stateDir,
    artifacts,
    java: java.path,
    logger,
    detached,
    size,
    // Three brokers and the registry share a laptop: each node gets less than the single one.
    ...(size > 1 ? { heap: ['-Xms128m', '-Xmx512m'] } : {}),
  });
  await kafka.start();
  const { registry, stop } = await startRegistryOnKafka(kafka, {
    stateDir,
    artifacts,
    java: java.path,
    logger,
    detached,
  });
  return { kafka, registry, stop };
}

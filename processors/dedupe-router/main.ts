// Starts the dedupe-router stage: schema ids looked up once, then the topology on its consumer group.

import type { Config } from '../../runtime/config.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import type { RunningStage, StageSettings } from '../../runtime/streams/stage.js';
import { startStreamApp } from '../../runtime/streams/stream-runner.js';
import type { Topology } from '../../runtime/streams/topology.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { topicNames, valueSubject } from '../../schemas/topics.js';
import { dedupeMetricEvents } from './metrics.js';
import type { RawInput } from './poison.js';
import type { RouteTopic } from './route.js';
import { dedupeTopology, ROUTER_OUTPUTS } from './topology.js';

export const DEDUPE_ROUTER = 'dedupe-router';

/** The consumer group of the live router; its transactional id is `<group>-<instance id>`. */
export function dedupeRouterAppId(prefix: string): string {
  return `${prefix}hookledger-dedupe-router`;
}

/** The live router's topology for a configuration: schema ids of its outputs looked up once. */
export async function liveDedupeTopology(config: Config, serde: Serde): Promise<Topology<RawInput>> {
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const topicOf = (logical: RouteTopic) => `${prefix}${logical}`;
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) {
    const topic = topicOf(logical);
    schemaIds.set(topic, await serde.latestSchemaId(valueSubject(topic)));
  }
  return dedupeTopology({
    rawTopic: names.raw,
    changelogTopic: names.dedupeChangelog,
    topicOf,
    schemaIds,
    serde,
    windowMs: config.DEDUPE_WINDOW,
  });
}

export async function startDedupeRouter({
  config,
  logger,
  registry,
  instanceId = config.HOOKLEDGER_INSTANCE_ID,
}: StageSettings): Promise<RunningStage> {
  const log = logger.child({ stage: DEDUPE_ROUTER });
  const serde = createSerde({
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: 'hookledger-dedupe-router',
  });
  const topology = await liveDedupeTopology(config, serde);
  const metrics = createStreamMetrics({ app: DEDUPE_ROUTER, registry, events: dedupeMetricEvents(registry) });
  const app = await startStreamApp({
    kafka: { brokers: config.KAFKA_BROKERS, clientId: 'hookledger-dedupe-router', logger: log },
    topology,
    appId: dedupeRouterAppId(config.TOPIC_PREFIX),
    instanceId,
    logger: log,
    instrument: metrics.instrument,
    transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
    sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
  });
  metrics.watch(app);
  return { name: DEDUPE_ROUTER, app, close: () => app.close() };
}

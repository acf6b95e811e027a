// Starts the dedupe-router stage: schema ids looked up once, then the topology on its consumer group.

import { type Config, ConfigError } from '../../runtime/config.js';
import { withAdmin } from '../../runtime/kafka/admin.js';
import { assertCoPartitioned } from '../../runtime/kafka/co-partitioning.js';
import { isLoginRefused } from '../../runtime/kafka/login.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import type { Logger } from '../../runtime/log.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import { startRejoiningApp } from '../../runtime/streams/rejoining-app.js';
import type { RunningStage, StageSettings } from '../../runtime/streams/stage.js';
import { stallTimeoutMs, startStreamApp, stateDirOf } from '../../runtime/streams/stream-runner.js';
import type { Topology } from '../../runtime/streams/topology.js';
import { ownSchemaId } from '../../schemas/own-schema-id.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { entityMaxMessageBytes, topicNames } from '../../schemas/topics.js';
import { dedupeMetricEvents } from './metrics.js';
import type { RawInput } from './poison.js';
import { checkDedupeRetention } from './retention-check.js';
import type { RouteSettings, RouteTopic } from './route.js';
import { dedupeTopology, ROUTER_OUTPUTS } from './topology.js';

export const DEDUPE_ROUTER = 'dedupe-router';

/** The consumer group of the live router; its transactional id is `<group>-<instance id>`. */
export function dedupeRouterAppId(prefix: string): string {
  return resourceId(prefix, 'dedupe-router');
}

/** How the configuration changes routing: replay reads it the same way, so a replay equals live. */
export function routeSettingsOf(config: Config): RouteSettings {
  return {
    webhookDateOffsetMinutes: config.WEBHOOK_DATE_ZONE,
    maxAgeMs: config.WEBHOOK_MAX_AGE,
    maxAheadMs: config.WEBHOOK_MAX_AHEAD,
    maxEntityEventBytes: entityMaxMessageBytes(config.INGEST_BODY_LIMIT),
  };
}

/** The live router's topology for a configuration: schema ids of its outputs looked up once. */
export async function liveDedupeTopology(config: Config, serde: Serde): Promise<Topology<RawInput>> {
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const topicOf = (logical: RouteTopic) => `${prefix}${logical}`;
  const schemaIds = new Map<string, number>();
  for (const logical of ROUTER_OUTPUTS) {
    const topic = topicOf(logical);
    schemaIds.set(topic, await ownSchemaId(serde, prefix, topic));
  }
  return dedupeTopology({
    rawTopic: names.raw,
    changelogTopic: names.dedupeChangelog,
    topicOf,
    schemaIds,
    serde,
    windowMs: config.DEDUPE_WINDOW,
    routeSettings: routeSettingsOf(config),
  });
}

export async function startDedupeRouter({
  config,
  logger,
  registry,
  instanceId = config.HOOKLEDGER_INSTANCE_ID,
}: StageSettings): Promise<RunningStage> {
  const log = logger.child({ stage: DEDUPE_ROUTER });
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-dedupe-router' });
  const kafka: KafkaSettings = kafkaSettings(config, 'hookledger-dedupe-router', log);
  const names = topicNames(config.TOPIC_PREFIX);
  // Partitions added to webhooks.raw (or its changelog) would let a retry pass as new: refuse to start.
  await withAdmin(kafka, (admin) =>
    assertCoPartitioned(admin, DEDUPE_ROUTER, [{ input: names.raw, changelog: names.dedupeChangelog }]),
  );
  await checkRetention(kafka, config, log);
  const topology = await liveDedupeTopology(config, serde);
  const metrics = createStreamMetrics({ app: DEDUPE_ROUTER, registry, events: dedupeMetricEvents(registry) });
  // A new consumer rejoins when librdkafka fences a static member whose coordinator moved.
  const app = await startRejoiningApp({
    start: () =>
      startStreamApp({
        kafka,
        topology,
        appId: dedupeRouterAppId(config.TOPIC_PREFIX),
        instanceId,
        logger: log,
        instrument: metrics.instrument,
        transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
        stallTimeoutMs: stallTimeoutMs(config),
        sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
        commitIntervalMs: config.PROCESSOR_COMMIT_INTERVAL_MS,
        stateDir: stateDirOf(config),
        standbyReplicas: config.PROCESSOR_STANDBY_REPLICAS,
      }),
    logger: log,
    instanceId,
  });
  metrics.watch(app);
  return { name: DEDUPE_ROUTER, app, close: () => app.close() };
}

/**
 * Refuses a window the changelog cannot keep (ConfigError: one line, exit). A check that cannot run (the
 * cluster is unreachable) is only warned about: the stream app reports that itself, with its retries. A
 * refused login stops the start here: no retry will change it, and the stream app would take seconds to say so.
 */
async function checkRetention(kafka: KafkaSettings, config: Config, log: Logger): Promise<void> {
  const warn = (message: string) => log.warn(message);
  try {
    await withAdmin(kafka, (admin) =>
      checkDedupeRetention(admin, {
        windowMs: config.DEDUPE_WINDOW,
        changelogTopic: topicNames(config.TOPIC_PREFIX).dedupeChangelog,
        warn,
      }),
    );
  } catch (error) {
    if (error instanceof ConfigError || isLoginRefused(error)) throw error;
    warn(`could not check the dedupe changelog's retention: ${(error as Error).message}`);
  }
}

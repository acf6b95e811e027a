// Starts the enrich stage (off unless ENRICH=true): the full query read once, schema ids looked up
// once, then the topology exactly-once on its own consumer group, beside the router and the tables.
import { type Config, ConfigError } from '../../runtime/config.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import { startRejoiningApp } from '../../runtime/streams/rejoining-app.js';
import type { RunningStage, StageSettings } from '../../runtime/streams/stage.js';
import { stallTimeoutMs, startStreamApp } from '../../runtime/streams/stream-runner.js';
import { ownSchemaId } from '../../schemas/own-schema-id.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde } from '../../schemas/serde.js';
import { entityMaxMessageBytes, topicNames } from '../../schemas/topics.js';
import type { FetchPolicy } from './fetch-decision.js';
import { Fetcher, type FetchSettings } from './fetcher.js';
import { enrichMetricEvents } from './metrics.js';
import { readQueryShape } from './selection.js';
import { enrichTopology } from './topology.js';

export const ENRICH = 'enrich';

export function enrichAppId(prefix: string): string {
  return resourceId(prefix, 'enrich');
}

/** What to fetch and from where, from the configuration; a query it cannot read stops the start. */
export function fetchPolicyOf(config: Config): FetchPolicy {
  let fullPaths: readonly string[];
  try {
    fullPaths = readQueryShape(config.ENRICH_QUERY).paths;
  } catch (error) {
    throw new ConfigError(`ENRICH_QUERY: ${(error as Error).message}`);
  }
  return {
    triggers: new Set(config.ENRICH_TRIGGERS),
    fullPaths,
    allowedOrigins: config.ENRICH_ALLOWED_ENDPOINTS,
  };
}

export function fetchSettingsOf(config: Config): FetchSettings {
  const credentials = config.ENRICH_CREDENTIALS;
  return {
    timeoutMs: config.ENRICH_TIMEOUT,
    retries: config.ENRICH_RETRIES,
    budgetMs: config.ENRICH_RETRY_BUDGET,
    backOff: { initialMs: config.ENRICH_BACKOFF, maxMs: config.ENRICH_RETRY_BUDGET },
    ratePerSecond: config.ENRICH_RATE_LIMIT,
    concurrency: config.ENRICH_CONCURRENCY,
    breaker: { failures: config.ENRICH_BREAKER_FAILURES, cooldownMs: config.ENRICH_BREAKER_COOLDOWN },
    // One record's answer is no larger than a delivery of it would be.
    maxAnswerBytes: config.INGEST_BODY_LIMIT,
    header:
      credentials === undefined
        ? undefined
        : {
            name: config.ENRICH_AUTH_HEADER,
            value:
              config.ENRICH_AUTH_SCHEME === 'none'
                ? credentials
                : `${config.ENRICH_AUTH_SCHEME} ${credentials}`,
          },
  };
}

export async function startEnrich({
  config,
  logger,
  registry,
  instanceId = config.HOOKLEDGER_INSTANCE_ID,
}: StageSettings): Promise<RunningStage> {
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const log = logger.child({ stage: ENRICH });
  const policy = fetchPolicyOf(config);
  const kafka = kafkaSettings(config, 'hookledger-enrich', log);
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-enrich' });
  const source = names.entity('energy-switch');
  const schemaIds = new Map<string, number>();
  for (const topic of [source, names.failures, names.dlq])
    schemaIds.set(topic, await ownSchemaId(serde, prefix, topic));
  const events = enrichMetricEvents(registry);
  const metrics = createStreamMetrics({ app: ENRICH, registry, events });
  const fetcher = new Fetcher(fetchSettingsOf(config), { instrument: metrics.instrument });
  const topology = enrichTopology({
    source,
    failures: names.failures,
    dlq: names.dlq,
    schemaIds,
    serde,
    policy,
    query: config.ENRICH_QUERY,
    fetcher,
    maxEntityEventBytes: entityMaxMessageBytes(config.INGEST_BODY_LIMIT),
  });
  log.info(
    {
      endpoints: [...policy.allowedOrigins],
      triggers: config.ENRICH_TRIGGERS,
      fields: policy.fullPaths.length,
    },
    'enrich: fetching what deliveries leave out',
  );
  const app = await startRejoiningApp({
    start: () =>
      startStreamApp({
        kafka,
        topology,
        appId: enrichAppId(prefix),
        instanceId,
        logger: log,
        instrument: metrics.instrument,
        transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
        // A batch's fetches run together: about two rounds of them per batch, so a batch stays well
        // inside the transaction timeout even when each fetch uses its whole retry budget.
        maxBatchRecords: 2 * config.ENRICH_CONCURRENCY,
        stallTimeoutMs: stallTimeoutMs(config),
        sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
        commitIntervalMs: config.PROCESSOR_COMMIT_INTERVAL_MS,
      }),
    logger: log,
    instanceId,
  });
  metrics.watch(app);
  return { name: ENRICH, app, close: () => app.close() };
}

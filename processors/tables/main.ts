// Starts the tables stage: schema ids looked up once, then the topology exactly-once on its group.
import { withAdmin } from '../../runtime/kafka/admin.js';
import { assertCoPartitioned } from '../../runtime/kafka/co-partitioning.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import { createStreamMetrics } from '../../runtime/streams/metrics.js';
import { startRejoiningApp } from '../../runtime/streams/rejoining-app.js';
import type { RunningStage, StageSettings } from '../../runtime/streams/stage.js';
import { stallTimeoutMs, startStreamApp, stateDirOf } from '../../runtime/streams/stream-runner.js';
import { ownSchemaId } from '../../schemas/own-schema-id.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicNames } from '../../schemas/topics.js';
import { tablesMetricEvents } from './metrics.js';
import { type TableTopic, tablesTopology } from './topology.js';

export const TABLES = 'tables';

export function tablesAppId(prefix: string): string {
  return resourceId(prefix, 'tables');
}

export async function startTables({
  config,
  logger,
  registry,
  instanceId = config.HOOKLEDGER_INSTANCE_ID,
}: StageSettings): Promise<RunningStage> {
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const log = logger.child({ stage: TABLES });
  const kafka = kafkaSettings(config, 'hookledger-tables', log);
  // A table's state is restored partition for partition from its merge changelog: the counts must match.
  await withAdmin(kafka, (admin) =>
    assertCoPartitioned(
      admin,
      TABLES,
      TABLE_STREAMS.map((stream) => ({
        input: names.entity(stream),
        changelog: names.mergeChangelog(stream),
      })),
    ),
  );
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-tables' });
  const tables: TableTopic[] = [];
  for (const stream of TABLE_STREAMS) {
    tables.push({
      stream,
      source: names.entity(stream),
      latest: names.latest(stream),
      changelog: names.mergeChangelog(stream),
      schemaId: await ownSchemaId(serde, prefix, names.latest(stream)),
    });
  }
  const topology = tablesTopology({ tables, serde, windowMs: config.DEDUPE_WINDOW });
  const metrics = createStreamMetrics({ app: TABLES, registry, events: tablesMetricEvents(registry) });
  // A new consumer rejoins when librdkafka fences a static member whose coordinator moved.
  const app = await startRejoiningApp({
    start: () =>
      startStreamApp({
        kafka,
        topology,
        appId: tablesAppId(prefix),
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
  return { name: TABLES, app, close: () => app.close() };
}

// `hookledger repartition`: copies webhooks.raw into the raw topic of a new topic set (another
// TOPIC_PREFIX) whose partition count differs, exactly once, each record keyed, stamped and headed as
// before and placed by the partitioner as ingest places it there. The new set's processors (or a
// replay under its prefix) then rebuild every derived topic from it with each webhook id's deliveries
// in one partition again: the safe way to more partitions (docs/scaling.md).
import type { Config } from '../../runtime/config.js';
import { type TopicAdmin, withAdmin } from '../../runtime/kafka/admin.js';
import { resourceId } from '../../runtime/kafka/resource-ids.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import type { Logger } from '../../runtime/log.js';
import type { InputRecord, ProcessorContext } from '../../runtime/streams/processor.js';
import { type StreamApp, startStreamApp } from '../../runtime/streams/stream-runner.js';
import type { Topology } from '../../runtime/streams/topology.js';
import { topicNames } from '../../schemas/topics.js';

/** The source and target are not a valid pair: one line for the user. */
export class RepartitionError extends Error {
  override name = 'RepartitionError';
}

const COPY_SINK = 'raw';

/** webhooks.raw → the new set's webhooks.raw, byte for byte; the target's partitioner places each key. */
export function copyTopology(from: string, to: string): Topology<Buffer | null> {
  return {
    name: 'repartition',
    sources: [{ topic: from, deserialize: async (message) => message.value }],
    processor: {
      name: 'copy',
      create: () => {
        let context: ProcessorContext;
        return {
          init: (c) => {
            context = c;
          },
          process: (record: InputRecord<Buffer | null>) =>
            // Raw keys are never null (webhook.id, else the body's sha1).
            context.forward(COPY_SINK, record.key ?? '', record.value, {
              timestamp: record.timestamp,
              headers: record.headers,
            }),
        };
      },
    },
    stores: [],
    sinks: [{ name: COPY_SINK, topic: to, serialize: (value) => value as Buffer }],
  };
}

/** The copy's consumer group: its committed offsets are how far it got (a rerun goes on from there). */
export function repartitionAppId(fromPrefix: string, toPrefix: string): string {
  return resourceId(fromPrefix, `repartition-to-${toPrefix.replace(/[^A-Za-z0-9._-]/g, '_') || 'none'}`);
}

export interface RepartitionProgress {
  /** Records of the source copied (committed), and the source's end offsets summed as the run began. */
  copied: bigint;
  total: bigint;
}

export interface RepartitionOptions {
  config: Config;
  logger: Logger;
  /** The new topic set's TOPIC_PREFIX; its topics exist (`TOPIC_PREFIX=<it> hookledger topics --partitions n`). */
  toPrefix: string;
  /** Keep copying new deliveries until the signal (the cut-over); otherwise stop at the ends seen at start. */
  follow?: boolean;
  signal?: AbortSignal;
  onProgress?: (progress: RepartitionProgress) => void;
  pollMs?: number;
}

export interface RepartitionResult {
  from: { topic: string; partitions: number };
  to: { topic: string; partitions: number };
  appId: string;
  /** Every record up to the ends seen at start is copied. */
  caughtUp: boolean;
}

async function partitionsOf(admin: TopicAdmin, topic: string): Promise<number | undefined> {
  const [found] = await admin.describeTopics([topic]);
  return found?.partitions.length;
}

export async function runRepartition({
  config,
  logger,
  toPrefix,
  follow = false,
  signal,
  onProgress,
  pollMs = 500,
}: RepartitionOptions): Promise<RepartitionResult> {
  const fromPrefix = config.TOPIC_PREFIX;
  if (toPrefix === fromPrefix)
    throw new RepartitionError(
      `--to-prefix: "${toPrefix}" is TOPIC_PREFIX itself; name the new topic set's prefix`,
    );
  const from = topicNames(fromPrefix).raw;
  const to = topicNames(toPrefix).raw;
  const appId = repartitionAppId(fromPrefix, toPrefix);
  const log = logger.child({ component: 'repartition', from, to });
  const settings = kafkaSettings(config, appId, log);
  return withAdmin(settings, async (admin) => {
    const fromPartitions = await partitionsOf(admin, from);
    if (fromPartitions === undefined) throw new RepartitionError(`topic ${from} does not exist`);
    const toPartitions = await partitionsOf(admin, to);
    if (toPartitions === undefined)
      throw new RepartitionError(
        `topic ${to} does not exist: create the new topic set first (TOPIC_PREFIX=${toPrefix} hookledger topics --partitions <n>)`,
      );
    const ends = new Map((await admin.watermarks(from)).map((m) => [m.partition, BigInt(m.high)]));
    const total = [...ends.values()].reduce((a, b) => a + b, 0n);
    const app: StreamApp = await startStreamApp({
      kafka: settings,
      topology: copyTopology(from, to),
      appId,
      instanceId: config.HOOKLEDGER_INSTANCE_ID,
      logger: log,
      transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
      sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
      commitIntervalMs: config.PROCESSOR_COMMIT_INTERVAL_MS,
    });
    let caughtUp = false;
    try {
      for (;;) {
        const at = await admin.committedOffsets(appId, from);
        let copied = 0n;
        caughtUp = true;
        for (const [partition, end] of ends) {
          const offset = at.get(partition) ?? 0n;
          copied += offset < end ? offset : end;
          if (end > 0n && offset < end) caughtUp = false;
        }
        onProgress?.({ copied, total });
        if ((caughtUp && !follow) || signal?.aborted) break;
        const failure = app.failure();
        if (failure) throw failure;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    } finally {
      await app.close();
    }
    return {
      from: { topic: from, partitions: fromPartitions },
      to: { topic: to, partitions: toPartitions },
      appId,
      caughtUp,
    };
  });
}

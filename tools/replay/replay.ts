// `hookledger replay`: webhooks.raw (a range of it) through the live topologies with fresh state into
// side-by-side topics, until every partition reaches its end bound. Never writes a live topic.
import { routeSettingsOf } from '../../processors/dedupe-router/main.js';
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import { tablesTopology } from '../../processors/tables/topology.js';
import type { Config } from '../../runtime/config.js';
import { type TopicAdmin, withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import type { Logger } from '../../runtime/log.js';
import { type StreamApp, startStreamApp } from '../../runtime/streams/stream-runner.js';
import type { Topology } from '../../runtime/streams/topology.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicNames } from '../../schemas/topics.js';
import { boundedTopology, CommittedCounter, type StageCounts } from './bounded-topology.js';
import {
  BoundsError,
  hasBounds,
  loadBounds,
  type PartitionRange,
  type RangeRequest,
  rangesOf,
  startGroupAt,
} from './bounds.js';
import { follow, type ReplayProgress, type RunningPart, startsOf } from './follow.js';
import { loadKeptRequest, saveNotedBounds } from './kept-request.js';
import { ensureReplayTopics, replayAppId, replaySpecs, replayTopic } from './topics.js';

export type { ReplayProgress } from './follow.js';

export type ReplayStage = 'dedupe-router' | 'tables' | 'all';

export interface ReplayOptions {
  config: Config;
  logger: Logger;
  id: string;
  stage: ReplayStage;
  request: RangeRequest;
  /** Only deliveries with one of these triggers are routed (others are skipped, offsets advance). */
  triggers?: readonly string[];
  signal?: AbortSignal;
  onProgress?: (progress: ReplayProgress) => void;
  /** How often progress is checked (committed offsets), ms. */
  pollMs?: number;
  /** The consumers' fetch size per partition (smaller: more, shorter transactions). */
  maxBytesPerPartition?: number;
  /**
   * Input records per transaction at most, also while catching up (a replay always is: 50,000 by
   * default, commit-policy.ts); smaller: more, shorter transactions, and progress reported more often.
   */
  commitMaxRecords?: number;
}

export interface StageOutcome {
  stage: 'dedupe-router' | 'tables';
  appId: string;
  /** Source topic → ranges (this run's start position, end bound). */
  ranges: Map<string, PartitionRange[]>;
  counts: StageCounts;
}

export interface ReplayResult {
  id: string;
  completed: boolean;
  /** The bounds were found from an earlier run with the same id. */
  resumed: boolean;
  stages: StageOutcome[];
  /** live topic → its replay copy (outputs only, not the changelogs). */
  topics: Map<string, string>;
  /** The --trigger filter, when there was one. */
  triggers?: readonly string[];
  /** Groups and topics that belong to the replay (for the clean-up instructions). */
  groups: string[];
  internalTopics: string[];
}

/** The replay was started with other bounds: one line for the user. */
export class ReplayConflictError extends Error {
  override name = 'ReplayConflictError';
}

/**
 * Bounds for a source topic: those kept from an earlier run of this replay, or resolved now and kept.
 * Returns the ranges from this run's starting position to the end bound.
 */
async function boundsFor(
  admin: TopicAdmin,
  options: {
    settings: KafkaSettings;
    boundsGroup: string;
    appId: string;
    topic: string;
    request: RangeRequest;
    triggers?: readonly string[] | undefined;
  },
): Promise<{ ranges: PartitionRange[]; resumed: boolean; triggers: readonly string[] | undefined }> {
  const { settings, boundsGroup, appId, topic, request } = options;
  let { triggers } = options;
  const stored = await loadBounds(admin, boundsGroup, topic);
  let ends: Map<number, bigint>;
  let starts: PartitionRange[];
  if (stored !== undefined) {
    if (hasBounds(request))
      throw new ReplayConflictError(
        `replay bounds are kept from its first run (end offsets of ${topic}: ${[...stored].map(([p, o]) => `${p}:${o}`).join(',')}): run it again without --from/--to/--from-offset/--to-offset, or use a new --id`,
      );
    ends = stored;
    // A resumed run covers what the first asked for: its starts (a partition the first run had not begun
    // starts there, not at the topic's first offset) and its --trigger filter, kept in the bounds' notes.
    const lows = (await admin.watermarks(topic)).map((m) => ({ partition: m.partition, low: BigInt(m.low) }));
    const kept = await loadKeptRequest(settings, boundsGroup, topic, lows);
    starts = kept?.ranges ?? [...stored].map(([partition, end]) => ({ partition, start: 0n, end }));
    if (kept?.noted === true) {
      if (triggers !== undefined && !sameTriggers(triggers, kept.triggers))
        throw new ReplayConflictError(
          `replay ${describeTriggers(kept.triggers)} in its first run: run it again ${kept.triggers === undefined ? 'without --trigger' : `with the same --trigger (or none)`}, or use a new --id`,
        );
      triggers = kept.triggers;
    }
  } else {
    starts = await rangesOf(admin, topic, request);
    ends = new Map(starts.map((r) => [r.partition, r.end]));
    // The bounds first: a run interrupted right after this resumes with them. Their notes keep the
    // starts and the trigger filter for `replay diff`.
    await saveNotedBounds(settings, boundsGroup, topic, starts, triggers);
  }
  const positions = await startGroupAt(admin, appId, topic, starts);
  const ranges = [...ends].map(([partition, end]) => {
    const at = positions.get(partition) ?? end;
    return { partition, start: at > end ? end : at, end };
  });
  return {
    ranges: ranges.sort((a, b) => a.partition - b.partition),
    resumed: stored !== undefined,
    triggers,
  };
}

function sameTriggers(a: readonly string[], b: readonly string[] | undefined): boolean {
  return b !== undefined && a.length === b.length && a.every((t) => b.includes(t));
}

function describeTriggers(triggers: readonly string[] | undefined): string {
  return triggers === undefined ? 'took every trigger' : `took only --trigger ${triggers.join(',')}`;
}

export async function runReplay(options: ReplayOptions): Promise<ReplayResult> {
  const { config, logger, id, stage, request, signal, onProgress, pollMs = 1_000 } = options;
  /** As asked, or on a resumed run as its first run asked (boundsFor). */
  let triggers = options.triggers;
  const pacing = {
    ...(options.maxBytesPerPartition === undefined
      ? {}
      : { maxBytesPerPartition: options.maxBytesPerPartition }),
    ...(options.commitMaxRecords === undefined ? {} : { commitMaxRecords: options.commitMaxRecords }),
  };
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const log = logger.child({ component: 'replay', replay: id });
  if (stage === 'tables' && (hasBounds(request) || triggers !== undefined))
    throw new BoundsError('--stage tables replays the live entity streams whole: no --from/--to/--trigger');
  const settings: KafkaSettings = kafkaSettings(config, `hookledger-replay-${id}`, log);
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-replay' });
  const boundsGroup = `${replayAppId(prefix, id, 'bounds')}`;
  const routerApp = replayAppId(prefix, id, 'dedupe-router');
  // The tables of a whole replay read the replay's streams; `--stage tables` reads the live ones.
  const tablesApp = replayAppId(prefix, id, stage === 'all' ? 'tables' : 'tables-from-live');
  const withRouter = stage !== 'tables';
  const withTables = stage !== 'dedupe-router';

  const started = Date.now();
  const parts: RunningPart[] = [];
  const topics = new Map<string, string>();
  const internalTopics: string[] = [];
  let resumed = false;
  let completed = false;
  try {
    await withAdmin(settings, async (admin) => {
      const live = [
        ...(withRouter ? [...ROUTER_OUTPUTS.map((l) => `${prefix}${l}`), names.dedupeChangelog] : []),
        ...(withTables ? TABLE_STREAMS.flatMap((s) => [names.latest(s), names.mergeChangelog(s)]) : []),
      ];
      // `--stage tables` builds the replay's tables from the live streams, the others from the replay's
      // own: one id never mixes both into the same table topics.
      const other = withRouter ? names.entity(TABLE_STREAMS[0]) : names.raw;
      if ((await loadBounds(admin, boundsGroup, other)) !== undefined)
        throw new ReplayConflictError(
          `replay ${id} was run with ${withRouter ? '--stage tables' : 'webhooks.raw as its source'}: use a new --id`,
        );
      const specs = await replaySpecs(admin, config, id, live);
      const schemaIds = await ensureReplayTopics(
        admin,
        serde,
        specs,
        log,
        config.SCHEMA_REGISTRY_AUTO_REGISTER,
      );
      for (const spec of specs) {
        if (spec.live === names.dedupeChangelog || spec.live.endsWith('.merge-changelog'))
          internalTopics.push(spec.name);
        else topics.set(spec.live, spec.name);
      }
      const copy = (topic: string) => replayTopic(topic, id);

      if (withRouter) {
        const found = await boundsFor(admin, {
          settings,
          boundsGroup,
          appId: routerApp,
          topic: names.raw,
          request,
          triggers,
        });
        const { ranges } = found;
        resumed ||= found.resumed;
        triggers = found.triggers;
        const counter = new CommittedCounter();
        const topology = dedupeTopology({
          rawTopic: names.raw,
          changelogTopic: copy(names.dedupeChangelog),
          topicOf: (logical) => copy(`${prefix}${logical}`),
          schemaIds,
          serde,
          windowMs: config.DEDUPE_WINDOW,
          routeSettings: routeSettingsOf(config),
        });
        const end = new Map(ranges.map((r) => [r.partition, r.end]));
        const only = triggers;
        const accept =
          only === undefined
            ? undefined
            : (input: RawInput) =>
                input.ok && input.envelope.trigger !== null && only.includes(input.envelope.trigger);
        const app = await startPart(config, log, routerApp, {
          ...pacing,
          topology,
          endOf: (_topic, partition) => end.get(partition),
          ...(accept === undefined ? {} : { accept }),
          counter,
        });
        parts.push({
          stage: 'dedupe-router',
          appId: routerApp,
          app,
          counter,
          ranges: new Map([[names.raw, ranges]]),
        });
      }

      if (withTables) {
        const sources = TABLE_STREAMS.map((s) => (stage === 'all' ? copy(names.entity(s)) : names.entity(s)));
        const ranges = new Map<string, PartitionRange[]>();
        if (stage === 'tables') {
          for (const topic of sources) {
            const found = await boundsFor(admin, {
              settings,
              boundsGroup,
              appId: tablesApp,
              topic,
              request: {},
            });
            resumed ||= found.resumed;
            ranges.set(topic, found.ranges);
          }
        }
        // Taken before the stage starts, so its progress counts every record this run reads.
        const growing =
          stage === 'all' ? { starts: await startsOf(admin, tablesApp, sources), final: false } : undefined;
        const tables = await tablesTopologyFor(serde, config, id, stage, schemaIds);
        const counter = new CommittedCounter();
        const app = await startPart(config, log, tablesApp, {
          ...pacing,
          topology: tables,
          // The replay's own streams end where its router stops, so they are read whole; the ranges a
          // whole replay's tables show progress with grow meanwhile and are no bound.
          endOf: (topic, partition) =>
            growing === undefined
              ? ranges.get(topic)?.find((r) => r.partition === partition)?.end
              : undefined,
          counter,
        });
        parts.push({
          stage: 'tables',
          appId: tablesApp,
          app,
          counter,
          ranges,
          ...(growing === undefined ? {} : { growing }),
        });
      }

      completed = await follow(admin, { parts, started, pollMs, onProgress, signal, log });
    });
  } finally {
    for (const part of parts) await part.app.close();
  }
  // Once more with the stages closed: every batch they committed is counted now, as in the summary.
  for (const { stage: s, last, counter } of parts)
    if (last !== undefined)
      onProgress?.({ stage: s, ...last, read: counter.total.read, elapsedMs: Date.now() - started });
  return {
    id,
    completed,
    resumed,
    stages: parts.map(({ stage: s, appId, ranges, counter }) => ({
      stage: s,
      appId,
      ranges,
      counts: counter.total,
    })),
    topics,
    ...(triggers === undefined ? {} : { triggers }),
    groups: [...(withRouter ? [routerApp] : []), ...(withTables ? [tablesApp] : []), boundsGroup],
    internalTopics,
  };
}

async function tablesTopologyFor(
  serde: Serde,
  config: Config,
  id: string,
  stage: ReplayStage,
  schemaIds: ReadonlyMap<string, number>,
) {
  const names = topicNames(config.TOPIC_PREFIX);
  const copy = (topic: string) => replayTopic(topic, id);
  return tablesTopology({
    tables: TABLE_STREAMS.map((stream) => ({
      stream,
      source: stage === 'all' ? copy(names.entity(stream)) : names.entity(stream),
      latest: copy(names.latest(stream)),
      changelog: copy(names.mergeChangelog(stream)),
      schemaId: schemaIds.get(copy(names.latest(stream)))!,
    })),
    serde,
    windowMs: config.DEDUPE_WINDOW,
  });
}

async function startPart<V>(
  config: Config,
  logger: Logger,
  appId: string,
  bounded: {
    topology: Topology<V>;
    endOf: (topic: string, partition: number) => bigint | undefined;
    accept?: (value: V) => boolean;
    counter: CommittedCounter;
    maxBytesPerPartition?: number;
    commitMaxRecords?: number;
  },
): Promise<StreamApp> {
  return startStreamApp({
    kafka: kafkaSettings(config, appId, logger),
    topology: boundedTopology(bounded),
    appId,
    instanceId: config.HOOKLEDGER_INSTANCE_ID,
    logger,
    instrument: (event) => bounded.counter.instrument(event),
    transactionTimeoutMs: config.PROCESSOR_TRANSACTION_TIMEOUT_MS,
    sessionTimeoutMs: config.PROCESSOR_SESSION_TIMEOUT_MS,
    ...(bounded.maxBytesPerPartition === undefined
      ? {}
      : { maxBytesPerPartition: bounded.maxBytesPerPartition }),
    ...(bounded.commitMaxRecords === undefined
      ? {}
      : { commitMaxRecords: bounded.commitMaxRecords, catchUpCommitMaxRecords: bounded.commitMaxRecords }),
  });
}

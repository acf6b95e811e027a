// `hookledger replay`: webhooks.raw (a range of it) through the live topologies with fresh state into
// side-by-side topics, until every partition reaches its end bound. Never writes a live topic.
import type { RawInput } from '../../processors/dedupe-router/poison.js';
import { dedupeTopology, ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import { tablesTopology } from '../../processors/tables/topology.js';
import type { Config } from '../../runtime/config.js';
import { type TopicAdmin, withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import type { Logger } from '../../runtime/log.js';
import { type StreamApp, startStreamApp } from '../../runtime/streams/stream-runner.js';
import type { Topology } from '../../runtime/streams/topology.js';
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
  saveBounds,
  startGroupAt,
} from './bounds.js';
import { ensureReplayTopics, replayAppId, replaySpecs, replayTopic } from './topics.js';

export type ReplayStage = 'dedupe-router' | 'tables' | 'all';

export interface ReplayProgress {
  stage: 'dedupe-router' | 'tables';
  /** Source offsets passed by this run so far, and in all (for this run). */
  done: bigint;
  total: bigint;
  elapsedMs: number;
}

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
  /** Groups and topics that belong to the replay (for the clean-up instructions). */
  groups: string[];
  internalTopics: string[];
}

/** The replay was started with other bounds: one line for the user. */
export class ReplayConflictError extends Error {
  override name = 'ReplayConflictError';
}

interface RunningPart {
  stage: 'dedupe-router' | 'tables';
  appId: string;
  app: StreamApp;
  counter: CommittedCounter;
  ranges: Map<string, PartitionRange[]>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Committed offsets of a group on a topic, by partition (absent: none). */
function committed(admin: TopicAdmin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  return admin.committedOffsets(groupId, topic);
}

/** Offsets passed so far and in all, over every range of a part. */
async function progressOf(admin: TopicAdmin, part: RunningPart): Promise<{ done: bigint; total: bigint }> {
  let done = 0n;
  let total = 0n;
  for (const [topic, ranges] of part.ranges) {
    const at = await committed(admin, part.appId, topic);
    for (const r of ranges) {
      total += r.end - r.start;
      const position = at.get(r.partition) ?? r.start;
      done += (position > r.end ? r.end : position) - r.start;
    }
  }
  return { done, total };
}

/**
 * Bounds for a source topic: those kept from an earlier run of this replay, or resolved now and kept.
 * Returns the ranges from this run's starting position to the end bound.
 */
async function boundsFor(
  admin: TopicAdmin,
  options: { boundsGroup: string; appId: string; topic: string; request: RangeRequest },
): Promise<{ ranges: PartitionRange[]; resumed: boolean }> {
  const { boundsGroup, appId, topic, request } = options;
  const stored = await loadBounds(admin, boundsGroup, topic);
  let ends: Map<number, bigint>;
  let starts: PartitionRange[];
  if (stored !== undefined) {
    if (hasBounds(request))
      throw new ReplayConflictError(
        `replay bounds are kept from its first run (end offsets of ${topic}: ${[...stored].map(([p, o]) => `${p}:${o}`).join(',')}): run it again without --from/--to/--from-offset/--to-offset, or use a new --id`,
      );
    ends = stored;
    starts = [...stored].map(([partition, end]) => ({ partition, start: 0n, end }));
  } else {
    starts = await rangesOf(admin, topic, request);
    ends = new Map(starts.map((r) => [r.partition, r.end]));
    // The bounds first: a run interrupted right after this resumes with them.
    await saveBounds(admin, boundsGroup, topic, starts);
  }
  const positions = await startGroupAt(admin, appId, topic, starts);
  const ranges = [...ends].map(([partition, end]) => {
    const at = positions.get(partition) ?? end;
    return { partition, start: at > end ? end : at, end };
  });
  return { ranges: ranges.sort((a, b) => a.partition - b.partition), resumed: stored !== undefined };
}

export async function runReplay(options: ReplayOptions): Promise<ReplayResult> {
  const { config, logger, id, stage, request, triggers, signal, onProgress, pollMs = 1_000 } = options;
  const fetch =
    options.maxBytesPerPartition === undefined ? {} : { maxBytesPerPartition: options.maxBytesPerPartition };
  const prefix = config.TOPIC_PREFIX;
  const names = topicNames(prefix);
  const log = logger.child({ component: 'replay', replay: id });
  if (stage === 'tables' && (hasBounds(request) || triggers !== undefined))
    throw new BoundsError('--stage tables replays the live entity streams whole: no --from/--to/--trigger');
  const settings: KafkaSettings = {
    brokers: config.KAFKA_BROKERS,
    clientId: `hookledger-replay-${id}`,
    logger: log,
  };
  const serde = createSerde({ registryUrl: config.SCHEMA_REGISTRY_URL, clientId: 'hookledger-replay' });
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
      const schemaIds = await ensureReplayTopics(admin, serde, specs, log);
      for (const spec of specs) {
        if (spec.live === names.dedupeChangelog || spec.live.endsWith('.merge-changelog'))
          internalTopics.push(spec.name);
        else topics.set(spec.live, spec.name);
      }
      const copy = (topic: string) => replayTopic(topic, id);

      if (withRouter) {
        const { ranges, resumed: again } = await boundsFor(admin, {
          boundsGroup,
          appId: routerApp,
          topic: names.raw,
          request,
        });
        resumed ||= again;
        const counter = new CommittedCounter();
        const topology = dedupeTopology({
          rawTopic: names.raw,
          changelogTopic: copy(names.dedupeChangelog),
          topicOf: (logical) => copy(`${prefix}${logical}`),
          schemaIds,
          serde,
          windowMs: config.DEDUPE_WINDOW,
        });
        const end = new Map(ranges.map((r) => [r.partition, r.end]));
        const accept =
          triggers === undefined
            ? undefined
            : (input: RawInput) =>
                input.ok && input.envelope.trigger !== null && triggers.includes(input.envelope.trigger);
        const app = await startPart(config, log, routerApp, {
          ...fetch,
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
            const found = await boundsFor(admin, { boundsGroup, appId: tablesApp, topic, request: {} });
            resumed ||= found.resumed;
            ranges.set(topic, found.ranges);
          }
        }
        const tables = await tablesTopologyFor(serde, config, id, stage, schemaIds);
        const counter = new CommittedCounter();
        const app = await startPart(config, log, tablesApp, {
          ...fetch,
          topology: tables,
          endOf: (topic, partition) => ranges.get(topic)?.find((r) => r.partition === partition)?.end,
          counter,
        });
        parts.push({ stage: 'tables', appId: tablesApp, app, counter, ranges });
      }

      completed = await follow(admin, { parts, stage, prefix, id, started, pollMs, onProgress, signal, log });
    });
  } finally {
    for (const part of parts) await part.app.close();
  }
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
  },
): Promise<StreamApp> {
  return startStreamApp({
    kafka: { brokers: config.KAFKA_BROKERS, clientId: appId, logger },
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
  });
}

/** Watches committed offsets until every part reached its bounds; false when interrupted. */
async function follow(
  admin: TopicAdmin,
  context: {
    parts: RunningPart[];
    stage: ReplayStage;
    prefix: string;
    id: string;
    started: number;
    pollMs: number;
    onProgress: ((progress: ReplayProgress) => void) | undefined;
    signal: AbortSignal | undefined;
    log: Logger;
  },
): Promise<boolean> {
  const { parts, stage, prefix, id, started, pollMs, onProgress, signal, log } = context;
  const names = topicNames(prefix);
  const aborted = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  const stopped = Promise.race(parts.map((p) => p.app.stopped.then(() => p.stage)));
  let routerDone = !parts.some((p) => p.stage === 'dedupe-router');
  for (;;) {
    for (const part of parts) {
      if (part.stage === 'tables' && stage === 'all') {
        // The replay's streams are complete once the router is: then their end is the tables' bound.
        if (!routerDone) continue;
        if (part.ranges.size === 0) {
          for (const s of TABLE_STREAMS) {
            const topic = replayTopic(names.entity(s), id);
            const highs = await admin.watermarks(topic);
            const at = await committed(admin, part.appId, topic);
            part.ranges.set(
              topic,
              highs.map((h) => ({
                partition: h.partition,
                start: at.get(h.partition) ?? BigInt(h.low),
                end: BigInt(h.high),
              })),
            );
          }
        }
      }
      const { done, total } = await progressOf(admin, part);
      onProgress?.({ stage: part.stage, done, total, elapsedMs: Date.now() - started });
      if (part.stage === 'dedupe-router' && !routerDone && done >= total) {
        routerDone = true;
        log.info('dedupe-router reached its bounds');
      }
    }
    const finished = await Promise.all(
      parts.map(async (p) => {
        if (p.stage === 'tables' && stage === 'all' && !routerDone) return false;
        const { done, total } = await progressOf(admin, p);
        return done >= total;
      }),
    );
    if (finished.every(Boolean)) return true;
    const outcome = await Promise.race([
      sleep(pollMs).then(() => 'poll' as const),
      aborted.then(() => 'aborted' as const),
      stopped.then((s) => s),
    ]);
    if (outcome === 'aborted') return false;
    if (outcome !== 'poll') throw new Error(`the replay's ${outcome} stage stopped (its consumer crashed)`);
  }
}

// `hookledger replay diff`: each `<topic>.replay-<id>` against its live twin, the live side bounded to
// what the replay read, so live traffic after the replay never shows up as a difference.
//
// How the live side is bounded: the replay kept its source range (kept-request.ts). The diff reads that
// range of webhooks.raw again and notes each record's origin, (source, webhookId, ingestId): every
// record the router derives carries all three (ingest gives each accepted request its own ingestId, and
// redrive re-appends the envelope unchanged). A live record counts when its origin is among them. A
// replay of the live entity streams (`--stage tables`) is bounded by their offsets directly.

import { isUndecodable } from '../../processors/dedupe-router/poison.js';
import { ROUTER_OUTPUTS } from '../../processors/dedupe-router/topology.js';
import type { Config } from '../../runtime/config.js';
import { type TopicAdmin, withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
import { kafkaSettings } from '../../runtime/kafka/settings.js';
import type { Logger } from '../../runtime/log.js';
import { currentSchemaOf } from '../../schemas/own-schema-id.js';
import type { RawEnvelope } from '../../schemas/raw-envelope.js';
import { registryAccess } from '../../schemas/registry-access.js';
import { createSerde, type Serde } from '../../schemas/serde.js';
import { TABLE_STREAMS, topicNames } from '../../schemas/topics.js';
import { jsonSafe } from '../tail/format.js';
import type { PartitionRange } from './bounds.js';
import { compareStreams, compareTables, type KeyedValue, type TopicDiff } from './diff-compare.js';
import { loadKeptRequest } from './kept-request.js';
import { replayAppId, replayTopic } from './topics.js';

export interface DiffProgress {
  /** Offsets read so far and in all, over every topic the diff reads. */
  done: bigint;
  total: bigint;
  elapsedMs: number;
}

export interface DiffOptions {
  config: Config;
  logger: Logger;
  id: string;
  onProgress?: (progress: DiffProgress) => void;
  /** Differing keys shown field by field, per topic. */
  sampleKeys?: number;
  /**
   * Compare with the live topics of another topic set (this TOPIC_PREFIX instead of the replay's):
   * the replay of a new set with more partitions against the set it replaces (docs/scaling.md).
   */
  livePrefix?: string;
}

export interface ReplayDiff {
  id: string;
  /** What the replay read: webhooks.raw, or the live entity streams (`--stage tables`), with its range. */
  source: {
    ranges: Map<string, PartitionRange[]>;
    triggers: string[] | undefined;
    /** False: the replay kept no starts (made by an older hookledger); whole partitions were assumed. */
    noted: boolean;
    /**
     * The replay of webhooks.raw began after a partition's first record (--from, --from-offset): its
     * dedupe state started empty there, where live's held the ids delivered before.
     */
    startedLate: boolean;
  };
  topics: TopicDiff[];
}

/** No such replay, or one that has not finished: one line for the user. */
export class ReplayDiffError extends Error {
  override name = 'ReplayDiffError';
}

type Origin = string;

const envelopeOrigin = (source: unknown, webhookId: unknown, ingestId: unknown): Origin =>
  `${String(source)}\u0000${String(webhookId)}\u0000${String(ingestId)}`;
const positionOrigin = (partition: string | number, offset: string | bigint): Origin =>
  `raw\u0000${partition}\u0000${offset}`;

/**
 * Where a live record came from. A dead letter of a raw record that was no envelope at all has no ids:
 * its position is in its message (poison.ts), or in its key-less id `offset:<topic>/<p>/<o>`.
 */
export function originOf(value: unknown): Origin | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { source, webhookId, ingestId, message } = value as Record<string, unknown>;
  if (typeof ingestId === 'string' && ingestId !== '') return envelopeOrigin(source, webhookId, ingestId);
  const at =
    (typeof webhookId === 'string' ? /^offset:.*\/(\d+)\/(\d+)$/.exec(webhookId) : null) ??
    (typeof message === 'string'
      ? /^the raw record at .*\/(\d+)\/(\d+) is not a raw envelope/.exec(message)
      : null);
  return at === null ? undefined : positionOrigin(at[1]!, at[2]!);
}

interface Reading {
  settings: KafkaSettings;
  serde: Serde;
  progress: (records: number) => void;
}

/** A committed record as read: decoded, JSON-safe. */
export type LiveRecord = KeyedValue & { partition: number; offset: bigint };

/**
 * Which records a read keeps (it may note the others' keys). The rest are dropped as they are read: a
 * live topic holds its whole history (webhooks.unique is kept forever), the replay's range is a part of it.
 */
export type Keep = (record: LiveRecord) => boolean;

/** Where a live entity stream's keys had events: from within the replay's range, and from outside it. */
export interface SeenKeys {
  inside: Set<string>;
  outside: Set<string>;
}

/**
 * A router output's live records that the replay's raw records derived (their origin is among
 * `origins`); `seen` notes each record's key on the side it falls.
 */
export function withinOrigins(origins: ReadonlySet<Origin>, seen: SeenKeys | undefined): Keep {
  return (record) => {
    const origin = originOf(record.value);
    // A record whose origin cannot be told counts: better a difference shown than one hidden.
    const inside = origin === undefined || origins.has(origin);
    seen?.[inside ? 'inside' : 'outside'].add(record.key);
    return inside;
  };
}

/** A live entity stream read for its keys only (`--stage tables`): each noted on its side of `ranges`; none kept. */
export function keysByRange(ranges: readonly PartitionRange[], seen: SeenKeys): Keep {
  const kept = new Map(ranges.map((r) => [r.partition, r]));
  return (record) => {
    const r = kept.get(record.partition);
    const inside = r !== undefined && record.offset >= r.start && record.offset < r.end;
    seen[inside ? 'inside' : 'outside'].add(record.key);
    return false;
  };
}

/** A topic as read: the committed records kept and the offsets it spans. */
interface TopicRead {
  records: LiveRecord[];
  span: bigint;
}

/**
 * Values are read with this version's schema (`readerSchema`): a live record written before a field was
 * added reads with its default, as the replay's does, so versions do not show as differences.
 */
async function readTopic(
  admin: TopicAdmin,
  reading: Reading,
  topic: string,
  readerSchema: string | undefined,
  keep: Keep,
): Promise<TopicRead> {
  const marks = await admin.watermarks(topic);
  const records: TopicRead['records'] = [];
  await readToEnd({
    settings: reading.settings,
    topic,
    partitions: marks.map((m) => ({ partition: m.partition })),
    component: 'replay-diff',
    onRecord: async ({ partition, offset, key, value }) => {
      const decoded =
        value === null
          ? null
          : jsonSafe(
              await reading.serde.decode(value, readerSchema === undefined ? {} : { readerSchema }),
              'value',
              {},
            );
      const record = { key: key?.toString('utf8') ?? '', value: decoded, partition, offset };
      if (keep(record)) records.push(record);
      reading.progress(1);
    },
  });
  const span = marks.reduce((n, m) => n + BigInt(m.high) - BigInt(m.low), 0n);
  return { records, span };
}

/** The origins of the raw records within the replay's range that its trigger filter let through. */
async function rawOrigins(
  reading: Reading,
  topic: string,
  ranges: readonly PartitionRange[],
  triggers: readonly string[] | undefined,
): Promise<Set<Origin>> {
  const origins = new Set<Origin>();
  await readToEnd({
    settings: reading.settings,
    topic,
    partitions: ranges.map((r) => ({ partition: r.partition, from: r.start, until: r.end })),
    component: 'replay-diff',
    onRecord: async ({ partition, offset, value }) => {
      reading.progress(1);
      let envelope: RawEnvelope | undefined;
      try {
        envelope = value === null ? undefined : await reading.serde.decode<RawEnvelope>(value);
      } catch (error) {
        if (!isUndecodable(error)) throw error;
      }
      // The replay's filter passes envelopes with a listed trigger only (replay.ts).
      if (triggers !== undefined && (envelope?.trigger == null || !triggers.includes(envelope.trigger)))
        return;
      origins.add(
        envelope === undefined
          ? positionOrigin(partition, offset)
          : envelopeOrigin(envelope.source, envelope.webhookId, envelope.ingestId),
      );
    },
  });
  return origins;
}

/** Offsets of the topics now, summed: the progress total. */
async function spanOf(admin: TopicAdmin, topics: readonly string[]): Promise<bigint> {
  let total = 0n;
  for (const topic of topics)
    for (const m of await admin.watermarks(topic)) total += BigInt(m.high) - BigInt(m.low);
  return total;
}

async function existing(admin: TopicAdmin, topics: readonly string[]): Promise<Set<string>> {
  return new Set((await admin.describeTopics(topics)).map((t) => t.name));
}

/** Throws when a stage's group has not reached the end of its range on some partition. */
async function expectComplete(
  admin: TopicAdmin,
  groupId: string,
  topic: string,
  ends: readonly { partition: number; end: bigint }[],
  resume: string,
): Promise<void> {
  const at = await admin.committedOffsets(groupId, topic);
  const behind = ends.filter(({ partition, end }) => end > 0n && (at.get(partition) ?? -1n) < end);
  if (behind.length > 0)
    throw new ReplayDiffError(
      `the replay has not finished reading ${topic} (partition ${behind
        .map(({ partition, end }) => `${partition} at ${at.get(partition) ?? 'none'} of ${end}`)
        .join(', ')}): run \`${resume}\` to finish it first`,
    );
}

export async function diffReplay({
  config,
  logger,
  id,
  onProgress,
  sampleKeys = 5,
  livePrefix,
}: DiffOptions): Promise<ReplayDiff> {
  const prefix = config.TOPIC_PREFIX;
  // A live topic named as in the replay's set, read from the set compared with.
  const liveOf = (topic: string) =>
    livePrefix === undefined ? topic : `${livePrefix}${topic.slice(prefix.length)}`;
  const names = topicNames(prefix);
  const settings: KafkaSettings = kafkaSettings(
    config,
    `hookledger-replay-diff-${id}`,
    logger.child({ component: 'replay-diff', replay: id }),
  );
  const serde = createSerde({ ...registryAccess(config), clientId: 'hookledger-replay-diff' });
  const copy = (topic: string) => replayTopic(topic, id);
  const boundsGroup = replayAppId(prefix, id, 'bounds');
  return withAdmin(settings, async (admin) => {
    const routerLive = ROUTER_OUTPUTS.map((logical) => `${prefix}${logical}`);
    const tablesLive = TABLE_STREAMS.map((s) => names.latest(s));
    const found = await existing(admin, [...routerLive, ...tablesLive].map(copy));
    const routed = routerLive.filter((t) => found.has(copy(t)));
    const tabled = tablesLive.filter((t) => found.has(copy(t)));
    if (routed.length === 0 && tabled.length === 0)
      throw new ReplayDiffError(
        `no replay ${id}: there is no <topic>.replay-${id} topic (with TOPIC_PREFIX "${prefix}")`,
      );
    // The router's copies mean the replay read webhooks.raw; only table copies, the live entity streams.
    const fromRaw = routed.length > 0;
    if (livePrefix !== undefined && !fromRaw)
      throw new ReplayDiffError(
        '--live-prefix compares a replay of webhooks.raw; this one replayed the entity streams',
      );
    const stage = fromRaw ? (tabled.length > 0 ? 'all' : 'dedupe-router') : 'tables';
    const resume = `hookledger replay --id ${id} --stage ${stage}`;
    const sources = fromRaw ? [names.raw] : TABLE_STREAMS.map((s) => names.entity(s));

    const ranges = new Map<string, PartitionRange[]>();
    let triggers: string[] | undefined;
    let noted = true;
    let startedLate = false;
    for (const topic of sources) {
      const marks = (await admin.watermarks(topic)).map((m) => ({
        partition: m.partition,
        low: BigInt(m.low),
      }));
      const kept = await loadKeptRequest(settings, boundsGroup, topic, marks);
      if (kept === undefined)
        throw new ReplayDiffError(`replay ${id} kept no bounds on ${topic}: run \`${resume}\` first`);
      ranges.set(topic, kept.ranges);
      triggers = kept.triggers;
      noted &&= kept.noted;
      const lows = new Map(marks.map((m) => [m.partition, m.low]));
      if (fromRaw) startedLate ||= kept.ranges.some((r) => r.start > (lows.get(r.partition) ?? 0n));
    }
    if (fromRaw) {
      await expectComplete(
        admin,
        replayAppId(prefix, id, 'dedupe-router'),
        names.raw,
        ranges.get(names.raw)!,
        resume,
      );
    } else {
      for (const [topic, kept] of ranges)
        await expectComplete(admin, replayAppId(prefix, id, 'tables-from-live'), topic, kept, resume);
    }
    if (stage === 'all') {
      for (const s of TABLE_STREAMS) {
        const stream = copy(names.entity(s));
        const ends = (await admin.watermarks(stream)).map((m) => ({
          partition: m.partition,
          end: BigInt(m.high),
        }));
        await expectComplete(admin, replayAppId(prefix, id, 'tables'), stream, ends, resume);
      }
    }

    // Progress over every offset the diff reads; a topic's span counts in full once it is read.
    const entityLive = TABLE_STREAMS.map((s) => names.entity(s));
    const toRead = [
      ...routed.flatMap((t) => [liveOf(t), copy(t)]),
      ...tabled.flatMap((t) => [liveOf(t), copy(t)]),
      ...(fromRaw ? [] : entityLive),
    ];
    let rawSpan = 0n;
    if (fromRaw) for (const r of ranges.get(names.raw)!) rawSpan += r.end - r.start;
    const total = rawSpan + (await spanOf(admin, toRead));
    const started = Date.now();
    let done = 0n;
    let shown = 0;
    const report = (force = false) => {
      if (!force && Date.now() - shown < 200) return;
      shown = Date.now();
      onProgress?.({ done: done > total ? total : done, total, elapsedMs: shown - started });
    };
    const reading: Reading = {
      settings,
      serde,
      progress: (n) => {
        done += BigInt(n);
        report();
      },
    };
    let finished = 0n;
    // `as`: the topic (with TOPIC_PREFIX) whose schema this one's records are read with.
    const read = async (topic: string, keep: Keep = () => true, as = topic) => {
      const { records, span } = await readTopic(admin, reading, topic, currentSchemaOf(prefix, as), keep);
      // The span as the read began: records written since are not read, nor counted.
      finished += span;
      done = finished + (fromRaw ? rawSpan : 0n);
      report(true);
      return records;
    };

    const diffs: TopicDiff[] = [];
    // Per entity stream, the keys with live events from within the replay's range and from outside it.
    const seen = new Map<string, SeenKeys>(
      entityLive.map((t) => [t, { inside: new Set<string>(), outside: new Set<string>() }]),
    );
    if (fromRaw) {
      const origins = await rawOrigins(reading, names.raw, ranges.get(names.raw)!, triggers);
      done = rawSpan;
      report(true);
      for (const live of routed) {
        const within = await read(liveOf(live), withinOrigins(origins, seen.get(live)), live);
        diffs.push(
          compareStreams(
            { live: liveOf(live), replay: copy(live) },
            within,
            await read(copy(live)),
            sampleKeys,
          ),
        );
      }
    } else {
      for (const stream of entityLive)
        await read(stream, keysByRange(ranges.get(stream)!, seen.get(stream)!));
    }
    for (const s of TABLE_STREAMS) {
      const live = names.latest(s);
      if (!tabled.includes(live)) continue;
      const { inside, outside } = seen.get(names.entity(s))!;
      // A key with events from outside the range only is none of the replay's business; one with events
      // from both has a live row that moved on: not compared, but counted.
      const rows = await read(liveOf(live), (r) => inside.has(r.key), live);
      const movedOn = new Set([...outside].filter((key) => inside.has(key)));
      diffs.push(
        compareTables(
          { live: liveOf(live), replay: copy(live) },
          rows,
          await read(copy(live)),
          movedOn,
          sampleKeys,
        ),
      );
    }
    report(true);
    return { id, source: { ranges, triggers, noted, startedLate }, topics: diffs };
  });
}

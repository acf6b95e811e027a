// The topic catalog as data: every hookledger topic's name, key, value schema, cleanup and settings.
// docs/topics.md describes the same topics for consumers; a unit test keeps both naming the same ones.
import type { TopicSpec } from '../runtime/kafka/topic-spec.js';
import { QUARANTINED_REQUEST_SCHEMA } from './quarantined-request.js';
import { RAW_ENVELOPE_SCHEMA } from './raw-envelope.js';

/** Entity streams, as in `entity.<name>`. */
export const ENTITY_STREAMS = [
  'user',
  'account',
  'document',
  'todo',
  'energy-switch',
  'energy-switch-commission',
  'other',
] as const;
export type EntityStream = (typeof ENTITY_STREAMS)[number];

/**
 * Entity streams that have a current-state table `entity.<name>.latest`. Not the commission stream
 * (a commission's current state is part of its energy switch's row in `entity.energy-switch.latest`)
 * and not `other` (no contract to merge its fields by; consumers read the stream).
 */
export const TABLE_STREAMS = [
  'user',
  'account',
  'document',
  'todo',
  'energy-switch',
] as const satisfies readonly EntityStream[];
export type TableStream = (typeof TABLE_STREAMS)[number];

/** The value schema (schemas/<name>.avsc) of each entity stream. */
const ENTITY_STREAM_SCHEMAS: Record<EntityStream, string> = {
  user: 'entity-event',
  account: 'entity-event',
  document: 'entity-event',
  todo: 'entity-event',
  'energy-switch': 'entity-energy-switch',
  'energy-switch-commission': 'entity-energy-switch-commission',
  other: 'entity-event',
};

/** Partition count for new topics unless configured; existing topics keep theirs. */
export const DEFAULT_PARTITIONS = 12;

/**
 * What a record carries beyond the body: the envelope's other fields (headers, query string: Node caps
 * request headers at 16 KiB), Kafka's record and batch framing, a DLQ reason. Generous on purpose.
 */
export const ENVELOPE_OVERHEAD_BYTES = 64 * 1024;

/** Changelog records are kept this much longer than the dedupe window (restore skips older ones). */
export const DEDUPE_CHANGELOG_MARGIN_MS = 86_400_000;

/** Segments of the dedupe changelog roll at least this often, so aged-out ids are deleted promptly. */
export const DEDUPE_CHANGELOG_SEGMENT_MS = 6 * 3_600_000;

/** How long webhooks.quarantine keeps a request unless QUARANTINE_RETENTION says otherwise. */
export const DEFAULT_QUARANTINE_RETENTION_MS = 7 * 86_400_000;

/** Promotion records outlive the requests they mark by this much (so none is promoted twice). */
export const PROMOTIONS_RETENTION_MARGIN_MS = 86_400_000;

export interface TopicNames {
  raw: string;
  /** Requests refused for their signature, kept briefly for `hookledger quarantine promote`. */
  quarantine: string;
  /** Internal: which quarantined webhook ids were promoted, by which run. */
  quarantinePromotions: string;
  dedupeChangelog: string;
  unique: string;
  failures: string;
  dlq: string;
  entity(name: EntityStream): string;
  latest(name: TableStream): string;
  /** The tables stage's merge state (field candidates, deletion markers) for one table. */
  mergeChangelog(name: TableStream): string;
}

/** Topic names with TOPIC_PREFIX prepended as is (include your own separator: `staging.`). */
export function topicNames(prefix = ''): TopicNames {
  return {
    raw: `${prefix}webhooks.raw`,
    quarantine: `${prefix}webhooks.quarantine`,
    quarantinePromotions: `${prefix}webhooks.quarantine-promotions`,
    dedupeChangelog: `${prefix}webhooks.dedupe-changelog`,
    unique: `${prefix}webhooks.unique`,
    failures: `${prefix}webhooks.failures`,
    dlq: `${prefix}webhooks.dlq`,
    entity: (name) => `${prefix}entity.${name}`,
    latest: (name) => `${prefix}entity.${name}.latest`,
    mergeChangelog: (name) => `${prefix}entity.${name}.merge-changelog`,
  };
}

/** The subject of a topic's values (TopicNameStrategy). */
export function valueSubject(topic: string): string {
  return `${topic}-value`;
}

/** The least `max.message.bytes` of a topic that stores whole envelopes (raw, unique, dlq, failures). */
export function envelopeMaxMessageBytes(bodyLimit: number): number {
  return bodyLimit + ENVELOPE_OVERHEAD_BYTES;
}

/** Entity events carry the record as JSON text and its typed fields parsed from it: up to twice the body. */
export function entityMaxMessageBytes(bodyLimit: number): number {
  return 2 * bodyLimit + ENVELOPE_OVERHEAD_BYTES;
}

export interface CatalogOptions {
  prefix: string;
  /** INGEST_BODY_LIMIT, bytes. */
  bodyLimit: number;
  /** DEDUPE_WINDOW, milliseconds. */
  dedupeWindowMs: number;
  partitions: number;
  replicationFactor: number;
  /** QUARANTINE_RETENTION, milliseconds; DEFAULT_QUARANTINE_RETENTION_MS when absent. */
  quarantineRetentionMs?: number;
}

export interface CatalogTopic extends TopicSpec {
  /** What the (UTF-8 string) key holds. */
  key: string;
  /** The .avsc (name without extension) of the values, registered as `<topic>-value`; undefined until written. */
  valueSchema: string | undefined;
}

/** Every topic hookledger uses, as `hookledger topics` creates and verifies them. */
export function topicCatalog({
  prefix,
  bodyLimit,
  dedupeWindowMs,
  partitions,
  replicationFactor,
  quarantineRetentionMs = DEFAULT_QUARANTINE_RETENTION_MS,
}: CatalogOptions): CatalogTopic[] {
  const names = topicNames(prefix);
  // Acks=all then waits for two copies wherever there can be two.
  const durable = {
    'min.insync.replicas': { atLeast: Math.min(2, replicationFactor) },
    'unclean.leader.election.enable': 'false',
  } as const;
  const forever = { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' } as const;
  const topic = (
    name: string,
    key: string,
    valueSchema: string | undefined,
    configs: TopicSpec['configs'],
  ): CatalogTopic => ({
    name,
    key,
    valueSchema,
    partitions,
    replicationFactor,
    configs: { ...durable, ...configs },
  });

  const envelopeBytes = { 'max.message.bytes': { atLeast: envelopeMaxMessageBytes(bodyLimit) } };
  const entityBytes = { 'max.message.bytes': { atLeast: entityMaxMessageBytes(bodyLimit) } };
  return [
    topic(names.raw, 'webhook.id, else sha1:<hex digest of the body>', RAW_ENVELOPE_SCHEMA, {
      ...forever,
      ...envelopeBytes,
    }),
    topic(names.dedupeChangelog, '<source>/<webhook.id>', undefined, {
      'cleanup.policy': 'compact,delete',
      'retention.ms': { atLeast: dedupeWindowMs + DEDUPE_CHANGELOG_MARGIN_MS },
      'segment.ms': { atMost: DEDUPE_CHANGELOG_SEGMENT_MS },
    }),
    topic(names.unique, 'as webhooks.raw', RAW_ENVELOPE_SCHEMA, { ...forever, ...envelopeBytes }),
    ...ENTITY_STREAMS.map((stream) =>
      topic(
        names.entity(stream),
        stream === 'other' ? '<source>/<Entity>/<id>' : '<source>/<entityId>',
        ENTITY_STREAM_SCHEMAS[stream],
        { ...forever, ...entityBytes },
      ),
    ),
    ...TABLE_STREAMS.map((stream) =>
      topic(names.latest(stream), `as ${names.entity(stream)}`, 'entity-latest', {
        'cleanup.policy': 'compact',
        'delete.retention.ms': { atLeast: dedupeWindowMs },
        ...entityBytes,
      }),
    ),
    // Internal: the state behind each table (deletion markers included), compacted per key; a state
    // that may be forgotten (deleted longer than the window ago) is removed with a tombstone.
    ...TABLE_STREAMS.map((stream) =>
      topic(names.mergeChangelog(stream), `as ${names.entity(stream)}`, undefined, {
        'cleanup.policy': 'compact',
        ...entityBytes,
      }),
    ),
    topic(names.failures, '<source>/<query.variables.id>', 'webhook-failure', {
      ...forever,
      ...envelopeBytes,
    }),
    topic(names.dlq, 'as webhooks.raw', 'dead-letter', { ...forever, ...envelopeBytes }),
    // Unauthenticated bytes: kept a short, fixed time (ingest also bounds how fast they come in).
    topic(names.quarantine, 'as webhooks.raw', QUARANTINED_REQUEST_SCHEMA, {
      'cleanup.policy': 'delete',
      'retention.ms': String(quarantineRetentionMs),
      ...envelopeBytes,
    }),
    // Internal: written with the promoted raw records in one transaction, read by the next promotion.
    topic(names.quarantinePromotions, '<source>/<webhook.id>', undefined, {
      'cleanup.policy': 'delete',
      'retention.ms': { atLeast: quarantineRetentionMs + PROMOTIONS_RETENTION_MARGIN_MS },
    }),
  ];
}

/** Every catalog topic's value subject and its schema file (without .avsc), in catalog order. */
export function catalogSubjects(prefix: string): { subject: string; schema: string }[] {
  // Sizes and counts do not change which topics carry which schema.
  const topics = topicCatalog({
    prefix,
    bodyLimit: 1,
    dedupeWindowMs: 1,
    partitions: 1,
    replicationFactor: 1,
  });
  return topics.flatMap((topic) =>
    topic.valueSchema === undefined ? [] : [{ subject: valueSubject(topic.name), schema: topic.valueSchema }],
  );
}

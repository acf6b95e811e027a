import { readFileSync } from 'node:fs';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { compareTopic, stateFromSpec } from '../../../runtime/kafka/topic-spec.js';
import { loadSchema } from '../../../schemas/schema-files.js';
import { rawDurabilityProblems } from '../../../schemas/topic-checks.js';
import {
  ENTITY_STREAMS,
  ENVELOPE_OVERHEAD_BYTES,
  TABLE_STREAMS,
  topicCatalog,
  topicNames,
} from '../../../schemas/topics.js';

const week = 7 * 86_400_000;
const options = {
  prefix: 'p.',
  bodyLimit: 1_048_576,
  dedupeWindowMs: week,
  partitions: 12,
  replicationFactor: 3,
};
const catalog = topicCatalog(options);
const byName = new Map(catalog.map((t) => [t.name, t]));
const names = topicNames('p.');

describe('the topic catalog', () => {
  it('prefixes every name and names each topic once', () => {
    expect(catalog.every((t) => t.name.startsWith('p.'))).toBe(true);
    expect(byName.size).toBe(catalog.length);
    expect(names.latest('user')).toBe('p.entity.user.latest');
  });

  it('has every entity stream, and a table for the streams that have one', () => {
    for (const stream of ENTITY_STREAMS) expect(byName.has(names.entity(stream))).toBe(true);
    for (const stream of TABLE_STREAMS) expect(byName.has(names.latest(stream))).toBe(true);
    expect(byName.has('p.entity.other.latest')).toBe(false);
  });

  it('keeps the raw topic forever, taking a body of the limit plus the envelope', () => {
    expect(byName.get(names.raw)!.configs).toMatchObject({
      'cleanup.policy': 'delete',
      'retention.ms': '-1',
      'retention.bytes': '-1',
      'max.message.bytes': { atLeast: 1_048_576 + ENVELOPE_OVERHEAD_BYTES },
    });
    for (const topic of [names.unique, names.dlq]) {
      expect(byName.get(topic)!.configs['max.message.bytes']).toEqual({
        atLeast: 1_048_576 + ENVELOPE_OVERHEAD_BYTES,
      });
    }
  });

  it('compacts and deletes the dedupe changelog past the window, with short segments', () => {
    const configs = byName.get(names.dedupeChangelog)!.configs;
    expect(configs['cleanup.policy']).toBe('compact,delete');
    expect((configs['retention.ms'] as { atLeast: number }).atLeast).toBeGreaterThan(week);
    expect((configs['segment.ms'] as { atMost: number }).atMost).toBeLessThan(86_400_000);
  });

  it('compacts the tables and keeps their tombstones at least the window', () => {
    for (const stream of TABLE_STREAMS) {
      expect(byName.get(names.latest(stream))!.configs).toMatchObject({
        'cleanup.policy': 'compact',
        'delete.retention.ms': { atLeast: week },
      });
    }
  });

  it('keeps the quarantine a short, fixed time, and the promotion marks longer than what they mark', () => {
    expect(byName.get(names.quarantine)!.configs).toMatchObject({
      'cleanup.policy': 'delete',
      'retention.ms': String(week),
      'max.message.bytes': { atLeast: 1_048_576 + ENVELOPE_OVERHEAD_BYTES },
    });
    const short = new Map(
      topicCatalog({ ...options, quarantineRetentionMs: 3_600_000 }).map((t) => [t.name, t]),
    );
    expect(short.get(names.quarantine)!.configs['retention.ms']).toBe('3600000');
    const marks = short.get(names.quarantinePromotions)!.configs['retention.ms'] as { atLeast: number };
    expect(marks.atLeast).toBeGreaterThan(3_600_000);
  });

  it('gives every topic the same partition count, so the changelog and the tables match their inputs', () => {
    expect(new Set(catalog.map((t) => t.partitions))).toEqual(new Set([12]));
  });

  it('on a single broker asks for one in-sync replica, not an impossible two', () => {
    const local = topicCatalog({ ...options, replicationFactor: 1 });
    expect(local[0]!.configs['min.insync.replicas']).toEqual({ atLeast: 1 });
  });

  it('names only schema files that exist and parse', () => {
    for (const topic of catalog) {
      if (topic.valueSchema !== undefined)
        expect(() => avro.Type.forSchema(JSON.parse(loadSchema(topic.valueSchema!)))).not.toThrow();
    }
    expect(catalog.filter((t) => t.valueSchema === undefined).map((t) => t.name)).toEqual([
      names.dedupeChangelog,
      ...TABLE_STREAMS.map((stream) => names.mergeChangelog(stream)),
      names.quarantinePromotions,
    ]);
  });

  it('is listed in docs/topics.md, every topic of it', () => {
    const doc = readFileSync(new URL('../../../docs/topics.md', import.meta.url), 'utf8');
    for (const topic of topicCatalog({ ...options, prefix: '' })) expect(doc).toContain(`\`${topic.name}\``);
  });
});

describe('the raw topic in production', () => {
  const raw = byName.get(names.raw)!;

  it('is durable as hookledger creates it on three brokers', () => {
    expect(rawDurabilityProblems(stateFromSpec(raw))).toEqual([]);
  });

  it('is not with one replica, one in-sync replica, unclean election or retention', () => {
    const state = {
      ...stateFromSpec(raw),
      replicationFactor: 1,
      configs: {
        'cleanup.policy': 'delete',
        'max.message.bytes': '1048588',
        'min.insync.replicas': '1',
        'unclean.leader.election.enable': 'true',
        'retention.ms': '604800000',
        'retention.bytes': '-1',
      },
    };
    expect(rawDurabilityProblems(state)).toEqual([
      'replication factor 1 (needs at least 3)',
      'min.insync.replicas 1 (needs at least 2)',
      'unclean.leader.election.enable true (needs false)',
      'retention.ms 604800000 (needs -1: kept forever)',
    ]);
    expect(compareTopic(raw, state).map((c) => c.setting)).toEqual([
      'replication factor',
      'min.insync.replicas',
      'unclean.leader.election.enable',
      'retention.ms',
      'max.message.bytes',
    ]);
  });
});

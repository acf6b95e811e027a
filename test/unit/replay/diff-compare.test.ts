import { describe, expect, it } from 'vitest';
import {
  canonical,
  comparable,
  compareStreams,
  compareTables,
  differs,
  fieldDifferences,
} from '../../../tools/replay/diff-compare.js';

const topics = { live: 'entity.user', replay: 'entity.user.replay-r1' };
const event = (webhookId: string, name: string) => ({ webhookId, trigger: 'UserUpdated', data: { name } });

describe('replay diff of a stream', () => {
  it('finds a stream equal whatever the order of its records per key', () => {
    const live = [
      { key: 'test/u1', value: event('w1', 'a') },
      { key: 'test/u1', value: event('w2', 'b') },
      { key: 'test/u2', value: event('w3', 'c') },
    ];
    const diff = compareStreams(topics, live, [live[2]!, live[1]!, live[0]!]);
    expect(differs(diff)).toBe(false);
    expect(diff).toMatchObject({
      same: 2,
      records: { live: 3, replay: 3 },
      onlyLive: [],
      onlyReplay: [],
      differ: [],
    });
  });

  it('counts a record twice on one side as a difference (multisets, not sets)', () => {
    const once = [{ key: 'test/u1', value: event('w1', 'a') }];
    const diff = compareStreams(topics, once, [...once, ...once]);
    expect(diff.differ).toEqual(['test/u1']);
    expect(diff.samples[0]!.records).toEqual([{ webhookId: 'w1', side: 'replay', fields: [] }]);
  });

  it('names keys only on one side and pairs differing records by webhookId, field by field', () => {
    const diff = compareStreams(
      topics,
      [
        { key: 'test/u1', value: event('w1', 'a') },
        { key: 'test/gone', value: event('w9', 'x') },
      ],
      [
        { key: 'test/u1', value: event('w1', 'b') },
        { key: 'test/new', value: event('w8', 'y') },
      ],
    );
    expect(diff.onlyLive).toEqual(['test/gone']);
    expect(diff.onlyReplay).toEqual(['test/new']);
    expect(diff.differ).toEqual(['test/u1']);
    expect(diff.samples).toEqual([
      {
        key: 'test/u1',
        records: [{ webhookId: 'w1', side: 'both', fields: [{ path: 'data.name', live: 'a', replay: 'b' }] }],
      },
    ]);
  });

  it('keeps samples to the number asked for', () => {
    const live = ['a', 'b', 'c'].map((k) => ({ key: k, value: event(k, 'live') }));
    const replay = ['a', 'b', 'c'].map((k) => ({ key: k, value: event(k, 'replay') }));
    const diff = compareStreams(topics, live, replay, 2);
    expect(diff.differ).toHaveLength(3);
    expect(diff.samples.map((s) => s.key)).toEqual(['a', 'b']);
  });

  it('leaves out the message of dead letters the stream kit wrote itself, and nothing else', () => {
    const kit = {
      reason: 'output-too-large',
      stage: 'dedupe-router.process',
      message: 'to entity.user.replay-r1',
      webhookId: 'w1',
    };
    expect(comparable(kit)).toEqual({
      reason: 'output-too-large',
      stage: 'dedupe-router.process',
      webhookId: 'w1',
    });
    const routed = { ...kit, reason: 'record-invalid', stage: 'dedupe-router.route' };
    expect(comparable(routed)).toBe(routed);
    const diff = compareStreams(
      { live: 'webhooks.dlq', replay: 'webhooks.dlq.replay-r1' },
      [{ key: 'w1', value: { ...kit, message: 'to webhooks.dlq' } }],
      [{ key: 'w1', value: kit }],
    );
    expect(differs(diff)).toBe(false);
  });
});

describe('replay diff of a table', () => {
  const row = (webhookId: string, name: string) => ({ webhookId, occurredAt: 1, fields: { name } });
  const tables = { live: 'entity.user.latest', replay: 'entity.user.latest.replay-r1' };

  it('compares the last row of each key', () => {
    const diff = compareTables(
      tables,
      [
        { key: 'k', value: row('w1', 'old') },
        { key: 'k', value: row('w2', 'new') },
      ],
      [{ key: 'k', value: row('w2', 'new') }],
      new Set(),
    );
    expect(differs(diff)).toBe(false);
    expect(diff.same).toBe(1);
  });

  it('reads a deleted entity (tombstone) as no row', () => {
    const diff = compareTables(
      tables,
      [
        { key: 'k', value: row('w1', 'a') },
        { key: 'k', value: null },
      ],
      [],
      new Set(),
    );
    expect(differs(diff)).toBe(false);
    expect(diff.records).toEqual({ live: 0, replay: 0 });
  });

  it('leaves out keys whose live row moved on after the bounds, and counts them', () => {
    const diff = compareTables(
      tables,
      [
        { key: 'moved', value: row('w5', 'later') },
        { key: 'k', value: row('w1', 'a') },
      ],
      [
        { key: 'moved', value: row('w1', 'earlier') },
        { key: 'k', value: row('w1', 'b') },
      ],
      new Set(['moved']),
    );
    expect(diff.movedOn).toBe(1);
    expect(diff.differ).toEqual(['k']);
    expect(diff.samples[0]!.records[0]!.fields).toEqual([{ path: 'fields.name', live: 'a', replay: 'b' }]);
  });
});

describe('field differences', () => {
  it('walk objects field by field and compare arrays and scalars whole', () => {
    expect(fieldDifferences({ a: { b: 1, c: [1, 2] }, d: 'x' }, { a: { b: 2, c: [1, 2] }, e: 'y' })).toEqual([
      { path: 'a.b', live: 1, replay: 2 },
      { path: 'd', live: 'x', replay: null },
      { path: 'e', live: null, replay: 'y' },
    ]);
    expect(fieldDifferences([1], [2])).toEqual([{ path: '', live: [1], replay: [2] }]);
  });

  it('treat objects with the same fields in another order as equal', () => {
    expect(canonical({ b: 1, a: { d: 2, c: 3 } })).toBe(canonical({ a: { c: 3, d: 2 }, b: 1 }));
  });
});

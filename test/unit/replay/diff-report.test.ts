import { describe, expect, it } from 'vitest';
import type { ReplayDiff } from '../../../tools/replay/diff.js';
import { compareStreams, compareTables } from '../../../tools/replay/diff-compare.js';
import { diffJson, diffText, equal } from '../../../tools/replay/diff-report.js';

const ranges = new Map([['webhooks.raw', [{ partition: 0, start: 0n, end: 12n }]]]);
const user = (webhookId: string, name: string) => ({ webhookId, data: { name } });

function report(differing: boolean, startedLate = false): ReplayDiff {
  const stream = compareStreams(
    { live: 'entity.user', replay: 'entity.user.replay-r1' },
    [{ key: 'test/u1', value: user('w1', 'Ada') }],
    [{ key: 'test/u1', value: user('w1', differing ? 'Grace' : 'Ada') }],
  );
  const table = compareTables(
    { live: 'entity.user.latest', replay: 'entity.user.latest.replay-r1' },
    [{ key: 'test/u1', value: { webhookId: 'w1' } }],
    [{ key: 'test/u1', value: { webhookId: 'w1' } }],
    new Set(['test/u2']),
  );
  return {
    id: 'r1',
    source: { ranges, triggers: undefined, noted: true, startedLate },
    topics: [stream, table],
  };
}

describe('the replay diff report', () => {
  it('ends with one line saying the replay equals live', () => {
    const text = diffText(report(false));
    expect(equal(report(false))).toBe(true);
    expect(text).toContain('replay r1 against the live topics, within its bounds (webhooks.raw 0:0-12)');
    expect(text.split('\n').at(-1)).toBe('replay r1 equals live: 2 key(s) in 2 topic(s)');
  });

  it('lists the differing keys with their fields, and says how many', () => {
    const text = diffText(report(true));
    expect(equal(report(true))).toBe(false);
    expect(text).toContain('entity.user ↔ entity.user.replay-r1');
    expect(text).toContain('1 key(s) with different records: test/u1');
    expect(text).toContain('data.name: "Ada" (live) → "Grace" (replay)');
    expect(text.split('\n').at(-1)).toBe('replay r1 differs from live: 1 key(s) in 1 topic(s)');
  });

  it('gives scripts one JSON object with the bounds and every topic', () => {
    const json = JSON.parse(diffJson(report(true)));
    expect(json).toMatchObject({
      replay: 'r1',
      equal: false,
      source: {
        ranges: { 'webhooks.raw': [{ partition: 0, start: 0, end: 12 }] },
        triggers: null,
        noted: true,
      },
    });
    expect(json.topics.map((t: { live: string; differ: string[] }) => [t.live, t.differ])).toEqual([
      ['entity.user', ['test/u1']],
      ['entity.user.latest', []],
    ]);
  });

  it('says why ids may be only in a replay that began after raw’s first records, and only then', () => {
    const late = report(false, true);
    late.topics[0] = compareStreams(
      { live: 'entity.user', replay: 'entity.user.replay-r1' },
      [],
      [{ key: 'test/u9', value: user('w9', 'Retried') }],
    );
    const hint =
      'the replay began after the first records of webhooks.raw (--from, --from-offset) with empty dedupe state:';
    expect(diffText(late)).toContain(hint);
    expect(diffText({ ...late, source: { ...late.source, startedLate: false } })).not.toContain(hint);
    expect(diffText(report(true, true))).not.toContain(hint);
    expect(JSON.parse(diffJson(late)).source.startedLate).toBe(true);
  });
});

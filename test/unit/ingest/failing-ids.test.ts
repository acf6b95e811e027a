// The failing-id list on a clock the test moves: what it remembers, reports, forgets and evicts.
import { describe, expect, it } from 'vitest';
import { FailingIds, PLATFORM_RETRY_WINDOW_MS } from '../../../ingest/webhooks/failing-ids.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.parse('2026-11-23T00:00:00Z');

function list(options: { maxIds?: number } = {}) {
  let now = T0;
  const ids = new FailingIds({ now: () => now, ...options });
  return { ids, advance: (ms: number) => (now += ms) };
}

describe('the failing-id list', () => {
  it('remembers an id from its first non-200 answer: first failure, attempts and last status', () => {
    const { ids, advance } = list();
    ids.failed('energy', 'wh_1', 401);
    advance(5 * MINUTE);
    const { entry } = ids.failed('energy', 'wh_1', 503);
    expect(entry).toMatchObject({
      firstFailedAt: T0,
      lastFailedAt: T0 + 5 * MINUTE,
      attempts: 2,
      lastStatus: 503,
    });
    expect(ids.get('energy', 'wh_1')).toEqual(entry);
    expect(ids.size).toBe(1);
  });

  it('forgets an id once it is stored, and returns what it knew', () => {
    const { ids } = list();
    ids.failed('energy', 'wh_1', 503);
    ids.failed('energy', 'wh_1', 503);
    expect(ids.stored('energy', 'wh_1')).toMatchObject({ attempts: 2 });
    expect(ids.get('energy', 'wh_1')).toBeUndefined();
    expect(ids.stored('energy', 'wh_never_failed')).toBeUndefined();
  });

  it('tells the same id of two sources apart', () => {
    const { ids } = list();
    ids.failed('energy', 'wh_1', 401);
    ids.failed('sandbox', 'wh_1', 503);
    ids.stored('sandbox', 'wh_1');
    expect(ids.get('energy', 'wh_1')).toMatchObject({ lastStatus: 401 });
    expect(ids.size).toBe(1);
  });

  it('asks for a log line once an id has failed for an hour, then only every four hours', () => {
    const { ids, advance } = list();
    const reports: number[] = [];
    // A retry every 10 minutes for 10 hours.
    for (let minute = 0; minute <= 600; minute += 10) {
      if (ids.failed('energy', 'wh_slow', 503).report) reports.push(minute);
      advance(10 * MINUTE);
    }
    expect(reports).toEqual([60, 300, 540]);
  });

  it('summarises each source: how many ids fail and since when the oldest does', () => {
    const { ids, advance } = list();
    ids.failed('energy', 'wh_old', 503);
    advance(HOUR);
    ids.failed('energy', 'wh_new', 503);
    ids.failed('sandbox', 'wh_s', 401);
    // A retry of the old id makes it the most recent, not the youngest.
    ids.failed('energy', 'wh_old', 503);
    expect(ids.bySource()).toEqual(
      new Map([
        ['energy', { count: 2, oldestFirstFailedAt: T0 }],
        ['sandbox', { count: 1, oldestFirstFailedAt: T0 + HOUR }],
      ]),
    );
  });

  it('forgets ids past the platform’s 72-hour retry window and returns them as given up', () => {
    const { ids, advance } = list();
    ids.failed('energy', 'wh_lost', 503);
    advance(HOUR);
    ids.failed('energy', 'wh_later', 503);
    advance(PLATFORM_RETRY_WINDOW_MS - HOUR - 1);
    expect(ids.sweep()).toEqual([]);
    advance(1);
    expect(ids.sweep().map((e) => e.webhookId)).toEqual(['wh_lost']);
    expect(ids.get('energy', 'wh_later')).toBeDefined();
  });

  it('holds at most maxIds, evicting the least recently failed', () => {
    const { ids, advance } = list({ maxIds: 3 });
    for (const id of ['a', 'b', 'c']) {
      ids.failed('energy', id, 503);
      advance(1000);
    }
    ids.failed('energy', 'a', 503); // a retried: b is now the least recently failed
    const { evicted } = ids.failed('energy', 'd', 503);
    expect(evicted?.webhookId).toBe('b');
    expect(ids.size).toBe(3);
    // A retry of a held id evicts nothing.
    expect(ids.failed('energy', 'd', 503).evicted).toBeUndefined();
  });

  it('refuses a list that could hold nothing', () => {
    expect(() => new FailingIds({ maxIds: 0 })).toThrow(/maxIds/);
  });
});

import { describe, expect, it } from 'vitest';
import { QuarantineBound } from '../../../ingest/webhooks/quarantine-bound.js';

const T0 = 1_700_000_000_000;

describe('the quarantine bound', () => {
  it('keeps a burst of a minute of the rate, then refuses more requests at once', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 2, bytesPerSecond: 1_000_000 });
    const verdicts = Array.from({ length: 125 }, () => bound.take('energy', 100, T0));
    expect(verdicts.filter((v) => v === 'keep')).toHaveLength(120);
    expect(verdicts.slice(120)).toEqual(Array(5).fill('over-rate'));
  });

  it('refills at the rate as time passes, never above the burst', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 1, bytesPerSecond: 1_000_000, burstSeconds: 3 });
    for (let i = 0; i < 3; i++) expect(bound.take('energy', 1, T0)).toBe('keep');
    expect(bound.take('energy', 1, T0)).toBe('over-rate');
    expect(bound.take('energy', 1, T0 + 1_000)).toBe('keep');
    expect(bound.take('energy', 1, T0 + 1_000)).toBe('over-rate');
    // A long quiet spell fills the bucket to its burst, not beyond.
    const later = T0 + 3_600_000;
    const kept = Array.from({ length: 10 }, () => bound.take('energy', 1, later)).filter((v) => v === 'keep');
    expect(kept).toHaveLength(3);
  });

  it('bounds the bytes too: large bodies run out before the request count does', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 100, bytesPerSecond: 1_000, burstSeconds: 10 });
    expect(bound.take('energy', 6_000, T0)).toBe('keep');
    expect(bound.take('energy', 6_000, T0)).toBe('over-bytes');
    expect(bound.take('energy', 4_000, T0)).toBe('keep');
    expect(bound.take('energy', 1, T0)).toBe('over-bytes');
    expect(bound.take('energy', 2_000, T0 + 2_000)).toBe('keep');
  });

  it('never keeps a body larger than the whole byte burst', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 1, bytesPerSecond: 10, burstSeconds: 10 });
    expect(bound.take('energy', 101, T0)).toBe('over-bytes');
    expect(bound.take('energy', 100, T0)).toBe('keep');
  });

  it('a refused request takes nothing: the source keeps what it has left', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 1, bytesPerSecond: 100, burstSeconds: 2 });
    expect(bound.take('energy', 500, T0)).toBe('over-bytes');
    expect(bound.take('energy', 100, T0)).toBe('keep');
    expect(bound.take('energy', 100, T0)).toBe('keep');
  });

  it('keeps one bucket per source: a flood on one leaves the others their share', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 1, bytesPerSecond: 1_000, burstSeconds: 5 });
    for (let i = 0; i < 100; i++) bound.take('flooded', 10, T0);
    expect(bound.take('flooded', 10, T0)).toBe('over-rate');
    expect(Array.from({ length: 5 }, () => bound.take('quiet', 10, T0))).toEqual(Array(5).fill('keep'));
  });

  it('a clock that steps back refills nothing and breaks nothing', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 1, bytesPerSecond: 1_000, burstSeconds: 1 });
    expect(bound.take('energy', 1, T0)).toBe('keep');
    expect(bound.take('energy', 1, T0 - 60_000)).toBe('over-rate');
    expect(bound.take('energy', 1, T0 + 1_000)).toBe('keep');
  });

  it('caps all sources together: a flood over many sources stops at the total', () => {
    const bound = new QuarantineBound({
      requestsPerSecond: 10,
      bytesPerSecond: 1_000_000,
      total: { requestsPerSecond: 3, bytesPerSecond: 1_000_000 },
      burstSeconds: 1,
    });
    const verdicts = ['a', 'b', 'c', 'd', 'e'].map((source) => bound.take(source, 10, T0));
    expect(verdicts).toEqual(['keep', 'keep', 'keep', 'over-total', 'over-total']);
    expect(bound.take('a', 10, T0 + 1_000)).toBe('keep');
  });

  it('takes more bytes for a record larger than first counted, or gives back what it took', () => {
    const bound = new QuarantineBound({ requestsPerSecond: 2, bytesPerSecond: 100, burstSeconds: 1 });
    expect(bound.take('energy', 40, T0)).toBe('keep');
    expect(bound.takeMore('energy', 40, 50, T0)).toBe('keep');
    expect(bound.take('energy', 10, T0)).toBe('keep');
    // 0 bytes left: the request is not kept, and its 10 bytes and its request come back.
    expect(bound.takeMore('energy', 10, 20, T0)).toBe('over-bytes');
    expect(bound.take('energy', 10, T0)).toBe('keep');
  });
});

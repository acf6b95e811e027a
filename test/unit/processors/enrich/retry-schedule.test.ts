import { describe, expect, it } from 'vitest';
import {
  backOffMs,
  isRetriableStatus,
  nextWaitMs,
  retryAfterMs,
} from '../../../../processors/enrich/retry-schedule.js';

const backOff = { initialMs: 200, maxMs: 2_000 };

describe('the retry schedule', () => {
  it('retries 429, 408 and 5xx, not other answers', () => {
    expect([429, 408, 500, 502, 503, 504].every(isRetriableStatus)).toBe(true);
    expect([200, 400, 401, 404].some(isRetriableStatus)).toBe(false);
  });

  it('doubles its ceiling per retry up to the maximum, with full jitter', () => {
    expect([1, 2, 3, 4, 5].map((n) => backOffMs(n, backOff, () => 1))).toEqual([200, 400, 800, 1_600, 2_000]);
    expect(backOffMs(3, backOff, () => 0)).toBe(0);
    expect(backOffMs(3, backOff, () => 0.5)).toBe(400);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-20T10:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs('Fri, 20 Nov 2026 10:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Fri, 20 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    // Never longer than five minutes: a day (or a date far ahead) would hold the endpoint that long.
    expect(retryAfterMs('86400', now)).toBe(300_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 09:00:00 GMT', now)).toBe(300_000);
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it('never comes back before the endpoint asked', () => {
    expect(nextWaitMs(1, backOff, 1_000, () => 1)).toBe(1_000);
    expect(nextWaitMs(4, backOff, 100, () => 1)).toBe(1_600);
    expect(nextWaitMs(1, backOff, undefined, () => 1)).toBe(200);
  });
});

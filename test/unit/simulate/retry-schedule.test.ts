import { describe, expect, it } from 'vitest';
import {
  backoffMs,
  DEFAULT_RETRY_POLICY,
  nextAttemptAt,
  type RetryPolicy,
} from '../../../tools/simulate/retry-schedule.js';

const policy: RetryPolicy = { initialMs: 1_000, maxMs: 60_000, factor: 2, windowMs: 600_000 };
const top = () => 0.999_999;
const bottom = () => 0;

describe('the retry schedule', () => {
  it('backs off exponentially from the initial wait and stops growing at the cap', () => {
    expect([1, 2, 3, 4, 5].map((retry) => backoffMs(retry, policy, top))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000,
    ]);
    expect(backoffMs(7, policy, top)).toBe(60_000);
    expect(backoffMs(40, policy, top)).toBe(60_000);
  });

  it('jitters each wait to between half and all of it', () => {
    expect(backoffMs(3, policy, bottom)).toBe(2_000);
    for (let i = 0; i < 100; i++) {
      const wait = backoffMs(3, policy, Math.random);
      expect(wait).toBeGreaterThanOrEqual(2_000);
      expect(wait).toBeLessThanOrEqual(4_000);
    }
  });

  it('retries inside the window, the last time at its end, then gives up', () => {
    const first = 1_000_000;
    expect(nextAttemptAt(first, first + 10, 1, policy, top)).toBe(first + 1_010);
    // The back-off would go past the window's end: the retry happens at the end instead.
    expect(nextAttemptAt(first, first + 599_000, 9, policy, top)).toBe(first + 600_000);
    expect(nextAttemptAt(first, first + 600_000, 10, policy, top)).toBeUndefined();
    expect(nextAttemptAt(first, first + 700_000, 10, policy, top)).toBeUndefined();
  });

  it('keeps retrying a delivery that never succeeds for the platform’s 72 hours by default', () => {
    expect(DEFAULT_RETRY_POLICY.windowMs).toBe(72 * 3_600_000);
    const first = 0;
    let now = first;
    let attempts = 1;
    for (;;) {
      const at = nextAttemptAt(first, now, attempts, DEFAULT_RETRY_POLICY, Math.random);
      if (at === undefined) break;
      expect(at).toBeGreaterThan(now);
      now = at;
      attempts++;
    }
    expect(now).toBe(72 * 3_600_000);
    // 1 s doubling to the 1 h cap, then hourly: about 80 attempts over three days.
    expect(attempts).toBeGreaterThan(70);
    expect(attempts).toBeLessThan(160);
  });
});

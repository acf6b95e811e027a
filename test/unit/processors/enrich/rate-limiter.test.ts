import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../../../processors/enrich/rate-limiter.js';

describe('RateLimiter', () => {
  it('lets a burst through, then spaces requests 1/rate apart', () => {
    let now = 0;
    const limiter = new RateLimiter(10, 2, () => now);
    expect(limiter.reserve()).toBe(0);
    expect(limiter.reserve()).toBe(0);
    expect(limiter.reserve()).toBe(100);
    expect(limiter.reserve()).toBe(200);
    now = 1_000;
    // The debt is paid back at the rate: a second later there is room again.
    expect(limiter.reserve()).toBe(0);
  });

  it('never sends more than the rate over a long run', () => {
    let now = 0;
    const limiter = new RateLimiter(50, 50, () => now);
    const sendTimes: number[] = [];
    for (let i = 0; i < 500; i++) {
      sendTimes.push(now + limiter.reserve());
      now += 1;
    }
    const last = sendTimes.at(-1)!;
    // 500 requests at 50/s with a burst of 50: at least 9 s.
    expect(last).toBeGreaterThanOrEqual(9_000);
  });

  it('holds everyone back until a Retry-After has passed', () => {
    let now = 0;
    const limiter = new RateLimiter(100, 100, () => now);
    limiter.holdUntil(1_500);
    expect(limiter.reserve()).toBe(1_500);
    now = 1_500;
    expect(limiter.reserve()).toBe(0);
  });

  it('gives back a slot not used', () => {
    const now = 0;
    const limiter = new RateLimiter(1, 1, () => now);
    expect(limiter.reserve()).toBe(0);
    expect(limiter.reserve()).toBe(1_000);
    limiter.release();
    expect(limiter.reserve()).toBe(1_000);
  });
});

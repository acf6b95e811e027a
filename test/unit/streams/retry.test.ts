import { describe, expect, it } from 'vitest';
import { backoffDelay, isProgrammerError, retry } from '../../../runtime/streams/retry.js';

const noSleep = async () => undefined;

describe('the retry helper', () => {
  it('tries again until the attempt succeeds', async () => {
    let calls = 0;
    const result = await retry(
      async () => {
        calls++;
        if (calls < 3) throw new Error('broker away');
        return 'ok';
      },
      { sleep: noSleep },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
  });

  it('never retries a programmer error', async () => {
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw new TypeError('undefined is not a function');
        },
        { sleep: noSleep },
      ),
    ).rejects.toThrow(TypeError);
    expect(calls).toBe(1);
    expect(isProgrammerError(new RangeError('x'))).toBe(true);
    expect(isProgrammerError(new Error('x'))).toBe(false);
  });

  it('stops when told an error is not retriable, and after the retries', async () => {
    let calls = 0;
    const fail = async () => {
      calls++;
      throw new Error('no');
    };
    await expect(retry(fail, { sleep: noSleep, isRetriable: () => false })).rejects.toThrow('no');
    expect(calls).toBe(1);
    calls = 0;
    await expect(retry(fail, { sleep: noSleep, retries: 2 })).rejects.toThrow('no');
    expect(calls).toBe(3);
  });

  it('backs off exponentially up to a cap, with jitter around it', async () => {
    expect([1, 2, 3, 4, 10].map((n) => backoffDelay(n, 100, 1_000))).toEqual([100, 200, 400, 800, 1_000]);
    const delays: number[] = [];
    await retry(
      async (n) => {
        if (n < 3) throw new Error('again');
      },
      { sleep: noSleep, initialDelayMs: 100, jitter: 0.2, onRetry: (_e, _a, d) => delays.push(d) },
    );
    expect(delays).toHaveLength(3);
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(0.8 * 100 * 2 ** i);
      expect(d).toBeLessThanOrEqual(1.2 * 100 * 2 ** i);
    });
  });
});

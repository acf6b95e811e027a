import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { producerOutdated, SizeLimits } from '../../../runtime/streams/size-limits.js';

const silent = pino({ level: 'silent' });

describe('SizeLimits', () => {
  it('reads the limits again after a failure and updates them in place', async () => {
    let reads = 0;
    const limits = new SizeLimits(
      new Map([['out', 1_048_588]]),
      async () => {
        reads++;
        return new Map([['out', 100_000]]);
      },
      silent,
    );
    const byTopic = limits.byTopic;
    limits.refreshSoon();
    await limits.settled();
    expect(reads).toBe(1);
    expect(byTopic.get('out')).toBe(100_000);
    expect(limits.byTopic).toBe(byTopic);
  });

  it('reads at most once per interval, and once at a time, however often batches fail', async () => {
    let clock = 0;
    let reads = 0;
    let answer: () => void = () => {};
    const limits = new SizeLimits(
      new Map([['out', 10]]),
      () => {
        reads++;
        return new Promise((resolve) => {
          answer = () => resolve(new Map([['out', 10]]));
        });
      },
      silent,
      30_000,
      () => clock,
    );
    limits.refreshSoon();
    limits.refreshSoon(); // still reading: no second read
    clock = 10_000;
    answer();
    await limits.settled();
    expect(reads).toBe(1);
    clock = 20_000;
    limits.refreshSoon(); // 20 s after the last read began
    expect(reads).toBe(1);
    clock = 30_001;
    limits.refreshSoon();
    answer();
    await limits.settled();
    expect(reads).toBe(2);
  });

  it('keeps the limits when they cannot be read', async () => {
    const limits = new SizeLimits(
      new Map([['out', 500]]),
      () => Promise.reject(new Error('broker away')),
      silent,
    );
    limits.refreshSoon();
    await expect(limits.settled()).resolves.toBeUndefined();
    expect(limits.byTopic.get('out')).toBe(500);
  });
});

describe('the producer’s batches', () => {
  it('follow the smallest limit read', async () => {
    const limits = new SizeLimits(
      new Map([
        ['a', 1_048_588],
        ['b', 200_000],
      ]),
      async () => new Map([['a', 50_000]]),
      silent,
    );
    expect(limits.smallest()).toBe(200_000);
    limits.refreshSoon();
    await limits.settled();
    expect(limits.smallest()).toBe(50_000);
    expect(new SizeLimits(new Map(), async () => new Map(), silent).smallest()).toBeUndefined();
  });
});

describe('whether a producer still fits the limits', () => {
  it('sizes a producer from the largest and the smallest limit', () => {
    const limits = new SizeLimits(
      new Map([
        ['a', 2_000_000],
        ['b', 200_000],
      ]),
      async () => new Map(),
      silent,
    );
    expect(limits.largest()).toBe(2_000_000);
    expect(limits.producerSizing()).toEqual({ messageBytes: 2_001_024, batchBytes: 199_488 });
  });

  it('calls for a new producer when a lowered limit needs smaller batches or a raised one larger records', () => {
    const madeFor = { messageBytes: 1_049_612, batchBytes: 1_000_000 };
    expect(producerOutdated(madeFor, madeFor)).toBe(false);
    expect(producerOutdated(madeFor, { ...madeFor, batchBytes: 3_488 })).toBe(true);
    expect(producerOutdated(madeFor, { ...madeFor, messageBytes: 2_001_024 })).toBe(true);
    // Looser the other way: smaller records than it takes, batches it already keeps under.
    expect(producerOutdated(madeFor, { messageBytes: 1_000_000, batchBytes: 1_000_000 })).toBe(false);
    expect(producerOutdated({ ...madeFor, batchBytes: 3_488 }, madeFor)).toBe(false);
  });
});

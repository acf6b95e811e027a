import { describe, expect, it } from 'vitest';
import { CommitPolicy } from '../../../runtime/streams/commit-policy.js';

const policy = () =>
  new CommitPolicy({
    intervalMs: 100,
    catchUpIntervalMs: 1_000,
    maxRecords: 10_000,
    catchUpMaxRecords: 50_000,
  });

describe('when a transaction is due', () => {
  it('live (batches not full): every commit interval', () => {
    const p = policy();
    p.polled(40, 500);
    expect(p.catchingUp).toBe(false);
    expect(p.due(40, 99)).toBe(false);
    expect(p.due(40, 100)).toBe(true);
  });

  it('catching up (a full batch): the longer interval, so a backlog goes in fewer, larger transactions', () => {
    const p = policy();
    p.polled(500, 500);
    expect(p.catchingUp).toBe(true);
    expect(p.due(5_000, 100)).toBe(false);
    expect(p.due(5_000, 999)).toBe(false);
    expect(p.due(5_000, 1_000)).toBe(true);
  });

  it('back to the commit interval with the first batch that is not full', () => {
    const p = policy();
    p.polled(500, 500);
    expect(p.due(2_000, 300)).toBe(false);
    p.polled(12, 500);
    expect(p.due(2_012, 300)).toBe(true);
  });

  it('an empty poll is live', () => {
    const p = policy();
    p.polled(500, 500);
    p.polled(0, 500);
    expect(p.catchingUp).toBe(false);
    expect(p.intervalMs).toBe(100);
  });

  it('due at the record cap, whatever its age: the live one, or the higher one while catching up', () => {
    const p = policy();
    expect(p.due(10_000, 0)).toBe(true);
    p.polled(500, 500);
    expect(p.due(10_000, 0)).toBe(false);
    expect(p.due(49_999, 0)).toBe(false);
    expect(p.due(50_000, 0)).toBe(true);
    p.polled(3, 500);
    expect(p.due(10_000, 0)).toBe(true);
  });

  it('catch-up settings under the live ones never make transactions smaller', () => {
    const p = new CommitPolicy({
      intervalMs: 500,
      catchUpIntervalMs: 200,
      maxRecords: 10_000,
      catchUpMaxRecords: 5,
    });
    p.polled(500, 500);
    expect(p.intervalMs).toBe(500);
    expect(p.maxRecords).toBe(10_000);
    expect(p.due(9_999, 499)).toBe(false);
  });
});

describe('how long a poll may wait for a first record', () => {
  it('with no transaction open: the idle wait', () => {
    expect(policy().pollWaitMs(undefined, 50)).toBe(50);
  });

  it('with one open: no longer than until it is due, so a lone record is not held a whole poll wait', () => {
    const p = policy();
    p.polled(1, 500);
    expect(p.pollWaitMs(0, 50)).toBe(50);
    expect(p.pollWaitMs(70, 50)).toBe(30);
    expect(p.pollWaitMs(99, 50)).toBe(1);
    // Already due (the commit comes after this poll): a poll that does not wait, but does not spin either.
    expect(p.pollWaitMs(250, 50)).toBe(1);
  });

  it('catching up: until the longer interval is due', () => {
    const p = policy();
    p.polled(500, 500);
    expect(p.pollWaitMs(900, 500)).toBe(100);
  });
});

import { describe, expect, it } from 'vitest';
import {
  advanceStreamTime,
  MAX_RECORD_LEAD_MS,
  recordLeadBeyondAllowed,
} from '../../../runtime/streams/stream-time.js';

const now = Date.parse('2026-11-23T12:00:00Z');

describe('stream time', () => {
  it('follows records forward and never goes back', () => {
    expect(advanceStreamTime(0, now - 5_000, now)).toBe(now - 5_000);
    expect(advanceStreamTime(now - 5_000, now - 9_000, now)).toBe(now - 5_000);
  });

  it('follows a record up to the allowed lead ahead of the clock', () => {
    expect(advanceStreamTime(0, now + MAX_RECORD_LEAD_MS, now)).toBe(now + MAX_RECORD_LEAD_MS);
  });

  it('stops at the clock plus the allowed lead for a record stamped by a fast clock', () => {
    const tenDaysAhead = now + 10 * 86_400_000;
    expect(advanceStreamTime(now - 1_000, tenDaysAhead, now)).toBe(now + MAX_RECORD_LEAD_MS);
  });

  it('replays history exactly: records behind the clock are never bounded', () => {
    const history = [now - 90 * 86_400_000, now - 80 * 86_400_000, now - 85 * 86_400_000];
    let time = 0;
    for (const timestamp of history) time = advanceStreamTime(time, timestamp, now);
    expect(time).toBe(now - 80 * 86_400_000);
  });

  it('measures how far beyond the allowed lead a record is', () => {
    expect(recordLeadBeyondAllowed(now + MAX_RECORD_LEAD_MS, now)).toBe(0);
    expect(recordLeadBeyondAllowed(now + MAX_RECORD_LEAD_MS + 7, now)).toBe(7);
    expect(recordLeadBeyondAllowed(now - 1, now)).toBe(0);
  });
});

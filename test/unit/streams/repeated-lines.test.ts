// The first line of a kind per window in full, the rest held back and counted in the next full one.
import { describe, expect, it } from 'vitest';
import { RepeatedLines } from '../../../runtime/streams/repeated-lines.js';

describe('RepeatedLines', () => {
  it('lets the first of a kind through per window and says how many it held back', () => {
    let now = 0;
    const lines = new RepeatedLines(1_000, () => now);
    expect(lines.admit('a')).toEqual({ full: true, heldBack: 0 });
    expect(lines.admit('a')).toEqual({ full: false, heldBack: 0 });
    expect(lines.admit('b')).toEqual({ full: true, heldBack: 0 });
    now = 999;
    expect(lines.admit('a')).toEqual({ full: false, heldBack: 0 });
    now = 1_000;
    expect(lines.admit('a')).toEqual({ full: true, heldBack: 2 });
    expect(lines.admit('b')).toEqual({ full: true, heldBack: 0 });
    now = 5_000;
    expect(lines.admit('a')).toEqual({ full: true, heldBack: 0 });
  });

  it('remembers a bounded number of kinds, forgetting the oldest', () => {
    const lines = new RepeatedLines(60_000, () => 0);
    for (let i = 0; i < 1_001; i++) expect(lines.admit(`k${i}`).full).toBe(true);
    // k0 was forgotten to make room: logged in full again; k1000 is still remembered.
    expect(lines.admit('k0').full).toBe(true);
    expect(lines.admit('k1000').full).toBe(false);
  });
});

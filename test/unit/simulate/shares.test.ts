import { describe, expect, it } from 'vitest';
import { createRandom } from '../../../tools/simulate/prng.js';
import { createShareSampler, exactCounts } from '../../../tools/simulate/shares.js';

/** The group each of `n` items joins. */
function draw(seed: string, shares: number[], total: number | undefined, n: number, eligible?: number) {
  const sampler = createShareSampler(createRandom(seed), shares, total, eligible);
  return Array.from({ length: n }, () => sampler.next());
}

const tally = (groups: (number | undefined)[], group: number | undefined) =>
  groups.filter((g) => g === group).length;

describe('exact shares of a known count', () => {
  it('gives each group exactly its rounded share: 5 % and 5 % of 300 are 15 and 15', () => {
    for (const seed of ['a', 'b', 'c', 'd']) {
      const groups = draw(seed, [0.05, 0.05], 300, 300);
      expect(tally(groups, 0)).toBe(15);
      expect(tally(groups, 1)).toBe(15);
      expect(tally(groups, undefined)).toBe(270);
    }
    expect(tally(draw('e', [0.2], 300, 300), 0)).toBe(60);
    expect(tally(draw('f', [1], 7, 7), 0)).toBe(7);
    expect(tally(draw('g', [0], 7, 7), 0)).toBe(0);
  });

  it('spreads the chosen items at random: another seed, other items; the same seed, the same ones', () => {
    const picked = (seed: string) =>
      draw(seed, [0.1], 200, 200)
        .map((g, i) => (g === 0 ? i : -1))
        .filter((i) => i >= 0);
    expect(picked('x')).toEqual(picked('x'));
    expect(picked('x')).not.toEqual(picked('y'));
    // Not bunched at either end.
    expect(picked('x').some((i) => i < 100)).toBe(true);
    expect(picked('x').some((i) => i >= 100)).toBe(true);
  });

  it('chooses only among the eligible items, keeping the count of the whole', () => {
    const groups = draw('tail', [0.1], 40, 40, 39);
    expect(tally(groups, 0)).toBe(4);
    expect(groups[39]).toBeUndefined();
    // Everything eligible is chosen when the share asks for more than there is room for.
    expect(draw('full', [1], 5, 5, 4)).toEqual([0, 0, 0, 0, undefined]);
  });

  it('chooses nothing past the count', () => {
    expect(draw('past', [1], 3, 5)).toEqual([0, 0, 0, undefined, undefined]);
  });

  it('never gives more places than items, taking them from the last groups', () => {
    expect(exactCounts([0.5, 0.5], 3)).toEqual([2, 1]);
    expect(exactCounts([0.05, 0.05], 300)).toEqual([15, 15]);
    expect(exactCounts([0.1], 40, 39)).toEqual([4]);
  });
});

describe('shares without a count', () => {
  it('lets each item draw on its own, at about the share', () => {
    const groups = draw('open', [0.05, 0.1], undefined, 20_000);
    expect(tally(groups, 0) / 20_000).toBeCloseTo(0.05, 2);
    expect(tally(groups, 1) / 20_000).toBeCloseTo(0.1, 2);
  });
});

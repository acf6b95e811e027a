// Exact shares: which webhooks of a run are invalid, OperationFailures, duplicated or reordered. With a
// known count, `--invalid-rate 0.05 --count 300` means exactly 15, spread at random, so a run's summary
// and the topics it fills can be checked against the options; without one, each webhook draws on its own.
import type { Random } from './prng.js';

export interface ShareSampler {
  /** The group the next item joins (an index into `shares`), or undefined for none. */
  next(): number | undefined;
}

/**
 * Puts each of `total` items in turn into one of several disjoint groups or none, so that group i
 * ends with exactly round(shares[i] × total) items, every such choice of items equally likely
 * (sequential sampling: an item joins a group with the chance of that group's places left over the
 * items left). Without a total, an item joins group i with probability shares[i]. The shares must
 * add up to at most 1; places beyond the items that can join are dropped from the last groups.
 */
export function createShareSampler(
  random: Random,
  shares: readonly number[],
  total?: number,
  /** Only the first this many items can join a group (the counts stay those of `total`, capped). */
  eligible = total,
): ShareSampler {
  if (total === undefined) {
    return {
      next() {
        let roll = random.next();
        for (let group = 0; group < shares.length; group++) {
          roll -= shares[group]!;
          if (roll < 0) return group;
        }
        return undefined;
      },
    };
  }
  let itemsLeft = Math.min(total, eligible ?? total);
  const left = exactCounts(shares, total, itemsLeft);
  return {
    next() {
      if (itemsLeft <= 0) return undefined;
      let roll = random.next() * itemsLeft;
      itemsLeft--;
      for (let group = 0; group < left.length; group++) {
        if (roll < left[group]!) {
          left[group]!--;
          return group;
        }
        roll -= left[group]!;
      }
      return undefined;
    },
  };
}

/** How many of `total` items each share gives: rounded, and never more than `room` (all items) in all. */
export function exactCounts(shares: readonly number[], total: number, items = total): number[] {
  let room = items;
  return shares.map((share) => {
    const count = Math.min(room, Math.round(share * total));
    room -= count;
    return count;
  });
}

// How many duplicates of each recently retried webhook id the router has seen, for the
// duplicates-per-id histogram. In memory and bounded: a metric, not state. The dedupe store keeps
// only each id's decision (its changelog value is a fixed 10 bytes, and a duplicate writes nothing),
// so the count lives here; after a restart, a rebalance or an eviction an id counts from 1 again, and
// the duplicates of a transaction that aborted are counted again when its records are processed again
// (a histogram of retries, where an abort is rare, is not worth a transactional overlay).

import { digestId } from '../../runtime/streams/id-set.js';

/**
 * Ids longer than this are kept by their digest: an id's length is the sender's (up to 8 KiB), and
 * 10,000 of them at full length held 78 MB a partition.
 */
const KEPT_ID_MAX_LENGTH = 64;

export class RetryCounts {
  /** Map order is least recently retried first: each duplicate moves its id last. */
  readonly #counts = new Map<string, number>();

  constructor(readonly maxIds = 10_000) {
    if (!Number.isInteger(maxIds) || maxIds < 1)
      throw new RangeError(`maxIds must be a positive integer, got ${maxIds}`);
  }

  get size(): number {
    return this.#counts.size;
  }

  /** Counts one more duplicate of `id`; returns how many have been seen (1 for the first retry). */
  duplicate(fullId: string): number {
    const id = fullId.length > KEPT_ID_MAX_LENGTH ? digestId(fullId) : fullId;
    const count = (this.#counts.get(id) ?? 0) + 1;
    this.#counts.delete(id);
    if (this.#counts.size >= this.maxIds) this.#counts.delete(this.#counts.keys().next().value!);
    this.#counts.set(id, count);
    return count;
  }
}

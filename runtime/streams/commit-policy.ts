// When the open transaction is due. Live, every 100 ms: a record is visible to read_committed readers
// about a commit interval after it arrives. Catching up (the consumer hands over full batches: more
// records are waiting than one poll takes), a longer interval and a higher record cap: each commit costs
// the same few broker round trips whatever its size, so a backlog goes through in fewer, larger
// transactions, and both go back with the first batch that is not full.

export interface CommitPolicyOptions {
  /** Live: a transaction is due this long after it began. */
  intervalMs: number;
  /** Catching up: a transaction is due this long after it began (never under intervalMs). */
  catchUpIntervalMs: number;
  /** Live: a transaction is due with this many input records, whatever its age. */
  maxRecords: number;
  /** Catching up: a transaction is due with this many input records (never under maxRecords). */
  catchUpMaxRecords: number;
}

export class CommitPolicy {
  #catchingUp = false;

  constructor(private readonly options: CommitPolicyOptions) {}

  /** Whether the last poll said a backlog is waiting. */
  get catchingUp(): boolean {
    return this.#catchingUp;
  }

  /** A poll handed over `fetched` records of at most `max`: a full batch means more are waiting. */
  polled(fetched: number, max: number): void {
    this.#catchingUp = fetched >= max;
  }

  /** The interval that applies now. */
  get intervalMs(): number {
    const { intervalMs, catchUpIntervalMs } = this.options;
    return this.#catchingUp ? Math.max(intervalMs, catchUpIntervalMs) : intervalMs;
  }

  /** The record cap that applies now. */
  get maxRecords(): number {
    const { maxRecords, catchUpMaxRecords } = this.options;
    return this.#catchingUp ? Math.max(maxRecords, catchUpMaxRecords) : maxRecords;
  }

  /**
   * How long the next poll may wait for a first record: with a transaction open, no longer than until it
   * is due (a lone record is committed a commit interval after it came, not a whole poll wait later);
   * else `idleMs`. At least 1 ms: a poll that waits 0 ms busies the loop.
   */
  pollWaitMs(ageMs: number | undefined, idleMs: number): number {
    if (ageMs === undefined) return idleMs;
    return Math.max(1, Math.min(idleMs, this.intervalMs - ageMs));
  }

  /** Whether a transaction of `records` input records, begun `ageMs` ago, is due. */
  due(records: number, ageMs: number): boolean {
    return records >= this.maxRecords || ageMs >= this.intervalMs;
  }
}

// Where one input partition reads next and where it goes back to after a failure: the one owner of
// the partition's offsets (Kafka Streams keeps them in StreamTask/PartitionGroup). The poll loop tells
// it what the consumer handed over, what was processed and what committed; it answers which offset to
// commit, which records are copies from before a rewind, and where to seek after an abort. Offsets are
// plain numbers, as the client binding hands them over and takes them (exact below 2^53).

export class PartitionPosition {
  /** The next offset to read as of the last commit (this instance's, or the group's when the task started). */
  #committed: number | undefined;
  /** Whether #committed is this instance's own commit (the consumer has read to it), not the group's start. */
  #committedHere = false;
  /** With no committed offset known: the first offset the consumer handed over (where this partition started for us). */
  #firstHandedOver: number | undefined;
  /** In the open transaction: the offset after the last one processed. */
  #txnNext: number | undefined;
  #records = 0;

  /** The task starts running: the group's committed offset for the partition, if it has one. */
  start(committed: number | undefined): void {
    if (committed !== undefined) this.#committed = committed;
  }

  /** The consumer handed over a record of this partition, whether or not it gets processed. */
  handedOver(offset: number): void {
    if (this.#committed === undefined) this.#firstHandedOver ??= offset;
  }

  /**
   * Whether a handed-over record is one to process: not below what the open transaction processed or
   * what is committed (a copy fetched before a rewind, or before the partition's start was known).
   */
  isNew(offset: number): boolean {
    const floor = this.#txnNext ?? this.#committed;
    return floor === undefined || offset >= floor;
  }

  /** A record was processed (its outputs sent, or its dead letter) in the open transaction. */
  processed(offset: number): void {
    this.#txnNext = offset + 1;
    this.#records++;
  }

  /**
   * Whether the consumer's position is past what was processed or committed here without a record to
   * process (transaction markers, aborted records), so committing it would move the group's offset on.
   * Never from the group's start offset alone: right after a resume the consumer's position may still be
   * where it was before its seek to that offset took effect (past records fetched while it was paused).
   */
  canAdvanceTo(position: number): boolean {
    if (this.#txnNext !== undefined) return position > this.#txnNext;
    return this.#committedHere && this.#committed !== undefined && position > this.#committed;
  }

  /** Commits `position` with the open transaction (see canAdvanceTo). */
  advanceTo(position: number): void {
    if (this.canAdvanceTo(position)) this.#txnNext = position;
  }

  /** The open transaction holds something of this partition (records, or an offset to move on to). */
  get dirty(): boolean {
    return this.#txnNext !== undefined;
  }

  /** The offset the open transaction commits for this partition (undefined: it holds nothing of it). */
  get toCommit(): number | undefined {
    return this.#txnNext;
  }

  /** Records processed in the open transaction. */
  get records(): number {
    return this.#records;
  }

  /** The offset this instance or the group last committed (undefined before the first commit is known). */
  get committed(): number | undefined {
    return this.#committed;
  }

  /** Where the partition reads next if nothing fails: after what is processed, else from the committed offset. */
  readNext(): number | undefined {
    return this.#txnNext ?? this.#committed ?? this.#firstHandedOver;
  }

  /** The open transaction committed: its offset is the partition's committed one. */
  committedNow(): void {
    if (this.#txnNext !== undefined) {
      this.#committed = this.#txnNext;
      this.#committedHere = true;
    }
    this.#clearTransaction();
  }

  /**
   * The open transaction is gone (aborted, or its outcome is not ours to know): the partition must read
   * again from its first record not committed. Returns that offset (undefined: nothing was ever handed over).
   */
  rewind(): number | undefined {
    this.#clearTransaction();
    return this.#committed ?? this.#firstHandedOver;
  }

  #clearTransaction(): void {
    this.#txnNext = undefined;
    this.#records = 0;
  }
}

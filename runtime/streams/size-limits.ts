// The largest record each output topic takes (its max.message.bytes), read at the start and read again
// after a batch fails. An operator may lower a topic's limit while the stage runs: the broker then
// refuses a larger record, which makes librdkafka abort the whole transaction, and the stage, checking
// outputs against the limit it read at its start, would send the same record on every retry for ever.
// Read again, the lower limit makes the retry dead-letter that one record (output-too-large), and a
// producer sized for the old limits gives way to one sized for the new (producerOutdated below).
import { batchBytesFor, messageBytesFor } from '../kafka/batch-size.js';
import type { Logger } from '../log.js';

/** What a producer is sized for: the largest record it takes, and its batches (batch-size.ts). */
export interface ProducerSizing {
  messageBytes: number;
  batchBytes: number;
}

/**
 * Whether a producer sized `madeFor` no longer fits limits now sizing `now`: its batches too large for a
 * lowered limit (the broker refuses them whole, on every retry) or its largest record too small for a
 * raised one (librdkafka refuses such a record itself). A looser fit in the other direction is harmless.
 */
export function producerOutdated(madeFor: ProducerSizing, now: ProducerSizing): boolean {
  return now.batchBytes < madeFor.batchBytes || now.messageBytes > madeFor.messageBytes;
}

/** A failing stage reads the limits at most this often (one DescribeConfigs request each time). */
export const SIZE_LIMITS_REFRESH_MS = 30_000;

export class SizeLimits {
  /** Topic → max.message.bytes, updated in place: RecordProcessing checks every output against it. */
  readonly byTopic: Map<string, number>;
  #lastRefreshAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;

  constructor(
    initial: ReadonlyMap<string, number>,
    private readonly read: () => Promise<ReadonlyMap<string, number>>,
    private readonly log: Logger,
    private readonly minIntervalMs = SIZE_LIMITS_REFRESH_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.byTopic = new Map(initial);
  }

  /**
   * Reads the limits again in the background, unless a read is under way or one started less than
   * `minIntervalMs` ago (failures come in a loop of retries). Never throws: a read that fails leaves the
   * limits as they were (the broker may be what failed the batch).
   */
  refreshSoon(): void {
    if (this.#refreshing !== undefined || this.now() - this.#lastRefreshAt < this.minIntervalMs) return;
    this.#lastRefreshAt = this.now();
    this.#refreshing = this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
  }

  /** The smallest limit of all the topics: what the producer's batches must stay under. */
  smallest(): number | undefined {
    return this.byTopic.size === 0 ? undefined : Math.min(...this.byTopic.values());
  }

  /** The largest limit of all the topics: the largest record the producer must take. */
  largest(): number | undefined {
    return this.byTopic.size === 0 ? undefined : Math.max(...this.byTopic.values());
  }

  /** What a producer made now is sized for. */
  producerSizing(): ProducerSizing {
    return {
      messageBytes: messageBytesFor(this.largest() ?? 0),
      batchBytes: batchBytesFor(this.smallest()),
    };
  }

  /** Settles once a read under way has (a stage waits for it before it closes its clients). */
  async settled(): Promise<void> {
    await this.#refreshing;
  }

  async #refresh(): Promise<void> {
    try {
      const fresh = await this.read();
      const smallestBefore = this.smallest();
      for (const [topic, bytes] of fresh) {
        const before = this.byTopic.get(topic);
        if (before === bytes) continue;
        this.byTopic.set(topic, bytes);
        // The producer's batches were sized for the old limit (eos-producer.ts): the stage renews it
        // after the failure that read this one (transaction-cycle.ts).
        const batches =
          smallestBefore !== undefined && bytes < smallestBefore
            ? '; a new transactional producer batches under it'
            : '';
        this.log.warn(
          { topic, maxMessageBytes: bytes, before },
          `${topic} now takes records of up to ${bytes} bytes (${before ?? 'unknown'} before); outputs are checked against it${batches}`,
        );
      }
    } catch (error) {
      this.log.debug({ err: error }, 'could not read the topics’ max.message.bytes again; the limits stay');
    }
  }
}

// A producer's batch.size for the topics it writes. The broker applies a topic's max.message.bytes to a
// whole batch of records, and librdkafka does not split a batch the broker refuses for its size (the
// Java producer does): a batch larger than the smallest limit of the topics it goes to is refused with
// every record in it, again on every retry. librdkafka batches up to min(message.max.bytes, batch.size).

/** librdkafka's default batch.size. */
export const DEFAULT_BATCH_BYTES = 1_000_000;
/** A batch's header and the request's framing, with room. */
const BATCH_MARGIN_BYTES = 512;

/** librdkafka's default, or less when a topic takes smaller batches (its max.message.bytes). */
export function batchBytesFor(smallestTopicLimit: number | undefined): number {
  if (smallestTopicLimit === undefined) return DEFAULT_BATCH_BYTES;
  return Math.max(1, Math.min(DEFAULT_BATCH_BYTES, smallestTopicLimit - BATCH_MARGIN_BYTES));
}

/** A producer's message.max.bytes: the largest record of the topics it writes, with room for its framing. */
export function messageBytesFor(largestTopicLimit: number): number {
  return Math.max(1_000_000, largestTopicLimit + 1_024);
}

/** A topic's max.message.bytes from its described configs, or undefined when absent or not a size. */
export function maxMessageBytesOf(configs: Readonly<Record<string, string>> | undefined): number | undefined {
  const value = Number(configs?.['max.message.bytes']);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

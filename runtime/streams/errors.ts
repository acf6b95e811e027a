// How the stream kit reads Kafka errors: "this partition was taken from us" versus everything else.

/** Protocol error types that mean another producer with our transactional id took over. */
const FENCED_TYPES = new Set([
  'INVALID_PRODUCER_EPOCH',
  'PRODUCER_FENCED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'INVALID_PRODUCER_ID_MAPPING',
]);

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && e !== null && chain.length < 10; ) {
    chain.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return chain;
}

/**
 * The producer was fenced: a newer owner of the partition initialised the same transactional id.
 * Our state for that partition is stale; kafkajs may wrap the protocol error (retries exceeded).
 */
export function isFencedError(error: unknown): boolean {
  return causes(error).some((e) => {
    const { type, message } = e as { type?: unknown; message?: unknown };
    if (typeof type === 'string' && FENCED_TYPES.has(type)) return true;
    return typeof message === 'string' && /fenced|producer epoch/i.test(message);
  });
}

/** A consumer-group error that says the group is rebalancing: the batch's partition may be gone. */
export function isRebalanceError(error: unknown): boolean {
  return causes(error).some((e) => {
    const { type } = e as { type?: unknown };
    return (
      type === 'REBALANCE_IN_PROGRESS' ||
      type === 'NOT_COORDINATOR_FOR_GROUP' ||
      type === 'ILLEGAL_GENERATION'
    );
  });
}

/** The partition was lost (fenced) while processing: drop its state and producer until reassigned. */
export class PartitionLostError extends Error {
  override name = 'PartitionLostError';
  constructor(
    readonly topic: string,
    readonly partition: number,
    options?: { cause?: unknown },
  ) {
    super(`partition ${topic}[${partition}] was taken over by another instance`, options);
  }
}

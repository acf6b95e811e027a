// Reads a topic as a read_committed consumer in a throwaway group (no offsets committed), decodes each
// value through the registry and hands back one JSON line per record.
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { type Serde, schemaIdOf } from '../../schemas/serde.js';
import { formatRecord } from './format.js';

export interface TailOptions {
  topic: string;
  /** From each partition's earliest record; else only records written after the start. */
  fromBeginning: boolean;
  /** Keep reading; else stop at the end offsets taken at the start. */
  follow: boolean;
  /** Only records with this key (UTF-8). */
  key?: string;
  /** Stop after printing this many. */
  limit?: number;
}

export interface TailDeps {
  kafka: Kafka;
  serde: Pick<Serde, 'decode'>;
  /** Receives each line, without its newline. */
  write: (line: string) => void;
  /** Stops a follow (Ctrl-C, a closed pipe). */
  signal?: AbortSignal;
}

/** The topic does not exist: one line for the user. */
export class UnknownTopicError extends Error {
  override name = 'UnknownTopicError';
}

/** Tails the topic until caught up (or the limit, or the signal); resolves to the records printed. */
export async function tail(options: TailOptions, { kafka, serde, write, signal }: TailDeps): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  let offsets: { partition: number; low: string; high: string }[];
  try {
    const topics = await admin.listTopics();
    if (!topics.includes(options.topic))
      throw new UnknownTopicError(`topic "${options.topic}" does not exist`);
    offsets = await admin.fetchTopicOffsets(options.topic);
  } finally {
    await admin.disconnect();
  }

  // Where each partition counts as read to the end (unless following): its end offset at the start.
  const end = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  const position = new Map(offsets.map((o) => [o.partition, BigInt(options.fromBeginning ? o.low : o.high)]));
  const caughtUp = () => [...end].every(([partition, high]) => position.get(partition)! >= high);
  if (!options.follow && caughtUp()) return 0;
  if (signal?.aborted) return 0;

  let printed = 0;
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  let done = false;
  const stop = () => {
    done = true;
    finish();
  };
  signal?.addEventListener('abort', stop, { once: true });
  const advance = (partition: number, next: bigint) => {
    if (next > (position.get(partition) ?? -1n)) position.set(partition, next);
    if (!options.follow && caughtUp()) stop();
  };

  const consumer = kafka.consumer({
    groupId: `hookledger-tail-${randomUUID()}`,
    readUncommitted: false,
    allowAutoTopicCreation: false,
  });
  // Batches holding only transaction markers or aborted records reach no eachMessage, but still move
  // the position: the last offset of a partition may be a marker a read_committed reader never sees.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic === options.topic) advance(payload.partition, BigInt(payload.lastOffset) + 1n);
  });
  // kafkajs restarts the consumer after a retriable error; a crash it will not restart from ends the tail.
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) fail(payload.error);
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: options.topic, fromBeginning: options.fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (done) return;
        const offset = BigInt(message.offset);
        // Written after the start: not ours unless following.
        const beyond = !options.follow && offset >= (end.get(partition) ?? 0n);
        const keyMatches = options.key === undefined || message.key?.toString('utf8') === options.key;
        if (!beyond && keyMatches) {
          const decoded = message.value === null ? { value: null } : await decodeValue(serde, message.value);
          write(
            formatRecord({
              topic: options.topic,
              partition,
              offset: message.offset,
              timestamp: message.timestamp,
              key: message.key,
              headers: message.headers,
              ...decoded,
            }),
          );
          printed++;
          if (options.limit !== undefined && printed >= options.limit) stop();
        }
        advance(partition, offset + 1n);
      },
    });
    await finished;
  } finally {
    signal?.removeEventListener('abort', stop);
    await consumer.disconnect();
  }
  return printed;
}

/**
 * Registry-framed values are decoded; anything else (the dedupe changelog, a foreign writer) stays
 * bytes, and so does a value that does not decode, with the reason: one bad record does not end a tail.
 */
async function decodeValue(
  serde: Pick<Serde, 'decode'>,
  value: Buffer,
): Promise<{ value: unknown; decodeError?: string }> {
  try {
    schemaIdOf(value);
  } catch {
    return { value };
  }
  try {
    return { value: await serde.decode(value) };
  } catch (error) {
    return { value, decodeError: (error as Error).message };
  }
}

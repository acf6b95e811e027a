// Reads a topic read_committed (no consumer group, nothing committed), decodes each value through the
// registry and hands back one JSON line per record.
import { withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { readToEnd } from '../../runtime/kafka/read-to-end.js';
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
  settings: KafkaSettings;
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
export async function tail(
  options: TailOptions,
  { settings, serde, write, signal }: TailDeps,
): Promise<number> {
  const partitions = await withAdmin(settings, async (admin) => {
    const [description] = await admin.describeTopics([options.topic]);
    if (description === undefined) throw new UnknownTopicError(`topic "${options.topic}" does not exist`);
    return description.partitions.map(({ partition }) =>
      options.fromBeginning ? { partition } : { partition, from: 'end' as const },
    );
  });
  if (signal?.aborted) return 0;
  // Ends the read early: the caller's signal, or the limit reached.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let printed = 0;
  try {
    await readToEnd({
      settings,
      topic: options.topic,
      partitions,
      follow: options.follow,
      signal: stop.signal,
      component: 'tail',
      onRecord: async (record) => {
        if (stop.signal.aborted) return;
        if (options.key !== undefined && record.key?.toString('utf8') !== options.key) return;
        const decoded = record.value === null ? { value: null } : await decodeValue(serde, record.value);
        write(
          formatRecord({
            topic: options.topic,
            partition: record.partition,
            offset: record.offset.toString(),
            timestamp: String(record.timestamp),
            key: record.key,
            headers: record.headers,
            ...decoded,
          }),
        );
        printed++;
        if (options.limit !== undefined && printed >= options.limit) stop.abort();
      },
    });
  } catch (error) {
    // Stopped on purpose (the limit, Ctrl-C): what was printed is the answer.
    if (!stop.signal.aborted) throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
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

// Reads a topic read_committed (no consumer group, nothing committed), decodes each value through the
// registry and hands back one JSON line per record, or per key for a compacted topic (a table).
import { type TopicAdmin, withAdmin } from '../../runtime/kafka/admin.js';
import type { KafkaSettings } from '../../runtime/kafka/rdkafka.js';
import { type ReadRecord, readToEnd } from '../../runtime/kafka/read-to-end.js';
import { classifyRecordError } from '../../runtime/streams/errors.js';
import { type Serde, schemaIdOf } from '../../schemas/serde.js';
import { formatRecord } from './format.js';
import { LatestByKey } from './latest-by-key.js';

/**
 * Where each partition starts, other than its beginning or its end: an offset, the last n records
 * (`--offset -n`, as kcat's), or the first record at or after a time. Read record by record.
 */
export type StartAt = { offset: bigint } | { lastRecords: bigint } | { time: number };

export interface TailOptions {
  topic: string;
  /** From each partition's earliest record; else only records written after the start. */
  fromBeginning: boolean;
  /** Start here instead (overrides fromBeginning). */
  startAt?: StartAt;
  /** Only these partitions (default: every one). */
  partitions?: readonly number[];
  /** Keep reading; else stop at the end offsets taken at the start. */
  follow: boolean;
  /** Every record of a compacted topic, not only the last per key. */
  history?: boolean;
  /** Only records with this key (UTF-8). */
  key?: string;
  /** Stop after printing this many. */
  limit?: number;
  /**
   * Values are read with this schema (this version's, for a catalog topic): a record written by an
   * older version shows its newer fields with their defaults. Unset: as written.
   */
  readerSchema?: string;
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

/** The registry could not be asked (down, timing out, a 5xx): one line for the user. */
export class RegistryUnavailableError extends Error {
  override name = 'RegistryUnavailableError';
}

/**
 * Tails the topic until caught up (or the limit, or the signal); resolves to the records printed. A
 * compacted topic read from the beginning is a table: it is read to its end first and printed as its
 * last record per key (what a consumer building the table ends up with), then followed record by record.
 */
export async function tail(
  options: TailOptions,
  { settings, serde, write, signal }: TailDeps,
): Promise<number> {
  const { partitions, compacted, starts } = await withAdmin(settings, async (admin) => {
    const [description] = await admin.describeTopics([options.topic]);
    if (description === undefined) throw new UnknownTopicError(`topic "${options.topic}" does not exist`);
    // The broker's setting, not the catalog: a replay's copy of a table, or a full name, is a table too.
    const configs = (await admin.topicConfigs([options.topic])).get(options.topic);
    const all = description.partitions.map(({ partition }) => partition);
    const chosen = choosePartitions(options.topic, all, options.partitions);
    return {
      partitions: chosen,
      compacted: isCompacted(configs?.['cleanup.policy']),
      starts:
        options.startAt === undefined ? undefined : await startOffsets(admin, options.topic, options.startAt),
    };
  });
  if (signal?.aborted) return 0;
  // Ends the read early: the caller's signal, or the limit reached.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let printed = 0;
  const wanted = (record: ReadRecord) =>
    options.key === undefined || record.key?.toString('utf8') === options.key;
  const print = async (record: ReadRecord) => {
    if (stop.signal.aborted) return;
    const decoded =
      record.value === null ? { value: null } : await decodeValue(serde, record.value, options.readerSchema);
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
  };
  const printWanted = async (record: ReadRecord) => (wanted(record) ? print(record) : undefined);
  const read = { settings, topic: options.topic, signal: stop.signal, component: 'tail' };
  try {
    if (starts !== undefined) {
      // Record by record from the chosen offsets: a table's changes too, not its rows.
      await readToEnd({
        ...read,
        partitions: partitions.map((partition) => ({
          partition,
          from: starts.get(partition) ?? ('end' as const),
        })),
        follow: options.follow,
        onRecord: printWanted,
      });
    } else if (!options.fromBeginning || !compacted || options.history) {
      // Record by record: what is written from now on, or every record from the beginning.
      const from = options.fromBeginning ? {} : { from: 'end' as const };
      await readToEnd({
        ...read,
        partitions: partitions.map((partition) => ({ partition, ...from })),
        follow: options.follow,
        onRecord: printWanted,
      });
    } else {
      const table = new LatestByKey();
      const { ends } = await readToEnd({
        ...read,
        partitions: partitions.map((partition) => ({ partition })),
        onRecord: (record) => (wanted(record) ? table.apply(record) : undefined),
      });
      for (const row of table.latest()) await print(row);
      // From where the table ended, every change as it comes (a tombstone prints as value null).
      if (options.follow && !stop.signal.aborted) {
        await readToEnd({
          ...read,
          partitions: partitions.map((partition) => ({ partition, from: ends.get(partition) ?? 'end' })),
          follow: true,
          onRecord: printWanted,
        });
      }
    }
  } catch (error) {
    // Stopped on purpose (the limit, Ctrl-C): what was printed is the answer.
    if (!stop.signal.aborted) throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  return printed;
}

/** The partitions asked for, each checked to exist; all of them when none was asked for. */
export function choosePartitions(
  topic: string,
  all: readonly number[],
  wanted?: readonly number[],
): number[] {
  if (wanted === undefined || wanted.length === 0) return [...all];
  const missing = wanted.filter((p) => !all.includes(p));
  if (missing.length > 0)
    throw new UnknownTopicError(
      `topic "${topic}" has no partition ${missing.join(', ')} (it has ${all.length}: 0-${all.length - 1})`,
    );
  return [...new Set(wanted)].sort((a, b) => a - b);
}

/** Each partition's first offset to read for a start position; beyond the end means nothing is read. */
async function startOffsets(
  admin: TopicAdmin,
  topic: string,
  startAt: StartAt,
): Promise<Map<number, bigint>> {
  if ('time' in startAt) {
    const found = await admin.offsetsForTime(topic, startAt.time);
    const ends = new Map((await admin.watermarks(topic)).map((w) => [w.partition, BigInt(w.high)]));
    // -1: no record that late, so only what comes next.
    return new Map(
      found.map(({ partition, offset }) => [
        partition,
        offset < 0 ? (ends.get(partition) ?? 0n) : BigInt(offset),
      ]),
    );
  }
  const marks = await admin.watermarks(topic);
  return new Map(
    marks.map((w) => {
      const low = BigInt(w.low);
      const high = BigInt(w.high);
      if ('offset' in startAt) return [w.partition, startAt.offset < low ? low : startAt.offset];
      const from = high - startAt.lastRecords;
      return [w.partition, from < low ? low : from];
    }),
  );
}

/** `compact` or `compact,delete` (also `[compact, delete]` as some tools print it). */
export function isCompacted(cleanupPolicy: string | undefined): boolean {
  return (cleanupPolicy ?? '')
    .replace(/[[\]\s]/g, '')
    .split(',')
    .includes('compact');
}

/**
 * Registry-framed values are decoded; anything else (the dedupe changelog, a foreign writer) stays
 * bytes, and so does a value that does not decode, with the reason: one bad record does not end a tail.
 * A registry that cannot be asked ends it: every value after would print as bytes, and exit 0.
 */
export async function decodeValue(
  serde: Pick<Serde, 'decode'>,
  value: Buffer,
  readerSchema: string | undefined,
): Promise<{ value: unknown; decodeError?: string }> {
  try {
    schemaIdOf(value);
  } catch {
    return { value };
  }
  try {
    return { value: await serde.decode(value, readerSchema === undefined ? {} : { readerSchema }) };
  } catch (error) {
    // The stream kit's classification: 'transient' is the registry out of reach, not the bytes.
    if (classifyRecordError(error) === 'transient')
      throw new RegistryUnavailableError((error as Error).message.split('\n')[0], { cause: error });
    return { value, decodeError: (error as Error).message };
  }
}

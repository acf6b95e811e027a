// Reads partitions of a topic read_committed from a start offset to the end they had when the read
// began, with a group-less consumer (manual assign, nothing committed): changelog restore, replay
// and redrive read through here.
//
// The end is the fetch POSITION reaching the high watermark taken at start, not "saw offset end-1":
// the last offset may be a transaction marker, which a read_committed reader never receives as a
// message (librdkafka moves the position past control records, and past aborted records it skips).
//
// The end is the high watermark, not the last stable offset a read_committed client is told: a
// transaction committed a moment before the read starts may not have its markers written yet (the
// coordinator answers the commit first), so up to the LSO the read would leave that transaction out.
// A restore right after the previous owner's last commit then missed that commit's state, and let a
// retry through twice. Reading to the high watermark waits until every transaction below it is
// resolved, committed or aborted (at most the writer's transaction timeout, for a writer that died).
import type { KafkaConsumer, Message } from '@confluentinc/kafka-javascript';
import { call, connect, createConsumer, disconnect, type KafkaSettings, type RdConsumer } from './rdkafka.js';
import { createTopicAdmin } from './rdkafka-admin.js';
import { readerGroupId } from './resource-ids.js';

/** librdkafka's logical offset for "the partition's first offset". */
const OFFSET_BEGINNING = -2;

export interface ReadRecord {
  readonly partition: number;
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, Buffer>>;
}

export interface ReadToEndOptions {
  settings: KafkaSettings;
  topic: string;
  /**
   * The partitions to read, each from `from`: an offset, `'end'` (only what is written from now on,
   * for `follow`), or its first offset when absent; up to `until` (exclusive) when that comes before
   * the end (`replay diff` reads raw only within a replay's bounds).
   */
  partitions: readonly { partition: number; from?: bigint | 'end'; until?: bigint }[];
  /**
   * Called for every committed record below the end, in offset order per partition. When it returns a
   * promise, the next record waits for it (decoding through a registry); restore's stays synchronous.
   */
  onRecord: ((record: ReadRecord) => void) | ((record: ReadRecord) => Promise<void>);
  /**
   * Where a partition starts, decided once its bounds are known (a persistent store's checkpoint, checked
   * against them): an offset, or undefined for its first offset. Takes precedence over `from`.
   */
  startAt?: (partition: number, bounds: { low: bigint; high: bigint }) => bigint | undefined;
  /**
   * Keep reading past the end taken at the start, until the signal (`hookledger tail --follow`); the
   * stall timeout does not apply, since a quiet topic is no fault then.
   */
  follow?: boolean;
  /** Stops the read (a revoked partition's restore): the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Gives up after this long without progress (the broker is gone): the caller retries. */
  stallTimeoutMs?: number;
  /** Waits for a batch's first record this long; a read ends within this of reaching its end. */
  pollTimeoutMs?: number;
  /**
   * Records handed over per consume call at most. Each call is a hop to a libuv thread and back, which
   * on a loaded machine waits for a core twice: a restore reads in large batches; a batch is converted
   * to JavaScript objects in one go, holding the event loop meanwhile (about 3 µs a record).
   */
  batchSize?: number;
  component?: string;
}

export interface ReadToEndResult {
  /** Records handed to onRecord, per partition. */
  records: Map<number, number>;
  /** The exclusive end offset read to, per partition. */
  ends: Map<number, bigint>;
  durationMs: number;
}

export class ReadStalledError extends Error {
  override name = 'ReadStalledError';
}

/** The headers of a record without any (most): one shared empty object, none built per record. */
const NO_HEADERS: Readonly<Record<string, Buffer>> = Object.freeze({});

function headersOf(message: Message): Readonly<Record<string, Buffer>> {
  if (message.headers === undefined || message.headers.length === 0) return NO_HEADERS;
  const out: Record<string, Buffer> = {};
  for (const header of message.headers ?? []) {
    for (const [name, value] of Object.entries(header)) {
      out[name] = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
    }
  }
  return out;
}

function consume(consumer: KafkaConsumer, max: number): Promise<Message[]> {
  return call<Message[]>('consume', (cb) => consumer.consume(max, cb as never));
}

export async function readToEnd({
  settings,
  topic,
  partitions,
  onRecord,
  follow = false,
  startAt,
  signal,
  stallTimeoutMs = 60_000,
  pollTimeoutMs = 100,
  batchSize = 2_000,
  component = 'read-to-end',
}: ReadToEndOptions): Promise<ReadToEndResult> {
  const started = Date.now();
  const records = new Map<number, number>(partitions.map(({ partition }) => [partition, 0]));
  const ends = new Map<number, bigint>();
  /** `ends` as numbers, for the per-record checks (offsets stay far below 2^53; the binding gives numbers). */
  const endAt = new Map<number, number>();
  signal?.throwIfAborted();
  const consumer = createConsumer(
    settings,
    {
      // The library insists on a group.id, but this reader only assigns (never subscribes) and never
      // commits: it joins no group, so it can neither disturb the processors' group nor leave groups behind.
      'group.id': readerGroupId(settings.topicPrefix ?? ''),
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      'enable.partition.eof': true,
      'fetch.wait.max.ms': 100,
    } as never,
    component,
    // A start offset already deleted (retention, compaction) reads from the first one still there.
    { 'auto.offset.reset': 'earliest' },
  );
  consumer.setDefaultConsumeTimeout(pollTimeoutMs);
  (consumer as RdConsumer).setDefaultIsTimeoutOnlyForFirstMessage(true);
  /** Partitions still below their end. */
  const open = new Map<number, number>();
  /** Followed partitions asked to start past their end: the first offset to hand over. */
  const followFrom = new Map<number, number>();
  /** The batch being taken off librdkafka's queue, at most one at a time. */
  let next: Promise<Message[]> | undefined;
  let lastProgress = Date.now();
  const reached = (partition: number, position: number) => {
    const end = open.get(partition);
    if (end !== undefined && position >= end) open.delete(partition);
  };
  consumer.on('partition.eof', ({ partition, offset }) => reached(partition, Number(offset)));
  try {
    // The admin client asks read_uncommitted: the high watermark (this reader would be told the LSO).
    // The consumer connects meanwhile; both are settled before anything goes on (or fails).
    const admin = createTopicAdmin(settings);
    const [marks, connected] = await Promise.allSettled([
      admin.watermarks(topic).finally(() => admin.close()),
      connect(consumer),
    ]);
    if (marks.status === 'rejected') throw marks.reason;
    if (connected.status === 'rejected') throw connected.reason;
    const found = marks.value;
    const assignment: { topic: string; partition: number; offset: number }[] = [];
    for (const { partition, from: given, until } of partitions) {
      const marks = found.find((m) => m.partition === partition);
      if (marks === undefined) throw new Error(`${topic} has no partition ${partition}`);
      const low = BigInt(marks.low);
      const from = startAt === undefined ? given : startAt(partition, { low, high: BigInt(marks.high) });
      const high = until !== undefined && until < BigInt(marks.high) ? until : BigInt(marks.high);
      ends.set(partition, high);
      endAt.set(partition, Number(high));
      const start = from === 'end' ? high : from === undefined || from < low ? low : from;
      // Nothing to read (empty, or already at the end): no fetch at all, unless following.
      if (start >= high && !follow) continue;
      if (start < high) open.set(partition, Number(high));
      // A follow from past the end: an offset the partition does not have yet is out of range for the
      // broker, and the reader would start again from the first one. It starts at the end and hands
      // over nothing below the offset asked for.
      const beyond = typeof from === 'bigint' && from > BigInt(marks.high);
      if (beyond) followFrom.set(partition, Number(from));
      assignment.push({
        topic,
        partition,
        offset: from === undefined ? OFFSET_BEGINNING : beyond ? marks.high : Number(start),
      });
    }
    if (assignment.length === 0) return { records, ends, durationMs: Date.now() - started };
    consumer.assign(assignment);
    // The next batch is taken off librdkafka's queue (on a libuv thread) while this one is handed over:
    // only after a full batch, when more is likely waiting, so a read at its end waits for no empty poll.
    // Every batch taken is handed over before the read ends: its records may be all that is left below
    // the end (positions and end-of-partition events already count them once they are taken).
    next = consume(consumer, batchSize);
    while (next !== undefined) {
      signal?.throwIfAborted();
      const batch = await next;
      next = undefined;
      if ((follow || open.size > 0) && batch.length >= batchSize) next = consume(consumer, batchSize);
      if (batch.length > 0) lastProgress = Date.now();
      for (const message of batch) {
        // `ends`, not `open`: a batch's partition.eof events fire before its messages are handed over.
        const end = endAt.get(message.partition);
        if (end === undefined || message.topic !== topic) continue;
        const offset = message.offset;
        // Nothing at or past the end belongs to this read, unless following (from the offset asked for).
        const wanted = followFrom.size === 0 || offset >= (followFrom.get(message.partition) ?? 0);
        if (wanted && (follow || offset < end)) {
          const key = message.key;
          const pending = onRecord({
            partition: message.partition,
            offset: BigInt(offset),
            // The binding hands the key over as a Buffer (a slice of its batch's block, with hookledger's
            // patch): no copy. A caller that keeps it past the batch copies it (tools/tail/latest-by-key.ts).
            key: key === undefined || key === null ? null : Buffer.isBuffer(key) ? key : Buffer.from(key),
            value: message.value ?? null,
            timestamp: message.timestamp ?? 0,
            headers: headersOf(message),
          });
          // A synchronous callback costs no microtask per record (restore reads millions).
          if (pending instanceof Promise) await pending;
          records.set(message.partition, (records.get(message.partition) ?? 0) + 1);
        }
        reached(message.partition, offset + 1);
      }
      if (follow) {
        next ??= consume(consumer, batchSize);
        continue;
      }
      // At the end: only a batch already taken is still handed over.
      if (open.size === 0) continue;
      for (const { partition, offset } of consumer.position(
        [...open.keys()].map((partition) => ({ topic, partition })),
      )) {
        if (offset !== undefined && offset >= 0) {
          const before = open.size;
          reached(partition, offset);
          if (open.size !== before) lastProgress = Date.now();
        }
      }
      if (Date.now() - lastProgress > stallTimeoutMs) {
        throw new ReadStalledError(
          `reading ${topic} made no progress for ${stallTimeoutMs} ms (partitions ${[...open.keys()].join(', ')} below their end)`,
        );
      }
      if (open.size > 0) next ??= consume(consumer, batchSize);
    }
    return { records, ends, durationMs: Date.now() - started };
  } finally {
    // A batch still being taken (the read failed or was stopped) settles before the consumer goes.
    await next?.catch(() => undefined);
    await disconnect(consumer);
  }
}

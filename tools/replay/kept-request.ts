// What a replay was asked for, kept with its bounds so that `replay diff` later compares exactly the
// records the replay read: each end bound is a committed offset of the replay's bounds group
// (bounds.ts), and the commit's metadata holds that partition's start and the --trigger filter.
import {
  call,
  connect,
  createConsumer,
  disconnect,
  type KafkaSettings,
  toKafkaError,
} from '../../runtime/kafka/rdkafka.js';
import type { PartitionRange } from './bounds.js';

/** A replay's source range as kept: per partition [start, end), and its trigger filter. */
export interface KeptRequest {
  ranges: PartitionRange[];
  /** Only these triggers were replayed; undefined: every record. */
  triggers: string[] | undefined;
  /**
   * False for a replay whose bounds were kept without a note (made before notes were kept): the
   * starts are then taken as each partition's first offset and no trigger filter is known.
   */
  noted: boolean;
}

interface Note {
  start: bigint;
  triggers: string[] | undefined;
}

/** The metadata of one partition's bound: `{"start":"120","triggers":["UserAdded"]}` (a few bytes; brokers allow 4 KiB). */
export function noteText(start: bigint, triggers: readonly string[] | undefined): string {
  return JSON.stringify({ start: start.toString(), ...(triggers === undefined ? {} : { triggers }) });
}

/** Reads a note back; undefined when there is none or it is not one of ours. */
export function readNote(text: string | null | undefined): Note | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  try {
    const parsed = JSON.parse(text) as { start?: unknown; triggers?: unknown };
    if (typeof parsed.start !== 'string' || !/^\d+$/.test(parsed.start)) return undefined;
    const triggers = Array.isArray(parsed.triggers)
      ? parsed.triggers.filter((t): t is string => typeof t === 'string')
      : undefined;
    return { start: BigInt(parsed.start), triggers };
  } catch {
    return undefined;
  }
}

/**
 * Commits the end bounds with their notes, as one commit of a member-less consumer (the bounds group
 * never consumes; bounds.ts's loadBounds reads the offsets back).
 */
export async function saveNotedBounds(
  settings: KafkaSettings,
  groupId: string,
  topic: string,
  ranges: readonly PartitionRange[],
  triggers: readonly string[] | undefined,
): Promise<void> {
  if (ranges.length === 0) return;
  const consumer = createConsumer(
    settings,
    { 'group.id': groupId, 'enable.auto.commit': false } as never,
    'replay-bounds',
  );
  await connect(consumer);
  try {
    try {
      consumer.commitSync(
        ranges.map((r) => ({
          topic,
          partition: r.partition,
          offset: Number(r.end),
          metadata: noteText(r.start, triggers),
        })),
      );
    } catch (error) {
      throw toKafkaError(error, `commit the bounds of group "${groupId}"`);
    }
  } finally {
    await disconnect(consumer);
  }
}

/**
 * The kept range of a replay on `topic` (its partitions given with their first offsets), or undefined
 * when the replay kept no bounds there.
 */
export async function loadKeptRequest(
  settings: KafkaSettings,
  groupId: string,
  topic: string,
  partitions: readonly { partition: number; low: bigint }[],
): Promise<KeptRequest | undefined> {
  const consumer = createConsumer(
    settings,
    { 'group.id': groupId, 'enable.auto.commit': false } as never,
    'replay-bounds',
  );
  await connect(consumer);
  try {
    const found = await call<{ partition: number; offset?: number; metadata?: string | null }[]>(
      `committed offsets of group "${groupId}"`,
      (cb) =>
        consumer.committed(
          partitions.map(({ partition }) => ({ topic, partition })),
          10_000,
          cb as never,
        ),
    );
    return keptRequestOf(found, partitions);
  } finally {
    await disconnect(consumer);
  }
}

/** The kept request from committed offsets and their metadata (pure: unit-tested). */
export function keptRequestOf(
  committed: readonly { partition: number; offset?: number; metadata?: string | null }[],
  partitions: readonly { partition: number; low: bigint }[],
): KeptRequest | undefined {
  const lows = new Map(partitions.map((p) => [p.partition, p.low]));
  const ranges: PartitionRange[] = [];
  let noted = true;
  let triggers: string[] | undefined;
  for (const { partition, offset, metadata } of committed) {
    if (typeof offset !== 'number' || offset < 0) continue;
    const note = readNote(metadata);
    if (note === undefined) noted = false;
    else triggers = note.triggers;
    const end = BigInt(offset);
    const start = note?.start ?? lows.get(partition) ?? 0n;
    ranges.push({ partition, start: start > end ? end : start, end });
  }
  if (ranges.length === 0) return undefined;
  return { ranges: ranges.sort((a, b) => a.partition - b.partition), triggers, noted };
}

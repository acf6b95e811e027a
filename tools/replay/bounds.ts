// Which offsets of each source partition a replay covers: [start, end), from times or offsets given
// on the command line, and kept for the replay id so a resumed run covers exactly the same range.
import type { TopicAdmin } from '../../runtime/kafka/admin.js';

/** `partition:offset` pairs, e.g. `0:100,3:250`. */
export type PartitionOffsets = ReadonlyMap<number, bigint>;

export interface RangeRequest {
  /** Start at the first record at or after this time (epoch ms). */
  fromTime?: number;
  /** End before the first record at or after this time (epoch ms). */
  toTime?: number;
  fromOffsets?: PartitionOffsets;
  toOffsets?: PartitionOffsets;
}

export interface PartitionRange {
  partition: number;
  start: bigint;
  /** Exclusive. */
  end: bigint;
}

/** A bad bound: the message names the option. */
export class BoundsError extends Error {
  override name = 'BoundsError';
}

/** Parses `0:100,3:250`; throws BoundsError naming the option. */
export function parsePartitionOffsets(option: string, text: string): PartitionOffsets {
  const out = new Map<number, bigint>();
  for (const part of text.split(',')) {
    const match = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(part);
    if (match === null)
      throw new BoundsError(`${option}: expected partition:offset[,partition:offset…], got "${text}"`);
    const partition = Number(match[1]);
    if (out.has(partition)) throw new BoundsError(`${option}: partition ${partition} given twice`);
    out.set(partition, BigInt(match[2]!));
  }
  return out;
}

/** Parses an ISO 8601 date-time with a zone (or a date, taken as UTC midnight); throws BoundsError. */
export function parseTime(option: string, text: string): number {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(text);
  const ms = Date.parse(text);
  if (!ok || Number.isNaN(ms))
    throw new BoundsError(`${option}: expected an ISO 8601 time with a zone, e.g. 2026-11-01T00:00:00Z`);
  return ms;
}

/** The topic's offsets now: [low, high) per partition. */
export interface Watermarks {
  partition: number;
  low: bigint;
  high: bigint;
}

/**
 * The range of every partition, clamped to what the topic holds: start defaults to the earliest
 * offset, end to the end offset now. `byTime` maps a time to each partition's first offset at or
 * after it (the topic's end where there is none).
 */
export function resolveRanges(
  request: RangeRequest,
  watermarks: readonly Watermarks[],
  byTime: { from?: ReadonlyMap<number, bigint>; to?: ReadonlyMap<number, bigint> } = {},
): PartitionRange[] {
  const known = new Set(watermarks.map((w) => w.partition));
  for (const [option, offsets] of [
    ['--from-offset', request.fromOffsets],
    ['--to-offset', request.toOffsets],
  ] as const) {
    for (const partition of offsets?.keys() ?? []) {
      if (!known.has(partition)) throw new BoundsError(`${option}: the topic has no partition ${partition}`);
    }
  }
  const clamp = (value: bigint, { low, high }: Watermarks) =>
    value < low ? low : value > high ? high : value;
  const ranges = watermarks.map((w) => {
    const start = clamp(request.fromOffsets?.get(w.partition) ?? byTime.from?.get(w.partition) ?? w.low, w);
    const end = clamp(request.toOffsets?.get(w.partition) ?? byTime.to?.get(w.partition) ?? w.high, w);
    return { partition: w.partition, start, end: end < start ? start : end };
  });
  return ranges.sort((a, b) => a.partition - b.partition);
}

/** Checks the options against each other before anything is read. */
export function checkRequest(request: RangeRequest): void {
  if (request.fromTime !== undefined && request.fromOffsets !== undefined)
    throw new BoundsError('--from and --from-offset: give one of them');
  if (request.toTime !== undefined && request.toOffsets !== undefined)
    throw new BoundsError('--to and --to-offset: give one of them');
  if (request.fromTime !== undefined && request.toTime !== undefined && request.toTime <= request.fromTime)
    throw new BoundsError('--to must be later than --from');
  // Offsets as times: an end not after its start is a mistake, not a request to replay nothing of that
  // partition (resolveRanges would clamp it to an empty range and the replay would say nothing).
  for (const [partition, to] of request.toOffsets ?? []) {
    const from = request.fromOffsets?.get(partition);
    if (from !== undefined && to <= from)
      throw new BoundsError(
        `--to-offset ${partition}:${to} is not after --from-offset ${partition}:${from}: the end is exclusive`,
      );
  }
}

export function hasBounds(request: RangeRequest): boolean {
  return Object.values(request).some((v) => v !== undefined);
}

/** Reads the topic's watermarks and the offsets of the requested times, and resolves the ranges. */
export async function rangesOf(
  admin: TopicAdmin,
  topic: string,
  request: RangeRequest,
): Promise<PartitionRange[]> {
  checkRequest(request);
  const watermarks = (await admin.watermarks(topic)).map((o) => ({
    partition: o.partition,
    low: BigInt(o.low),
    high: BigInt(o.high),
  }));
  const atTime = async (time: number | undefined) => {
    if (time === undefined) return undefined;
    const found = await admin.offsetsForTime(topic, time);
    // -1: no record at or after the time; the end is then the topic's end (clamped below).
    return new Map(found.map((o) => [o.partition, o.offset < 0 ? BigInt(2n ** 62n) : BigInt(o.offset)]));
  };
  return resolveRanges(request, watermarks, {
    ...(request.fromTime === undefined ? {} : { from: await atTime(request.fromTime) }),
    ...(request.toTime === undefined ? {} : { to: await atTime(request.toTime) }),
  });
}

/**
 * The replay's bounds are kept as the committed offsets of a group that never consumes
 * (`<app>.bounds`): the end of each partition, so a resumed run never goes further than the first
 * did (records past the end were skipped with their offsets committed, and must stay out of range).
 * They are written with notes (the starts, the trigger filter) by kept-request.ts.
 */
export async function loadBounds(
  admin: TopicAdmin,
  groupId: string,
  topic: string,
): Promise<Map<number, bigint> | undefined> {
  const stored = await admin.committedOffsets(groupId, topic);
  return stored.size === 0 ? undefined : stored;
}

/**
 * Where the stage's group starts on each partition: committed offsets (a resumed run) win; a partition
 * without one starts at the range's start. Returns each partition's current position.
 */
export async function startGroupAt(
  admin: TopicAdmin,
  groupId: string,
  topic: string,
  ranges: readonly PartitionRange[],
): Promise<Map<number, bigint>> {
  const committed = await admin.committedOffsets(groupId, topic);
  const missing = ranges.filter((r) => !committed.has(r.partition));
  await admin.commitOffsets(
    groupId,
    topic,
    missing.map((r) => ({ partition: r.partition, offset: r.start })),
  );
  return new Map(ranges.map((r) => [r.partition, committed.get(r.partition) ?? r.start]));
}

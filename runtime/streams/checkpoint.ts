// Where a persistent store's restore starts: from its checkpoint (the changelog offset its state
// reflects) when the changelog still holds everything after it, else from the beginning over a wiped
// store, with the reason for the one log line that says so.

/** A changelog partition's bounds, as the brokers answer them now. */
export interface ChangelogBounds {
  readonly low: bigint;
  readonly high: bigint;
}

export type RestoreStart =
  | { readonly kind: 'tail'; readonly from: bigint }
  | { readonly kind: 'full'; readonly reason: string | undefined };

/**
 * `checkpoint` undefined: the store has none (new, wiped, or a restore that never finished), so it is
 * restored in full; the reason is undefined only for a store that was created empty just now.
 */
export function restoreStart(
  checkpoint: bigint | undefined,
  bounds: ChangelogBounds,
  missingReason: string | undefined,
): RestoreStart {
  if (checkpoint === undefined) return { kind: 'full', reason: missingReason };
  if (checkpoint > bounds.high)
    return {
      kind: 'full',
      reason: `its checkpoint ${checkpoint} is past the changelog's end ${bounds.high} (the topic was recreated or truncated)`,
    };
  if (checkpoint < bounds.low)
    return {
      kind: 'full',
      reason: `its checkpoint ${checkpoint} is before the changelog's first offset ${bounds.low} (records after it were deleted)`,
    };
  return { kind: 'tail', from: checkpoint };
}

/** The checkpoint of a task's state: changelog offset per topic and the stream time it reflects, as stored. */
export interface Checkpoint {
  readonly offsets: Readonly<Record<string, string>>;
  readonly streamTime: number;
}

/** Parses a stored checkpoint; undefined for anything that is not one (then the store counts as corrupt). */
export function parseCheckpoint(bytes: Buffer | undefined): Checkpoint | undefined {
  if (bytes === undefined) return undefined;
  try {
    const value = JSON.parse(bytes.toString('utf8')) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const { offsets, streamTime } = value as { offsets?: unknown; streamTime?: unknown };
    if (typeof streamTime !== 'number' || !Number.isFinite(streamTime)) return undefined;
    if (typeof offsets !== 'object' || offsets === null) return undefined;
    for (const offset of Object.values(offsets))
      if (typeof offset !== 'string' || !/^\d+$/.test(offset)) return undefined;
    return { offsets: offsets as Record<string, string>, streamTime };
  } catch {
    return undefined;
  }
}

export function encodeCheckpoint(checkpoint: Checkpoint): Buffer {
  return Buffer.from(JSON.stringify(checkpoint));
}

// How `replay diff` compares a replay copy with its live twin, once both are read and bounded: entity
// streams (and the router's other outputs) per key as multisets of records, tables by each key's last
// row. Pure: values come in decoded and JSON-safe.

/** A record reduced to what is compared: its key and its value (null: a tombstone). */
export interface KeyedValue {
  key: string;
  value: unknown;
}

export interface FieldDifference {
  /** Dotted path in the value (`fields.savings.amount`); empty for the whole value. */
  path: string;
  live: unknown;
  replay: unknown;
}

/** One record of a differing key: a pair with the same webhookId and its differing fields, or a record one side lacks. */
export interface RecordDifference {
  webhookId: string | null;
  /** `both`: the two sides each have a record with this webhookId, and `fields` says how they differ. */
  side: 'both' | 'live' | 'replay';
  fields: FieldDifference[];
}

export interface KeySample {
  key: string;
  records: RecordDifference[];
}

export interface TopicDiff {
  live: string;
  replay: string;
  kind: 'stream' | 'table';
  /** Records compared on each side (within the bounds); for tables, the keys with a row. */
  records: { live: number; replay: number };
  /** Keys whose records are equal on both sides. */
  same: number;
  onlyLive: string[];
  onlyReplay: string[];
  differ: string[];
  /** Field-level differences of the first few differing keys. */
  samples: KeySample[];
  /** Table keys not compared: the live row moved on with events after the replay's bounds. */
  movedOn: number;
}

/**
 * The value as compared. Everything a live and a replayed record hold is derived from the same raw
 * record, with one exception: a dead letter the stream kit itself wrote (stage `dedupe-router.process`,
 * reasons processor-error and output-too-large) carries in `message` the kit's own words, which name
 * the topic it was writing (the replay's copy, not the live topic) and whatever the failure said. Its
 * reason and stage still count. (Record timestamps are not compared at all: a redriven delivery's
 * record is stamped when redrive appended it, while its value is the original envelope's.)
 */
export function comparable(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  if (record.stage === 'dedupe-router.process' && 'reason' in record && 'message' in record) {
    const { message: _message, ...rest } = record;
    return rest;
  }
  return value;
}

/** JSON with object keys sorted: equal values give equal text, whatever order their fields came in. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The leaves where two values differ (objects field by field; arrays and scalars whole). */
export function fieldDifferences(live: unknown, replay: unknown, path = ''): FieldDifference[] {
  if (isObject(live) && isObject(replay)) {
    const names = [...new Set([...Object.keys(live), ...Object.keys(replay)])];
    return names.flatMap((name) =>
      fieldDifferences(live[name], replay[name], path === '' ? name : `${path}.${name}`),
    );
  }
  if (canonical(live ?? null) === canonical(replay ?? null)) return [];
  return [{ path, live: live ?? null, replay: replay ?? null }];
}

function webhookIdOf(value: unknown): string | null {
  return isObject(value) && typeof value.webhookId === 'string' ? value.webhookId : null;
}

function byKey(records: readonly KeyedValue[]): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const { key, value } of records) {
    const list = out.get(key);
    if (list === undefined) out.set(key, [comparable(value)]);
    else list.push(comparable(value));
  }
  return out;
}

/** Records in `a` that `b` lacks, counting repeats (a multiset difference). */
function minus(a: readonly unknown[], b: readonly unknown[]): unknown[] {
  const left = new Map<string, number>();
  for (const v of b) left.set(canonical(v), (left.get(canonical(v)) ?? 0) + 1);
  return a.filter((v) => {
    const text = canonical(v);
    const n = left.get(text) ?? 0;
    if (n === 0) return true;
    left.set(text, n - 1);
    return false;
  });
}

/** How one key's records differ: records paired by webhookId, then the ones only one side has. */
export function recordDifferences(live: readonly unknown[], replay: readonly unknown[]): RecordDifference[] {
  const liveOnly = minus(live, replay);
  const replayOnly = minus(replay, live);
  const out: RecordDifference[] = [];
  for (const l of liveOnly) {
    const id = webhookIdOf(l);
    const at = replayOnly.findIndex((r) => id !== null && webhookIdOf(r) === id);
    if (at < 0) {
      out.push({ webhookId: id, side: 'live', fields: [] });
      continue;
    }
    const [r] = replayOnly.splice(at, 1);
    out.push({ webhookId: id, side: 'both', fields: fieldDifferences(l, r) });
  }
  for (const r of replayOnly) out.push({ webhookId: webhookIdOf(r), side: 'replay', fields: [] });
  return out;
}

function sameMultiset(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  const sorted = (list: readonly unknown[]) => list.map(canonical).sort();
  const x = sorted(a);
  const y = sorted(b);
  return x.every((v, i) => v === y[i]);
}

const sortedKeys = (keys: Iterable<string>) => [...keys].sort();

/**
 * A stream per key as a multiset of records: one entity's events come through many raw partitions,
 * so their order differs between two runs and only which records each key has can be compared.
 */
export function compareStreams(
  topics: { live: string; replay: string },
  live: readonly KeyedValue[],
  replay: readonly KeyedValue[],
  sampleKeys = 5,
): TopicDiff {
  const l = byKey(live);
  const r = byKey(replay);
  const differ = sortedKeys([...l.keys()].filter((k) => r.has(k) && !sameMultiset(l.get(k)!, r.get(k)!)));
  return {
    ...topics,
    kind: 'stream',
    records: { live: live.length, replay: replay.length },
    same: [...l.keys()].filter((k) => r.has(k)).length - differ.length,
    onlyLive: sortedKeys([...l.keys()].filter((k) => !r.has(k))),
    onlyReplay: sortedKeys([...r.keys()].filter((k) => !l.has(k))),
    differ,
    samples: differ.slice(0, sampleKeys).map((key) => ({
      key,
      records: recordDifferences(l.get(key)!, r.get(key)!),
    })),
    movedOn: 0,
  };
}

/** Each key's last row, in the order read (one partition per key); a deleted entity has none. */
export function lastRows(records: readonly KeyedValue[]): Map<string, unknown> {
  const rows = new Map<string, unknown>();
  for (const { key, value } of records) {
    // A tombstone and no row read the same to a consumer: compaction drops tombstones after their
    // retention, on each side at its own time.
    if (value === null) rows.delete(key);
    else rows.set(key, comparable(value));
  }
  return rows;
}

/**
 * A table by the last row of each key, as consumers see it once compacted. Keys in `movedOn` are left
 * out on both sides: their live row has merged events from after the replay's bounds.
 */
export function compareTables(
  topics: { live: string; replay: string },
  live: readonly KeyedValue[],
  replay: readonly KeyedValue[],
  movedOn: ReadonlySet<string>,
  sampleKeys = 5,
): TopicDiff {
  const l = lastRows(live);
  const r = lastRows(replay);
  let skipped = 0;
  for (const key of new Set([...l.keys(), ...r.keys()])) {
    if (!movedOn.has(key)) continue;
    skipped++;
    l.delete(key);
    r.delete(key);
  }
  const differ = sortedKeys(
    [...l.keys()].filter((k) => r.has(k) && canonical(l.get(k)) !== canonical(r.get(k))),
  );
  return {
    ...topics,
    kind: 'table',
    records: { live: l.size, replay: r.size },
    same: [...l.keys()].filter((k) => r.has(k)).length - differ.length,
    onlyLive: sortedKeys([...l.keys()].filter((k) => !r.has(k))),
    onlyReplay: sortedKeys([...r.keys()].filter((k) => !l.has(k))),
    differ,
    samples: differ.slice(0, sampleKeys).map((key) => ({
      key,
      records: [
        {
          webhookId: webhookIdOf(r.get(key)),
          side: 'both',
          fields: fieldDifferences(l.get(key), r.get(key)),
        },
      ],
    })),
    movedOn: skipped,
  };
}

/** Whether the two sides differ at all. */
export function differs(diff: TopicDiff): boolean {
  return diff.onlyLive.length + diff.onlyReplay.length + diff.differ.length > 0;
}

// How a rebuilt topic is compared with its live twin: streams per key as multisets, tables by last row.
import { jsonSafe } from '../../tools/tail/format.js';

export interface KeyedRecord {
  key: string;
  timestamp: number | string;
  value: unknown;
}

/** Per key, the sorted multiset of (timestamp, decoded value): entity streams have no order across raw partitions. */
export function multisets(records: readonly KeyedRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of records) {
    const list = out.get(r.key) ?? [];
    out.set(r.key, list);
    list.push(JSON.stringify({ timestamp: r.timestamp, value: jsonSafe(r.value, 'value', {}) }));
  }
  for (const list of out.values()) list.sort();
  return out;
}

/** A table as consumers see it once compacted: the last row of each key (null: deleted), the whole row. */
export function lastRows(records: readonly KeyedRecord[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of records)
    out.set(r.key, JSON.stringify(r.value === null ? null : jsonSafe(r.value, 'value', {})));
  return out;
}

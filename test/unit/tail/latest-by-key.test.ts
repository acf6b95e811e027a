import { describe, expect, it } from 'vitest';
import type { ReadRecord } from '../../../runtime/kafka/read-to-end.js';
import { LatestByKey } from '../../../tools/tail/latest-by-key.js';
import { isCompacted } from '../../../tools/tail/tail.js';

const record = (partition: number, offset: number, key: string | null, value: string | null): ReadRecord => ({
  partition,
  offset: BigInt(offset),
  key: key === null ? null : Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
  timestamp: 0,
  headers: {},
});

const rows = (table: LatestByKey) =>
  table.latest().map((r) => `${r.partition}/${r.offset}/${r.key}=${r.value?.toString()}`);

describe('a compacted topic read as a table', () => {
  it("keeps each row's key and value in memory of their own, not in the read batch's block", () => {
    // As the patched client hands a batch over: every key and value a slice of one block.
    const block = Buffer.alloc(8, 'k1v1k2v2'); // not from Node's pool, as the client's block is not
    const slice = (from: number) => block.subarray(from, from + 2);
    const table = new LatestByKey();
    table.apply({ partition: 0, offset: 0n, key: slice(0), value: slice(2), timestamp: 0, headers: {} });
    table.apply({ partition: 0, offset: 1n, key: null, value: slice(6), timestamp: 0, headers: {} });
    const kept = table.latest();
    expect(kept.map((r) => `${r.key}=${r.value}`)).toEqual(['k1=v1', 'null=v2']);
    for (const r of kept) {
      expect(r.value?.buffer).not.toBe(block.buffer);
      if (r.key !== null) expect(r.key.buffer).not.toBe(block.buffer);
    }
  });

  it('keeps the last record of each key, in partition and offset order', () => {
    const table = new LatestByKey();
    for (const r of [
      record(1, 0, 'b', 'b1'),
      record(0, 0, 'a', 'a1'),
      record(0, 1, 'c', 'c1'),
      record(0, 2, 'a', 'a2'),
      record(1, 1, 'b', 'b2'),
      record(0, 3, 'a', 'a3'),
    ])
      table.apply(r);
    expect(rows(table)).toEqual(['0/1/c=c1', '0/3/a=a3', '1/1/b=b2']);
    expect(table.size).toBe(3);
  });

  it('drops a key at its tombstone, and takes it back when it is written again', () => {
    const table = new LatestByKey();
    for (const r of [
      record(0, 0, 'a', 'a1'),
      record(0, 1, 'gone', 'g1'),
      record(0, 2, 'a', null),
      record(0, 3, 'gone', null),
      record(0, 4, 'a', 'a-again'),
      record(0, 5, 'never', null),
    ])
      table.apply(r);
    expect(rows(table)).toEqual(['0/4/a=a-again']);
  });

  it('keeps a key written to two partitions once per partition, as compaction does', () => {
    const table = new LatestByKey();
    table.apply(record(0, 0, 'a', 'on-0'));
    table.apply(record(1, 0, 'a', 'on-1'));
    expect(rows(table)).toEqual(['0/0/a=on-0', '1/0/a=on-1']);
  });

  it('keeps every record without a key (it cannot be compacted), and ignores a keyless null', () => {
    const table = new LatestByKey();
    table.apply(record(0, 0, null, 'x'));
    table.apply(record(0, 1, null, 'y'));
    table.apply(record(0, 2, null, null));
    expect(rows(table)).toEqual(['0/0/null=x', '0/1/null=y']);
  });
});

describe('whether a topic is compacted, from its cleanup.policy', () => {
  it.each([
    ['compact', true],
    ['compact,delete', true],
    ['delete,compact', true],
    ['[compact, delete]', true],
    ['delete', false],
    [undefined, false],
  ])('%s → %s', (policy, expected) => {
    expect(isCompacted(policy)).toBe(expected);
  });
});

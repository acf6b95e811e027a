import { describe, expect, it } from 'vitest';
import {
  BoundsError,
  checkRequest,
  parsePartitionOffsets,
  parseTime,
  resolveRanges,
} from '../../../tools/replay/bounds.js';

const marks = [
  { partition: 1, low: 5n, high: 50n },
  { partition: 0, low: 0n, high: 100n },
];

describe('replay bounds', () => {
  it('read partition:offset lists and name the option when they are wrong', () => {
    expect([...parsePartitionOffsets('--from-offset', '0:10, 3:250')]).toEqual([
      [0, 10n],
      [3, 250n],
    ]);
    expect(() => parsePartitionOffsets('--to-offset', '0=10')).toThrow(
      /--to-offset: expected partition:offset/,
    );
    expect(() => parsePartitionOffsets('--to-offset', '0:1,0:2')).toThrow(/partition 0 given twice/);
  });

  it('take ISO times with a zone only', () => {
    expect(parseTime('--from', '2026-11-01T00:00:00Z')).toBe(Date.UTC(2026, 10, 1));
    expect(parseTime('--from', '2026-11-01T01:00:00+01:00')).toBe(Date.UTC(2026, 10, 1));
    expect(() => parseTime('--from', '2026-11-01T00:00:00')).toThrow(BoundsError);
    expect(() => parseTime('--to', 'yesterday')).toThrow(/--to: expected an ISO 8601 time/);
  });

  it('default to the whole topic as it is at the start, partitions in order', () => {
    expect(resolveRanges({}, marks)).toEqual([
      { partition: 0, start: 0n, end: 100n },
      { partition: 1, start: 5n, end: 50n },
    ]);
  });

  it('clamp offsets to what the topic holds and never end before the start', () => {
    const ranges = resolveRanges({ fromOffsets: new Map([[1, 2n]]), toOffsets: new Map([[0, 500n]]) }, marks);
    expect(ranges).toEqual([
      { partition: 0, start: 0n, end: 100n },
      { partition: 1, start: 5n, end: 50n },
    ]);
    expect(
      resolveRanges({ fromOffsets: new Map([[0, 60n]]), toOffsets: new Map([[0, 40n]]) }, marks)[0],
    ).toEqual({
      partition: 0,
      start: 60n,
      end: 60n,
    });
  });

  it('use the offsets found for times where no offsets are given', () => {
    const ranges = resolveRanges({ fromTime: 1, toTime: 2 }, marks, {
      from: new Map([
        [0, 10n],
        [1, 20n],
      ]),
      to: new Map([
        [0, 30n],
        [1, 2n ** 62n],
      ]),
    });
    expect(ranges).toEqual([
      { partition: 0, start: 10n, end: 30n },
      { partition: 1, start: 20n, end: 50n },
    ]);
  });

  it('refuse a partition the topic does not have, and options that contradict each other', () => {
    expect(() => resolveRanges({ toOffsets: new Map([[7, 1n]]) }, marks)).toThrow(/no partition 7/);
    expect(() => checkRequest({ fromTime: 1, fromOffsets: new Map() })).toThrow(/--from and --from-offset/);
    expect(() => checkRequest({ fromTime: 2, toTime: 1 })).toThrow(/--to must be later/);
  });

  it('refuse an end offset not after the start offset of the same partition, naming it', () => {
    const request = { fromOffsets: new Map([[0, 60n]]), toOffsets: new Map([[0, 40n]]) };
    expect(() => checkRequest(request)).toThrow(/--to-offset 0:40 is not after --from-offset 0:60/);
    expect(() => checkRequest({ fromOffsets: new Map([[1, 5n]]), toOffsets: new Map([[1, 5n]]) })).toThrow(
      BoundsError,
    );
    // Other partitions are no contradiction: each partition's bounds are its own.
    expect(() =>
      checkRequest({ fromOffsets: new Map([[0, 60n]]), toOffsets: new Map([[1, 40n]]) }),
    ).not.toThrow();
  });
});

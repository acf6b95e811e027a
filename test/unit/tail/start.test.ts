// tail's --offset, --from and --partition, as the command reads them.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli/command.js';
import { joinNegativeOffset, partitionsOf, startOf } from '../../../tools/cli/commands/tail.js';
import { choosePartitions, UnknownTopicError } from '../../../tools/tail/tail.js';

describe('where tail starts', () => {
  const now = Date.UTC(2026, 10, 26, 9, 0, 0);

  it('reads an offset, the last n (-n, as kcat), an ISO time, or a duration ago', () => {
    expect(startOf({ offset: '42' })).toEqual({ offset: 42n });
    expect(startOf({ offset: '-10' })).toEqual({ lastRecords: 10n });
    expect(startOf({ from: '2026-11-26T08:00:00Z' })).toEqual({ time: Date.UTC(2026, 10, 26, 8) });
    expect(startOf({ from: '10m' }, now)).toEqual({ time: now - 600_000 });
    expect(startOf({})).toBeUndefined();
  });

  it('takes --offset -10 as kcat does, not as an option of its own', () => {
    expect(joinNegativeOffset(['x', '--offset', '-10', '--limit', '2'])).toEqual([
      'x',
      '--offset=-10',
      '--limit',
      '2',
    ]);
    expect(joinNegativeOffset(['--offset', '5'])).toEqual(['--offset', '5']);
  });

  it('refuses what is neither, and both at once', () => {
    expect(() => startOf({ offset: 'latest' })).toThrow(UsageError);
    expect(() => startOf({ from: 'yesterday' })).toThrow(
      '--from: expected an ISO 8601 time with a zone, e.g. 2026-11-01T00:00:00Z, or a duration ago such as 10m',
    );
    expect(() => startOf({ offset: '1', from: '1h' })).toThrow('give one');
  });

  it('takes partitions repeated or as a list, and checks they exist', () => {
    expect(partitionsOf(['0', '3,5'])).toEqual([0, 3, 5]);
    expect(partitionsOf(undefined)).toBeUndefined();
    expect(() => partitionsOf(['-1'])).toThrow(UsageError);
    expect(choosePartitions('t', [0, 1, 2], [2, 0, 2])).toEqual([0, 2]);
    expect(choosePartitions('t', [0, 1], undefined)).toEqual([0, 1]);
    expect(() => choosePartitions('t', [0, 1], [4])).toThrow(UnknownTopicError);
  });
});

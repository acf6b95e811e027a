import { describe, expect, it } from 'vitest';
import { keptRequestOf, noteText, readNote } from '../../../tools/replay/kept-request.js';

describe("a replay's kept request", () => {
  it('keeps a start and a trigger filter in a commit note, and reads it back', () => {
    expect(readNote(noteText(120n, ['UserAdded']))).toEqual({ start: 120n, triggers: ['UserAdded'] });
    expect(readNote(noteText(0n, undefined))).toEqual({ start: 0n, triggers: undefined });
  });

  it('ignores notes that are not its own', () => {
    expect(readNote(undefined)).toBeUndefined();
    expect(readNote('')).toBeUndefined();
    expect(readNote('not json')).toBeUndefined();
    expect(readNote('{"start":-1}')).toBeUndefined();
  });

  it('gives each partition its range [start, end) and the filter', () => {
    const kept = keptRequestOf(
      [
        { partition: 1, offset: 50, metadata: noteText(10n, ['UserAdded']) },
        { partition: 0, offset: 100, metadata: noteText(40n, ['UserAdded']) },
        { partition: 2, offset: -1001 },
      ],
      [
        { partition: 0, low: 0n },
        { partition: 1, low: 5n },
        { partition: 2, low: 0n },
      ],
    );
    expect(kept).toEqual({
      ranges: [
        { partition: 0, start: 40n, end: 100n },
        { partition: 1, start: 10n, end: 50n },
      ],
      triggers: ['UserAdded'],
      noted: true,
    });
  });

  it('takes a partition without a note from its first offset, and says the request was not noted', () => {
    const kept = keptRequestOf([{ partition: 0, offset: 100, metadata: '' }], [{ partition: 0, low: 7n }]);
    expect(kept).toEqual({
      ranges: [{ partition: 0, start: 7n, end: 100n }],
      triggers: undefined,
      noted: false,
    });
  });

  it('is undefined when nothing was kept', () => {
    expect(keptRequestOf([{ partition: 0, offset: -1001 }], [{ partition: 0, low: 0n }])).toBeUndefined();
  });
});

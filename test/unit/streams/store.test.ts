import { describe, expect, it } from 'vitest';
import { LmdbBacking } from '../../../runtime/streams/lmdb-backing.js';
import { ChangelogKeyValueStore, type KeyValueBacking, MapBacking } from '../../../runtime/streams/store.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';

const codec = { encode: (v: number) => Buffer.from(String(v)), decode: (b: Buffer) => Number(b.toString()) };
const dirs = useTempStateDirs();

/** The same store over its state in memory and on disk. */
const BACKINGS: [string, () => KeyValueBacking<number>][] = [
  ['in memory', () => new MapBacking<number>()],
  ['on disk (LMDB)', () => new LmdbBacking<number>(dirs.open(), 's', codec, () => undefined)],
];

describe.each(BACKINGS)('a changelog-backed key-value store %s', (_kind, backing) => {
  const store = () => new ChangelogKeyValueStore<number>('s', backing(), codec);

  it('shows a batch its own writes before they commit', () => {
    const s = store();
    s.put('a', 1, 10);
    expect(s.get('a')).toBe(1);
    expect(s.size).toBe(0);
    s.commit();
    expect(s.get('a')).toBe(1);
    expect(s.size).toBe(1);
  });

  it('forgets an aborted batch’s writes and its changelog records', () => {
    const s = store();
    s.put('a', 1, 10);
    s.commit();
    s.put('a', 2, 20);
    s.delete('a', 20);
    s.rollback();
    expect(s.get('a')).toBe(1);
    expect(s.takeChangelog()).toEqual([]);
  });

  it('logs every write, a deletion as a null value, with its stream time', () => {
    const s = store();
    s.put('a', 1, 10);
    s.delete('b', 11);
    expect(s.takeChangelog()).toEqual([
      { key: 'a', value: Buffer.from('1'), timestamp: 10 },
      { key: 'b', value: null, timestamp: 11 },
    ]);
    expect(s.takeChangelog()).toEqual([]);
  });

  it('restores from changelog records, the latest record of a key winning and null deleting', () => {
    const s = store();
    s.restore({ key: 'a', value: Buffer.from('1'), timestamp: 1 });
    s.restore({ key: 'a', value: Buffer.from('2'), timestamp: 2 });
    s.restore({ key: 'b', value: Buffer.from('3'), timestamp: 3 });
    s.restore({ key: 'b', value: null, timestamp: 4 });
    expect(s.get('a')).toBe(2);
    expect(s.get('b')).toBeUndefined();
    expect(s.takeChangelog()).toEqual([]);
  });
});

describe.each(BACKINGS)('a changelog-backed store %s within one transaction', (_kind, backing) => {
  const store = () => new ChangelogKeyValueStore<number>('s', backing(), codec);

  it('coalesces writes to the last value per key', () => {
    const s = store();
    s.put('a', 1, 10);
    s.put('b', 2, 11);
    s.put('a', 3, 12);
    s.delete('b', 13);
    expect(s.takeChangelog()).toEqual([
      { key: 'a', value: Buffer.from('3'), timestamp: 12 },
      { key: 'b', value: null, timestamp: 13 },
    ]);
  });

  it('undoes one record’s writes and keeps the earlier records’ writes', () => {
    const s = store();
    s.beginRecord();
    s.put('a', 1, 10);
    s.beginRecord();
    s.put('a', 2, 11);
    s.put('b', 5, 11);
    s.undoRecord();
    expect(s.get('a')).toBe(1);
    expect(s.get('b')).toBeUndefined();
    expect(s.takeChangelog()).toEqual([{ key: 'a', value: Buffer.from('1'), timestamp: 10 }]);
  });
});

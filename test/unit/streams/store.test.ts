import { describe, expect, it } from 'vitest';
import { ChangelogKeyValueStore, MapBacking } from '../../../runtime/streams/store.js';

const codec = { encode: (v: number) => Buffer.from(String(v)), decode: (b: Buffer) => Number(b.toString()) };
const store = () => new ChangelogKeyValueStore<number>('s', new MapBacking<number>(), codec);

describe('a changelog-backed key-value store', () => {
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

describe('a changelog-backed store within one transaction', () => {
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

import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestId, digestIdBytes, hashId, IdSet } from '../../../runtime/streams/id-set.js';
import { type IdStore, LmdbIdSet } from '../../../runtime/streams/lmdb-id-set.js';
import { useTempStateDirs } from '../../helpers/temp-state-dir.js';

/** One code point as a string, any of them: a lone surrogate too. */
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c));
const T0 = Date.parse('2026-11-20T00:00:00Z');

const dirs = useTempStateDirs();

/** The same behaviour from the id set in memory and the one on disk. */
const KINDS: [string, (initialCapacity?: number) => IdStore][] = [
  ['IdSet (memory)', (initialCapacity) => new IdSet({ initialCapacity })],
  ['LmdbIdSet (disk)', () => new LmdbIdSet(dirs.open(), 'dedupe')],
];

describe.each(KINDS)('%s', (kind, create) => {
  it('remembers an id with the second it was seen and its tag', () => {
    const ids = create();
    ids.set('fixtures/wh_0001', T0 + 1_500, 1);
    expect(ids.has('fixtures/wh_0001')).toBe(true);
    expect(ids.get('fixtures/wh_0001')).toEqual({ seenAt: T0 + 1_000, tag: 1 });
    expect(ids.has('fixtures/wh_0002')).toBe(false);
    expect(ids.get('fixtures/wh_0002')).toBeUndefined();
    expect(ids.size).toBe(1);
  });

  it('the same webhook id from another source is another id', () => {
    const ids = create();
    ids.set('energy/wh_1', T0, 1);
    expect(ids.has('sandbox/wh_1')).toBe(false);
  });

  it('setting an id again replaces its time and tag (a redrive records its new decision)', () => {
    const ids = create();
    ids.set('s/wh_1', T0, 3);
    ids.set('s/wh_1', T0 + 60_000, 1);
    expect(ids.size).toBe(1);
    expect(ids.get('s/wh_1')).toEqual({ seenAt: T0 + 60_000, tag: 1 });
  });

  it('refuses a tag outside 1–255 and a time that is not a number', () => {
    const ids = create();
    expect(() => ids.set('a', T0, 0)).toThrow(RangeError);
    expect(() => ids.set('a', T0, 256)).toThrow(RangeError);
    expect(() => ids.set('a', Number.NaN, 1)).toThrow(RangeError);
  });

  it('expires by stream time: ids seen before it go, ids seen at or after it stay', () => {
    const ids = create();
    for (let i = 0; i < 1_000; i++) ids.set(`s/wh_${i}`, T0 + i * 1000, 1);
    expect(ids.expireBefore(T0 + 400_000)).toBe(400);
    expect(ids.size).toBe(600);
    for (let i = 0; i < 1_000; i++) expect(ids.has(`s/wh_${i}`), `wh_${i}`).toBe(i >= 400);
    expect(ids.expireBefore(T0 + 400_000)).toBe(0);
  });

  it('never expires an id early: within its second it stays', () => {
    const ids = create();
    ids.set('s/wh_1', T0 + 999, 1);
    expect(ids.expireBefore(T0 + 999)).toBe(0);
    expect(ids.expireBefore(T0 + 1_000)).toBe(1);
  });

  it('an id set again under another second expires by the latest, also when written down in between', () => {
    const ids = create();
    ids.set('s/later', T0 + 1_000, 1);
    ids.flush?.();
    ids.set('s/later', T0 + 5_000, 2);
    ids.flush?.();
    expect(ids.expireBefore(T0 + 3_000)).toBe(0);
    expect(ids.get('s/later')).toEqual({ seenAt: T0 + 5_000, tag: 2 });
    expect(ids.expireBefore(T0 + 6_000)).toBe(1);
    expect(ids.has('s/later')).toBe(false);

    ids.set('s/earlier', T0 + 9_000, 1);
    ids.flush?.();
    ids.set('s/earlier', T0 + 7_000, 1);
    ids.flush?.();
    expect(ids.expireBefore(T0 + 8_000)).toBe(1);
    expect(ids.has('s/earlier')).toBe(false);
    expect(ids.expireBefore(T0 + 10_000)).toBe(0);
    expect(ids.size).toBe(0);
  });

  it('deletes single ids and keeps every other id reachable', () => {
    const ids = create(64);
    for (let i = 0; i < 40; i++) ids.set(`k${i}`, T0, 1);
    for (let i = 0; i < 40; i += 2) expect(ids.delete(`k${i}`)).toBe(true);
    expect(ids.delete('k0')).toBe(false);
    for (let i = 0; i < 40; i++) expect(ids.has(`k${i}`)).toBe(i % 2 === 1);
  });

  it('behaves like a Map under random sets, deletes and expiries, in a small crowded table', () => {
    let s = 42;
    const random = () => {
      s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0;
      return s / 2 ** 32;
    };
    const ids = create(16);
    const model = new Map<string, { seenAt: number; tag: number }>();
    let now = T0;
    // Each step of the disk set is a write transaction: fewer steps keep the test quick.
    const steps = kind.startsWith('IdSet') ? 20_000 : 4_000;
    for (let step = 0; step < steps; step++) {
      const id = `s/wh_${Math.floor(random() * 500)}`;
      const roll = random();
      if (roll < 0.6) {
        now += Math.floor(random() * 3000);
        const tag = 1 + Math.floor(random() * 3);
        ids.set(id, now, tag);
        model.set(id, { seenAt: Math.floor(now / 1000) * 1000, tag });
      } else if (roll < 0.8) {
        expect(ids.delete(id)).toBe(model.delete(id));
      } else if (roll < 0.82) {
        const before = now - Math.floor(random() * 200_000);
        let expected = 0;
        for (const [k, v] of model) {
          if (v.seenAt + 1000 <= before) {
            model.delete(k);
            expected++;
          }
        }
        expect(ids.expireBefore(before)).toBe(expected);
      } else {
        expect(ids.get(id)).toEqual(model.get(id));
      }
      expect(ids.size).toBe(model.size);
    }
    for (const [k, v] of model) expect(ids.get(k)).toEqual(v);
    const hashes = new Set([...ids.entries()].map((e) => e.hash.toString('hex')));
    expect(hashes).toEqual(new Set([...model.keys()].map((k) => hashId(k).toString('hex'))));
  });
});

describe('IdSet', () => {
  it('grows past its initial capacity and keeps every id', () => {
    const ids = new IdSet({ initialCapacity: 16 });
    for (let i = 0; i < 10_000; i++) ids.set(`s/wh_${i}`, T0 + i * 1000, 1 + (i % 3));
    expect(ids.size).toBe(10_000);
    for (let i = 0; i < 10_000; i++)
      expect(ids.get(`s/wh_${i}`)).toEqual({ seenAt: T0 + i * 1000, tag: 1 + (i % 3) });
    // At most 3/4 full: 10 000 ids need 16 384 slots of 21 bytes.
    expect(ids.byteLength).toBe(16_384 * 21);
  });

  it('visits every id with the hash, second and tag entries() lists, through one reused key buffer', () => {
    const ids = new IdSet({ initialCapacity: 16 });
    for (let i = 0; i < 3_000; i++) ids.set(`s/wh_${i}`, T0 + (i % 7) * 1000, 1 + (i % 5));
    for (let i = 0; i < 3_000; i += 3) ids.delete(`s/wh_${i}`);
    const key = Buffer.alloc(16);
    const visited: string[] = [];
    ids.forEachHashed(key, (seconds, tag) => visited.push(`${key.toString('hex')} ${seconds * 1000} ${tag}`));
    const listed = [...ids.entries()].map((e) => `${e.hash.toString('hex')} ${e.seenAt} ${e.tag}`);
    expect(visited).toEqual(listed);
    expect(visited).toHaveLength(2_000);
  });

  it('holds an id as the first 16 bytes of its SHA-256', () => {
    const sha256 = createHash('sha256').update('fixtures/wh_0001', 'utf8').digest();
    expect(hashId('fixtures/wh_0001')).toEqual(sha256.subarray(0, 16));
  });

  it('looks ids up by their digest as text: the same 16 bytes, the same words, as the digest as a Buffer', () => {
    // Any code point, lone surrogates included (fast-check's `unit: 'binary'` builds a table first that took
    // 3–6 s on a loaded machine); the checks as one boolean per run (fast-check reports the id that breaks
    // one), as vitest's expect on Buffers walks them as objects.
    fc.assert(
      fc.property(fc.string({ unit: anyCodePoint, maxLength: 80 }), (id) => {
        const digest = digestId(id);
        const sha256 = createHash('sha256').update(id, 'utf8').digest();
        const ids = new IdSet();
        ids.setHashed(digest, T0, 7);
        const [entry, ...more] = [...ids.entries()];
        const found = ids.get(id);
        return (
          Buffer.from(digest, 'latin1').equals(sha256) &&
          digestIdBytes(Buffer.from(id, 'utf8')) === digest &&
          // Stored under the words readUInt32LE reads from hashId's bytes (entries() writes them back).
          more.length === 0 &&
          entry?.hash.equals(hashId(id)) === true &&
          found?.seenAt === T0 &&
          found.tag === 7
        );
      }),
      { numRuns: 500 },
    );
  });
});

describe('LmdbIdSet (disk) index', () => {
  it('expires an id indexed one record per id, as stores written before the batched index were', () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    ids.set('s/old', T0 + 2_000, 1);
    ids.flush();
    // The earlier layout: a 20-byte key (second, hash) with an empty value, for each id.
    const index = dir.database('dedupe.by-second');
    const hash = hashId('s/old');
    const legacy = Buffer.alloc(20);
    legacy.writeUInt32BE((T0 + 2_000) / 1000, 0);
    hash.copy(legacy, 4, 0, 16);
    dir.transaction(() => {
      for (const { key } of index.getRange({})) index.removeSync(Buffer.from(key));
      index.putSync(legacy, Buffer.alloc(0));
    });
    expect(ids.expireBefore(T0 + 2_000)).toBe(0);
    expect(ids.expireBefore(T0 + 3_000)).toBe(1);
    expect(ids.has('s/old')).toBe(false);
  });

  it('lists a batch of ids seen in the same second in one index record', () => {
    const dir = dirs.open();
    const ids = new LmdbIdSet(dir, 'dedupe');
    for (let i = 0; i < 500; i++) ids.set(`s/wh_${i}`, T0 + (i < 300 ? 1_000 : 2_000), 1);
    ids.flush();
    const records = [...dir.database('dedupe.by-second').getRange({})];
    expect(records.map((r) => r.value.length)).toEqual([300 * 16, 200 * 16]);
    expect(ids.expireBefore(T0 + 2_000)).toBe(300);
    expect(ids.size).toBe(200);
  });
});

// The dedupe store's restore from the changelog's bytes (the key hashed as read, the decision read in
// place) is the same function as decoding the key and the decision and storing them: the same
// changelog restored both ways gives the same id set and the same decisions.
import { describe, expect, it } from 'vitest';
import {
  type DedupeDecision,
  encodeDedupeDecision,
} from '../../../../processors/dedupe-router/dedupe-decision.js';
import { DedupeStore, IdSetBacking } from '../../../../processors/dedupe-router/dedupe-store.js';
import { digestId, digestIdBytes } from '../../../../runtime/streams/id-set.js';
import { type ChangelogRecord, RestoredRecord } from '../../../../runtime/streams/store.js';
import { useTempStateDirs } from '../../../helpers/temp-state-dir.js';

const dirs = useTempStateDirs();

const WEEK = 7 * 86_400_000;
const KINDS = ['routed', 'failure', 'dead-lettered'] as const;

/** A small seeded generator (mulberry32): the same cases on every run. */
function random(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!,
  };
}

const ALPHABET = ['a', 'Z', '0', '/', '_', '-', ' ', 'é', 'ß', '€', '漢', '😀', '\u0000', '\ufeff', '\u200b'];

interface Entry {
  keyBytes: Buffer | null;
  value: Buffer | null;
  timestamp: number;
}

/** A changelog as the router writes it, with everything a restore must also get right. */
function changelog(seed: number, count: number): Entry[] {
  const r = random(seed);
  const keys: Buffer[] = [];
  const out: Entry[] = [];
  const now = Date.UTC(2026, 10, 26);
  for (let i = 0; i < count; i++) {
    let keyBytes: Buffer | null;
    const shape = r.int(20);
    if (shape === 0 && keys.length > 0)
      keyBytes = r.pick(keys); // a later decision for the same id
    else if (shape === 1)
      keyBytes = Buffer.from([0x73, 0x2f, 0xff, 0xfe, r.int(256)]); // not UTF-8
    else if (shape === 2)
      keyBytes = Buffer.from([0x73, 0x2f, 0xed, 0xa0, 0x80]); // a UTF-8-encoded surrogate
    else if (shape === 3) keyBytes = null;
    else if (shape === 4) keyBytes = Buffer.alloc(0);
    else {
      let text = `${r.pick(['github', 'stripe', 'shop'])}/`;
      const length = shape === 5 ? 300 + r.int(2_000) : 1 + r.int(40);
      for (let c = 0; c < length; c++)
        text += r.next() < 0.7 ? `wh_${r.int(10)}`[r.int(4)] : r.pick(ALPHABET);
      keyBytes = Buffer.from(text, 'utf8');
    }
    if (keyBytes !== null) keys.push(keyBytes);
    const seenAt = r.pick([
      now - r.int(WEEK * 2),
      now + 123,
      0,
      -1,
      -(2 ** 40) - r.int(1_000),
      2 ** 53 + 2 * r.int(1_000) + 1,
      Number.MAX_SAFE_INTEGER,
      now - r.int(1_000),
    ]);
    let value: Buffer | null = encodeDedupeDecision({ kind: r.pick(KINDS), seenAt } as DedupeDecision);
    if (r.int(25) === 0) value = null; // a deletion
    // Past 2^53 the encoder rounds through BigInt; write the exact int64 as a writer might.
    if (value !== null && r.int(10) === 0)
      value.writeBigInt64BE(BigInt(r.int(2 ** 31)) * 2n ** 32n + 12345n, 2);
    out.push({ keyBytes, value, timestamp: Math.max(0, seenAt % 2 ** 42) });
  }
  return out;
}

/** The decoding path, as restore read records before: the key decoded to text, no bytes handed over. */
const decoded = (e: Entry): ChangelogRecord => ({
  key: e.keyBytes === null ? '' : e.keyBytes.toString('utf8'),
  value: e.value,
  timestamp: e.timestamp,
});

const entriesOf = (store: DedupeStore) =>
  [...store.ids.ids.entries()].map((e) => `${e.hash.toString('hex')} ${e.seenAt} ${e.tag}`).sort();

describe("the dedupe store's restore from the changelog's bytes", () => {
  // 25,000 records compared one by one (in memory; 10,000 on disk): seconds on a busy machine.
  it.each([
    ['in memory', [1, 2, 3, 42, 2026], () => new DedupeStore(WEEK)],
    ['on disk (LMDB)', [1, 2026], () => new DedupeStore(WEEK, IdSetBacking.of(dirs.open()))],
  ])(
    'gives the same id set and decisions as decoding every record (%s)',
    { timeout: 30_000 },
    (_kind, seeds, create) => {
      for (const seed of seeds) {
        const log = changelog(seed, 5_000);
        const slow = new DedupeStore(WEEK);
        const fast = create();
        for (const e of log) slow.restore(decoded(e));
        for (const e of log) fast.restore(new RestoredRecord(e.keyBytes, e.value, e.timestamp));
        expect(fast.size).toBe(slow.size);
        expect(entriesOf(fast)).toEqual(entriesOf(slow));
        for (const e of log) {
          const key = decoded(e).key;
          expect(fast.get(key)).toEqual(slow.get(key));
        }
        // And after the window is applied at the restored stream time.
        const streamTime = Date.UTC(2026, 10, 26);
        fast.restored(streamTime);
        slow.restored(streamTime);
        expect(entriesOf(fast)).toEqual(entriesOf(slow));
        expect(fast.size).toBeGreaterThan(0);
      }
    },
  );

  it('takes the fast path for an ordinary record (no key text decoded)', () => {
    const record = new RestoredRecord(
      Buffer.from('github/wh_1'),
      encodeDedupeDecision({ kind: 'failure', seenAt: 1_700_000_000_123 }),
      1,
    );
    const store = new DedupeStore(WEEK);
    let decodedKey = false;
    const spied = Object.create(record, {
      key: {
        get() {
          decodedKey = true;
          return record.key;
        },
      },
    }) as RestoredRecord;
    store.restore(spied);
    expect(decodedKey).toBe(false);
    expect(store.get('github/wh_1')).toEqual({ kind: 'failure', seenAt: 1_700_000_000_000 });
  });

  it('refuses a value it cannot read exactly as the decoding path does', () => {
    for (const value of [
      Buffer.alloc(0),
      Buffer.from([2, 1, 0, 0, 0, 0, 0, 0, 0, 1]),
      Buffer.from([1, 9, 0, 0, 0, 0, 0, 0, 0, 1]),
      Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
      Buffer.alloc(11, 1),
    ]) {
      const key = Buffer.from('github/wh_1');
      const slow = () => new DedupeStore(WEEK).restore(decoded({ keyBytes: key, value, timestamp: 0 }));
      const fast = () => new DedupeStore(WEEK).restore(new RestoredRecord(key, value, 0));
      expect(slow).toThrow();
      expect(fast).toThrow(
        (() => {
          try {
            slow();
          } catch (error) {
            return (error as Error).message;
          }
          return 'unreachable';
        })(),
      );
    }
  });

  it('hashes valid UTF-8 bytes as their text, and leaves invalid bytes to the decoding path', () => {
    for (const text of ['', 'github/wh_1', 'shop/\ufeffé漢😀', 'a\u0000b']) {
      expect(digestIdBytes(Buffer.from(text))).toBe(digestId(text));
    }
    const invalid = Buffer.from([0x61, 0xff]);
    expect(digestIdBytes(invalid)).not.toBe(digestId(invalid.toString('utf8')));
    const store = new DedupeStore(WEEK);
    store.restore(new RestoredRecord(invalid, encodeDedupeDecision({ kind: 'routed', seenAt: 5_000 }), 0));
    expect(store.get(invalid.toString('utf8'))).toEqual({ kind: 'routed', seenAt: 5_000 });
  });
});

describe('the dedupe store’s window', () => {
  it('never forgets an id early: it counts until the whole second it was seen in is past the window, as expiry does', () => {
    const store = new DedupeStore(WEEK);
    const seenAt = Date.UTC(2026, 10, 26, 12, 0, 0, 900);
    store.put('s/wh_1', { kind: 'routed', seenAt }, seenAt);
    store.commit();
    // Half a second before the window ends (the id is kept to the second: 12:00:00.000): still a duplicate.
    expect(store.recent('s/wh_1', seenAt + WEEK - 500)).toBeDefined();
    expect(store.expire(seenAt + WEEK - 500)).toBe(0);
    // Once the second it was seen in is past: forgotten by both, at most a second late.
    const past = Date.UTC(2026, 10, 26, 12, 0, 1) + WEEK;
    expect(store.recent('s/wh_1', past)).toBeUndefined();
    expect(store.expire(past)).toBe(1);
  });

  it('stamps its changelog records with the time they are written, and reads a decision’s own time back', () => {
    const written = Date.UTC(2026, 10, 27, 12);
    const decided = Date.UTC(2026, 5, 1);
    const store = new DedupeStore(WEEK, undefined, () => written);
    store.put('s/wh_old', { kind: 'routed', seenAt: decided }, decided);
    const [record] = store.takeChangelog();
    // The broker deletes the changelog by this stamp: a month-old decision made now is kept a window from now.
    expect(record!.timestamp).toBe(written);
    expect(store.eventTimeOf(record!)).toBe(decided);
    expect(store.eventTimeOf(new RestoredRecord(Buffer.from('s/wh_old'), record!.value, written))).toBe(
      decided,
    );
    // A deletion or a value it cannot read: the record's stamp.
    expect(store.eventTimeOf({ key: 'k', value: null, timestamp: 7 })).toBe(7);
    expect(store.eventTimeOf({ key: 'k', value: Buffer.from('x'), timestamp: 8 })).toBe(8);
  });
});

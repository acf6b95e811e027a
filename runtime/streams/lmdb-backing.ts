// A key-value backing on disk (LMDB) for stores whose values are objects (the tables' merge states),
// with an index ordered by when each value may be forgotten, so forgetting reads only those due.
//
// Main database: key → 8-byte "forgettable from" time (ms, big-endian; all ones: never) + encoded value.
// Index: that time + key → the key as text. Writes wait in memory (where get() finds them) and are applied
// in one transaction per batch: when FLUSH_AT wait, or before a checkpoint covers them (lmdb-id-set.ts says why).
import { createHash } from 'node:crypto';
import type { Database } from 'lmdb';
import type { TaskStateDir } from './state-dir.js';
import type { Codec, KeyValueBacking } from './store.js';

const NEVER = 0xffff_ffff_ffff_ffffn;
const FLUSH_AT = 10_000;
/** LMDB's key limit is 1,978 bytes here: a longer key is held as its SHA-256 (its text is in the index). */
const MAX_KEY_BYTES = 1_024;

function dbKey(key: string): Buffer {
  const bytes = Buffer.from(key, 'utf8');
  if (bytes.length <= MAX_KEY_BYTES) return bytes;
  return Buffer.concat([Buffer.from([0]), createHash('sha256').update(bytes).digest()]);
}

function timeOf(at: number | undefined): bigint {
  return at === undefined ? NEVER : BigInt(Math.max(0, Math.floor(at)));
}

function indexKey(time: bigint, key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(8 + key.length);
  out.writeBigUInt64BE(time, 0);
  key.copy(out, 8);
  return out;
}

export class LmdbBacking<V> implements KeyValueBacking<V> {
  readonly #main: Database<Buffer, Buffer>;
  readonly #index: Database<Buffer, Buffer>;
  /** Writes not applied yet, last per key (undefined: deleted). */
  #waiting = new Map<string, V | undefined>();

  /** `forgettableFrom`: when a value may be forgotten (undefined: never), for forgetDue. */
  constructor(
    private readonly dir: TaskStateDir,
    name: string,
    private readonly codec: Codec<V>,
    private readonly forgettableFrom: (value: V) => number | undefined,
  ) {
    this.#main = dir.database(`${name}.values`);
    this.#index = dir.database(`${name}.by-time`);
  }

  get(key: string): V | undefined {
    if (this.#waiting.has(key)) return this.#waiting.get(key);
    const stored = this.#main.getBinaryFast(dbKey(key));
    return stored === undefined ? undefined : this.codec.decode(Buffer.from(stored.subarray(8)));
  }

  set(key: string, value: V): void {
    this.#wait(key, value);
  }

  delete(key: string): void {
    this.#wait(key, undefined);
  }

  #wait(key: string, value: V | undefined): void {
    this.#waiting.set(key, value);
    if (this.#waiting.size >= FLUSH_AT) this.flush();
  }

  /**
   * Entries held: those on disk, changed by the writes waiting. Counted without writing them: a /metrics
   * scrape asks (StreamApp.tasks), and a write refused there, outside any checkpoint, would stop nothing.
   */
  get size(): number {
    let size = (this.#main.getStats() as { entryCount: number }).entryCount;
    for (const [key, value] of this.#waiting) {
      const onDisk = this.#main.getBinaryFast(dbKey(key)) !== undefined;
      if (value !== undefined && !onDisk) size++;
      else if (value === undefined && onDisk) size--;
    }
    return size;
  }

  flush(): void {
    const waiting = this.#waiting;
    if (waiting.size === 0) return;
    this.dir.transaction(() => {
      for (const [key, value] of waiting) {
        const k = dbKey(key);
        const old = this.#main.getBinaryFast(k);
        if (old !== undefined) {
          const oldTime = old.readBigUInt64BE(0);
          if (oldTime !== NEVER) this.#index.removeSync(indexKey(oldTime, k));
        }
        if (value === undefined) {
          if (old !== undefined) this.#main.removeSync(k);
          continue;
        }
        const time = timeOf(this.forgettableFrom(value));
        const encoded = this.codec.encode(value);
        const stored = Buffer.allocUnsafe(8 + encoded.length);
        stored.writeBigUInt64BE(time, 0);
        encoded.copy(stored, 8);
        this.#main.putSync(k, stored);
        if (time !== NEVER) this.#index.putSync(indexKey(time, k), Buffer.from(key, 'utf8'));
      }
    });
    // Only once LMDB holds them: a write refused (a full disk) leaves them waiting, still found by get(),
    // so no committed state is forgotten while the stage stops.
    this.#waiting = new Map();
  }

  /** The keys whose values may be forgotten before `before` (ms): a range of the index, no full scan. */
  dueBefore(before: number): string[] {
    this.flush();
    const end = Buffer.alloc(8);
    end.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(before))), 0);
    const keys: string[] = [];
    for (const { value } of this.#index.getRange({ end })) keys.push(value.toString('utf8'));
    return keys;
  }
}

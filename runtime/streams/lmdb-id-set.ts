// The id set of id-set.ts on disk (LMDB): 128-bit id hash → (second seen, tag), and an index ordered
// by the second seen, so expiry reads only the expired ids (a range from the start), never the whole set.
//
// Writes are queued and applied in one LMDB transaction per batch (a restore's 10,000 records, a
// commit's writes): one write transaction per id would cost a page copy each.
import type { Database } from 'lmdb';
import { hashId, type IdEntry } from './id-set.js';
import type { TaskStateDir } from './state-dir.js';

const MAX_SECONDS = 0xffff_ffff;
/** Queued writes applied at once when this many wait (restore). */
const FLUSH_AT = 10_000;

/** A queued write: seconds < 0 deletes. */
interface Write {
  hash: Buffer;
  seconds: number;
  tag: number;
}

/** What the dedupe store needs of an id set, in memory (IdSet) or on disk (LmdbIdSet). */
export interface IdStore {
  readonly size: number;
  has(id: string): boolean;
  get(id: string): IdEntry | undefined;
  /** By the id's hash (hashId or digestId: the first 16 bytes count), hashed once by the caller. */
  getHashed(key: Buffer): IdEntry | undefined;
  set(id: string, seenAt: number, tag: number): void;
  setHashed(key: Buffer, seenAt: number, tag: number): void;
  delete(id: string): boolean;
  expireBefore(streamTime: number): number;
  /** Every held id's hash, time and tag; for tests and snapshots. */
  entries(): IterableIterator<{ hash: Buffer; seenAt: number; tag: number }>;
  /** Applies queued writes (a persistent set queues them). */
  flush?(): void;
}

/** Index key: the second seen (big-endian, so keys sort by time), then the hash. */
function indexKey(seconds: number, hash: Buffer): Buffer {
  const key = Buffer.allocUnsafe(20);
  key.writeUInt32BE(seconds, 0);
  hash.copy(key, 4, 0, 16);
  return key;
}

export class LmdbIdSet implements IdStore {
  readonly #ids: Database<Buffer, Buffer>;
  readonly #bySecond: Database<Buffer, Buffer>;
  #queue: Write[] = [];

  constructor(
    private readonly dir: TaskStateDir,
    name: string,
  ) {
    this.#ids = dir.database(`${name}.ids`);
    this.#bySecond = dir.database(`${name}.by-second`);
  }

  get size(): number {
    this.flush();
    return (this.#ids.getStats() as { entryCount: number }).entryCount;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  get(id: string): IdEntry | undefined {
    return this.getHashed(hashId(id));
  }

  getHashed(key: Buffer): IdEntry | undefined {
    this.flush();
    const value = this.#ids.getBinaryFast(key.length === 16 ? key : key.subarray(0, 16));
    if (value === undefined) return undefined;
    return { seenAt: value.readUInt32BE(0) * 1000, tag: value[4]! };
  }

  set(id: string, seenAt: number, tag: number): void {
    this.setHashed(hashId(id), seenAt, tag);
  }

  setHashed(key: Buffer, seenAt: number, tag: number): void {
    if (!Number.isInteger(tag) || tag < 1 || tag > 255) throw new RangeError(`tag must be 1–255, got ${tag}`);
    if (!Number.isFinite(seenAt)) throw new RangeError(`seenAt must be a finite epoch ms, got ${seenAt}`);
    const seconds = Math.min(MAX_SECONDS, Math.max(0, Math.floor(seenAt / 1000)));
    this.#queue.push({ hash: Buffer.from(key.subarray(0, 16)), seconds, tag });
    if (this.#queue.length >= FLUSH_AT) this.flush();
  }

  delete(id: string): boolean {
    this.flush();
    const hash = hashId(id);
    if (this.#ids.getBinaryFast(hash) === undefined) return false;
    this.#queue.push({ hash, seconds: -1, tag: 0 });
    this.flush();
    return true;
  }

  flush(): void {
    if (this.#queue.length === 0) return;
    // In key order (stable: a key's later write stays later): a batch then walks the B-tree once, each
    // leaf page copied once, instead of hopping between pages at random hashes.
    const queue = this.#queue.sort((a, b) => Buffer.compare(a.hash, b.hash));
    this.#queue = [];
    this.dir.transaction(() => {
      for (const { hash, seconds, tag } of queue) {
        const old = this.#ids.getBinaryFast(hash);
        if (old !== undefined) {
          const oldSeconds = old.readUInt32BE(0);
          if (oldSeconds !== seconds) this.#bySecond.removeSync(indexKey(oldSeconds, hash));
        }
        if (seconds < 0) {
          if (old !== undefined) this.#ids.removeSync(hash);
          continue;
        }
        const value = Buffer.allocUnsafe(5);
        value.writeUInt32BE(seconds, 0);
        value[4] = tag;
        this.#ids.putSync(hash, value);
        this.#bySecond.putSync(indexKey(seconds, hash), EMPTY);
      }
    });
  }

  *entries(): IterableIterator<{ hash: Buffer; seenAt: number; tag: number }> {
    this.flush();
    for (const { key, value } of this.#ids.getRange({})) {
      yield { hash: Buffer.from(key), seenAt: value.readUInt32BE(0) * 1000, tag: value[4]! };
    }
  }

  /** Forgets every id seen in a second wholly before `streamTime` (as IdSet does): a range of the index. */
  expireBefore(streamTime: number): number {
    this.flush();
    const limit = Math.max(0, Math.min(MAX_SECONDS, Math.floor(streamTime / 1000)));
    const end = Buffer.alloc(4);
    end.writeUInt32BE(limit, 0);
    let removed = 0;
    this.dir.transaction(() => {
      for (const key of this.#bySecond.getKeys({ end })) {
        const hash = key.subarray(4, 20);
        this.#ids.removeSync(hash);
        this.#bySecond.removeSync(key);
        removed++;
      }
    });
    return removed;
  }
}

const EMPTY = Buffer.alloc(0);

// A set of ids held as 128-bit hashes, each with the stream time it was seen and a small tag (the
// dedupe decision): the de-duplication state, sized for millions of ids per process.
//
// Layout: open addressing with linear probing over typed arrays, so an id costs 21 bytes per slot
// (16 key + 4 seconds + 1 tag) and no object per id; at most 3/4 of the slots are used, so about
// 28–56 bytes per id depending on where the table is between two doublings. Deletion (expiry) shifts
// later entries back into the hole (no tombstones), so probe chains never degrade.
import { hash } from 'node:crypto';

/** The arguments of `new IdSet()`. */
export interface IdSetOptions {
  /** Slots to start with (rounded up to a power of two, at least 16). */
  readonly initialCapacity?: number;
}

export interface IdEntry {
  /** Stream time it was seen, epoch ms, truncated to the second. */
  readonly seenAt: number;
  /** The tag given to set(), 1–255. */
  readonly tag: number;
}

const MAX_LOAD_NUMERATOR = 3;
const MAX_LOAD_DENOMINATOR = 4;
const MIN_CAPACITY = 16;
// Uint32 seconds: until 2106.
const MAX_SECONDS = 0xffff_ffff;

/** The 128-bit hash an id is held as: the first 16 bytes of its SHA-256 (a store on disk's key). */
export function hashId(id: string): Buffer {
  return hash('sha256', id, 'buffer').subarray(0, 16);
}

/**
 * The id's SHA-256 as text, one latin1 character a byte (32 of them), whose first 16 are hashId(id)'s
 * bytes: what the set looks ids up and stores them by. Text and not a Buffer, because V8 makes a string
 * on its own heap where each Buffer is a malloc and a finaliser of its own: 0.65 µs an id against 1.5
 * (docs/benchmarks.md, "The id's digest as text").
 */
export function digestId(id: string): string {
  // 'binary' is Node's other name for latin1 (the one its types list for a digest's text).
  return hash('sha256', id, 'binary');
}

/**
 * The same digest from the id's UTF-8 bytes (a changelog key as read): equal to digestId(bytes.toString())
 * whenever the bytes are valid UTF-8, which the caller checks (invalid bytes decode to U+FFFD).
 */
export function digestIdBytes(bytes: Uint8Array): string {
  return hash('sha256', bytes, 'binary');
}

/** The little-endian 32-bit word at `at` of a digest (digestId's), as readUInt32LE reads its bytes. */
function word(digest: string, at: number): number {
  return (
    (digest.charCodeAt(at) |
      (digest.charCodeAt(at + 1) << 8) |
      (digest.charCodeAt(at + 2) << 16) |
      (digest.charCodeAt(at + 3) << 24)) >>>
    0
  );
}

export class IdSet {
  #capacity: number;
  #mask: number;
  #size = 0;
  /** 4 words per slot: the hash's 16 bytes, little-endian words. */
  #keys: Uint32Array;
  /** Seconds since the epoch the id was seen. */
  #seen: Uint32Array;
  /** 0 marks an empty slot, so tags are 1–255. */
  #tags: Uint8Array;

  constructor({ initialCapacity = MIN_CAPACITY }: IdSetOptions = {}) {
    this.#capacity = powerOfTwoAtLeast(Math.max(MIN_CAPACITY, initialCapacity));
    this.#mask = this.#capacity - 1;
    this.#keys = new Uint32Array(this.#capacity * 4);
    this.#seen = new Uint32Array(this.#capacity);
    this.#tags = new Uint8Array(this.#capacity);
  }

  /** How many ids are held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the typed arrays behind the set (its memory, apart from a few small objects). */
  get byteLength(): number {
    return this.#keys.byteLength + this.#seen.byteLength + this.#tags.byteLength;
  }

  has(id: string): boolean {
    return this.#find(digestId(id)) >= 0;
  }

  get(id: string): IdEntry | undefined {
    return this.getHashed(digestId(id));
  }

  /** get() for an id already hashed (digestId or digestIdBytes: its first 16 characters count). */
  getHashed(key: string): IdEntry | undefined {
    const slot = this.#find(key);
    if (slot < 0) return undefined;
    return { seenAt: this.#seen[slot]! * 1000, tag: this.#tags[slot]! };
  }

  /**
   * Adds the id, or replaces its time and tag (a redrive records a new decision).
   * `seenAt` is the stream time in epoch ms (kept to the second); `tag` is 1–255.
   */
  set(id: string, seenAt: number, tag: number): void {
    this.setHashed(digestId(id), seenAt, tag);
  }

  /**
   * set() for an id already hashed (digestId or digestIdBytes: the first 16 characters count): a restore
   * hashes the changelog's key bytes.
   */
  setHashed(key: string, seenAt: number, tag: number): void {
    if (!Number.isInteger(tag) || tag < 1 || tag > 255) throw new RangeError(`tag must be 1–255, got ${tag}`);
    if (!Number.isFinite(seenAt)) throw new RangeError(`seenAt must be a finite epoch ms, got ${seenAt}`);
    const seconds = Math.min(MAX_SECONDS, Math.max(0, Math.floor(seenAt / 1000)));
    const found = this.#find(key);
    if (found >= 0) {
      this.#seen[found] = seconds;
      this.#tags[found] = tag;
      return;
    }
    if ((this.#size + 1) * MAX_LOAD_DENOMINATOR > this.#capacity * MAX_LOAD_NUMERATOR) {
      this.#resize(this.#capacity * 2);
    }
    this.#insert(word(key, 0), word(key, 4), word(key, 8), word(key, 12), seconds, tag);
  }

  delete(id: string): boolean {
    const slot = this.#find(digestId(id));
    if (slot < 0) return false;
    this.#remove(slot);
    return true;
  }

  /**
   * Forgets every id seen before `streamTime` (epoch ms). Ids are kept to the second, rounded so
   * an id is never forgotten early (at most a second late). Returns how many were forgotten.
   */
  expireBefore(streamTime: number): number {
    if (this.#size === 0) return 0;
    // Expired iff (seconds + 1) * 1000 <= streamTime: the whole second it was seen in is before.
    const limit = Math.floor(streamTime / 1000);
    // Start at an empty slot: no probe chain crosses it, so shifting entries back into a hole
    // never moves an unvisited entry behind the scan.
    let start = 0;
    while (this.#tags[start] !== 0) start++;
    let removed = 0;
    for (let n = 1; n <= this.#capacity; n++) {
      const slot = (start + n) & this.#mask;
      // A shift may move another entry into this slot: look at it again.
      while (this.#tags[slot] !== 0 && this.#seen[slot]! < limit) {
        this.#remove(slot);
        removed++;
      }
    }
    return removed;
  }

  /** Every held id's hash, time and tag; for tests and snapshots. */
  *entries(): IterableIterator<{ hash: Buffer; seenAt: number; tag: number }> {
    for (let slot = 0; slot < this.#capacity; slot++) {
      if (this.#tags[slot] === 0) continue;
      const hash = Buffer.alloc(16);
      for (let w = 0; w < 4; w++) hash.writeUInt32LE(this.#keys[slot * 4 + w]!, w * 4);
      yield { hash, seenAt: this.#seen[slot]! * 1000, tag: this.#tags[slot]! };
    }
  }

  /**
   * Calls `visit` for every held id, in the order of the slots, with its hash written into `key` (16 bytes,
   * overwritten for the next id: copy it to keep it), the second it was seen and its tag. No object per id:
   * what a store on disk writes its waiting ids with.
   */
  forEachHashed(key: Buffer, visit: (seconds: number, tag: number) => void): void {
    const keys = this.#keys;
    for (let slot = 0; slot < this.#capacity; slot++) {
      const tag = this.#tags[slot]!;
      if (tag === 0) continue;
      const at = slot * 4;
      key.writeUInt32LE(keys[at]!, 0);
      key.writeUInt32LE(keys[at + 1]!, 4);
      key.writeUInt32LE(keys[at + 2]!, 8);
      key.writeUInt32LE(keys[at + 3]!, 12);
      visit(this.#seen[slot]!, tag);
    }
  }

  #find(key: string): number {
    const k0 = word(key, 0);
    const k1 = word(key, 4);
    const k2 = word(key, 8);
    const k3 = word(key, 12);
    const keys = this.#keys;
    for (let slot = k0 & this.#mask; ; slot = (slot + 1) & this.#mask) {
      if (this.#tags[slot] === 0) return -1;
      const at = slot * 4;
      if (keys[at] === k0 && keys[at + 1] === k1 && keys[at + 2] === k2 && keys[at + 3] === k3) return slot;
    }
  }

  #insert(k0: number, k1: number, k2: number, k3: number, seconds: number, tag: number): void {
    let slot = k0 & this.#mask;
    while (this.#tags[slot] !== 0) slot = (slot + 1) & this.#mask;
    const at = slot * 4;
    this.#keys[at] = k0;
    this.#keys[at + 1] = k1;
    this.#keys[at + 2] = k2;
    this.#keys[at + 3] = k3;
    this.#seen[slot] = seconds;
    this.#tags[slot] = tag;
    this.#size++;
  }

  /** Backward-shift deletion (Knuth 6.4, algorithm R). */
  #remove(slot: number): void {
    const keys = this.#keys;
    let hole = slot;
    for (let next = (hole + 1) & this.#mask; this.#tags[next] !== 0; next = (next + 1) & this.#mask) {
      const home = keys[next * 4]! & this.#mask;
      // The entry at `next` may move into the hole only if its home is not cyclically in (hole, next].
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      keys.copyWithin(hole * 4, next * 4, next * 4 + 4);
      this.#seen[hole] = this.#seen[next]!;
      this.#tags[hole] = this.#tags[next]!;
      hole = next;
    }
    this.#tags[hole] = 0;
    this.#size--;
  }

  #resize(capacity: number): void {
    const keys = this.#keys;
    const seen = this.#seen;
    const tags = this.#tags;
    const old = this.#capacity;
    this.#capacity = capacity;
    this.#mask = capacity - 1;
    this.#keys = new Uint32Array(capacity * 4);
    this.#seen = new Uint32Array(capacity);
    this.#tags = new Uint8Array(capacity);
    this.#size = 0;
    for (let slot = 0; slot < old; slot++) {
      if (tags[slot] === 0) continue;
      const at = slot * 4;
      this.#insert(keys[at]!, keys[at + 1]!, keys[at + 2]!, keys[at + 3]!, seen[slot]!, tags[slot]!);
    }
  }
}

function powerOfTwoAtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

// The id set of id-set.ts on disk (LMDB): 128-bit id hash → (second seen, tag), and an index ordered
// by the second seen, so expiry reads only the expired ids (a range from the start), never the whole set.
// The index holds one record per second per written batch (the second, a sequence number → the hashes
// of the batch's ids seen in that second), not one per id: a batch of a second's ids costs a put each
// into the id tree and a few into the index, and the index takes about 16 bytes an id.
//
// Writes wait in memory (an IdSet, where lookups find them) and reach LMDB in one transaction per batch:
// when FLUSH_AT ids wait, and before a checkpoint covers them (stream-task.ts), so about once a second
// rather than once per Kafka transaction. Random 16-byte keys land on random leaf pages of
// the B-tree, each copied on write: a batch of a second's ids copies each page once for all its ids,
// where a batch per 100 ms transaction copied most pages again each time. What waits is committed state
// after the checkpoint: a crash loses it from the disk, and the restore from the checkpoint reads it again.
import type { Database } from 'lmdb';
import { digestId, hashId, type IdEntry, IdSet } from './id-set.js';
import type { TaskStateDir } from './state-dir.js';

const MAX_SECONDS = 0xffff_ffff;
/** Waiting ids written at once when this many wait (a restore; a router between two checkpoints). */
const FLUSH_AT = 100_000;

/** What the dedupe store needs of an id set, in memory (IdSet) or on disk (LmdbIdSet). */
export interface IdStore {
  readonly size: number;
  has(id: string): boolean;
  get(id: string): IdEntry | undefined;
  /** By the id's digest (digestId or digestIdBytes: the first 16 characters count), hashed once by the caller. */
  getHashed(key: string): IdEntry | undefined;
  set(id: string, seenAt: number, tag: number): void;
  setHashed(key: string, seenAt: number, tag: number): void;
  delete(id: string): boolean;
  expireBefore(streamTime: number): number;
  /** Every held id's hash, time and tag; for tests and snapshots. */
  entries(): IterableIterator<{ hash: Buffer; seenAt: number; tag: number }>;
  /** Applies queued writes (a persistent set queues them). */
  flush?(): void;
  /** Queues them in the asynchronous write the caller runs (TaskStateDir.writeAsync). */
  flushAsync?(): void;
}

/**
 * Index key: the second seen (big-endian, so keys sort by time), then a sequence number that keeps each
 * batch's record of that second apart from every other batch's, across restarts too: the time in ms
 * when this set was opened, times 4,096, plus the batches written since.
 */
function indexKey(seconds: number, sequence: bigint): Buffer {
  const key = Buffer.allocUnsafe(12);
  key.writeUInt32BE(seconds, 0);
  key.writeBigUInt64BE(sequence, 4);
  return key;
}

/** The hashes an index record lists: 16 bytes each (one 20-byte key per id, value empty, before). */
function* indexedHashes(key: Buffer, value: Buffer): Generator<Buffer> {
  if (key.length === 20) yield key.subarray(4, 20);
  for (let at = 0; at + 16 <= value.length; at += 16) yield value.subarray(at, at + 16);
}

export class LmdbIdSet implements IdStore {
  readonly #ids: Database<Buffer, Buffer>;
  readonly #bySecond: Database<Buffer, Buffer>;
  /** Ids set and not written to LMDB yet: lookups see them here. Deletions are written at once. */
  #waiting = new IdSet();
  /** Ids handed to LMDB's thread (flushAsync) and not written yet: lookups see them here until they are. */
  #writing: IdSet | undefined;
  #sequence = BigInt(Date.now()) * 4096n;
  /** A digest's first 16 bytes, the LMDB key a lookup reads by (the read copies it). */
  readonly #lookupKey = Buffer.allocUnsafe(16);

  constructor(
    private readonly dir: TaskStateDir,
    name: string,
  ) {
    this.#ids = dir.database(`${name}.ids`);
    this.#bySecond = dir.database(`${name}.by-second`);
  }

  /**
   * Ids held, exactly: those on disk, plus those waiting or being written that are not on disk yet (an id
   * in memory and on disk counts once). Counted without writing: a /metrics scrape asks (StreamApp.tasks),
   * on the router's thread, and a write refused there, outside any checkpoint, would fail the scrape.
   */
  get size(): number {
    let size = (this.#ids.getStats() as { entryCount: number }).entryCount;
    const key = Buffer.allocUnsafe(16);
    const writing = this.#writing;
    this.#waiting.forEachHashed(key, () => {
      if (this.#ids.getBinaryFast(key) === undefined) size++;
    });
    writing?.forEachHashed(key, () => {
      if (
        this.#waiting.getHashed(key.toString('latin1')) === undefined &&
        this.#ids.getBinaryFast(key) === undefined
      )
        size++;
    });
    return size;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  get(id: string): IdEntry | undefined {
    return this.getHashed(digestId(id));
  }

  getHashed(key: string): IdEntry | undefined {
    const waiting = this.#waiting.getHashed(key) ?? this.#writing?.getHashed(key);
    if (waiting !== undefined) return waiting;
    this.#lookupKey.write(key, 0, 16, 'latin1');
    const value = this.#ids.getBinaryFast(this.#lookupKey);
    if (value === undefined) return undefined;
    return { seenAt: value.readUInt32BE(0) * 1000, tag: value[4]! };
  }

  set(id: string, seenAt: number, tag: number): void {
    this.setHashed(digestId(id), seenAt, tag);
  }

  setHashed(key: string, seenAt: number, tag: number): void {
    if (!Number.isInteger(tag) || tag < 1 || tag > 255) throw new RangeError(`tag must be 1–255, got ${tag}`);
    if (!Number.isFinite(seenAt)) throw new RangeError(`seenAt must be a finite epoch ms, got ${seenAt}`);
    this.#waiting.setHashed(key, seenAt, tag);
    // Not while a write is in flight: a synchronous one would race it; the next checkpoint takes them.
    if (this.#waiting.size >= FLUSH_AT && !this.dir.writing) this.flush();
  }

  /** Deletions come from restores, which wait for the directory's write in flight (it throws meanwhile). */
  delete(id: string): boolean {
    this.flush();
    const hash = hashId(id);
    if (this.#ids.getBinaryFast(hash) === undefined) return false;
    // Its index entry stays: expiry finds the id gone and forgets nothing for it.
    this.dir.transaction(() => this.#ids.removeSync(hash));
    return true;
  }

  /** Writes the waiting ids to LMDB in one transaction (the caller's, when it runs in one). */
  flush(): void {
    const waiting = this.#waiting;
    if (waiting.size === 0) return;
    // Not sorted by key: it measured no faster here (docs/benchmarks.md), the pages are copied once a
    // batch either way. No object per id: one key and one value buffer for all, a put copies both.
    const key = Buffer.allocUnsafe(16);
    const value = Buffer.allocUnsafe(5);
    // The batch's hashes by the second they were seen, one index record each.
    const lists = this.#indexLists(waiting, key);
    this.dir.transaction(() => {
      waiting.forEachHashed(key, (seconds, tag) => {
        value.writeUInt32BE(seconds, 0);
        value[4] = tag;
        this.#ids.putSync(key, value);
        const record = lists.get(seconds)!;
        key.copy(record.list, record.at);
        record.at += 16;
      });
      // An id set again under another second keeps its older index entry (no lookup of the old value:
      // most ids are new); expiry checks each listed id's current second before it forgets it.
      for (const [seconds, { list }] of lists)
        this.#bySecond.putSync(indexKey(seconds, this.#sequence++), list);
    });
    // Only once LMDB holds them: a write that fails (a full disk) leaves them waiting, still found by
    // lookups, so nothing committed is forgotten while the stage stops.
    this.#waiting = new IdSet({ initialCapacity: waiting.size * 2 });
  }

  /**
   * Queues the waiting ids in the asynchronous write the caller runs (TaskStateDir.writeAsync, with the
   * checkpoint): LMDB's own thread writes them, while lookups find them in memory until it has. One at a
   * time (writeAsync's). If LMDB refuses it, the batch waits again (an id set since keeps its newer
   * value), recognised, for the next write; the refusal reaches the caller through writeAsync's promise.
   */
  flushAsync(): void {
    const batch = this.#waiting;
    if (batch.size === 0) return;
    if (this.#writing !== undefined) throw new Error('LmdbIdSet: a write is already in flight');
    const key = Buffer.allocUnsafe(16);
    // Values stay untouched until LMDB's thread reads them: one buffer for the batch, a view per id.
    const values = Buffer.allocUnsafe(5 * batch.size);
    let at = 0;
    const lists = this.#indexLists(batch, key);
    batch.forEachHashed(key, (seconds, tag) => {
      values.writeUInt32BE(seconds, at);
      values[at + 4] = tag;
      void this.#ids.put(key, values.subarray(at, at + 5));
      at += 5;
      const record = lists.get(seconds)!;
      key.copy(record.list, record.at);
      record.at += 16;
    });
    for (const [seconds, { list }] of lists)
      void this.#bySecond.put(indexKey(seconds, this.#sequence++), list);
    this.#writing = batch;
    this.#waiting = new IdSet({ initialCapacity: batch.size * 2 });
    this.dir.whenWritten((error) => {
      this.#writing = undefined;
      if (error === undefined) return;
      const hash = Buffer.allocUnsafe(16);
      batch.forEachHashed(hash, (seconds, tag) => {
        const digest = hash.toString('latin1');
        if (this.#waiting.getHashed(digest) === undefined)
          this.#waiting.setHashed(digest, seconds * 1000, tag);
      });
    });
  }

  /** The index records of a batch: each second's list of hashes, allocated (counted first) to be filled. */
  #indexLists(batch: IdSet, key: Buffer): Map<number, { list: Buffer; at: number }> {
    const counts = new Map<number, number>();
    batch.forEachHashed(key, (seconds) => counts.set(seconds, (counts.get(seconds) ?? 0) + 1));
    const lists = new Map<number, { list: Buffer; at: number }>();
    for (const [seconds, count] of counts)
      lists.set(seconds, { list: Buffer.allocUnsafe(16 * count), at: 0 });
    return lists;
  }

  *entries(): IterableIterator<{ hash: Buffer; seenAt: number; tag: number }> {
    this.flush();
    for (const { key, value } of this.#ids.getRange({})) {
      yield { hash: Buffer.from(key), seenAt: value.readUInt32BE(0) * 1000, tag: value[4]! };
    }
  }

  /**
   * Forgets every id seen in a second wholly before `streamTime` (as IdSet does), and counts each once: on
   * disk a range of the index, in memory the waiting ids (not written first: a running task's batch is
   * written by LMDB's thread at its checkpoint, not here). An id waiting in memory is decided there, by
   * its latest second: its older copy on disk goes uncounted.
   */
  expireBefore(streamTime: number): number {
    // Left for the next punctuation while a write is in flight (a synchronous one would race it): late, never early.
    if (this.dir.writing) return 0;
    const waiting = this.#waiting;
    const limit = Math.max(0, Math.min(MAX_SECONDS, Math.floor(streamTime / 1000)));
    const end = Buffer.alloc(4);
    end.writeUInt32BE(limit, 0);
    let removed = 0;
    this.dir.transaction(() => {
      for (const { key, value } of this.#bySecond.getRange({ end })) {
        const seconds = key.readUInt32BE(0);
        // Copied: the lookups below may reuse the buffers a read hands out.
        for (const hash of indexedHashes(Buffer.from(key), Buffer.from(value))) {
          const current = this.#ids.getBinaryFast(hash);
          // A stale entry (the id was set again under another second, or deleted) forgets nothing.
          if (current !== undefined && current.readUInt32BE(0) === seconds) {
            this.#ids.removeSync(hash);
            if (waiting.getHashed(hash.toString('latin1')) === undefined) removed++;
          }
        }
        this.#bySecond.removeSync(key);
      }
    });
    return removed + waiting.expireBefore(streamTime);
  }
}

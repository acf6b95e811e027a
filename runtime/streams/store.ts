// Changelog-backed state stores: writes are held per transaction and become state only when it commits.
//
// Kafka Streams wipes a task's state when an exactly-once transaction aborts; here a store keeps the
// batch's writes in an overlay instead, so an aborted batch is forgotten without a restore and the
// retried batch sees the state as committed.
import type { TaskStateDir } from './state-dir.js';

/** One record of a store's changelog topic: the key, the encoded value (null deletes), stream time. */
export interface ChangelogRecord {
  readonly key: string;
  readonly value: Buffer | null;
  readonly timestamp: number;
  /**
   * While restoring: the key's bytes as read from the changelog (null: no key), so a store can use
   * them without decoding the key (the dedupe store hashes them).
   */
  readonly keyBytes?: Buffer | null;
}

/** A changelog record read back while restoring: its key is decoded only when a store asks for it. */
export class RestoredRecord implements ChangelogRecord {
  #key: string | undefined;
  constructor(
    readonly keyBytes: Buffer | null,
    readonly value: Buffer | null,
    readonly timestamp: number,
  ) {}

  /** The key as UTF-8 text ('' for a record without a key). */
  get key(): string {
    this.#key ??= this.keyBytes === null ? '' : this.keyBytes.toString('utf8');
    return this.#key;
  }
}

/** What the kit needs from every store of a partition task. */
export interface StateStore {
  readonly name: string;
  /** Applies one changelog record while restoring, before any input is processed. */
  restore(record: ChangelogRecord): void;
  /**
   * The stream time a changelog record stands for, when its timestamp is not it: a store whose records
   * carry the time they were written (the broker deletes a `delete` changelog by record time) says here
   * the time its value was decided at. Restore advances the task's stream time by it.
   */
  eventTimeOf?(record: ChangelogRecord): number;
  /** Called once the changelog partition was read to its end, with the restored stream time. */
  restored?(streamTime: number): void;
  /**
   * The changelog records written since the last take, commit or rollback, to go in the transaction:
   * one per key, its last value (as Kafka Streams' cache coalesces writes within a commit interval).
   */
  takeChangelog(): ChangelogRecord[];
  /** A record starts: what it writes can be undone alone (its processor threw, it is dead-lettered). */
  beginRecord?(): void;
  /** Forgets the writes of the record begun last, keeping the transaction's earlier writes. */
  undoRecord?(): void;
  /** The bytes of the largest changelog record (key and value) the record begun last wrote; 0: none. */
  largestRecordChangelog?(): number;
  /** The batch committed: its writes become the store's state. */
  commit(): void;
  /** The batch was aborted: its writes are forgotten. */
  rollback(): void;
  /**
   * Writes committed state still waiting in memory to disk (a store on disk batches its commits), before
   * a checkpoint says the disk holds it; runs inside the checkpoint's transaction.
   */
  flush?(): void;
  /**
   * flush() as writes queued in the directory's asynchronous write (TaskStateDir.writeAsync), which LMDB's
   * thread runs while this one goes on; only a store whose backing can (the committed state stays visible
   * until it is written).
   */
  flushAsync?(): void;
  /** Entries held (for /metrics). */
  readonly size: number;
  close?(): void;
}

/** Where a store lives: it names its changelog topic (per source topic), like withLoggingEnabled. */
export interface StoreSpec {
  readonly name: string;
  /** The changelog topic of the store for the given source topic; written to the input's partition number. */
  changelogTopic(sourceTopic: string): string;
  /**
   * The store of one input partition: fresh and empty in memory, or over the task's state directory
   * (its committed state as of its checkpoint) when the app keeps state on disk.
   */
  create(partition: number, stateDir?: TaskStateDir): StateStore;
}

export interface Codec<V> {
  encode(value: V): Buffer;
  decode(bytes: Buffer): V;
}

/** The committed state under a key-value store: a Map, an id set of hashes, … */
export interface KeyValueBacking<V> {
  get(key: string): V | undefined;
  set(key: string, value: V, timestamp: number): void;
  delete(key: string): void;
  readonly size: number;
  /**
   * Writes what waits to disk: a backing on disk keeps writes in memory (where get() finds them) and writes
   * them in batches, one transaction each, when enough wait or when flushed.
   */
  flush?(): void;
  /** flush() queued in the directory's asynchronous write (StateStore.flushAsync). */
  flushAsync?(): void;
}

/** A Map as backing, for stores whose keys must be listed (tables). */
export class MapBacking<V> implements KeyValueBacking<V> {
  readonly map = new Map<string, V>();
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    this.map.set(key, value);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  get size(): number {
    return this.map.size;
  }
}

interface Pending<V> {
  value: V | undefined;
  timestamp: number;
}

/** A key-value store whose every write is logged to its changelog in the batch's transaction. */
export class ChangelogKeyValueStore<V> implements StateStore {
  #pending = new Map<string, Pending<V>>();
  /** The changelog records not taken yet, last write per key. */
  #log = new Map<string, ChangelogRecord>();
  /** What the current record's writes replaced (pending entry and log record), to undo it alone. */
  #undo: { key: string; pending: Pending<V> | undefined; log: ChangelogRecord | undefined }[] = [];

  /** Present when the backing writes asynchronously (StateStore.flushAsync). */
  readonly flushAsync?: () => void;

  constructor(
    readonly name: string,
    readonly backing: KeyValueBacking<V>,
    private readonly codec: Codec<V>,
  ) {
    if (backing.flushAsync !== undefined) this.flushAsync = () => backing.flushAsync!();
  }

  get(key: string): V | undefined {
    const pending = this.#pending.get(key);
    return pending ? pending.value : this.backing.get(key);
  }

  put(key: string, value: V, timestamp: number): void {
    this.#write(key, { value, timestamp }, { key, value: this.codec.encode(value), timestamp });
  }

  delete(key: string, timestamp: number): void {
    this.#write(key, { value: undefined, timestamp }, { key, value: null, timestamp });
  }

  #write(key: string, pending: Pending<V>, record: ChangelogRecord): void {
    this.#undo.push({ key, pending: this.#pending.get(key), log: this.#log.get(key) });
    this.#pending.set(key, pending);
    // Re-inserted so the map keeps the order of last writes.
    this.#log.delete(key);
    this.#log.set(key, record);
  }

  beginRecord(): void {
    this.#undo = [];
  }

  undoRecord(): void {
    for (const { key, pending, log } of this.#undo.reverse()) {
      if (pending === undefined) this.#pending.delete(key);
      else this.#pending.set(key, pending);
      if (log === undefined) this.#log.delete(key);
      else this.#log.set(key, log);
    }
    this.#undo = [];
  }

  largestRecordChangelog(): number {
    let largest = 0;
    for (const { key } of this.#undo) {
      const record = this.#log.get(key);
      if (record === undefined) continue;
      const bytes = Buffer.byteLength(key, 'utf8') + (record.value?.length ?? 0);
      if (bytes > largest) largest = bytes;
    }
    return largest;
  }

  restore({ key, value, timestamp }: ChangelogRecord): void {
    if (value === null) this.backing.delete(key);
    else this.backing.set(key, this.codec.decode(value), timestamp);
  }

  takeChangelog(): ChangelogRecord[] {
    const log = [...this.#log.values()];
    this.#log.clear();
    this.#undo = [];
    return log;
  }

  commit(): void {
    for (const [key, { value, timestamp }] of this.#pending) {
      if (value === undefined) this.backing.delete(key);
      else this.backing.set(key, value, timestamp);
    }
    // Not flushed here: a backing on disk batches commits until the next checkpoint (or a full batch).
    this.#pending.clear();
    this.#log.clear();
    this.#undo = [];
  }

  /** The changelog was read to its end: waiting restore writes reach the disk. */
  restored(_streamTime: number): void {
    this.backing.flush?.();
  }

  flush(): void {
    this.backing.flush?.();
  }

  rollback(): void {
    this.#pending.clear();
    this.#log.clear();
    this.#undo = [];
  }

  get size(): number {
    return this.backing.size;
  }
}

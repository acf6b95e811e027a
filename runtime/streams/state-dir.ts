// The on-disk state of one task (one input partition): an LMDB environment in
// `<root>/<app>/<instance>/<topic>-<partition>`, locked against a second process, holding each store's database
// and the task's checkpoint (the changelog offset per store topic its state reflects).
//
// Writes skip fsync (LMDB's noSync): the changelog, not the disk, is the record of truth. A killed
// process loses nothing (its writes are in the page cache); a machine that restarted may have lost
// unsynced pages, so a store last written under another boot is wiped and restored in full.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Database, RootDatabase } from 'lmdb';
import { type Checkpoint, encodeCheckpoint, parseCheckpoint } from './checkpoint.js';
import { StateStoreFailedError } from './errors.js';

const CHECKPOINT_KEY = 'checkpoint';
const BOOT_KEY = 'boot';
const LOCK_FILE = 'LOCK';

/** LMDB's binding, loaded on first use: a process keeping its state in memory never loads it (~60 ms). */
let lmdb: typeof import('lmdb') | undefined;
const loadLmdb = () => {
  lmdb ??= createRequire(import.meta.url)('lmdb') as typeof import('lmdb');
  return lmdb;
};

/** Locks held by this process: a lock file naming our own pid but not in here is a dead predecessor's. */
const heldHere = new Set<string>();

/** Another live process holds the directory: the stage stops with one line (a StateStoreFailedError). */
export class StateDirLockedError extends StateStoreFailedError {
  override name = 'StateDirLockedError';
}

/** The machine's boot id (Linux): writes made under another boot may not have reached the disk. */
function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the directory's lock file, or throws naming the live process that holds it. */
function lock(dir: string): void {
  const file = join(dir, LOCK_FILE);
  if (heldHere.has(file))
    throw new StateDirLockedError(`state directory ${dir} is already open in this process`);
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(file, 'wx');
        writeSync(fd, String(process.pid));
        closeSync(fd);
        heldHere.add(file);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
        if (Number.isInteger(pid) && isAlive(pid))
          throw new StateDirLockedError(
            `state directory ${dir} is locked by process ${pid}: two processes may not share a state directory (give each instance its own PROCESSOR_STATE_DIR)`,
          );
        rmSync(file, { force: true }); // a dead process's lock
      }
    }
  } catch (error) {
    if (error instanceof StateStoreFailedError) throw error;
    // A lock file that cannot be written or read (a read-only or full volume, permissions, no file
    // descriptors left) will not heal by retrying: the stage stops with one line.
    throw new StateStoreFailedError(
      `state directory ${dir}: its lock file cannot be taken (${(error as Error).message}): check that the directory is writable and its volume has room`,
      { cause: error },
    );
  }
  throw new StateDirLockedError(`state directory ${dir}: could not take its lock`);
}

function unlock(dir: string): void {
  const file = join(dir, LOCK_FILE);
  heldHere.delete(file);
  rmSync(file, { force: true });
}

export interface TaskStateDirOptions {
  root: string;
  appId: string;
  /**
   * The stream app instance (a stream thread's own, `<instance>-<n>`): it gets its partitions back after a
   * restart (static membership), and two threads of one process never share a directory.
   */
  instanceId: string;
  topic: string;
  partition: number;
}

/** The directory of a task's state under the root. */
export function taskStateDirPath({ root, appId, instanceId, topic, partition }: TaskStateDirOptions): string {
  return join(root, appId, instanceId, `${topic}-${partition}`);
}

export class TaskStateDir {
  readonly path: string;
  #env: RootDatabase<Buffer, string>;
  #dbs = new Map<string, Database<Buffer, Buffer>>();
  #checkpoint: Checkpoint | undefined;
  /** Why the state on disk cannot be trusted as it is (then it is wiped before its restore); undefined: it can. */
  #distrust: string | undefined;
  #closed = false;
  /** The asynchronous write LMDB's thread has not finished (at most one): no synchronous write meanwhile. */
  #inFlight: Promise<unknown> | undefined;
  /** What the stores of the write being queued want to hear when LMDB has written it (or refused it). */
  #whenWritten: ((error: unknown) => void)[] | undefined;
  /** The checkpoint was forgotten while a write carrying one was in flight: its landing does not restore it. */
  #forgottenMeanwhile = false;

  constructor(options: TaskStateDirOptions) {
    this.path = taskStateDirPath(options);
    const fresh = !existsSync(join(this.path, 'data.mdb'));
    try {
      mkdirSync(this.path, { recursive: true });
    } catch (error) {
      // A directory that cannot be made (permissions, a full or read-only volume) will not heal by retrying.
      throw new StateStoreFailedError(
        `state directory ${this.path} cannot be created: ${(error as Error).message}`,
        { cause: error },
      );
    }
    lock(this.path);
    try {
      this.#env = loadLmdb().open<Buffer, string>({
        path: join(this.path, 'data.mdb'),
        encoding: 'binary',
        noSync: true,
        maxDbs: 16,
        // LMDB grows its map file as needed; this is only its first size.
        mapSize: 64 * 1024 * 1024,
        // An asynchronous write (writeAsync) starts on LMDB's thread once it is wholly queued, not after its
        // first 1,000 writes: started early, that thread waits for each next write, and each put wakes it.
        batchStartThreshold: Number.MAX_SAFE_INTEGER,
      } as Parameters<typeof import('lmdb').open>[0]);
    } catch (error) {
      unlock(this.path);
      throw new StateStoreFailedError(
        `state directory ${this.path} cannot be opened: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    try {
      this.#readState(fresh);
    } catch (error) {
      // Nothing of a directory that cannot be used stays held: its environment is closed (at once: no
      // write was queued) and its lock released, so a later start is not refused by our own lock.
      this.#closed = true;
      try {
        void this.#env.close().catch(() => undefined);
      } catch {
        // closing is best-effort here: the read's or write's error is the one to report
      }
      try {
        unlock(this.path);
      } catch {
        // as above
      }
      throw new StateStoreFailedError(
        `state directory ${this.path} cannot be read or written (${(error as Error).message}): remove it (its state is restored from the changelogs) or repair its volume`,
        { cause: error },
      );
    }
  }

  /** Reads the checkpoint and the boot it was written under, and decides whether the state can be trusted. */
  #readState(fresh: boolean): void {
    const boot = bootId();
    const stored = this.#env.getBinary(CHECKPOINT_KEY);
    this.#checkpoint = parseCheckpoint(stored);
    const storedBoot = this.#env.getBinary(BOOT_KEY)?.toString('utf8');
    if (fresh) this.#distrust = undefined;
    else if (stored === undefined) this.#distrust = 'it has no checkpoint (a restore never finished)';
    else if (this.#checkpoint === undefined) this.#distrust = 'its checkpoint is unreadable';
    else if (storedBoot !== boot)
      this.#distrust = 'the machine restarted since it was written (unsynced writes may be lost)';
    else this.#distrust = undefined;
    if (this.#distrust !== undefined) this.#checkpoint = undefined;
    if (storedBoot === boot) return;
    // The distrusted checkpoint goes with the old boot id, in one transaction: kept in memory only, a
    // wipe that fails or a process that dies first would leave the next start trusting it under this boot.
    this.#env.transactionSync(() => {
      if (this.#distrust !== undefined && stored !== undefined) this.#env.removeSync(CHECKPOINT_KEY);
      this.#env.putSync(BOOT_KEY, Buffer.from(boot));
    });
  }

  /** Why the state on disk cannot be trusted, once (the first task over it wipes it). */
  takeDistrust(): string | undefined {
    const reason = this.#distrust;
    this.#distrust = undefined;
    return reason;
  }

  /** No checkpoint any more: the next restore is a full one. */
  forgetCheckpoint(): void {
    if (this.#closed) return;
    if (this.#inFlight !== undefined) {
      // Queued behind the write in flight (LMDB's thread writes in order), so its checkpoint goes too.
      this.#forgottenMeanwhile = true;
      void this.#track(Promise.allSettled([this.#inFlight, this.#env.remove(CHECKPOINT_KEY)]));
      this.#checkpoint = undefined;
      return;
    }
    if (this.#checkpoint === undefined) return;
    this.#env.removeSync(CHECKPOINT_KEY);
    this.#checkpoint = undefined;
  }

  /** A store's database (binary keys and values), created if new. */
  database(name: string): Database<Buffer, Buffer> {
    let db = this.#dbs.get(name);
    if (db === undefined) {
      db = this.#env.openDB<Buffer, Buffer>({ name, keyEncoding: 'binary', encoding: 'binary' });
      this.#dbs.set(name, db);
    }
    return db;
  }

  /** Runs writes in one LMDB transaction (all or nothing), on this thread. */
  transaction<T>(write: () => T): T {
    this.#assertNoWriteInFlight();
    return this.#env.transactionSync(write);
  }

  /**
   * A synchronous write is never mixed with an asynchronous one in flight: LMDB's thread may run it before
   * or after, or join it to its own transaction. Callers wait (settled()) or leave it for later (writing).
   */
  #assertNoWriteInFlight(): void {
    if (this.#inFlight !== undefined)
      throw new Error(
        `state directory ${this.path}: a synchronous write while an asynchronous one is in flight`,
      );
  }

  /** An asynchronous write (writeAsync) is in flight. */
  get writing(): boolean {
    return this.#inFlight !== undefined;
  }

  /** Waits until no asynchronous write is in flight (its failure is reported to whoever started it). */
  async settled(): Promise<void> {
    while (this.#inFlight !== undefined) await this.#inFlight.catch(() => undefined);
  }

  /**
   * Queues `write`'s writes (the stores' put() calls, their flushAsync) and then the checkpoint as one LMDB
   * transaction that LMDB's own thread writes, while this thread goes on: the checkpoint lands with the
   * state it covers, never before. Resolves once it is written; rejects when LMDB refused it (a full disk).
   * One at a time: the caller checks `writing` first.
   */
  writeAsync(write: () => void, checkpoint: Checkpoint): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#assertNoWriteInFlight();
    const whenWritten: ((error: unknown) => void)[] = [];
    this.#whenWritten = whenWritten;
    this.#forgottenMeanwhile = false;
    const landed = (error: unknown) => {
      if (error === undefined && !this.#forgottenMeanwhile) this.#checkpoint = checkpoint;
      for (const callback of whenWritten) callback(error);
      if (error !== undefined) throw error;
    };
    try {
      const written = this.asyncTransaction(() => {
        write();
        this.#env.put(CHECKPOINT_KEY, encodeCheckpoint(checkpoint));
      });
      return this.#track(
        written.then(
          () => landed(undefined),
          (error: unknown) => landed(error ?? new Error('LMDB refused the write')),
        ),
      );
    } catch (error) {
      // Queuing failed part way: what was queued is written anyway (without the checkpoint); the stores
      // hear of the failure once it is, and keep their batch.
      this.#track(
        Promise.resolve(this.#env.committed).then(
          () => landed(error),
          () => landed(error),
        ),
      ).catch(() => undefined);
      throw error;
    } finally {
      this.#whenWritten = undefined;
    }
  }

  /** `write`, counted as in flight until it settles (no longer when the promise returned settles). */
  #track<T>(write: Promise<T>): Promise<T> {
    const tracked: Promise<T> = write.finally(() => {
      if (this.#inFlight === tracked) this.#inFlight = undefined;
    });
    this.#inFlight = tracked;
    return tracked;
  }

  /** One LMDB transaction written by LMDB's thread: the writes `write` queues (put, remove). */
  asyncTransaction(write: () => void): Promise<unknown> {
    return this.#env.batch(write);
  }

  /**
   * Inside writeAsync's `write`: `callback` runs once LMDB has written what was queued (error undefined)
   * or refused it (the error), before writeAsync's promise settles.
   */
  whenWritten(callback: (error: unknown) => void): void {
    if (this.#whenWritten === undefined) throw new Error('whenWritten outside writeAsync');
    this.#whenWritten.push(callback);
  }

  get checkpoint(): Checkpoint | undefined {
    return this.#checkpoint;
  }

  /** Records the changelog offsets and stream time the state now reflects. */
  writeCheckpoint(checkpoint: Checkpoint): void {
    if (this.#closed) return;
    this.#assertNoWriteInFlight();
    this.#env.putSync(CHECKPOINT_KEY, encodeCheckpoint(checkpoint));
    this.#checkpoint = checkpoint;
  }

  /** Empties every store and forgets the checkpoint: the state is restored in full. */
  wipe(): void {
    this.#assertNoWriteInFlight();
    this.#env.transactionSync(() => {
      for (const db of this.#dbs.values()) db.clearSync();
      this.#env.removeSync(CHECKPOINT_KEY);
    });
    this.#checkpoint = undefined;
  }

  /** Bytes the store takes on disk (its data file's allocated blocks). */
  sizeOnDisk(): number {
    try {
      const { blocks, size } = statSync(join(this.path, 'data.mdb'));
      return blocks > 0 ? blocks * 512 : size;
    } catch {
      return 0;
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.settled();
      await this.#env.close();
    } finally {
      unlock(this.path);
    }
  }
}

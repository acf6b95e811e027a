// A warm copy of one input partition's state that this instance does not own: its stores over the task's
// own state directory (the directory an active task of the same partition would use), fed by its
// changelogs as a restore feeds them, and checkpointed the same way, so that when the group hands the
// partition over the active task's restore reads only what the changelog got after the checkpoint.
//
// PENDING: made (directory open), its start not decided (that needs the changelogs' bounds). FOLLOWING:
// read from `next` on, records applied. RELEASED: the instance owns the partition now; the active task
// takes the directory. CLOSED: the follower stopped. After an error a following task goes back to
// PENDING: its queued writes dropped, it reads again from its checkpoint (a checkpoint behind the state
// costs only a replay: a changelog record applied twice writes the same value).
import type { Logger } from '../log.js';
import { type ChangelogBounds, restoreStart } from './checkpoint.js';
import type { TaskStateDir } from './state-dir.js';
import type { StateDirs } from './state-dirs.js';
import { RestoredRecord, type StateStore } from './store.js';
import { advanceStreamTime } from './stream-time.js';
import type { Topology } from './topology.js';

export type StandbyState = 'pending' | 'following' | 'released' | 'closed';

const LEGAL: Readonly<Record<StandbyState, readonly StandbyState[]>> = {
  pending: ['following', 'released', 'closed'],
  following: ['pending', 'released', 'closed'],
  released: [],
  closed: [],
};

export class IllegalStandbyTransitionError extends Error {
  override name = 'IllegalStandbyTransitionError';
}

/** A changelog record as the follower's consumer hands it over. */
export interface StandbyRecord {
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
}

export interface StandbyTaskOptions<V> {
  topology: Topology<V>;
  /** The input topic (the task's), not its changelog. */
  topic: string;
  partition: number;
  stateDirs: StateDirs;
  logger: Logger;
  now?: () => number;
}

export class StandbyTask<V> {
  readonly topic: string;
  readonly partition: number;
  readonly dir: TaskStateDir;
  readonly log: Logger;
  #state: StandbyState = 'pending';
  #stores = new Map<string, StateStore>();
  /** Store of each changelog topic. */
  readonly #storeOf: ReadonlyMap<string, string>;
  /** Per changelog topic: the next offset to apply (everything below it applied); known once following. */
  readonly #next = new Map<string, bigint>();
  /**
   * Per changelog topic: the consumer's position after the last batch, past transaction markers and
   * aborted records (which are never handed over). For the lag only: right after an assignment it may
   * still be the previous assignment's, so the checkpoint never takes it.
   */
  readonly #position = new Map<string, bigint>();
  /** Records applied since the last settle: their writes may still be queued in the stores. */
  #unsettled = 0;
  streamTime = 0;
  readonly #now: () => number;

  /** Opens the partition's state directory: throws StateStoreFailedError when it cannot (locked, …). */
  constructor(private readonly options: StandbyTaskOptions<V>) {
    this.topic = options.topic;
    this.partition = options.partition;
    this.#now = options.now ?? Date.now;
    this.log = options.logger.child({ topic: this.topic, partition: this.partition, standby: true });
    this.#storeOf = new Map(options.topology.stores.map((s) => [s.changelogTopic(this.topic), s.name]));
    this.dir = options.stateDirs.acquire(this.topic, this.partition);
    const distrust = this.dir.takeDistrust();
    if (distrust !== undefined) {
      this.log.warn({ stateDir: this.dir.path }, `standby state wiped, following in full: ${distrust}`);
      this.dir.wipe();
    }
    this.#openStores();
  }

  get state(): StandbyState {
    return this.#state;
  }

  /** The changelog topics this task follows (one per store). */
  changelogs(): string[] {
    return [...this.#storeOf.keys()];
  }

  #transitionTo(to: StandbyState): void {
    if (!LEGAL[this.#state].includes(to))
      throw new IllegalStandbyTransitionError(
        `standby ${this.topic}[${this.partition}]: illegal transition ${this.#state} → ${to}`,
      );
    this.#state = to;
  }

  /** Stores over the directory as of its checkpoint: nothing queued, stream time the checkpoint's. */
  #openStores(): void {
    for (const store of this.#stores.values()) store.close?.();
    this.#stores = new Map(
      this.options.topology.stores.map((spec) => [spec.name, spec.create(this.partition, this.dir)]),
    );
    this.streamTime = this.dir.checkpoint?.streamTime ?? 0;
    this.#unsettled = 0;
    this.#next.clear();
    this.#position.clear();
  }

  /**
   * PENDING → FOLLOWING, given each changelog's bounds now: from the checkpoint when the changelog still
   * holds everything after it, else over a wiped directory from the first offset. Returns where each
   * changelog is read from.
   */
  start(bounds: ReadonlyMap<string, ChangelogBounds>): Map<string, bigint> {
    const checkpoint = this.dir.checkpoint;
    let full: string | undefined;
    for (const topic of this.#storeOf.keys()) {
      const offset = checkpoint?.offsets[topic];
      const at = bounds.get(topic);
      if (at === undefined) throw new Error(`no bounds for changelog ${topic}[${this.partition}]`);
      const start = restoreStart(
        offset === undefined ? undefined : BigInt(offset),
        at,
        checkpoint === undefined ? 'it has no checkpoint' : `its checkpoint has no offset for ${topic}`,
      );
      if (start.kind === 'full') full ??= start.reason;
      else this.#next.set(topic, start.from);
    }
    if (full !== undefined) {
      // One store wiped means every store of the task is read again from the beginning.
      this.log.info({ stateDir: this.dir.path }, `standby following in full: ${full}`);
      this.dir.wipe();
      this.#openStores();
      for (const topic of this.#storeOf.keys()) this.#next.set(topic, bounds.get(topic)!.low);
    }
    this.#transitionTo('following');
    return new Map(this.#next);
  }

  /**
   * One committed changelog record, in offset order. Ignored unless following, and below where it reads
   * (a batch fetched before the partition was assigned again).
   */
  apply(topic: string, record: StandbyRecord): boolean {
    if (this.#state !== 'following') return false;
    const next = this.#next.get(topic);
    const store = this.#storeOf.get(topic);
    if (next === undefined || store === undefined || record.offset < next) return false;
    const restoring = this.#stores.get(store)!;
    const restored = new RestoredRecord(record.key, record.value, record.timestamp);
    restoring.restore(restored);
    this.#next.set(topic, record.offset + 1n);
    const at = restoring.eventTimeOf?.(restored) ?? record.timestamp;
    this.streamTime = advanceStreamTime(this.streamTime, at, this.#now());
    this.#unsettled++;
    return true;
  }

  /** The consumer's position after a batch (for the lag: a caught-up copy is 0 behind, markers and all). */
  positionAt(topic: string, position: bigint): void {
    if (this.#state === 'following') this.#position.set(topic, position);
  }

  /** Where each changelog is read next: past the last record applied (what the checkpoint says). */
  next(topic: string): bigint | undefined {
    return this.#next.get(topic);
  }

  /** Records the copy is behind a changelog partition's end `high` (undefined: not following it). */
  behind(topic: string, high: number): number | undefined {
    const next = this.#next.get(topic);
    if (this.#state !== 'following' || next === undefined) return undefined;
    const position = this.#position.get(topic) ?? next;
    return Math.max(0, high - Number(position > next ? position : next));
  }

  /**
   * What was applied reaches the disk (the stores' queued writes, then expiry by stream time), and only
   * then the checkpoint: the state on disk always holds everything below its checkpoint.
   */
  settle(): void {
    if (this.#state !== 'following' || this.#unsettled === 0) return;
    for (const store of this.#stores.values()) store.restored?.(this.streamTime);
    // Past the last record applied, never the consumer's position: that one may be ahead of what was
    // applied (an earlier assignment's). An idle partition's checkpoint stays before its last marker.
    this.dir.writeCheckpoint({
      offsets: Object.fromEntries([...this.#next].map(([topic, offset]) => [topic, String(offset)])),
      streamTime: this.streamTime,
    });
    this.#unsettled = 0;
  }

  /** After a failure: queued writes dropped, read again from the checkpoint once started again. */
  reset(): void {
    if (this.#state === 'pending') return;
    this.#openStores();
    this.#transitionTo('pending');
  }

  /**
   * The instance owns the partition now: settled, stores closed, and nothing written to the directory
   * after this returns (the active task opens it next). A settle that fails leaves the checkpoint as it
   * was, behind the state: the active task's restore replays a little more.
   */
  release(): void {
    this.#end('released');
  }

  /** The follower stops: settled and closed like a release. */
  close(): void {
    this.#end('closed');
  }

  #end(to: 'released' | 'closed'): void {
    if (this.#state === 'released' || this.#state === 'closed') return;
    try {
      this.settle();
    } catch (error) {
      this.log.warn({ err: error }, 'standby state not settled; its checkpoint stays behind');
    }
    for (const store of this.#stores.values()) store.close?.();
    this.#stores.clear();
    this.#transitionTo(to);
  }
}

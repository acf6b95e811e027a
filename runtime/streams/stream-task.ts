// One input partition of a stream app: its state machine, stores, processor and stream time, and
// the part of the open transaction it wrote. It never talks to Kafka: the poll loop feeds it records,
// sends what it forwards, and tells it when the transaction committed or aborted.
import type { Logger } from '../log.js';
import { type ChangelogBounds, type Checkpoint, restoreStart } from './checkpoint.js';
import { PartitionPosition } from './partition-position.js';
import type { ForwardOptions, InputRecord, Processor, ProcessorContext, Punctuator } from './processor.js';
import type { TaskStateDir } from './state-dir.js';
import type { StateDirs } from './state-dirs.js';
import type { ChangelogRecord, StateStore } from './store.js';
import { advanceStreamTime, recordLeadBeyondAllowed } from './stream-time.js';
import { type PartitionPort, type TaskState, TaskStateMachine } from './task-state.js';
import type { SinkNode, SourceNode, Topology } from './topology.js';

/** One instrumentation event: its name, labels and value. */
export type InstrumentEvent = [event: string, labels?: Readonly<Record<string, string>>, value?: number];

/** Instrumentation events of the kit (and of processors, through the context). */
export type Instrument = ((
  event: string,
  labels?: Readonly<Record<string, string>>,
  value?: number,
) => void) & {
  /** Several events at once (a committed transaction's): metrics.ts writes each series once for them. */
  all?(events: readonly InstrumentEvent[]): void;
};

/** Emits `events` in order, as one batch where the instrument takes batches. */
export function instrumentAll(instrument: Instrument, events: readonly InstrumentEvent[]): void {
  if (events.length === 0) return;
  if (instrument.all !== undefined) instrument.all(events);
  else for (const event of events) instrument(...event);
}

/** A record a processor forwarded, before serialization. */
export interface Outgoing {
  sink: SinkNode;
  key: string;
  value: unknown;
  partition: number | undefined;
  timestamp: number;
  headers: Readonly<Record<string, string>> | undefined;
}

export interface StreamTaskOptions<V> {
  topology: Topology<V>;
  source: SourceNode<V>;
  partition: number;
  port: PartitionPort;
  logger: Logger;
  /** The clock stream time is bounded by (a record far in the future cannot move it there). */
  now?: () => number;
  /** Where the app keeps state on disk (undefined: in memory). */
  stateDirs?: StateDirs;
}

/** A record this far or farther ahead of the clock is logged, at most once per this interval per partition. */
const FUTURE_RECORD_WARNING_INTERVAL_MS = 60_000;

/** A processor's failure on one record: what the dead letter says. */
export interface RecordFailure {
  reason: string;
  message: string;
  error: unknown;
}

export class StreamTask<V> {
  readonly topic: string;
  readonly partition: number;
  readonly machine: TaskStateMachine;
  readonly log: Logger;
  /** The largest record timestamp seen (restore included), the open transaction's records included. */
  streamTime = 0;
  /** Stream time as of the last commit: what an abort goes back to. */
  #committedStreamTime = 0;
  #stores = new Map<string, StateStore>();
  #processor: Processor<V> | undefined;
  #punctuations: { intervalMs: number; last: number; run: Punctuator }[] = [];
  #outbox: Outgoing[] = [];
  /** The processor's instrumentation in the open transaction: emitted once it commits. */
  #events: InstrumentEvent[] = [];
  /** The current record's instrumentation: dropped if the record fails. */
  #recordEvents: InstrumentEvent[] = [];
  #current: InputRecord<V> | undefined;
  #sinks: Map<string, SinkNode>;
  readonly #changelogs: { store: string; topic: string }[];
  #now: () => number;
  #lastFutureWarningAt = Number.NEGATIVE_INFINITY;
  /** Where the partition reads next, what the open transaction commits, and where an abort goes back to. */
  readonly position = new PartitionPosition();
  /** Restore bookkeeping, owned by the runner: the attempt in flight, and when to try again. */
  restore: {
    attempt?: Promise<void>;
    abort?: AbortController;
    failures: number;
    retryAt: number;
    done: boolean;
    /** Why the last attempt failed, while it is retried (readiness names it). */
    lastError?: string;
    /** Changelog records restored so far in this attempt, and how many there are to read (once known). */
    records: number;
    total: number | undefined;
  } = { failures: 0, retryAt: 0, done: false, records: 0, total: undefined };
  /** The task's state directory, when the app keeps state on disk. */
  readonly stateDir: TaskStateDir | undefined;
  /** The end offset each changelog was restored to in this attempt: the checkpoint written when it finishes. */
  #restoredTo = new Map<string, bigint>();

  constructor(private readonly options: StreamTaskOptions<V>) {
    this.topic = options.source.topic;
    this.partition = options.partition;
    this.#sinks = new Map(options.topology.sinks.map((s) => [s.name, s]));
    this.#changelogs = options.topology.stores.map((spec) => ({
      store: spec.name,
      topic: spec.changelogTopic(this.topic),
    }));
    this.#now = options.now ?? Date.now;
    this.log = options.logger.child({ topic: this.topic, partition: this.partition });
    this.machine = new TaskStateMachine(this.topic, this.partition, options.port);
    this.stateDir = options.stateDirs?.acquire(this.topic, this.partition);
    const distrust = this.stateDir?.takeDistrust();
    if (distrust !== undefined) this.#wipe(distrust);
    this.resetStores();
  }

  /** Empties the task's state on disk, with the one line that says why. */
  #wipe(reason: string): void {
    this.log.warn({ stateDir: this.stateDir!.path }, `state store wiped, restoring in full: ${reason}`);
    this.stateDir!.wipe();
  }

  get state(): TaskState {
    return this.machine.state;
  }

  /**
   * The stores before a restore (or a restore attempt after a failed one): fresh and empty in memory, or
   * on disk as of the checkpoint (a restore reads only what the changelog holds after it).
   */
  resetStores(): void {
    for (const store of this.#stores.values()) store.close?.();
    this.#stores = new Map(
      this.options.topology.stores.map((spec) => [spec.name, spec.create(this.partition, this.stateDir)]),
    );
    this.streamTime = this.stateDir?.checkpoint?.streamTime ?? 0;
    this.#committedStreamTime = this.streamTime;
    this.#restoredTo.clear();
    this.restore.records = 0;
    this.restore.total = undefined;
  }

  /**
   * Where the restore of a changelog starts, given its bounds now: after the checkpoint when the state on
   * disk can be trusted, else from the beginning over a wiped store (undefined). In memory: the beginning.
   * A wipe empties the whole task directory: right for the topologies here, whose tasks have one store
   * (one changelog) each; a task with several would have to decide every topic before reading any.
   */
  restoreFrom(topic: string, bounds: ChangelogBounds): bigint | undefined {
    const dir = this.stateDir;
    if (dir === undefined) return undefined;
    const checkpoint = dir.checkpoint;
    const offset = checkpoint?.offsets[topic];
    const start = restoreStart(
      offset === undefined ? undefined : BigInt(offset),
      bounds,
      checkpoint === undefined ? undefined : `its checkpoint has no offset for ${topic}`,
    );
    if (start.kind === 'tail') return start.from;
    if (start.reason !== undefined) this.#wipe(start.reason);
    else {
      this.log.info(
        { stateDir: dir.path },
        'no state on disk yet (a new or deleted directory): restoring in full',
      );
      dir.wipe(); // whatever an unfinished restore of this process wrote goes
    }
    this.streamTime = 0;
    this.#committedStreamTime = 0;
    return undefined;
  }

  /** A changelog was read to `end` (exclusive): part of the checkpoint written once the restore finishes. */
  restoredTo(topic: string, end: bigint): void {
    this.#restoredTo.set(topic, end);
  }

  /**
   * After a commit: the changelog offsets below which the state on disk holds everything (each topic's
   * end as the brokers answered after the commit, before this task's next changelog write). When every
   * store can (the dedupe store), the stores' waiting writes and the checkpoint go in one asynchronous
   * LMDB transaction that LMDB's own thread writes while this one routes on: the promise settles when
   * it is written (rejects when LMDB refused it). Else one synchronous transaction, as after a restore.
   * The caller takes no checkpoint while the directory's write is in flight (stateDir.writing).
   */
  checkpoint(offsets: ReadonlyMap<string, bigint>, streamTime: number): Promise<void> | undefined {
    if (this.stateDir === undefined || this.state !== 'running') return undefined;
    const stores = [...this.#stores.values()];
    if (!stores.every((store) => store.flushAsync !== undefined)) {
      this.#writeCheckpoint(offsets, streamTime);
      return undefined;
    }
    const dir = this.stateDir;
    if (dir.closed) return undefined; // the app is closing: the next start restores from the last checkpoint
    return dir.writeAsync(
      () => {
        for (const store of stores) store.flushAsync!();
      },
      checkpointOf(offsets, streamTime),
    );
  }

  /**
   * The stores write what waits in memory, then the checkpoint, in one LMDB transaction: a checkpoint is
   * never ahead of the state on disk. (A task closed without a checkpoint leaves its waiting writes
   * unwritten: they are after the last checkpoint, so the next restore reads them from the changelog.)
   */
  #writeCheckpoint(offsets: ReadonlyMap<string, bigint>, streamTime: number): void {
    const dir = this.stateDir!;
    if (dir.closed) return; // the app is closing: the next start restores from the last checkpoint
    dir.transaction(() => {
      for (const store of this.#stores.values()) store.flush?.();
      dir.writeCheckpoint(checkpointOf(offsets, streamTime));
    });
  }

  /** The partition was lost: another owner may write its changelog, so no checkpoint taken since holds. */
  forgetCheckpoint(): void {
    this.stateDir?.forgetCheckpoint();
  }

  /** Stream time as of the last commit. */
  get committedStreamTime(): number {
    return this.#committedStreamTime;
  }

  /** The changelog topic of each store for this task's source topic. */
  changelogs(): { store: string; topic: string }[] {
    return this.#changelogs;
  }

  /** One changelog record (read_committed, in order). */
  restoreRecord(store: string, record: ChangelogRecord): void {
    const restoring = this.#stores.get(store)!;
    restoring.restore(record);
    this.restore.records++;
    const at = restoring.eventTimeOf?.(record) ?? record.timestamp;
    this.streamTime = advanceStreamTime(this.streamTime, at, this.#now());
  }

  /** The state is complete: the processor starts. The runner then moves the task to RUNNING. */
  finishRestore(): void {
    for (const store of this.#stores.values()) store.restored?.(this.streamTime);
    if (this.stateDir !== undefined && this.#restoredTo.size === this.#changelogs.length)
      this.#writeCheckpoint(this.#restoredTo, this.streamTime);
    this.#committedStreamTime = this.streamTime;
    this.#punctuations = [];
    this.#processor = this.options.topology.processor.create();
    this.#processor.init(this.#context());
  }

  storeSizes(): Map<string, number> {
    return new Map([...this.#stores].map(([name, store]) => [name, store.size]));
  }

  #context(): ProcessorContext {
    const task = this;
    return {
      topic: this.topic,
      partition: this.partition,
      get streamTime() {
        return task.streamTime;
      },
      forward(sinkName: string, key: string, value: unknown, options: ForwardOptions = {}) {
        const sink = task.#sinks.get(sinkName);
        if (sink === undefined)
          throw new TypeError(`no sink named ${sinkName} in ${task.options.topology.name}`);
        task.#outbox.push({
          sink,
          key,
          value,
          partition: options.partition ?? (sink.copartitioned ? task.partition : undefined),
          timestamp: options.timestamp ?? task.#current?.timestamp ?? task.streamTime,
          headers: options.headers,
        });
      },
      getStore<S extends StateStore>(name: string): S {
        const store = task.#stores.get(name);
        if (store === undefined)
          throw new TypeError(`no store named ${name} in ${task.options.topology.name}`);
        return store as S;
      },
      schedule(intervalMs: number, run: Punctuator) {
        task.#punctuations.push({ intervalMs, last: task.streamTime, run });
      },
      // Counted once per committed decision, not per attempt: an aborted transaction's records come again.
      instrument(event, labels, value) {
        task.#recordEvents.push([event, labels, value]);
      },
    };
  }

  /**
   * A record stamped ahead of this process's clock (its writer's clock runs fast): counted, and warned
   * about now and then, since stream time stops at the clock plus the allowed lead instead.
   */
  #noteFutureRecord(record: InputRecord<V>, offset: number, now: number): void {
    const beyond = recordLeadBeyondAllowed(record.timestamp, now);
    if (beyond === 0) return;
    const leadSeconds = (record.timestamp - now) / 1000;
    this.#recordEvents.push(['stream.record.ahead-of-clock', { topic: this.topic }, leadSeconds]);
    if (now - this.#lastFutureWarningAt < FUTURE_RECORD_WARNING_INTERVAL_MS) return;
    this.#lastFutureWarningAt = now;
    this.log.warn(
      { offset: String(offset), recordTime: new Date(record.timestamp).toISOString(), leadSeconds },
      "a record's timestamp is ahead of this process's clock (is the writer's clock, ingest's, fast?); stream time does not follow it",
    );
  }

  /**
   * Runs one record through the processor. Returns what it forwarded, or its failure (it threw). The
   * caller then settles the record: kept, or undone (its store writes and events) to dead-letter it.
   */
  process(record: InputRecord<V>, offset: number): { outputs: Outgoing[] } | { failure: RecordFailure } {
    this.position.processed(offset);
    const now = this.#now();
    this.streamTime = advanceStreamTime(this.streamTime, record.timestamp, now);
    this.beginRecord();
    this.#outbox = [];
    this.#noteFutureRecord(record, offset, now);
    this.#current = record;
    try {
      this.#processor!.process(record);
      return { outputs: this.#outbox };
    } catch (error) {
      return {
        failure: {
          reason: 'processor-error',
          message: error instanceof Error ? error.message : String(error),
          error,
        },
      };
    } finally {
      this.#current = undefined;
      this.#outbox = [];
    }
  }

  /**
   * A record starts: what undoRecord() undoes from now on is its alone. Also for a record the processor
   * does not run on (given up on after its attempts): the undo of its dead letter must not reach back into
   * the record before it, whose outputs stay.
   */
  beginRecord(): void {
    for (const store of this.#stores.values()) store.beginRecord?.();
    this.#recordEvents = [];
  }

  /** The record's outputs were sent: its events join the transaction's. */
  keepRecord(): void {
    this.#events.push(...this.#recordEvents);
    this.#recordEvents = [];
  }

  /** The record cannot be written as processed: its store writes and events are forgotten. */
  undoRecord(): void {
    for (const store of this.#stores.values()) store.undoRecord?.();
    this.#recordEvents = [];
  }

  /**
   * Lets a dead-letter hook decide with the processor's context (record the id in a store). Its
   * writes and events are the record's, as a processed record's are: kept with keepRecord() once its
   * dead letter is sent, forgotten with undoRecord() if it cannot be.
   */
  withContext<T>(
    record: InputRecord<V>,
    run: (context: ProcessorContext) => T,
  ): { result: T; outputs: Outgoing[] } {
    this.beginRecord();
    this.#outbox = [];
    this.#current = record;
    try {
      const result = run(this.#context());
      return { result, outputs: this.#outbox };
    } finally {
      this.#current = undefined;
      this.#outbox = [];
    }
  }

  /** Adds a kit event to the open transaction's events (emitted on commit). */
  addEvent(...event: InstrumentEvent): void {
    this.#events.push(event);
  }

  /** Whether the open transaction holds anything of this task. */
  get dirty(): boolean {
    return this.position.dirty;
  }

  /**
   * A changelog record the current record wrote that its topic would refuse (`limitOf` gives a topic's
   * limit, with Kafka's overhead left out), or undefined: the common case allocates nothing.
   */
  changelogOverLimit(
    limitOf: (topic: string) => number,
  ): { topic: string; bytes: number; limit: number } | undefined {
    for (const { store, topic } of this.#changelogs) {
      const bytes = this.#stores.get(store)!.largestRecordChangelog?.() ?? 0;
      const limit = limitOf(topic);
      if (bytes > limit) return { topic, bytes, limit };
    }
    return undefined;
  }

  /** The changelog records of the open transaction, one per key, to send before it commits. */
  takeChangelog(): { topic: string; record: ChangelogRecord }[] {
    const out: { topic: string; record: ChangelogRecord }[] = [];
    for (const { store, topic } of this.changelogs()) {
      for (const record of this.#stores.get(store)!.takeChangelog()) out.push({ topic, record });
    }
    return out;
  }

  /** The transaction committed: its writes become state, its events are emitted, punctuations run. */
  committed(instrument: Instrument): void {
    this.position.committedNow();
    for (const store of this.#stores.values()) store.commit();
    this.#committedStreamTime = this.streamTime;
    const events = this.#events;
    this.#events = [];
    instrumentAll(instrument, events);
    // A punctuation (expiry) acts on committed state, outside any transaction: its events go out now.
    for (const p of this.#punctuations) {
      if (this.streamTime - p.last >= p.intervalMs) {
        p.last = this.streamTime;
        p.run(this.streamTime);
      }
    }
    const outside = this.#recordEvents;
    this.#recordEvents = [];
    instrumentAll(instrument, outside);
  }

  /**
   * The transaction aborted (or its outcome is unknown): its writes and events are forgotten. Returns
   * the offset to read again from, the partition's first record not committed (undefined: none handed over yet).
   */
  aborted(): number | undefined {
    for (const store of this.#stores.values()) store.rollback();
    this.streamTime = this.#committedStreamTime;
    this.#events = [];
    this.#recordEvents = [];
    return this.position.rewind();
  }

  /** Processor and stores go; the state machine ends in CLOSED. */
  close(): void {
    this.restore.abort?.abort(new Error(`${this.topic}[${this.partition}] closed`));
    if (this.machine.state !== 'closed') this.machine.transitionTo('closed');
    try {
      this.#processor?.close?.();
    } catch (error) {
      this.log.warn({ err: error }, 'processor close failed');
    }
    this.#processor = undefined;
    for (const store of this.#stores.values()) store.close?.();
    this.#stores.clear();
  }
}

/** A checkpoint as stored: each changelog's offset as text, and the stream time. */
function checkpointOf(offsets: ReadonlyMap<string, bigint>, streamTime: number): Checkpoint {
  return {
    offsets: Object.fromEntries([...offsets].map(([topic, offset]) => [topic, String(offset)])),
    streamTime,
  };
}

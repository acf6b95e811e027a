// Standby replicas (PROCESSOR_STANDBY_REPLICAS=1): this instance follows, group-less, the changelogs of
// every input partition it does not own, into its own state directories for those partitions, so that
// when the group hands it one, the active task's restore starts from a recent checkpoint. librdkafka's
// assignors cannot be told which instance holds the warmest copy: every instance keeps one of each
// partition it does not own, whichever gets it.
//
// One state machine: WAITING (no assignment yet: which partitions are ours is not known) → FOLLOWING ⇄
// BACKING-OFF (an error: the consumer goes, every task reads again from its checkpoint after a back-off)
// → CLOSED. Its own loop is the only code that talks to its consumer; the stream app's loop tells it what
// the instance gained (released at once, synchronously, before the active task opens the directory) and
// lost (followed from the next cycle on). It never writes to Kafka: its consumer assigns, reads
// read_committed and commits nothing, and its failures never reach the active stage.
import type { Logger } from '../log.js';
import { errorFields } from '../log-error.js';
import type { ChangelogBounds } from './checkpoint.js';
import { backoffDelay } from './retry.js';
import { keyOf } from './runner-context.js';
import { StandbyTask } from './standby-task.js';
import type { StateDirs } from './state-dirs.js';
import type { ConsumedMessage, TopicPartition } from './stream-clients.js';
import type { Topology } from './topology.js';

/** What the follower asks of its consumer: group-less, read_committed, assign only, nothing written. */
export interface StandbyConsumer {
  /** Every partition of a topic with its bounds now (high: the high watermark). */
  bounds(topic: string): Promise<({ partition: number } & ChangelogBounds)[]>;
  /** Replaces the whole assignment: each partition read from its offset. */
  assign(assignment: readonly (TopicPartition & { offset: number })[]): void;
  /** Up to `max` records; waits briefly for the first one only. */
  consume(max: number): Promise<ConsumedMessage[]>;
  /** The next offset the consumer hands over per partition, where known. */
  position(partitions: readonly TopicPartition[]): (TopicPartition & { offset?: number })[];
  /** The partition's end as last fetched (for lag), where known. */
  highWatermark(topic: string, partition: number): number | undefined;
  close(): Promise<void>;
}

/** A connected consumer for the follower (librdkafka's in standby-consumer.ts, or a fake). */
export type CreateStandbyConsumer = () => Promise<StandbyConsumer>;

export type FollowerState = 'waiting' | 'following' | 'backing-off' | 'closed';

const LEGAL: Readonly<Record<FollowerState, readonly FollowerState[]>> = {
  waiting: ['following', 'closed'],
  following: ['backing-off', 'closed'],
  'backing-off': ['following', 'closed'],
  closed: [],
};

/** The key as bytes (the binding hands over a Buffer of its own: no copy). */
function keyBytes(key: ConsumedMessage['key']): Buffer | null {
  if (key === undefined || key === null) return null;
  return Buffer.isBuffer(key) ? key : Buffer.from(key);
}

/** Records behind on one followed changelog partition. */
export interface StandbyLag {
  topic: string;
  partition: number;
  behind: number;
}

export interface StandbyFollowerOptions<V> {
  topology: Topology<V>;
  stateDirs: StateDirs;
  createConsumer: CreateStandbyConsumer;
  logger: Logger;
  /** Records taken per consume call at most. */
  batchSize?: number;
  /** How long the loop sleeps when there is nothing to follow (a wake-up cuts it short). */
  idleMs?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  now?: () => number;
}

export class StandbyFollower<V> {
  #state: FollowerState = 'waiting';
  /** Input partitions this instance owns (as the stream app's rebalances said), by keyOf. */
  readonly #owned = new Set<string>();
  /** The standby tasks, by keyOf(input topic, partition). */
  readonly #tasks = new Map<string, StandbyTask<V>>();
  /** Each input topic's partitions, once asked (per consumer: asked again after an error). */
  #partitions: Map<string, number[]> | undefined;
  #consumer: StandbyConsumer | undefined;
  /** The consumer's assignment no longer matches the following tasks. */
  #stale = true;
  #failures = 0;
  #retryAt = 0;
  #lastError: string | undefined;
  #wake: (() => void) | undefined;
  /** Partitions whose directory could not be opened (locked, …), and when to try again. */
  readonly #unavailable = new Map<string, number>();
  /** The close of a consumer dropped after an error, still under way. */
  #dropping: Promise<void> | undefined;
  readonly #loop: Promise<void>;
  readonly #log: Logger;
  readonly #now: () => number;

  constructor(private readonly options: StandbyFollowerOptions<V>) {
    this.#log = options.logger.child({ component: 'standby' });
    this.#now = options.now ?? Date.now;
    this.#loop = this.#run();
  }

  get state(): FollowerState {
    return this.#state;
  }

  /** Why the last attempt failed, while the follower backs off. */
  get lastError(): string | undefined {
    return this.#state === 'backing-off' ? this.#lastError : undefined;
  }

  #transitionTo(to: FollowerState): void {
    if (!LEGAL[this.#state].includes(to))
      throw new Error(`standby follower: illegal transition ${this.#state} → ${to}`);
    this.#state = to;
    this.#wake?.();
  }

  /**
   * The instance gained these partitions: each stops being followed now, its state settled on disk with
   * its checkpoint, before this returns (so before the active task opens the directory). The first
   * assignment also starts the following. Never throws: the active stage goes on whatever happens here.
   */
  assigned(partitions: readonly TopicPartition[]): void {
    if (this.#state === 'closed') return;
    for (const { topic, partition } of partitions) {
      const key = keyOf(topic, partition);
      this.#owned.add(key);
      const task = this.#tasks.get(key);
      if (task === undefined) continue;
      this.#tasks.delete(key);
      this.#stale = true;
      try {
        task.release();
        task.log.info({ checkpoint: task.dir.checkpoint?.offsets }, 'standby released to the active task');
      } catch (error) {
        // Its checkpoint stays as it was, behind the state: the active task replays a little more.
        task.log.warn(errorFields(error), 'standby release failed');
      }
    }
    if (this.#state === 'waiting') this.#transitionTo('following');
    this.#wake?.();
  }

  /** The instance gave these partitions back (or lost them): followed from the next cycle on. */
  revoked(partitions: readonly TopicPartition[]): void {
    if (this.#state === 'closed') return;
    for (const { topic, partition } of partitions) this.#owned.delete(keyOf(topic, partition));
    this.#wake?.();
  }

  /** Records behind per followed changelog partition (a partition not started yet is left out). */
  lag(): StandbyLag[] {
    const out: StandbyLag[] = [];
    const consumer = this.#consumer;
    for (const task of this.#tasks.values()) {
      if (task.state !== 'following' || consumer === undefined) continue;
      for (const topic of task.changelogs()) {
        const high = consumer.highWatermark(topic, task.partition);
        const behind = high === undefined ? undefined : task.behind(topic, high);
        if (behind !== undefined) out.push({ topic, partition: task.partition, behind });
      }
    }
    return out;
  }

  /** Stops following: every task settled on disk and closed, the consumer closed. */
  async close(): Promise<void> {
    if (this.#state !== 'closed') this.#transitionTo('closed');
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (this.#state !== 'closed') {
      if (this.#state === 'waiting') {
        await this.#sleep(Number.POSITIVE_INFINITY);
        continue;
      }
      if (this.#state === 'backing-off') {
        const wait = this.#retryAt - this.#now();
        if (wait > 0) {
          await this.#sleep(wait);
          continue;
        }
        this.#transitionTo('following');
      }
      try {
        await this.#cycle();
      } catch (error) {
        if (this.#closed()) break;
        this.#failed(error);
      }
    }
    for (const task of this.#tasks.values()) task.close();
    this.#tasks.clear();
    await this.#dropping;
    await this.#dropConsumer();
  }

  /** One cycle: new tasks for partitions not owned, their starts, the assignment, one batch applied. */
  async #cycle(): Promise<void> {
    this.#consumer ??= await this.options.createConsumer();
    const consumer = this.#consumer;
    this.#partitions ??= await this.#askPartitions(consumer);
    this.#follow();
    await this.#startPending(consumer);
    if (this.#closed()) return;
    const following = [...this.#tasks.values()].filter((t) => t.state === 'following');
    if (this.#stale) {
      consumer.assign(
        following.flatMap((task) =>
          task.changelogs().map((topic) => ({
            topic,
            partition: task.partition,
            offset: Number(task.next(topic)),
          })),
        ),
      );
      this.#stale = false;
    }
    if (following.length === 0) {
      await this.#sleep(this.options.idleMs ?? 1_000);
      return;
    }
    const messages = await consumer.consume(this.options.batchSize ?? 10_000);
    // From here to the end of the cycle nothing waits: a release (the stream app's loop) cannot come
    // between a record applied and its settle.
    const touched = new Set<StandbyTask<V>>();
    const byChangelog = new Map<string, StandbyTask<V>>();
    for (const task of following)
      for (const topic of task.changelogs()) byChangelog.set(keyOf(topic, task.partition), task);
    for (const message of messages) {
      const task = byChangelog.get(keyOf(message.topic, message.partition));
      if (task === undefined) continue;
      const applied = task.apply(message.topic, {
        offset: BigInt(message.offset),
        key: keyBytes(message.key),
        value: message.value,
        timestamp: message.timestamp ?? 0,
      });
      if (applied) touched.add(task);
    }
    const current = following.filter((t) => t.state === 'following');
    const changelogPartitions = current.flatMap((t) =>
      t.changelogs().map((topic) => ({ topic, partition: t.partition })),
    );
    for (const { topic, partition, offset } of consumer.position(changelogPartitions)) {
      if (typeof offset !== 'number' || offset < 0) continue;
      const task = byChangelog.get(keyOf(topic, partition));
      if (task === undefined) continue;
      task.positionAt(topic, BigInt(offset));
    }
    for (const task of touched) task.settle();
    this.#failures = 0;
  }

  /** A method, not a field read: the state changes while the loop awaits. */
  #closed(): boolean {
    return this.#state === 'closed';
  }

  /**
   * Makes a task for every partition neither owned nor followed yet. A directory that cannot be opened
   * (another live process holds it, …) leaves that partition out for a while, not the others.
   */
  #follow(): void {
    const now = this.#now();
    for (const [topic, partitions] of this.#partitions!) {
      for (const partition of partitions) {
        const key = keyOf(topic, partition);
        if (this.#owned.has(key) || this.#tasks.has(key) || now < (this.#unavailable.get(key) ?? 0)) continue;
        // The active task that had it still writes its last checkpoint (asynchronously): followed once it
        // has, as the standby's writes are synchronous.
        if (this.options.stateDirs.writing(topic, partition)) continue;
        try {
          const task = new StandbyTask<V>({
            topology: this.options.topology,
            topic,
            partition,
            stateDirs: this.options.stateDirs,
            logger: this.#log,
            ...(this.options.now === undefined ? {} : { now: this.options.now }),
          });
          this.#tasks.set(key, task);
          this.#unavailable.delete(key);
        } catch (error) {
          const retryMs = this.options.retryMaxMs ?? 30_000;
          this.#unavailable.set(key, now + retryMs);
          this.#log.warn(
            { ...errorFields(error), topic, partition, retryInMs: retryMs },
            'standby cannot open the partition’s state directory; not followed for now',
          );
        }
      }
    }
  }

  /** Each input topic's partitions: its changelogs' (co-partitioned with it). */
  async #askPartitions(consumer: StandbyConsumer): Promise<Map<string, number[]>> {
    const partitions = new Map<string, number[]>();
    const [store] = this.options.topology.stores;
    for (const { topic } of this.options.topology.sources) {
      if (store === undefined) continue;
      const found = await consumer.bounds(store.changelogTopic(topic));
      partitions.set(
        topic,
        found.map((b) => b.partition),
      );
    }
    return partitions;
  }

  /** Decides where each pending task starts, from its changelogs' bounds now. */
  async #startPending(consumer: StandbyConsumer): Promise<void> {
    const pending = [...this.#tasks.values()].filter((t) => t.state === 'pending');
    if (pending.length === 0) return;
    const byTopic = new Map<string, Map<number, ChangelogBounds>>();
    for (const topic of new Set(pending.flatMap((t) => t.changelogs()))) {
      byTopic.set(topic, new Map((await consumer.bounds(topic)).map((b) => [b.partition, b])));
    }
    for (const task of pending) {
      // Released while the bounds were asked for: the active task has it.
      if (task.state !== 'pending' || this.#tasks.get(keyOf(task.topic, task.partition)) !== task) continue;
      const bounds = new Map<string, ChangelogBounds>();
      for (const topic of task.changelogs()) {
        const found = byTopic.get(topic)?.get(task.partition);
        if (found !== undefined) bounds.set(topic, found);
      }
      const from = task.start(bounds);
      this.#stale = true;
      task.log.debug(
        { from: Object.fromEntries([...from].map(([t, o]) => [t, String(o)])) },
        'standby following',
      );
    }
  }

  /** An error: every task reads again from its checkpoint, with a new consumer, after a back-off. */
  #failed(error: unknown): void {
    this.#failures++;
    this.#lastError = error instanceof Error ? error.message : String(error);
    const delay = backoffDelay(
      this.#failures,
      this.options.retryInitialMs ?? 1_000,
      this.options.retryMaxMs ?? 30_000,
    );
    this.#retryAt = this.#now() + delay;
    for (const task of this.#tasks.values()) {
      try {
        task.reset();
      } catch (resetError) {
        task.log.warn({ err: resetError }, 'standby reset failed');
      }
    }
    this.#partitions = undefined;
    this.#stale = true;
    this.#dropping = this.#dropConsumer();
    this.#log.warn(
      { ...errorFields(error), failures: this.#failures, retryInMs: delay },
      'standby follower failed; retrying after a back-off (the active partitions are not affected)',
    );
    this.#transitionTo('backing-off');
  }

  async #dropConsumer(): Promise<void> {
    const consumer = this.#consumer;
    this.#consumer = undefined;
    await consumer
      ?.close()
      .catch((error: unknown) => this.#log.debug({ err: error }, 'standby consumer close failed'));
  }

  /** Sleeps up to `ms`, woken early by a rebalance, a transition or close. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      const self = this;
      function done() {
        if (timer !== undefined) clearTimeout(timer);
        if (self.#wake === done) self.#wake = undefined;
        resolve();
      }
      this.#wake = done;
    });
  }
}
